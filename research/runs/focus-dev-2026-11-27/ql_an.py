import json, sys
from collections import Counter
from causalrag.text import states, normalize_answer
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open("/work/runs/s50/dev/all.jsonl")}
rows = json.load(open(sys.argv[1]))
key = sys.argv[2] if len(sys.argv) > 2 else "ql"
answer = sys.argv[3] if len(sys.argv) > 3 else "lone"  # "lone": the top passage's own reading; "choice": the scored choice
def texts(rid):
    r = recs[rid]; item = suite[rid]
    title_of = {d["id"]: d["title"] for d in r["documents"]}
    by_title = {p["title"]: p for p in item["passages"]}
    return [title_of[g["sources"][0]] + ". " + by_title[title_of[g["sources"][0]]]["text"] for g in r["assessment"]["groups"]]
def quotes(text, q): return normalize_answer(q) in normalize_answer(text)
for stated_rule in (True, False):
  for m in (0, 1, 2, 3, 4):
    for gbar in (0.5, 1, 2, 3, 99):
        won = lost = 0; by = Counter(); det = []; n = 0
        for r in rows:
            t = texts(r["id"]); q = recs[r["id"]]["question"]
            idx = [i for i in range(len(t)) if not quotes(t[i], q)]
            if len(idx) < 2: continue
            order = sorted(idx, key=lambda i: -r["groups"][i][key])
            g = [r["groups"][i] for i in order]
            if g[0][key] - g[1][key] < m: continue
            a, b = order[:2]
            pairs = [r["ql_pairs"].get(f"{a},{b}"), r["ql_pairs"].get(f"{b},{a}")]
            if None in pairs: print("missing pair", r["id"]); continue
            if max(pairs) - g[0][key] >= gbar: continue
            if stated_rule and states(t[order[0]], r["standard"], q): continue
            n += 1
            new = r["choice_mean_acc"] if answer == "choice" else g[0]["acc"]; old = r["pred_acc"]
            if new > old: won += 1; by[r["cond"]] += 1; det.append("+" + r["id"])
            if new < old: lost += 1; by[r["cond"]] -= 1; det.append("-" + r["id"])
        print(f"stated={stated_rule} margin {m} pairgain<{gbar}: taken {n} won {won} lost {lost}", dict(by))
        if len(sys.argv) > 4: print("    ", " ".join(det))
