"""style_rows.py PAIRED_CSV METHOD[,METHOD]: one Markdown row per method (clean, conflict, misled, worst-case Acc, all)
from a `causalrag report --against` paired.csv, then the baseline's counts and accuracies."""
import csv, sys
def f(x):
    x=float(x); s=f"{abs(x):.2f}"[1:]
    return "±.00" if abs(x)<0.005 else ("+" if x>0 else "−")+s
def cell(r, ci=False):
    if r is None: return "–"
    lo,hi=float(r['d_acc_low'] or 0),float(r['d_acc_high'] or 0)
    core=f(r['d_acc'])+(f" [{f(lo)}, {f(hi)}]" if ci else "")
    if r['d_acc_low'] and (lo>0 or hi<0): core=f"**{core}**"
    return f"{core} ({r['wins']}/{r['losses']})"
rows=list(csv.DictReader(open(sys.argv[1])))
methods=sys.argv[2].split(',')
get=lambda m,c:next((x for x in rows if x['method']==m and x['condition']==c and x['inject']=='0'),None)
for m in methods:
    cl,co,wc,al=(get(m,c) for c in ('clean','conflict','worst_case','all'))
    print(f"| {m} | {cell(cl)} | {cell(co)} | {float(co['misled']):.2f} | {float(wc['acc']) if wc else float('nan'):.2f} | {cell(al,1)} |")
r=get(methods[0],'all'); co=get(methods[0],'conflict'); cl=get(methods[0],'clean'); wc=get(methods[0],'worst_case')
print('std n/acc: clean', cl['n'], cl['base_acc'], 'conflict', co['n'], co['base_acc'], co['base_misled'], 'worst', wc and (wc['n'], wc['base_acc']), 'all', r['n'], r['base_acc'])
