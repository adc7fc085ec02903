"""Every counterfactual contrast asked (astute rows with a fit): the raw fit and the answer strings' own prior
difference (log P(other) - log P(said) after FIT_PREFIX, times the occurrences per passage), so a PMI-style
fit = raw - prior. Usage: pmi_fit.py RUNDIR..."""
import glob, json, sys, hashlib, re
from langchain_core.documents import Document
from causalrag.eval.robust import read_items, SUITE
from causalrag.eval.metrics import containment
from causalrag.nodes.triage import counterfactual_fit, FIT_PREFIX
from causalrag.nodes.evidence import passage_text
from causalrag.tools.llm import load_llm
from causalrag.text import same_answer
docs = {}
for item in read_items(SUITE):
    for p in item["passages"]:
        docs[hashlib.sha1(f"{p['title']}\n{p['text']}".encode()).hexdigest()[:16]] = Document(page_content=p["text"], metadata={"title": p["title"]})
rows = {(r["method"], r["question_id"]): r for d in sys.argv[1:] for f in glob.glob(f"{d}/s*/results.jsonl") + glob.glob(f"{d}/results.jsonl") for l in open(f) for r in [json.loads(l)]}
llm = load_llm(backend="llamacpp", device="cpu")
for (m, q), r in sorted(rows.items()):
    a = r.get("assessment") or {}
    if m != "astute" or "fit" not in a:
        continue
    g = a["groups"]
    said = g[0]["answer"]
    rival = g[1]["answer"] if len(g) >= 2 and len(g[1]["sources"]) >= 2 and a["shape"] == "conflict" else a["closed_book"]
    ds = [docs[s] for s in g[0]["sources"]]
    fit = counterfactual_fit(llm, ds, said, rival)
    found = re.compile(rf"(?<!\w){re.escape(said.strip())}(?!\w)", re.IGNORECASE)
    occ = [len(found.findall(passage_text(d))) for d in ds]
    occ = [o for o in occ if o]
    n = sum(occ) / len(occ) if occ else 0
    ps, po = llm.logprob([FIT_PREFIX] * 2, [said.strip(), rival.strip()], reduce="sum")
    ps2, po2 = llm.logprob(["Passage: The answer is "] * 2, [said.strip() + ".", rival.strip() + "."], reduce="sum")
    print(json.dumps({"q": q, "cond": r["condition"], "n": len(ds), "occ": round(n, 2), "fit": round(fit, 2),
                      "prior": round(po - ps, 2), "prior2": round(po2 - ps2, 2), "said": said, "rival": rival,
                      "said_ok": containment(said, r["answers"]), "rival_ok": containment(rival, r["answers"])}), flush=True)
