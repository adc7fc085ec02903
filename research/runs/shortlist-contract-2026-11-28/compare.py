import json, sys, collections
def load(*folders):
    d = {}
    for f in folders:
        for l in open(f + "/results.jsonl"):
            r = json.loads(l); d[(r["method"], r["question_id"])] = r
    return d
a, b = load(*sys.argv[1].split(",")), load(*sys.argv[2].split(","))
methods = list(dict.fromkeys(m for m, _ in a))
for m in methods:
    keys = [k for k in a if k[0] == m and k in b]
    if not keys: continue
    same = sum(a[k]["prediction"] == b[k]["prediction"] for k in keys)
    acc_a = sum(a[k]["acc"] for k in keys); acc_b = sum(b[k]["acc"] for k in keys)
    print(f"{m:13s} same {same}/{len(keys)}  acc {acc_a/len(keys):.3f} -> {acc_b/len(keys):.3f}  sec {sum(a[k]['seconds'] for k in keys):.0f} -> {sum(b[k]['seconds'] for k in keys):.0f}")
    for k in keys:
        if a[k]["prediction"] != b[k]["prediction"]:
            print(f"    {k[1]}: {a[k]['prediction']!r} ({a[k]['acc']:.0f}) -> {b[k]['prediction']!r} ({b[k]['acc']:.0f}) gold {a[k]['answers'][0]!r} route {a[k].get('route')}->{b[k].get('route')}")
