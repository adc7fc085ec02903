import json, glob, sys
def load(d):
    return {json.loads(l)["question_id"]: json.loads(l) for f in glob.glob(d + "/*/results.jsonl") for l in open(f)}
a, b = load(sys.argv[1]), load(sys.argv[2])
fa = sum(r["fallback_steps"]["explore_counterfactuals"]["fallbacks"] for r in a.values())
fb = sum(r["fallback_steps"]["explore_counterfactuals"]["fallbacks"] for r in b.values())
print(f"n {len(a)} {len(b)}; no counterfactual {fa} -> {fb}")
print("acc", sum(r["acc"] for r in a.values()), "->", sum(r["acc"] for r in b.values()))
print("misled", sum(bool(r["misled"]) for r in a.values()), "->", sum(bool(r["misled"]) for r in b.values()))
won = [q for q in a if b[q]["acc"] > a[q]["acc"]]; lost = [q for q in a if b[q]["acc"] < a[q]["acc"]]
print("won", won, "lost", lost)
print("secs", round(sum(r["seconds"] for r in a.values()), 1), "->", round(sum(r["seconds"] for r in b.values()), 1))
for q in won + lost: print(q, repr(a[q]["prediction"]), "->", repr(b[q]["prediction"]), a[q]["answers"])
