"""Dev replay: triage's decisions with the closed-book confidence from the stream's own log-probs vs a second pass."""
import json, sys, copy, collections
from causalrag.tools.llm import load_llm
from causalrag.nodes.triage import closed_book_answer, confidence, load_policy, BUNDLED_POLICY
from causalrag.nodes.decide import RulePolicy
from causalrag.eval.calibrate import read_rows, final_answer
from causalrag.eval.metrics import containment
llm = load_llm(backend="llamacpp")
rows = []
for f in sys.argv[1:]:
    rows += read_rows(f)
out = []
for r in rows:
    q = r["question"]
    a = closed_book_answer(llm, q, 24)
    memo = confidence(llm, q, a)
    llm._streamed = None
    second = confidence(llm, q, a)
    out.append({"id": r["question_id"], "closed": a, "recorded_closed": r["evidence"].get("closed_book"),
                "recorded": r["evidence"].get("confidence"), "memo": memo, "second": second})
json.dump(out, open("/tmp/dbg/conf_values.json", "w"))
policies = {"rules": RulePolicy(), "bundled": load_policy(str(BUNDLED_POLICY))}
for name, pol in policies.items():
    changed = wins = losses = routes = 0
    for r, v in zip(rows, out):
        e1 = copy.deepcopy(r); e1["evidence"]["confidence"] = v["second"]; e1["evidence"]["closed_book"] = v["closed"]
        e2 = copy.deepcopy(r); e2["evidence"]["confidence"] = v["memo"]; e2["evidence"]["closed_book"] = v["closed"]
        (r1, a1), (r2, a2) = final_answer(e1, pol), final_answer(e2, pol)
        routes += r1 != r2
        if a1 != a2:
            changed += 1
            c1, c2 = containment(a1, r["answers"]), containment(a2, r["answers"])
            wins += c2 > c1; losses += c2 < c1
            print(name, r["question_id"], r1, repr(a1), "->", r2, repr(a2), v["second"], v["memo"])
    print(f"{name}: {len(rows)} questions, routes changed {routes}, answers changed {changed} (won {wins}, lost {losses})")
same_closed = sum(v["closed"] == v["recorded_closed"] for v in out)
d = [abs(v["memo"] - v["second"]) for v in out if v["memo"] != float("-inf")]
print("closed-book answer as recorded:", same_closed, "/", len(out), "; |memo - second| mean", sum(d)/len(d), "max", max(d), "; equal", sum(x == 0 for x in d))
