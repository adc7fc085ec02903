"""Replay triage's rules on calibration records with `stated` recomputed by `text.states_part`.

The records hold the joint reading and the retrieved passages' ids; the passages' texts come from the run's
dataset. Prints, per passage style and condition, the wins and losses against standard RAG's answer under the
recorded `stated` (old) and the recomputed one (new), then every question whose route or answer changes.

    python research/scripts/stated_replay.py RUN [RUN ...]      # POLICY=policy.json for another rules policy
    WRITE=OUT python research/scripts/stated_replay.py RUN       # also write RUN restated, for `causalrag replay`
"""

import json
import os
import sys
from collections import defaultdict

from causalrag.eval.calibrate import condition_of, final_answer, read_rows, style_of
from causalrag.eval.conditions import load_examples
from causalrag.eval.metrics import containment
from causalrag.nodes.decide import RulePolicy
from causalrag.text import states_part


def main(folders: list[str]) -> None:
    """Print the replay's table and changes for these calibration run folders."""
    chosen = os.environ.get("POLICY")
    policy = RulePolicy(**json.load(open(chosen))["thresholds"]) if chosen else RulePolicy()
    table = defaultdict(lambda: [0, 0, 0, 0, 0])  # questions, old wins, old losses, new wins, new losses
    changed, restated = [], []
    for folder in folders:
        spec = json.load(open(f"{folder}/config.json"))["dataset"]
        examples = {e.id: e for e in load_examples(spec)}
        for row in read_rows(folder):
            texts = {p.id: p.text for p in examples[row["question_id"]].passages}
            docs = [texts[d["id"]] for d in row["documents"] if d["id"] in texts]
            evidence = row["evidence"]
            stated = any(states_part(t, evidence.get("standard", ""), row["question"]) for t in docs)
            restated.append({**row, "evidence": {**evidence, "stated": stated}})
            keep = containment(evidence.get("standard", ""), row["answers"])
            route0, answer0 = final_answer(row, policy)
            route1, answer1 = final_answer(restated[-1], policy)
            old, new = containment(answer0, row["answers"]), containment(answer1, row["answers"])
            t = table[(style_of(row), condition_of(row))]
            t[0] += 1
            t[1] += old > keep
            t[2] += old < keep
            t[3] += new > keep
            t[4] += new < keep
            if (route0, answer0) != (route1, answer1):
                changed.append((row["question_id"], evidence.get("stated"), stated, route0, route1, old, new,
                                evidence.get("standard", "")[:70], answer0[:30], answer1[:30]))
    for (style, condition), (n, ow, ol, nw, nl) in sorted(table.items()):
        print(f"{style:6} {condition:26} n={n:3}  old {ow:2}/{ol:2}  new {nw:2}/{nl:2}")
    print(len(changed), "changed (id, stated old, new, route old, new, right old, new, joint reading, answer old, new)")
    for c in changed:
        print(c)
    if out := os.environ.get("WRITE"):
        os.makedirs(out, exist_ok=True)
        with open(f"{folders[0]}/config.json") as f, open(f"{out}/config.json", "w") as g:
            g.write(f.read())
        with open(f"{out}/results.jsonl", "w") as g:
            g.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in restated)


if __name__ == "__main__":
    main(sys.argv[1:])
