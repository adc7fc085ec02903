"""For every recorded counterfactual contrast with fit >= 3 (astute rows of `causalrag eval` records): the
rival's familiarity, prior = log P(rival) - log P(said) after FIT_PREFIX with no passage (what
`knowledge_familiarity` now bounds), and the gates fit - occ * prior and fit - prior checked on the way
(occ: the said answer's mentions per stating passage). Usage: familiarity.py RESULTS.jsonl... > OUT.jsonl"""
import hashlib, json, sys
from causalrag.corpus import demo_passages
from causalrag.eval.metrics import containment
from causalrag.nodes.evidence import passage_text
from causalrag.nodes.triage import FIT_PREFIX
from causalrag.text import mention_pattern
from causalrag.tools.llm import load_llm
from langchain_core.documents import Document
docs = {}
for path in ["causalrag/data/robust/suite.jsonl", "causalrag/data/conflict_questions.jsonl"]:
    for line in open(path):
        for p in json.loads(line)["passages"]:
            docs[hashlib.sha1(f"{p['title']}\n{p['text']}".encode()).hexdigest()[:16]] = Document(page_content=p["text"], metadata={"title": p["title"]})
for p in demo_passages():  # HotpotQA-20's paragraphs
    docs[p.id] = Document(page_content=p.text, metadata={"title": p.title})
llm = load_llm(backend="llamacpp", device="cpu")
seen = set()
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        a = r.get("assessment") or {}
        key = (r["question_id"], r.get("inject"))
        if r["method"] != "astute" or a.get("fit") is None or a["fit"] < 3 or key in seen:
            continue
        seen.add(key)
        g = a["groups"]
        said = g[0]["answer"]
        rival = g[1]["answer"] if len(g) >= 2 and len(g[1]["sources"]) >= 2 and a["shape"] in ("conflict", "contradicted") and not containment(a["closed_book"], [g[1]["answer"]]) and a.get("believed") != a["closed_book"] else a["closed_book"]
        rival = a.get("believed") if a["route"] == "knowledge" and a.get("believed") else rival
        found = mention_pattern(said)
        texts = [passage_text(docs[s]) for s in g[0]["sources"] if s in docs]
        occ = [len(found.findall(t)) for t in texts]
        occ = [o for o in occ if o]
        n = sum(occ) / len(occ) if occ else 0
        ps, po = llm.logprob([FIT_PREFIX] * 2, [said.strip(), rival.strip()], reduce="sum")
        print(json.dumps({"q": r["question_id"], "k": r.get("inject"), "fit": round(a["fit"], 2), "prior": round(po - ps, 2), "occ": round(n, 2),
                          "gate": round(a["fit"] - n * (po - ps), 2), "gate1": round(a["fit"] - (po - ps), 2), "std_ok": containment(a.get("standard") or "", r["answers"]), "shape": a["shape"], "condition": r.get("condition"), "said": said, "rival": rival,
                          "said_ok": containment(said, r["answers"]), "rival_ok": containment(rival, r["answers"]),
                          "route": a["route"], "acc": r["acc"]}), flush=True)
