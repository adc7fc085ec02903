"""The figures of research/notebook.md, 2026-11-27 (night), recomputed from astute's run records (not in the
repository): the dev half at 2026-11-26 (two shards) with the 21 dev traps added since, and the test half of
2026-11-27 (evening). Run with the repository on PYTHONPATH: ``python checks.py [bands|lone|unanimous]``."""
import glob
import json
import sys

from causalrag.eval.metrics import containment
from causalrag.text import normalize_answer, same_answer, states

RUNS = "/work/runs"
HALVES = {
    "dev": glob.glob(f"{RUNS}/dev-astute-head/s*/results.jsonl") + glob.glob(f"{RUNS}/nt-dev/s*/results.jsonl"),
    "test": [f"{RUNS}/conf-merged/results.jsonl"],
}
ITEMS = {}
for path in ["causalrag/data/robust/suite.jsonl", f"{RUNS}/newtraps-dev.jsonl", f"{RUNS}/newtraps-test.jsonl"]:
    for line in open(path):
        item = json.loads(line)
        ITEMS[item["id"]] = item


def records(half):
    """astute's record of each question of a half, once."""
    seen = set()
    for path in HALVES[half]:
        for line in open(path):
            r = json.loads(line)
            if r["method"] == "astute" and r["question_id"] not in seen and r.get("assessment"):
                seen.add(r["question_id"])
                yield r


def bands():
    """Closed-book accuracy by confidence band and question kind (each question once)."""
    qs = {r["question"]: (r["assessment"]["confidence"], containment(r["assessment"]["closed_book"] or "", r["answers"]),
                          r["question_id"][0]) for half in HALVES for r in records(half)}
    edges = [(-0.5, 1), (-0.75, -0.5), (-1.0, -0.75), (-1.25, -1.0), (-99, -1.25)]
    for kind, name in [("c", "cards"), ("t", "traps"), ("m", "multihop"), ("h", "hotpotqa"), (None, "all")]:
        cells = []
        for lo, hi in edges:
            xs = [ok for c, ok, k in qs.values() if lo <= c < hi and kind in (None, k)]
            cells.append(f"[{lo}, {hi}) {sum(xs):.0f}/{len(xs)}")
        print(f"{name:9}", " | ".join(cells))


def lone():
    """Sure closed-book answers that differ from the joint reading where every source answers alone with its
    own answer and a passage states the joint reading's: which of the two is right."""
    for half in HALVES:
        n = closed_right = joint_right = 0
        for r in records(half):
            a = r["assessment"]
            closed, std, groups = a.get("closed_book") or "", a.get("standard") or "", a.get("groups") or []
            if not normalize_answer(closed) or a["confidence"] < -0.5 or same_answer(closed, std):
                continue
            lone_lookalikes = len(groups) >= 2 and all(len(g["sources"]) < 2 for g in groups)
            stated = any(states(f"{p['title']}. {p['text']}", std, r["question"]) for p in ITEMS[r["question_id"]]["passages"])
            if lone_lookalikes and stated:
                n += 1
                closed_right += containment(closed, r["answers"])
                joint_right += containment(std, r["answers"])
                print(f"  {half} {r['question_id']}: {closed!r} ({a['confidence']}) vs {std!r}")
        print(f"{half}: {n} questions, closed-book right {closed_right:.0f}, joint reading right {joint_right:.0f}")


def unanimous():
    """Every source that answers gives one answer (one group, >= 3 sources), the model's differs at a
    confidence from -1.0 to -0.5: which is right."""
    for half in HALVES:
        for r in records(half):
            a = r["assessment"]
            closed, groups = a.get("closed_book") or "", a.get("groups") or []
            if (len(groups) == 1 and len(groups[0]["sources"]) >= 3 and normalize_answer(closed)
                    and not same_answer(closed, groups[0]["answer"]) and -1.0 <= a["confidence"] < -0.5):
                print(f"  {half} {r['question_id']}: {closed!r} ({a['confidence']}) right={containment(closed, r['answers']):.0f}"
                      f" vs {groups[0]['answer']!r} right={containment(groups[0]['answer'], r['answers']):.0f}")


if __name__ == "__main__":
    {"bands": bands, "lone": lone, "unanimous": unanimous}[sys.argv[1] if len(sys.argv) > 1 else "bands"]()
