"""For the questions the query-likelihood rule could take: a scored choice, given the top passage alone,
among the joint reading's answer and every lone answer (instead of the top passage's own lone reading)."""
import json
from langchain_core.documents import Document
from causalrag.eval.metrics import answer_scores
from causalrag.nodes.evidence import alone
from causalrag.nodes.triage import distinct
from causalrag.prompts.common import answer_prompt
from causalrag.tools.backends.llamacpp import LlamaCppLLM
exec(open("/work/runs/s51/ql_an.py").read().split("for stated_rule")[0].replace("rows = json.load(open(sys.argv[1]))", "rows = json.load(open('/work/runs/s51/ql-dev.json'))").replace('key = sys.argv[2] if len(sys.argv) > 2 else "ql"', 'key="ql"'))
llm = LlamaCppLLM()
for r in rows:
    rec = recs[r["id"]]; item = suite[r["id"]]; q = rec["question"]
    title_of = {d["id"]: d["title"] for d in rec["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    docs = [Document(page_content=by_title[title_of[g["sources"][0]]]["text"], metadata={"title": title_of[g["sources"][0]]}) for g in rec["assessment"]["groups"]]
    t = texts(r["id"])
    idx = [i for i in range(len(t)) if not quotes(t[i], q)]
    if len(idx) < 2: continue
    order = sorted(idx, key=lambda i: -r["groups"][i]["ql"])
    top = order[0]
    options = distinct([g["answer"] for g in r["groups"]] + [r["standard"]])
    for reduce in ("mean", "sum"):
        c = llm.choose([answer_prompt(q, alone(llm, q, [docs[top]]))], [options], reduce=reduce)[0]
        r[f"choice_{reduce}"] = c.answer; r[f"choice_{reduce}_acc"] = answer_scores(c.answer, rec["answers"])["acc"]
    print(r["id"], "lone:", r["groups"][top]["answer"][:25], r["groups"][top]["acc"], "| mean:", r["choice_mean"][:25], r["choice_mean_acc"], "| sum:", r["choice_sum"][:25], r["choice_sum_acc"], flush=True)
json.dump(rows, open("/work/runs/s51/ql-choice-dev.json", "w"))
