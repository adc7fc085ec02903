"""Where the closed-book answer is sure (>= -0.5) and differs from the joint reading: how often is it right,
split by the pre-override evidence shape (scattered lone look-alikes with the joint reading stated, or other)."""
import json, sys, glob, collections
from causalrag.text import same_answer, states, normalize_answer
from causalrag.eval.metrics import containment
items = {}
for f in ['/work/main/causalrag/data/robust/suite.jsonl', '/work/runs/newtraps-dev.jsonl', '/work/runs/newtraps-test.jsonl']:
    for l in open(f):
        it = json.loads(l); items[it['id']] = it
sets = {'dev': glob.glob('/work/runs/dev-astute-head/s*/results.jsonl') + glob.glob('/work/runs/nt-dev/s*/results.jsonl'),
        'test': ['/work/runs/conf-merged/results.jsonl']}
for name, paths in sets.items():
    seen = set(); tally = collections.defaultdict(lambda: [0, 0, 0])
    for p in paths:
        for l in open(p):
            r = json.loads(l)
            if r['method'] != 'astute' or r['question_id'] in seen: continue
            seen.add(r['question_id'])
            a = r['assessment'] or {}
            closed, std = a.get('closed_book') or '', a.get('standard') or ''
            if not normalize_answer(closed) or (a.get('confidence') or -9) < -0.5 or same_answer(closed, std): continue
            groups = a.get('groups') or []
            sizes = [len(g['sources']) for g in groups]
            scattered = len(groups) >= 2 and not (sizes[0] >= 2 and sizes[0] > sizes[1])
            singletons = all(n < 2 for n in sizes)
            it = items[r['question_id']]
            stated = any(states(p['title'] + '. ' + p['text'], std, r['question']) for p in it['passages'])
            kind = 'lone-lookalikes' if scattered and singletons and stated else ('no-groups' if not groups else 'other')
            t = tally[kind]; t[0] += 1; t[1] += containment(closed, r['answers']); t[2] += containment(std, r['answers'])
            if '-v' in sys.argv: print(name, kind, r['question_id'], repr(closed), a.get('confidence'), repr(std), containment(closed, r['answers']), containment(std, r['answers']), sizes, stated)
    for k, (n, c, s) in tally.items():
        print(f"{name}: {k:16} n={n:3}  closed-book right {c:.0f}  joint reading right {s:.0f}")
