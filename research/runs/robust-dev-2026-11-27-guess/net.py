"""Contrast takes on a half's astute records: current rule (fit>=3, fam<=10) vs the net rule (also fit-max(fam,0)>=3)."""
import json, sys
from causalrag.eval.metrics import containment
paths=sys.argv[1:]
recs={}
for p in paths:
    for l in open(p):
        r=json.loads(l); recs[(r['method'],r['question_id'])]=r
for (m,q),r in sorted(recs.items()):
    if m!='astute': continue
    A=r['assessment'] or {}
    f=A.get('fit'); fam=A.get('familiarity')
    if f is None or fam is None or f<3 or fam>10: continue
    s=recs[('standard_rag',q)]; n=recs.get(('no_rag',q))
    net=f-max(fam,0)
    bel=A.get('believed') or ''
    print(f"{'BLOCK' if net<3 else 'keep '} fit={f:6.2f} fam={fam:6.2f} net={net:6.2f} {q:34s} route={A['route']:9s} astute={r['acc']} std={s['acc']} nr={n['acc'] if n else '-'} believed_right={containment(bel, r['answers']):.0f} said={A['groups'][0]['answer'][:22]!r} rival={bel[:22]!r}")
