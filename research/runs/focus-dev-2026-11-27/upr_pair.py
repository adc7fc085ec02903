"""Does a pair of the two most question-like passages explain the question better than the first alone?"""
import json
from causalrag.tools.backends.llamacpp import LlamaCppLLM
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open("/work/runs/s50/dev/all.jsonl")}
rows = json.load(open("/work/runs/s51/upr-dev.json"))
llm = LlamaCppLLM()
def texts(rid):
    r = recs[rid]; item = suite[rid]
    title_of = {d["id"]: d["title"] for d in r["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    return [by_title[title_of[g["sources"][0]]]["title"] + ". " + by_title[title_of[g["sources"][0]]]["text"] for g in r["assessment"]["groups"]]
for r in rows:
    t = texts(r["id"]); q = " " + recs[r["id"]]["question"].strip()
    o = sorted(range(len(t)), key=lambda i: -r["groups"][i]["upr"])
    if len(o) < 2: continue
    a, b = t[o[0]], t[o[1]]
    pre = [f"Passages: {a}\n{b}\nA question these passages answer:", f"Passages: {b}\n{a}\nA question these passages answer:"]
    s = llm.logprob(pre, [q, q], reduce="sum")
    r["pair"] = s
    print(r["id"], round(r["groups"][o[0]]["upr"], 1), round(r["groups"][o[1]]["upr"], 1), [round(x, 1) for x in s], flush=True)
json.dump(rows, open("/work/runs/s51/upr-pair-dev.json", "w"))
