"""Query likelihood in the reading prompt (evidence.query_relevance's prefix), summed over the question's tokens,
for each scattered-shape dev question's lone sources, and for the top two together (both orders)."""
import json
from langchain_core.documents import Document
from causalrag.prompts.common import reading_prefix
from causalrag.text import one_line
from causalrag.tools.backends.llamacpp import LlamaCppLLM
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open("/work/runs/s50/dev/all.jsonl")}
rows = json.load(open("/work/runs/s51/upr-pair-dev.json"))
llm = LlamaCppLLM()
for r in rows:
    rec = recs[r["id"]]; item = suite[r["id"]]
    title_of = {d["id"]: d["title"] for d in rec["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    docs = [Document(page_content=by_title[title_of[g["sources"][0]]]["text"], metadata={"title": title_of[g["sources"][0]]}) for g in rec["assessment"]["groups"]]
    q = " " + one_line(rec["question"])
    s = llm.logprob([reading_prefix([d]) for d in docs], [q] * len(docs), reduce="sum")
    for g, v in zip(r["groups"], s): g["ql"] = v
    o = sorted(range(len(docs)), key=lambda i: -s[i])
    r["ql_pairs"] = {}
    # every pair among the top three, both orders (the top two may include a passage a rule sets aside)
    for a in o[:3]:
        for b in o[:3]:
            if a != b:
                r["ql_pairs"][f"{a},{b}"] = llm.logprob([reading_prefix([docs[a], docs[b]])], [q], reduce="sum")[0]
    print(r["id"], [round(v, 1) for v in s], [g["acc"] for g in r["groups"]], flush=True)
json.dump(rows, open("/work/runs/s51/ql-dev.json", "w"))
