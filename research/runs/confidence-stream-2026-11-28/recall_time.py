import json, time
from causalrag.tools.llm import load_llm
from causalrag.nodes.triage import closed_book_answer, confidence
llm = load_llm(backend="llamacpp")
qs = [json.loads(l)["question"] for l in open("causalrag/data/robust/suite.jsonl")][5::20][:30]
t = {"stream": 0.0, "memo": 0.0, "decoded": 0.0}
for q in qs:
    s = time.perf_counter(); a = closed_book_answer(llm, q, 24); t["stream"] += time.perf_counter() - s
    s = time.perf_counter(); confidence(llm, q, a); t["memo"] += time.perf_counter() - s
    llm._streamed = None
    s = time.perf_counter(); confidence(llm, q, a); t["decoded"] += time.perf_counter() - s
n = len(qs)
print(f"{n} questions, s/q: closed-book answer {t['stream']/n:.3f}, confidence read from the stream {t['memo']/n:.4f}, decoded {t['decoded']/n:.4f}")
