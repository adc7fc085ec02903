import numpy as np, torch
from causalrag.corpus import demo_passages, demo_questions
from causalrag.tools.backends.llamacpp import LlamaCppLLM
from causalrag.tools.shortlist import Shortlist, ranking
torch.set_num_threads(2)
llm = LlamaCppLLM(shortlist=True)
sl = llm.shortlist
qs = demo_questions()
passages = [f" {p.text}" for p in demo_passages()[100:124]]
rows, where, states = [], [], []
for i, p in enumerate(passages):
    rows.append(llm._tokens(f"Question: {qs[i % len(qs)]['question']}\nPassage:", start=True) + llm._tokens(p, start=False))
def score(output, readers):
    states.extend([output] * len(readers)); where.extend(readers)
llm._fill(rows, [range(len(r) - len(llm._tokens(passages[i], start=False)) - 1, len(r) - 1) for i, r in enumerate(rows)], score, hidden=True, reuse=False)
H = sl._hidden(np.stack(states)); raw = np.stack(states)
W = [(r, p + 1) for r, p in where]
V = llm.n_vocab
allrows = sl._rows(np.arange(V))
full = torch.cat([torch.logsumexp(sl._project(H[s:s+256], allrows), -1) for s in range(0, len(H), 256)]).numpy()
targets = np.array([rows[r][p] for r, p in W])
tl = (H * allrows[torch.as_tensor(targets)]).sum(-1).numpy() if sl.softcap is None else None
tl = np.array([sl._project(H[k:k+1], allrows[targets[k]:targets[k]+1])[0,0].item() for k in range(len(W))])
exact = tl - full
print("positions", len(W))
rank = ranking(llm.path.stem, lambda: None)
for size, m in ((65536, 0), (65536, 16384), (49152, 16384), (32768, 32768), (49152, 8192)):
    v = Shortlist(rank[:size], sl._rows, softcap=sl.softcap, prepare=sl.prepare)
    short = np.array(v.logprobs(raw, rows, W))
    est_norm = tl - short
    if m:
        rest = np.setdiff1d(np.arange(V), v.fixed)
        sample = np.sort(np.random.default_rng(0).choice(rest, m, replace=False))
        logits = torch.cat([sl._project(H[s:s+256], allrows[torch.as_tensor(sample)]) for s in range(0, len(H), 256)])
        for k, (r, p) in enumerate(W):
            own = np.isin(sample, rows[r][: p + 1])
            if own.any(): logits[k, torch.as_tensor(own)] = -torch.inf
        est_norm = np.logaddexp(est_norm, (torch.logsumexp(logits, -1) + np.log(len(rest) / m)).numpy())
    d = (tl - est_norm) - exact
    # per-passage sums (as CIS sums a passage's tokens)
    sums = {}
    for k, (r, p) in enumerate(W): sums[r] = sums.get(r, 0) + d[k]
    s = np.array(list(sums.values()))
    print(f"fixed {size} + tail {m}: mean|d| {np.abs(d).mean():.4f} mean {d.mean():.4f} p95 {np.quantile(np.abs(d), .95):.4f} max {np.abs(d).max():.3f}; passage sums mean {s.mean():.3f} sd {s.std():.3f} max {np.abs(s).max():.3f}")
print("---- fixed ∪ every token of every row in the call")
alltok = np.unique(np.concatenate([np.array(r) for r in rows]))
for size, m in ((65536, 0), (65536, 16384), (49152, 16384)):
    v = Shortlist(np.union1d(rank[:size], alltok), sl._rows, softcap=sl.softcap, prepare=sl.prepare)
    short = np.array(v.logprobs(raw, rows, W))
    est_norm = tl - short
    if m:
        rest = np.setdiff1d(np.arange(V), v.fixed)
        sample = np.sort(np.random.default_rng(0).choice(rest, m, replace=False))
        logits = torch.cat([sl._project(H[s:s+256], allrows[torch.as_tensor(sample)]) for s in range(0, len(H), 256)])
        est_norm = np.logaddexp(est_norm, (torch.logsumexp(logits, -1) + np.log(len(rest) / m)).numpy())
    d = (tl - est_norm) - exact
    sums = {}
    for k, (r, p) in enumerate(W): sums[r] = sums.get(r, 0) + d[k]
    s = np.array(list(sums.values()))
    print(f"fixed {size}+{len(alltok)} call tokens + tail {m}: mean|d| {np.abs(d).mean():.4f} mean {d.mean():.4f} p95 {np.quantile(np.abs(d), .95):.4f} max {np.abs(d).max():.3f}; passage sums mean {s.mean():.3f} sd {s.std():.3f} max {np.abs(s).max():.3f}")
    big = np.argsort(-np.abs(d))[:5]
    for k in big[:3]:
        r, p = W[k]
        print("   spike", round(d[k], 3), repr(llm._model.detokenize(rows[r][max(0,p-8):p+1]).decode(errors='replace')))
print("---- spikes vs the shortlist's own top probability")
v = Shortlist(rank[:65536], sl._rows, softcap=sl.softcap, prepare=sl.prepare)
short = np.array(v.logprobs(raw, rows, W)); d = short - exact
L = torch.cat([sl._project(H[s:s+256], v._fixed_rows) for s in range(0, len(H), 256)])
top = (L.max(-1).values - torch.logsumexp(L, -1)).numpy()  # log of top shortlist prob within the shortlist
for q in (0.1, 0.2, 0.3, 0.5):
    thr = np.quantile(top, q)
    sel = top <= thr
    dd = np.where(sel, 0.0, d)
    sums = {}
    for k, (r, p) in enumerate(W): sums[r] = sums.get(r, 0) + dd[k]
    s = np.array(list(sums.values()))
    print(f"exact where top shortlist prob in lowest {q:.0%}: mean|d| {np.abs(dd).mean():.4f} max {np.abs(dd).max():.3f} (of |d|>0.1: {np.sum(sel & (np.abs(d)>0.1))}/{np.sum(np.abs(d)>0.1)} caught); sums sd {s.std():.3f} max {np.abs(s).max():.3f}")
