"""The bundled corpus: 20 HotpotQA dev questions with their paragraphs, plus handwritten demo questions.

``open_store("demo")`` seeds the demo collection on first use (idempotent: passage ids are content
hashes), so ``causalrag ask`` works on a fresh machine without a separate ingest step.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from causalrag.config import DEMO_COLLECTION, Settings, settings
from causalrag.tools.store import Passage, Store

DATA = Path(str(files("causalrag") / "data"))
HOTPOTQA = DATA / "hotpotqa-dev-distractor-20.json"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def demo_questions() -> list[dict[str, Any]]:
    """The handwritten demo questions, one dict each.

    Each has ``id, question, answers, type, gold_titles, why``, where ``type`` is trap, conflict, bridge,
    injection or simple.
    """
    return _jsonl(DATA / "demo_questions.jsonl")


def hotpotqa_questions() -> list[dict[str, Any]]:
    """The 20 bundled HotpotQA dev questions in the official JSON format."""
    questions: list[dict[str, Any]] = json.loads(HOTPOTQA.read_text(encoding="utf-8"))
    return questions


def demo_passages() -> list[Passage]:
    """Handwritten passages and every HotpotQA paragraph (whole, title kept), without duplicates."""
    rows = [Passage(r["title"], r["text"], "demo_passages.jsonl") for r in _jsonl(DATA / "demo_passages.jsonl")]
    for q in hotpotqa_questions():
        rows += [
            Passage(title, " ".join(s.strip() for s in sentences), HOTPOTQA.name) for title, sentences in q["context"]
        ]
    return list({p.id: p for p in rows}.values())


def open_store(collection: str = DEMO_COLLECTION, **kwargs: Any) -> Store:
    """A store for ``collection``; the demo collection is filled from the bundled corpus when needed."""
    store = Store(collection, **kwargs)
    if collection == DEMO_COLLECTION:
        passages = demo_passages()
        if store.count() < len(passages):
            store.add(passages, progress=True)
    return store


def default_store(collection: str = DEMO_COLLECTION) -> Store:
    """The process-wide store of ``collection`` under the current settings.

    The settings are ``CAUSALRAG_HOME`` and the Chroma server; the store is opened once, the demo collection
    seeded on first use, and shared by every run that names it.
    """
    return _default_store(collection, settings())


@lru_cache(maxsize=8)
def _default_store(collection: str, where: Settings) -> Store:
    return open_store(collection)  # ``where`` keys the cache: other settings (a test's home) open another store
