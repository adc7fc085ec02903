"""The contrast with the answer's whole name span swapped (a first name before a read-alone surname goes too),
against the code's, on recorded contrasts. Usage: span_fit.py PMI_JSONL RUNDIR...  (PMI_JSONL from pmi_fit.py)"""
import glob, json, sys, hashlib, re
from langchain_core.documents import Document
from causalrag.eval.robust import read_items, SUITE
from causalrag.nodes.triage import FIT_PREFIX
from causalrag.nodes.evidence import passage_text
from causalrag.tools.llm import load_llm
from causalrag.text import answer_kind, normalize_answer
STOP = {"The", "A", "An", "In", "On", "At", "By", "For", "From", "With", "Of", "To", "As", "And", "But", "When", "After",
        "Before", "While", "Since", "Its", "His", "Her", "Their", "This", "That", "These", "Those", "It", "He", "She", "They"}
PARTICLES = {"van", "von", "der", "den", "de", "da", "di", "du", "la", "le", "del", "bin", "al", "ibn"}
NAME = r"[A-Z][\w'’-]*|[A-Z]\."
def span_pattern(said):
    core = re.escape(said.strip())
    if answer_kind(said) != "name":
        return re.compile(rf"(?<!\w){core}(?!\w)", re.IGNORECASE)
    # a name's leading words mid-sentence: after a lowercase word or a comma, never at a sentence's start
    lead = rf"(?:(?<=[a-z,] )(?:(?:{NAME}|{'|'.join(PARTICLES)}) )+)?"
    return re.compile(rf"{lead}(?<![\w-])(?i:{core})(?!\w)")
def swap(text, said, other):
    return span_pattern(said).sub(lambda m: other.strip(), text)
def fit(llm, docs, said, other):
    pat = span_pattern(said)
    texts = [t for t in map(passage_text, docs) if pat.search(t)]
    if not (texts and normalize_answer(said) and normalize_answer(other)) or answer_kind(said) != answer_kind(other):
        return float("-inf"), []
    swapped = [swap(t, said, other) for t in texts]
    s = llm.logprob([FIT_PREFIX] * (2 * len(texts)), texts + swapped, reduce="sum")
    return sum(b - a for a, b in zip(s[: len(texts)], s[len(texts):])) / len(texts), swapped
docs = {}
for item in read_items(SUITE):
    for p in item["passages"]:
        docs[hashlib.sha1(f"{p['title']}\n{p['text']}".encode()).hexdigest()[:16]] = Document(page_content=p["text"], metadata={"title": p["title"]})
rows = {}
for d in sys.argv[2:]:
    for f in glob.glob(f"{d}/s*/results.jsonl") + glob.glob(f"{d}/results.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if r["method"] == "astute": rows[r["question_id"]] = r
llm = load_llm(backend="llamacpp", device="cpu")
for l in open(sys.argv[1]):
    p = json.loads(l)
    a = rows[p["q"]]["assessment"]
    ds = [docs[s] for s in a["groups"][0]["sources"]]
    new, sw = fit(llm, ds, p["said"], p["rival"])
    changed = any(swap(passage_text(d), p["said"], p["rival"]) != re.sub(rf"(?<!\w){re.escape(p['said'].strip())}(?!\w)", p["rival"].strip(), passage_text(d), flags=re.I) for d in ds)
    print(json.dumps({**p, "span_fit": round(new, 2), "span_changed": changed, "example": sw[0][:160] if sw and changed else ""}), flush=True)
