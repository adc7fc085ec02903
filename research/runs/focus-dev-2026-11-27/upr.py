"""Query likelihood (UPR, Sachan et al. 2022) over the scattered-shape dev questions: log P(question | passage)."""
import json, sys
from causalrag.tools.backends.llamacpp import LlamaCppLLM
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
rows = json.load(open("research/runs/scatter-dev-2026-11-27/scattered-dev.json"))
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open("/work/runs/s50/dev/all.jsonl")}
llm = LlamaCppLLM()
out = []
for row in rows:
    r = recs[row["id"]]; item = suite[row["id"]]
    title_of = {d["id"]: d["title"] for d in r["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    texts = []
    for g in r["assessment"]["groups"]:
        p = by_title.get(title_of.get(g["sources"][0]))
        if p is None: continue
        texts.append(p["title"] + ". " + p["text"])
    assert len(texts) == len(row["groups"]), row["id"]
    prefixes = [f"Passage: {t}\nA question this passage answers:" for t in texts]
    q = " " + r["question"].strip()
    s = llm.logprob(prefixes, [q] * len(texts), reduce="sum")
    for g, v in zip(row["groups"], s): g["upr"] = v
    out.append(row); print(row["id"], [round(v, 1) for v in s], [g["acc"] for g in row["groups"]], flush=True)
json.dump(out, open("/work/runs/s51/upr-dev.json", "w"))
