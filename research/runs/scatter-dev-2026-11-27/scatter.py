"""For scattered-shape records: does the lone source most caused by the question (CIS) beat the joint reading?"""
import json, sys, glob, tempfile
from pathlib import Path
from langchain_core.documents import Document
from causalrag.tools.backends.llamacpp import LlamaCppLLM
from causalrag.tools.cis import CISScorer, PriorCache
from causalrag.eval.metrics import containment
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
recs = [json.loads(l) for f in sys.argv[1:] for l in open(f)]
recs = [r for r in recs if (r.get("assessment") or {}).get("shape") == "scattered"]
print(len(recs), "scattered")
llm = LlamaCppLLM()
scorer = CISScorer(llm, cache=PriorCache(Path(tempfile.mkdtemp()) / "p.sqlite"))
out = []
for r in recs:
    item = suite[r["question_id"]]
    title_of = {d["id"]: d["title"] for d in r["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    a = r["assessment"]
    groups = []
    for g in a["groups"]:
        p = by_title.get(title_of.get(g["sources"][0]))
        if p is None: continue
        groups.append((g["answer"], p))
    docs = [Document(page_content=p["text"], metadata={"title": p["title"]}) for _, p in groups]
    scores = scorer.score(r["question"], docs)
    ntok = [len(llm._tokens(" " + d.metadata["title"] + ". " + d.page_content, start=False)) for d in docs]
    row = {"id": r["question_id"], "cond": r["condition"], "standard": a["standard"], "std_acc": containment(a["standard"], r["answers"]),
           "pred_acc": r["acc"], "closed": a["closed_book"], "conf": a["confidence"],
           "groups": [{"answer": ans, "role": p["role"], "acc": containment(ans, r["answers"]), "cis": s.cis, "cond": s.logp_k_given_q, "n": n}
                      for (ans, p), s, n in zip(groups, scores, ntok)]}
    out.append(row); print(json.dumps(row), flush=True)
json.dump(out, open(sys.argv[1] + ".scatter.json", "w"))
