"""Agree/conflict shapes where the model's closed-book answer differs from what the passages say: its
confidence, the contrast's fit, and which side is right (dev and test, astute records)."""
import json, sys, glob
from causalrag.eval.metrics import containment
from causalrag.text import same_answer, normalize_answer
sets = {'dev': glob.glob('/work/runs/dev-astute-head/s*/results.jsonl') + glob.glob('/work/runs/nt-dev/s*/results.jsonl'),
        'test': ['/work/runs/conf-merged/results.jsonl']}
for name, paths in sets.items():
    seen = set(); rows = []
    for p in paths:
        for l in open(p):
            r = json.loads(l)
            if r['method'] != 'astute' or r['question_id'] in seen: continue
            seen.add(r['question_id'])
            a = r['assessment'] or {}
            g = a.get('groups') or []
            closed = a.get('closed_book') or ''
            if not g or not normalize_answer(closed) or same_answer(closed, g[0]['answer']): continue
            if len(g) > 1 and any(same_answer(closed, x['answer']) for x in g[1:]): continue  # minority cases elsewhere
            said = g[0]['answer']
            rows.append((a.get('confidence'), a.get('fit'), containment(closed, r['answers']), containment(said, r['answers']), r['condition'], r['question_id'], closed, said, len(g[0]['sources']), len(g)))
    rows.sort(key=lambda x: -(x[0] or -9))
    print('==', name)
    for c, f, cr, sr, cond, q, closed, said, n, ng in rows:
        if cr or sr:
            print(f"{c:8.3f} fit={'%.2f' % f if f is not None else '  -  ':>6} closed_right={cr:.0f} group_right={sr:.0f} {cond:24} {q:28} {closed!r:22} vs {said!r} ({n} src, {ng} groups)")
