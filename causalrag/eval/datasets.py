"""Question sets as :class:`Example` rows, with each question's own passage pool where known.

Specs: ``demo`` (handwritten, bundled), ``hotpotqa`` (the 20 bundled dev questions),
``hotpotqa:PATH`` (official HotpotQA / 2WikiMultihopQA JSON, or the same rows one per line),
``jsonl:PATH`` (FlashRAG-style ``{"id", "question", "golden_answers"}``; without passage pools
only the open setting applies, unless ``metadata`` carries HotpotQA-style ``context``).
Both loaders accept both row styles and the Hugging Face dict-of-lists ``context``/``supporting_facts``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from causalrag.corpus import DATA, HOTPOTQA, demo_questions
from causalrag.errors import CausalRAGError
from causalrag.tools.store import Passage


@dataclass
class Example:
    """One question of a dataset: its gold answers and, where known, its own passage pool."""

    id: str
    question: str
    answers: list[str]
    """The gold answers (any one is right)."""
    type: str = ""
    """The dataset's question type (HotpotQA's ``bridge``/``comparison``, ...)."""
    gold_titles: list[str] = field(default_factory=list)
    """Titles of the passages that support the answer (the relevant evidence for recall / NDCG)."""
    passages: list[Passage] = field(default_factory=list)
    """The question's own pool (HotpotQA's 10 paragraphs; the demo passages written for it)."""
    wrong_answers: list[str] = field(default_factory=list)
    """Wrong answers that planted passages of the pool assert (a swapped twin's substitute, RGB's
    ``fakeanswer``, the conflict set's ``wrong_answer``): an answer naming one is ``misled``."""
    condition: str = ""
    """What the pool holds (the robustness suite's condition, e.g. ``conflict_majority_right``);
    reports compare methods per condition. Empty for sets with one kind of pool."""
    style: str = ""
    """How its passages are written (the robustness suite's passage style: ``clean``, ``news``, ``web``,
    ``long``); empty for other sets."""

    def with_wrong_answers(self, wrong: list[str]) -> Example:
        """A copy that also names ``wrong`` among its wrong answers (each once)."""
        return dataclasses.replace(self, wrong_answers=list(dict.fromkeys([*self.wrong_answers, *wrong])))


def _pairs(value: Any, first: str, second: str) -> list[tuple[Any, ...]]:
    """``[[a, b], ...]`` (official files) or ``{first: [...], second: [...]}`` (Hugging Face / FlashRAG)."""
    if isinstance(value, dict):
        # a file with one list longer than the other keeps its complete pairs, as the official loaders do
        return list(zip(value.get(first, []), value.get(second, []), strict=False))
    return [tuple(v[:2]) for v in value or []]


def _answers(row: dict[str, Any]) -> list[str]:
    answers = row.get("golden_answers") or row.get("answers") or row.get("answer") or []
    return [str(a) for a in ([answers] if isinstance(answers, str) else answers)]


def _sentences(paragraph: str | list[str]) -> list[str]:
    """A paragraph's sentences (a paragraph may be one string)."""
    return [paragraph] if isinstance(paragraph, str) else paragraph


def _from_rows(rows: list[dict[str, Any]], source: str) -> list[Example]:
    """Official HotpotQA / 2WikiMultihopQA rows, or FlashRAG-style rows (pools under ``metadata`` if present).

    2WikiMultihopQA differs from HotpotQA only in extra keys (``evidences``, ``entity_ids``) and its
    ``type`` values (comparison, inference, compositional, bridge_comparison), which are kept as is.
    """
    examples = []
    for i, r in enumerate(rows):
        meta = r.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        facts = r.get("supporting_facts", meta.get("supporting_facts"))
        context = r.get("context", meta.get("context"))
        examples.append(
            Example(
                id=str(r.get("_id", r.get("id", i))),
                question=str(r["question"]),
                answers=_answers(r),
                type=str(r.get("type", meta.get("type", ""))),
                gold_titles=sorted({str(t) for t, _ in _pairs(facts, "title", "sent_id")}),
                passages=[
                    Passage(str(t), " ".join(x.strip() for x in _sentences(sents)), source)
                    for t, sents in _pairs(context, "title", "sentences")
                ],
            )
        )
    return examples


def _demo() -> list[Example]:
    pools: dict[str, list[Passage]] = {}
    for line in (DATA / "demo_passages.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pools.setdefault(row["question_id"], []).append(Passage(row["title"], row["text"], "demo_passages.jsonl"))
    return [
        Example(q["id"], q["question"], q["answers"], q["type"], q["gold_titles"], pools.get(q["id"], []))
        for q in demo_questions()
    ]


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        return (
            json.loads(text)
            if path.suffix == ".json"
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CausalRAGError(
            f"Cannot read dataset {path}: {exc}; pass a readable HotpotQA JSON or JSONL file."
        ) from exc


def load_dataset(spec: str) -> list[Example]:
    """Examples for ``demo``, ``hotpotqa``, ``hotpotqa:PATH`` or ``jsonl:PATH``."""
    kind, _, path = spec.partition(":")
    if kind == "demo" and not path:
        return _demo()
    if kind == "hotpotqa" or (kind == "jsonl" and path):
        file = Path(path) if path else HOTPOTQA
        rows = _read_json(file)
        if isinstance(rows, dict):  # a single object, or {"data": [...]}
            rows = rows.get("data", [rows])
        try:
            return _from_rows(rows, file.name)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CausalRAGError(
                f"Dataset {file} has a row without the expected fields ({exc!r}): each row needs a question and "
                "an answer (HotpotQA / 2WikiMultihopQA JSON) or golden_answers (FlashRAG JSONL)."
            ) from exc
    raise CausalRAGError(f"Unknown dataset {spec!r}: use demo, hotpotqa, hotpotqa:PATH or jsonl:PATH.")
