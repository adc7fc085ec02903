"""Question sets as :class:`Example` rows, with each question's own passage pool where known.

Specs: ``demo`` (handwritten, bundled), ``hotpotqa`` (the 20 bundled dev questions),
``hotpotqa:PATH`` (official HotpotQA / 2WikiMultihopQA JSON), ``jsonl:PATH`` (FlashRAG-style
``{"id", "question", "golden_answers"}``; no passage pools, so only the open setting applies).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from causalrag.corpus import DATA, HOTPOTQA, demo_questions
from causalrag.errors import CausalRAGError
from causalrag.tools.store import Passage


@dataclass
class Example:
    id: str
    question: str
    answers: list[str]
    type: str = ""
    gold_titles: list[str] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    """The question's own pool (HotpotQA's 10 paragraphs; the demo passages written for it)."""


def _from_hotpotqa(rows: list[dict], source: str) -> list[Example]:
    return [
        Example(
            id=str(r["_id"]),
            question=r["question"],
            answers=[str(r["answer"])],
            type=r.get("type", ""),
            gold_titles=sorted({t for t, _ in r.get("supporting_facts", [])}),
            passages=[Passage(t, " ".join(s.strip() for s in sents), source) for t, sents in r.get("context", [])],
        )
        for r in rows
    ]


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


def _read_json(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else [json.loads(l) for l in text.splitlines() if l.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CausalRAGError(f"Cannot read dataset {path}: {exc}; pass a readable HotpotQA JSON or JSONL file.") from exc


def load_dataset(spec: str) -> list[Example]:
    """Examples for ``demo``, ``hotpotqa``, ``hotpotqa:PATH`` or ``jsonl:PATH``."""
    kind, _, path = spec.partition(":")
    if kind == "demo" and not path:
        return _demo()
    if kind == "hotpotqa":
        file = Path(path) if path else HOTPOTQA
        return _from_hotpotqa(_read_json(file), file.name)
    if kind == "jsonl" and path:
        rows = _read_json(Path(path))
        return [
            Example(str(r.get("id", i)), r["question"], [str(a) for a in r.get("golden_answers") or r.get("answers") or []])
            for i, r in enumerate(rows)
        ]
    raise CausalRAGError(f"Unknown dataset {spec!r}: use demo, hotpotqa, hotpotqa:PATH or jsonl:PATH.")
