"""Contrast takes of the model's own answer: its confidence, right or wrong."""
import json, sys
from causalrag.eval.metrics import containment
from causalrag.text import same_answer
recs={}
for p in sys.argv[1:]:
    for l in open(p):
        r=json.loads(l); recs[(r['method'],r['question_id'])]=r
rows=[]
for (m,q),r in sorted(recs.items()):
    if m!='astute': continue
    A=r['assessment'] or {}
    f=A.get('fit'); fam=A.get('familiarity')
    if f is None or f < -100: continue
    cb=A.get('closed_book') or ''
    groups=A.get('groups') or []
    rival_is_cb = not any(same_answer(cb,g['answer']) for g in groups)
    if not rival_is_cb: continue
    s=recs[('standard_rag',q)]
    taken = A['route']=='knowledge' and f>=3
    rows.append((A['confidence'],q,f,fam,taken,containment(cb,r['answers']),r['acc'],s['acc']))
rows.sort()
for c,q,f,fam,t,cbr,a,s in rows:
    if f>=3: print(f"conf={c:6.2f} fit={f:6.2f} fam={fam if fam is None else round(fam,2)} {'TAKEN' if t else 'not  '} cb_right={cbr:.0f} astute={a} std={s} {q}")
