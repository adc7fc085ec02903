"""Every loss of a paper method against standard RAG, attributed to the step that causes it (issue 54).

A loss is a question standard RAG answers right and the method wrong, in the same run. Each loss is put in
the first class that fits, read from the run's records and the question's own passage pool:

* ``ordering``: a reranking method (cis, moi) put a passage with no right answer first where standard RAG's
  retrieval had a right one first; the 270M model reading the reranked passages together follows the first.
* ``selection``: a reranking method kept fewer right passages (the suite's gold titles) than standard RAG's
  top k (the open setting, where it chooses k of N candidates).
* ``memory``: the answer cites only passages the method wrote from the model's own knowledge (Astute's
  internal passages, §3.1).
* ``form``: the answer overlaps a right one (F1 > 0), names no wrong answer, and is not accepted as right
  (too long, a part of it).
* ``majority``: more wrong passages of the pool name the method's answer than there are right passages (the
  suite's ``correct`` and ``support`` roles); a method that answers with what most sources confirm (retro's
  Answerer, CF-RAG's synthesis, Astute's consolidated groups) takes it.
* ``minority``: some wrong passages name the answer, no more than there are right ones.
* ``no passage``: no wrong passage names the answer (an answer from memory, a copied example, a mis-read
  span of a right passage).

In the open setting the pool is everything the collection holds about the question: the passages of its twins
(a card's question in every condition), which the open setting asks once (``distinct_questions``).

Usage: ``python research/scripts/losses.py RUN_DIR [RUN_DIR ...] [--against standard_rag]``; prints a
Markdown table of loss classes per method and condition, then every loss.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from causalrag.eval.conditions import load_examples
from causalrag.eval.settings import distinct_questions
from causalrag.text import mentions

RERANKERS = {"cis", "moi"}
RIGHT = {"robust:correct", "robust:support"}


def records(dirs: list[str]) -> list[dict]:
    """Every record of the run folders (results*.jsonl in each)."""
    rows = []
    for d in dirs:
        for f in sorted(Path(d).glob("results*.jsonl")):
            rows += [json.loads(line) for line in f.open(encoding="utf-8") if line.strip()]
    return rows


def loss_class(method: str, mine: dict, base: dict, pool: list[tuple[str, str]], wrong: list[str]) -> str:
    """The step a loss comes from (the module docstring's classes, first that fits)."""
    first_right = [bool(r["documents"]) and r["documents"][0].get("gold") for r in (mine, base)]
    if method in RERANKERS and first_right == [False, True]:
        return "ordering"
    if method in RERANKERS and sum(d.get("gold", False) for d in mine["documents"]) < sum(
            d.get("gold", False) for d in base["documents"]):
        return "selection"
    cited = [str(d.get("id") or "") for d in mine["documents"]]
    if cited and all(c.startswith("internal") for c in cited):
        return "memory"
    if (mine.get("f1") or 0) > 0 and not mine.get("misled"):
        return "form"
    # a planted answer is named in several forms ("Max Planck", "Planck"): count a passage naming any of them
    said = wrong if mine.get("misled") else [mine["prediction"]] if mine["prediction"] else []
    naming = sum(any(mentions(a, t) for a in said) for t, role in pool if role not in RIGHT)
    right = sum(role in RIGHT for _, role in pool)
    if naming == 0:
        return "no passage"
    return "majority" if naming > right else "minority"


def main() -> None:
    """Print the loss classes per method and condition, then each loss."""
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--against", default="standard_rag")
    args = ap.parse_args()
    rows = records(args.runs)
    spec = rows[0]["dataset"]
    examples = load_examples(spec)
    if rows[0].get("setting") == "open":
        # one collection: what it holds about a question is every passage of its twins (a card's question in
        # every condition), as asked once since the open setting merges them; runs made before that asked each
        # twin under its own id
        pools = {}
        for merged in distinct_questions(examples):
            pool = ([(f"{p.title}: {p.text}", p.source) for p in merged.passages], merged.wrong_answers)
            twins = [ex.id for ex in examples if (ex.question, ex.answers) == (merged.question, merged.answers)]
            pools.update(dict.fromkeys([merged.id, *twins], pool))
    else:
        pools = {ex.id: ([(f"{p.title}: {p.text}", p.source) for p in ex.passages], ex.wrong_answers)
                 for ex in examples}
    by = {(r["method"], r["question_id"], r["inject"]): r for r in rows}
    losses: dict[str, list[tuple[str, str, dict, dict]]] = collections.defaultdict(list)
    for (method, qid, k), mine in sorted(by.items()):
        base = by.get((args.against, qid, k))
        if method == args.against or base is None or not (base["acc"] and not mine["acc"]):
            continue
        losses[method].append((loss_class(method, mine, base, *pools[qid]), mine["condition"], mine, base))
    classes = ["ordering", "selection", "memory", "form", "majority", "minority", "no passage"]
    print(f"Losses against {args.against} ({spec}), by the step they come from\n")
    print("| method | losses | " + " | ".join(classes) + " | by condition |")
    print("|---|---|" + "---|" * len(classes) + "---|")
    for method, items in losses.items():
        count = collections.Counter(c for c, *_ in items)
        conds = collections.Counter(cond for _, cond, *_ in items)
        cells = " | ".join(str(count.get(c, 0)) for c in classes)
        where = ", ".join(f"{c} {n}" for c, n in conds.most_common())
        print(f"| {method} | {len(items)} | {cells} | {where} |")
    for method, items in losses.items():
        print(f"\n## {method}\n")
        for cls, cond, mine, base in items:
            print(f"- {mine['question_id']} ({cond}): {cls}; {mine['prediction']!r} (standard RAG "
                  f"{base['prediction']!r}; right {mine['answers'][0]!r})")


if __name__ == "__main__":
    main()
