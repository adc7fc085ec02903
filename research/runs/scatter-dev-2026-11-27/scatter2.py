import json, sys
from langchain_core.documents import Document
from causalrag.tools.backends.llamacpp import LlamaCppLLM
from causalrag.nodes.evidence import Reading, with_relevance
from causalrag.eval.metrics import containment
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
rows = json.load(open(sys.argv[1]))
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open(sys.argv[2])}
llm = LlamaCppLLM()
for row in rows:
    r = recs[row["id"]]; item = suite[row["id"]]
    title_of = {d["id"]: d["title"] for d in r["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    docs = []
    for g in r["assessment"]["groups"]:
        p = by_title[title_of[g["sources"][0]]]
        docs.append(Document(page_content=p["text"], metadata={"title": p["title"]}, id=g["sources"][0]))
    rd = with_relevance(llm, r["question"], docs, [Reading(g["answer"]) for g in r["assessment"]["groups"]])
    for g, x in zip(row["groups"], rd): g["rel"] = x.relevance
    print(row["id"], [(g["answer"][:20], g["acc"], round(g["rel"], 2)) for g in row["groups"]], flush=True)
json.dump(rows, open(sys.argv[1], "w"))
