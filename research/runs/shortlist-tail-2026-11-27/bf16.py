import numpy as np, torch
from causalrag.corpus import demo_passages, demo_questions
from causalrag.tools.backends.llamacpp import LlamaCppLLM
torch.set_num_threads(2)
llm = LlamaCppLLM(shortlist=True); sl = llm.shortlist
qs = demo_questions(); passages = [f" {p.text}" for p in demo_passages()[100:108]]
rows, states = [], []
for i, p in enumerate(passages):
    rows.append(llm._tokens(f"Question: {qs[i]['question']}\nPassage:", start=True) + llm._tokens(p, start=False))
llm._fill(rows, [range(len(r) - len(llm._tokens(passages[i], start=False)) - 1, len(r) - 1) for i, r in enumerate(rows)], lambda o, rd: states.extend([o] * len(rd)), hidden=True, reuse=False)
H = sl._hidden(np.stack(states)); W = sl._fixed_rows
z32 = torch.logsumexp(H @ W.T, -1)
zb = torch.logsumexp((H.bfloat16() @ W.bfloat16().T).float(), -1)
print("bf16 normalizer |Δ| mean %.4f max %.4f over %d positions" % ((zb - z32).abs().mean(), (zb - z32).abs().max(), len(H)))
