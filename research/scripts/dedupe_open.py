"""python research/scripts/dedupe_open.py OUT RUN [RUN ...]: open-setting runs made before d89b801 (one row per condition of a card's
question, all with the same collection) as the runner asks them now: one row per distinct question, under its
merged id and condition, misled against every twin's planted answers. Reports how often twins' answers differ."""
import json, sys, collections, pathlib
from causalrag.eval.conditions import load_examples
from causalrag.eval.settings import distinct_questions
from causalrag.eval.metrics import containment
out = pathlib.Path(sys.argv[1]); runs = sys.argv[2:]
rows = [json.loads(l) for r in runs for l in open(f"{r}/results.jsonl")]
cfg = json.load(open(f"{runs[0]}/config.json"))
examples = load_examples(cfg["dataset"]); order = {e.id: i for i, e in enumerate(examples)}
merged = {(m.question, tuple(m.answers)): m for m in distinct_questions(examples)}
by_id = {m.id: m for m in merged.values()}
groups = collections.defaultdict(list)
for r in rows:
    m = merged[(r["question"], tuple(r["answers"]))]
    groups[(r["method"], m.id, r["inject"])].append(r)
differ = collections.Counter(); total = collections.Counter(); keep = []
for (method, mid, k), twins in sorted(groups.items()):
    twins.sort(key=lambda r: order[r["question_id"]])
    total[method] += 1
    if len({t["prediction"] for t in twins}) > 1: differ[method] += 1
    r = dict(twins[0]); m = by_id[mid]
    r.update(question_id=mid, condition=m.condition, key=f"{method}|K={k}|{mid}",
             misled=containment(r["prediction"], m.wrong_answers) if m.wrong_answers and not k else r["misled"])
    keep.append(r)
out.mkdir(parents=True, exist_ok=True)
cfg["methods"] = sorted({r["method"] for r in keep}, key=lambda x: (x != "standard_rag", x))
cfg["shard"] = None
json.dump(cfg, open(out / "config.json", "w"), indent=2)
with open(out / "results.jsonl", "w") as f:
    for r in keep: f.write(json.dumps(r) + "\n")
print(out, len(keep), "rows;", {m: f"{total[m]} questions, twins' answers differ on {differ[m]}" for m in total})
