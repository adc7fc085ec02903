"""clustered.py RUN [RUN ...]: triage − standard_rag over questions in several passage styles, by question.

METHOD=NAME for another method of the runs (a replayed run's ``triage[NAME]``).

The 95 % BCa interval resamples questions (each with all its styles' renderings), not question-style rows.

A question's renderings in the clean, news, web and long styles share its facts and often its answer, so
resampling the rows as if independent (as `causalrag report` does over a pooled run) narrows the interval.
"""

import json
import os
import sys
from collections import defaultdict

import numpy as np
from scipy import stats

from causalrag.eval.report import CONDITION_GROUPS

METHOD = os.environ.get("METHOD", "triage")
rows = [json.loads(line) for folder in sys.argv[1:] for line in open(f"{folder}/results.jsonl")]
acc = {(r["method"], r["question_id"]): float(r["acc"]) for r in rows}
groups = {**{g: set(cs) for g, cs in CONDITION_GROUPS.items()}, "all": None}
for group, conditions in groups.items():
    per_question = defaultdict(list)
    for r in rows:
        if r["method"] == METHOD and (conditions is None or r["condition"] in conditions):
            base = acc.get(("standard_rag", r["question_id"]))
            if base is not None:
                per_question[r["question_id"].split("@")[0]].append(float(r["acc"]) - base)
    means = np.array([np.mean(v) for v in per_question.values()])
    rendered = sum(len(v) for v in per_question.values())
    ci = stats.bootstrap((means,), np.mean, n_resamples=2000, method="BCa",
                         random_state=np.random.default_rng(0)).confidence_interval
    print(f"{group}: {len(means)} questions ({rendered} renderings): ΔAcc {means.mean():+.3f} "
          f"[{ci.low:+.3f}, {ci.high:+.3f}]")
