"""Question-set conditions: what each question's passage pool holds, named in the dataset spec.

A spec is ``NAME[:PATH][?OPTION=VALUE&...]``, so a run's ``config.json`` records the condition and
runs under other conditions never mix:

* ``hotpotqa?swap=1`` (or ``demo?swap=1``, ``hotpotqa:PATH?swap=1``) — the **answer-swap conflict**:
  every gold paragraph of a question gets a twin in which the gold answer is swapped for one
  wrong answer of the same kind (a paragraph that does not state the answer gets a sentence
  asserting the wrong one; :mod:`causalrag.eval.inject`). Each fact then faces one contradicting
  version, and nothing in the text tells the two apart: a method must use other evidence or the
  model's own knowledge. ``swap=N`` adds N wrong answers, each with its twins.
* ``rgb:PATH?passages=5&noise=0.4&swapped=0&seed=0`` — RGB (Chen et al., 2024, "Benchmarking LLMs in
  RAG"; one JSON object per line with ``query``, ``answer``, ``positive``, ``negative`` and, in its
  counterfactual file, ``positive_wrong`` and ``fakeanswer``). Each question's pool holds
  ``passages`` passages: ``round(passages · noise)`` from ``negative`` (noise), ``swapped`` from
  ``positive_wrong`` (answer-swapped copies), the rest from ``positive``; drawn with a seed per
  question and shuffled. ``misled`` is scored against ``fakeanswer`` when swapped passages are in
  the pool. RGB is not bundled (its license is non-commercial): pass your own copy.
* ``robust?split=test&condition=all_wrong,no_relevant`` — the bundled robustness suite
  (``causalrag/data/robust/suite.jsonl``, :mod:`causalrag.eval.robust`): eight conditions of what a
  pool holds (clean single- and multi-hop, conflicts with the majority right or wrong, every passage
  wrong, correlation traps, planted instructions, no relevant passage) with a fixed dev/test split.
  ``split`` is ``dev``, ``test``, ``holdout``, ``holdout2`` or ``holdout3`` (default dev and test), ``condition``
  one or more names (default all), ``style`` one or more passage styles (``clean``, ``news``, ``web``, ``long``,
  or ``all``; default ``clean``: :mod:`causalrag.eval.styles`); each example carries its ``condition`` and ``style``.
  ``robust:PATH`` reads a suite file of the same format.
* ``conflict`` — the bundled handwritten conflict/trap/injection set
  (``causalrag/data/conflict_questions.jsonl``): 3 correct + 2 answer-swapped snippets per conflict
  question, distractor traps and instruction-carrying passages; ``misled`` against each row's
  ``wrong_answer``.

Every other spec is a plain :func:`causalrag.eval.datasets.load_dataset` set.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from causalrag.corpus import DATA
from causalrag.errors import CausalRAGError
from causalrag.eval.datasets import Example, load_dataset
from causalrag.eval.inject import asserted_answers, gold_paragraphs, with_distractors
from causalrag.eval.robust import SUITE, load_robust, read_items
from causalrag.tools.store import Passage

CONFLICT = DATA / "conflict_questions.jsonl"
RGB_OPTIONS = {"passages": int, "noise": float, "swapped": int, "seed": int}
SWAP_OPTIONS = {"swap": int, "seed": int}
ROBUST_OPTIONS = {"split": str, "condition": str, "style": str}


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split a dataset spec into its base and its options, each checked against the kind's options.

    ``"rgb:f.jsonl?noise=0.4"`` → ``("rgb:f.jsonl", {"noise": 0.4})``: each option's value has its own type
    (``RGB_OPTIONS``, ``ROBUST_OPTIONS``, ``SWAP_OPTIONS``).
    """
    base, _, query = spec.partition("?")
    known = RGB_OPTIONS if base.startswith("rgb:") else ROBUST_OPTIONS if _is_robust(base) else SWAP_OPTIONS
    options: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        if name not in known:
            raise CausalRAGError(
                f"Dataset option {name!r} is not one of {', '.join(known)} for {base!r}: see `causalrag eval --help`."
            )
        try:
            options[name] = known[name](value)
        except ValueError:
            raise CausalRAGError(f"Dataset option {name}={value!r} is not a {known[name].__name__}.") from None
    return base, options


def load_examples(spec: str) -> list[Example]:
    """The examples of ``spec`` with each question's pool built as its condition says."""
    base, options = parse_spec(spec)
    if base.startswith("rgb:"):
        return load_rgb(Path(base[4:]), **options)
    if _is_robust(base):
        return load_robust(Path(base[7:]) if base.startswith("robust:") else SUITE, **options)
    examples = load_conflict() if base == "conflict" else load_dataset(base)
    swap = options.get("swap", 0)
    if swap < 0:
        raise CausalRAGError(f"swap={swap} must be 0 or more wrong answers per question.")
    if not swap:
        return examples
    seed = options.get("seed", 0)
    twinned = []
    for ex in examples:
        k = swap * len(gold_paragraphs(ex) or [None])  # one twin of every gold paragraph per wrong answer
        wrong = asserted_answers(ex, k, donors=examples, seed=seed)
        twinned.append(with_distractors(ex, k, donors=examples, seed=seed).with_wrong_answers(wrong))
    return twinned


def _is_robust(base: str) -> bool:
    return base == "robust" or base.startswith("robust:")


# --------------------------------------------------------------------------- the bundled conflict set
def load_conflict(path: Path = CONFLICT) -> list[Example]:
    """The handwritten conflict/trap/injection questions; gold titles are the correct passages'."""
    examples = []
    for row in read_items(path):
        passages = [Passage(p["title"], p["text"], f"conflict:{p.get('role', '')}") for p in row["passages"]]
        gold = [p["title"] for p in row["passages"] if p.get("role") == "correct"]
        examples.append(Example(row["id"], row["question"], list(row["answers"]), row.get("type", ""), gold, passages,
                                wrong_answers=[row["wrong_answer"]] if row.get("wrong_answer") else [],
                                condition=row.get("type", "")))
    return examples


# --------------------------------------------------------------------------- RGB
def _texts(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value] if value else [])]


def rgb_answers(value: Any) -> list[str]:
    """The gold answers of an RGB ``answer`` field.

    It holds alternatives (``["a", "b"]``) or, for multi-part answers, a list of parts with alternatives each
    (``[["a", "A"], ["b"]]``); a multi-part answer is scored on its first part.
    """
    values = value if isinstance(value, list) else [value]
    if values and isinstance(values[0], list):
        values = values[0]
    return [str(v) for v in values]


def load_rgb(path: Path, *, passages: int = 5, noise: float = 0.4, swapped: int = 0, seed: int = 0) -> list[Example]:
    """RGB rows with pools of ``passages``: noise, answer-swapped and correct passages (see the module)."""
    if passages < 1 or not 0 <= noise <= 1 or not 0 <= swapped <= passages:
        raise CausalRAGError(
            "RGB pool needs passages ≥ 1, 0 ≤ noise ≤ 1 and 0 ≤ swapped ≤ "
            f"passages (got {passages}, {noise}, {swapped})."
        )
    examples = []
    for i, row in enumerate(read_items(path)):
        qid = str(row.get("id", i))
        rng = random.Random(f"{seed}:{qid}")
        n_noise = round(passages * noise)
        n_swapped = min(swapped, passages - n_noise)
        wrong = rng.sample(_texts(row.get("positive_wrong")), min(n_swapped, len(_texts(row.get("positive_wrong")))))
        right = rng.sample(
            _texts(row.get("positive")), min(passages - n_noise - len(wrong), len(_texts(row.get("positive"))))
        )
        negatives = _texts(row.get("negative"))
        # short of positives: more noise
        bad = rng.sample(negatives, min(passages - len(wrong) - len(right), len(negatives)))
        pool = [Passage("", t, "rgb:positive") for t in right] + [Passage("", t, "rgb:positive_wrong") for t in wrong]
        pool += [Passage("", t, "rgb:negative") for t in bad]
        rng.shuffle(pool)
        if "query" not in row or "answer" not in row:
            raise CausalRAGError(f"RGB row {i + 1} of {path} has no query or answer: pass a file in RGB's format.")
        examples.append(
            Example(
                qid,
                str(row["query"]),
                rgb_answers(row["answer"]),
                f"rgb noise={noise} swapped={len(wrong)}",
                passages=list({p.id: p for p in pool}.values()),
                wrong_answers=rgb_answers(row.get("fakeanswer")) if wrong and row.get("fakeanswer") else [],
            )
        )
    return examples
