"""Calibrate the counterfactual contrast where several passages agree against the model's closed-book answer.
For each card of a split: the model's closed-book answer and confidence (recorded assessments); if it is wrong,
the contrast of the conflict_majority_right item's *correct* passages with it (a true unanimous majority: must
not fire); if it is right, the contrast of the all_wrong item's swapped passages with it (must fire).
Usage: unanimous_fit.py SPLIT RUNDIR..."""
import glob, json, sys
from langchain_core.documents import Document
from causalrag.eval.robust import read_items, SUITE
from causalrag.eval.metrics import containment
from causalrag.nodes.triage import counterfactual_fit
from causalrag.tools.llm import load_llm
split = sys.argv[1]
rec = {}
for d in sys.argv[2:]:
    for f in glob.glob(f"{d}/s*/results.jsonl") + glob.glob(f"{d}/results.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if (r.get("assessment") or {}).get("closed_book") is not None:
                rec[r["question_id"].split("-")[0]] = r["assessment"]
items = {(i["card"], i["condition"]): i for i in read_items(SUITE) if i["split"] == split and "card" in i}
llm = load_llm(backend="llamacpp", device="cpu")
for card in sorted({c for c, _ in items}):
    a = rec.get(card)
    if a is None: continue
    closed, conf = a["closed_book"], a["confidence"]
    right = containment(closed, items.get((card, "clean_single"), next(i for (c, _), i in items.items() if c == card))["answers"])
    cond, role = ("all_wrong", "swapped") if right else ("conflict_majority_right", "correct")
    it = items.get((card, cond))
    if it is None: continue
    said = (it["wrong_answers"] if right else it["answers"])[0]
    ds = [Document(page_content=p["text"], metadata={"title": p["title"]}) for p in it["passages"] if p["role"] == role]
    fit = counterfactual_fit(llm, ds, said, closed)
    print(json.dumps({"card": card, "case": "fire" if right else "hold", "conf": conf, "fit": round(fit, 2), "n": len(ds), "said": said, "closed": closed}), flush=True)
