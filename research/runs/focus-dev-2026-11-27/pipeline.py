"""The dev half through the graph: astute at the focus commit over the 88 questions astute's fc7cac1 run had
shaped `scattered` (the other 315 records carried over, resume), each answer against fc7cac1's."""
import json, sys
from collections import Counter
old = {json.loads(l)["question_id"]: json.loads(l) for l in open(sys.argv[1])}
new = {json.loads(l)["question_id"]: json.loads(l) for l in open(sys.argv[2])}
won = lost = 0; by = Counter(); routes = Counter()
for q, n in sorted(new.items()):
    o = old[q]
    if o["assessment"].get("shape") != "scattered":
        continue
    routes[n["assessment"].get("route")] += 1
    if n["acc"] != o["acc"]:
        d = n["acc"] - o["acc"]; by[n["condition"]] += d; won += d > 0; lost += d < 0
        print("WON " if d > 0 else "LOST", q, repr(o["prediction"][:30]), "->", repr(n["prediction"][:30]), n["assessment"].get("focus"))
print("won", won, "lost", lost, dict(by), dict(routes))
print("right answers over the dev half:", sum(r["acc"] for r in old.values()), "->", sum(r["acc"] for r in new.values()), "of", len(new))
