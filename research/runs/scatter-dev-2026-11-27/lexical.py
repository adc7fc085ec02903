import json, re, sys, collections
sys.path.insert(0, ".")
suite = {json.loads(l)["id"]: json.loads(l) for l in open("causalrag/data/robust/suite.jsonl")}
recs = {json.loads(l)["question_id"]: json.loads(l) for l in open(sys.argv[2])}
rows = json.load(open(sys.argv[1]))
STOP = set("the a an of in on at to for by with from and or is was are were be been which what who whom whose when where why how did does do that this it its as into than then there their his her he she they them one first".split())
def terms(t): return {w for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in STOP and len(w) > 2}
for margin in (1, 2):
    won = lost = 0; by = collections.Counter()
    for row in rows:
        r = recs[row["id"]]; item = suite[row["id"]]
        title_of = {d["id"]: d["title"] for d in r["documents"]}
        by_title = {p["title"]: p for p in item["passages"]}
        q = terms(r["question"])
        cov = []
        for g, rg in zip(r["assessment"]["groups"], row["groups"]):
            p = by_title[title_of[g["sources"][0]]]
            cov.append((len(q & terms(p["title"] + " " + p["text"])), rg))
        cov.sort(key=lambda x: -x[0])
        if len(cov) < 2 or cov[0][0] - cov[1][0] < margin: continue
        g = cov[0][1]
        if g["acc"] > row["pred_acc"]: won += 1; by[row["cond"]] += 1
        elif g["acc"] < row["pred_acc"]: lost += 1; by[row["cond"]] -= 1
    print("coverage margin", margin, "won", won, "lost", lost, dict(by))
