"""With the branch's code (PYTHONPATH): recorded contrasts whose swapped passages change under mention_pattern,
their fit before (recorded in the input, or recomputed with the old regex) and after. Usage: span_dev.py RUNDIR... (astute rows)"""
import glob, json, sys, hashlib, re
from langchain_core.documents import Document
from causalrag.eval.robust import read_items, SUITE
from causalrag.eval.metrics import containment
from causalrag.nodes.triage import counterfactual_fit, FIT_PREFIX
from causalrag.nodes.evidence import passage_text
from causalrag.text import mention_pattern, normalize_answer, answer_kind
from causalrag.tools.llm import load_llm
docs = {}
for item in read_items(SUITE):
    for p in item["passages"]:
        docs[hashlib.sha1(f"{p['title']}\n{p['text']}".encode()).hexdigest()[:16]] = Document(page_content=p["text"], metadata={"title": p["title"]})
rows = {}
for d in sys.argv[1:]:
    for f in glob.glob(f"{d}/s*/results.jsonl") + glob.glob(f"{d}/results.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if r["method"] == "astute": rows[r["question_id"]] = r
llm = load_llm(backend="llamacpp", device="cpu")
def old_fit(ds, said, other):
    found = re.compile(rf"(?<!\w){re.escape(said.strip())}(?!\w)", re.IGNORECASE)
    texts = [t for t in map(passage_text, ds) if found.search(t)]
    if not (texts and normalize_answer(said) and normalize_answer(other)) or answer_kind(said) != answer_kind(other):
        return float("-inf")
    swapped = [found.sub(lambda _: other.strip(), t) for t in texts]
    s = llm.logprob([FIT_PREFIX] * (2 * len(texts)), texts + swapped, reduce="sum")
    return sum(b - a for a, b in zip(s[: len(texts)], s[len(texts):])) / len(texts)
for q, r in sorted(rows.items()):
    a = r.get("assessment") or {}
    if "fit" not in a: continue
    g = a["groups"]; said = g[0]["answer"]
    rival = g[1]["answer"] if a["shape"] == "conflict" and len(g) >= 2 and len(g[1]["sources"]) >= 2 and a["route"] == "vote" else a["closed_book"]
    if a["route"] == "knowledge" and a.get("fit", -1e9) >= 3: rival = a["believed"]
    ds = [docs[s] for s in g[0]["sources"]]
    old = re.compile(rf"(?<!\w){re.escape(said.strip())}(?!\w)", re.IGNORECASE)
    new = mention_pattern(said)
    changed = any(old.sub("\0", passage_text(d)) != new.sub("\0", passage_text(d)) for d in ds)
    if not changed: continue
    before, after = old_fit(ds, said, rival), counterfactual_fit(llm, ds, said, rival)
    print(json.dumps({"q": q, "cond": r["condition"], "recorded": round(a["fit"], 2), "before": round(before, 2), "after": round(after, 2),
                      "said": said, "rival": rival, "said_ok": containment(said, r["answers"]), "rival_ok": containment(rival, r["answers"]), "acc": r["acc"], "route": a["route"]}), flush=True)
