import json, sys, collections
rows = json.load(open(sys.argv[1]))
def evaluate(name, pick):
    won = lost = 0; bycond = collections.Counter(); details=[]
    for r in rows:
        g = pick(r)
        if g is None: continue
        a = g["acc"]
        if a > r["pred_acc"]: won += 1; bycond[r["cond"]] += 1; details.append(("+", r["id"]))
        elif a < r["pred_acc"]: lost += 1; bycond[r["cond"]] -= 1; details.append(("-", r["id"]))
    print(f"{name}: won {won} lost {lost} {dict(bycond)}")
    return details
def top(key, margin=0.0):
    def pick(r):
        gs = sorted(r["groups"], key=key, reverse=True)
        if len(gs) < 2 or key(gs[0]) - key(gs[1]) < margin: return None
        return gs[0]
    return pick
print(len(rows), "rows; std right", sum(r["std_acc"] for r in rows), "pred right", sum(r["pred_acc"] for r in rows))
print("oracle any group right:", sum(any(g["acc"] for g in r["groups"]) for r in rows))
for m in (0, 2, 5, 10):
    evaluate(f"max cis margin {m}", top(lambda g: g["cis"], m))
for m in (0, .05, .1, .2):
    evaluate(f"max cis/token margin {m}", top(lambda g: g["cis"] / g["n"], m))
evaluate("max cond/token", top(lambda g: g["cond"] / g["n"]))
for m in (0, .25, .5, 1, 2):
    evaluate(f"max rel margin {m}", top(lambda g: g["rel"], m))
