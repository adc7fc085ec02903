"""The questions a run routed to `focus`, each against the joint reading it replaced (standard RAG's answer,
recorded in the assessment): what the focus route won and lost."""
import json, sys
from collections import Counter
from causalrag.eval.metrics import answer_scores
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
by = Counter()
for method in sorted({r["method"] for r in rows if r.get("assessment")}):
    won = lost = 0
    for r in sorted(rows, key=lambda r: r["question_id"]):
        a = r.get("assessment") or {}
        if r["method"] != method or a.get("route") != "focus":
            continue
        d = r["acc"] - answer_scores(a["standard"], r["answers"])["acc"]
        won += d > 0; lost += d < 0
        print(method, "WON " if d > 0 else "LOST" if d < 0 else "same", r["question_id"], repr(a["standard"][:30]), "->",
              repr(r["prediction"][:30]), "margin", a["focus"]["margin"], "joint", a["focus"]["joint"])
    print(method, "focus route: won", won, "lost", lost)
