"""Closed-book accuracy by confidence band, per card question (the closed-book answer depends on the question alone)."""
import json, glob, collections
from causalrag.eval.metrics import containment
paths = glob.glob('/work/runs/dev-astute-head/s*/results.jsonl') + glob.glob('/work/runs/nt-dev/s*/results.jsonl') + ['/work/runs/conf-merged/results.jsonl']
qs = {}
for p in paths:
    for l in open(p):
        r = json.loads(l)
        a = r.get('assessment') or {}
        if r['method'] != 'astute' or a.get('confidence') is None: continue
        qs[r['question']] = (a['confidence'], containment(a.get('closed_book') or '', r['answers']), r['question_id'].split('-')[0][0])
bands = [(-0.5, 1), (-0.75, -0.5), (-1.0, -0.75), (-1.25, -1.0), (-1.5, -1.25), (-2, -1.5), (-99, -2)]
for kind in ('c', 't', 'm', 'h', None):
    print('== questions from', {'c': 'cards', 't': 'traps', 'm': 'multihop', 'h': 'hotpotqa', None: 'all'}[kind])
    for lo, hi in bands:
        xs = [ok for c, ok, k in qs.values() if lo <= c < hi and (kind is None or k == kind)]
        if xs: print(f"  [{lo:5}, {hi:4}) n={len(xs):3} right={sum(xs):.0f} ({sum(xs)/len(xs):.2f})")
