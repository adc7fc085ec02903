"""Fit prompts to the model's context window: the one place every method's prompts go through.

A prompt that overflows the window fails deep inside a backend (llama.cpp: "context is full"), so
before a node asks the model it keeps the best-ranked passages that fit with room for the reply,
drops the lowest-ranked ones (and trims the best one when even it alone is too long), and reports
what it left out in the trace. A question that cannot fit even without passages is one sentence.

    fitted = fit_passages(llm, lambda docs: answer_prompt(question, docs), ranked, reply_tokens=24)
    prompt = answer_prompt(question, fitted.documents)   # and fitted.trace() into the node's trace

Models without ``context_window`` (a user's own LLM object) are not fitted; without
``count_tokens`` the length is estimated from the text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from causalrag.errors import QuestionTooLongError
from causalrag.tools.backends.base import LLM, estimate_tokens

SAFETY = 16
"""Tokens kept free beside the reply (llama.cpp keeps a few cells of its cache free per batch)."""
PROMPT_ROOM = 512
"""Tokens a method's instructions, worked examples and reply need next to the question (the
up-front check of :func:`check_question`; each node's own prompt is then fitted exactly)."""


@dataclass(frozen=True)
class Fitted:
    """The passages that fit, best-ranked first, and what was left out to make them fit."""

    documents: list[Document]
    dropped: int = 0
    """Lowest-ranked passages left out."""
    trimmed: int = 0
    """Passages cut short (only the best one, when it alone overflows)."""

    def trace(self) -> dict[str, Any]:
        """Keys for the node's trace entry; empty when every passage fitted whole."""
        return {"budget_dropped": self.dropped, "budget_trimmed": self.trimmed} if self.dropped or self.trimmed else {}


def count_tokens(llm: LLM, texts: Sequence[str]) -> list[int]:
    """Token counts of ``texts`` by the model's tokenizer, or estimated from the text when it has none."""
    counter = getattr(llm, "count_tokens", None)
    return list(counter(texts)) if callable(counter) else estimate_tokens(texts)


def room(llm: LLM, reply_tokens: int) -> int | None:
    """Tokens a prompt may take with ``reply_tokens`` left for the reply; None when the model does not say."""
    window = getattr(llm, "context_window", None)
    return None if window is None else int(window) - int(reply_tokens) - SAFETY


def _fits(llm: LLM, prompt: str, limit: int) -> bool:
    return count_tokens(llm, [prompt])[0] <= limit


SURELY_FITS = 1024
"""Estimated tokens (the estimate errs long) under which a question fits any model we run, so
:func:`question_may_overflow` lets callers skip loading a model just to count it."""


def question_may_overflow(question: str) -> bool:
    """Whether ``question`` is long enough that :func:`check_question` must count it with the model's tokenizer."""
    return estimate_tokens([question])[0] >= SURELY_FITS


def check_question(llm: LLM, question: str, *, reserve: int = PROMPT_ROOM) -> None:
    """Raise :class:`QuestionTooLongError` when ``question`` alone leaves no room for a method's prompt and reply."""
    window = getattr(llm, "context_window", None)
    if window is None:
        return
    tokens = count_tokens(llm, [question])[0]
    if tokens > int(window) - reserve:
        raise QuestionTooLongError(tokens, int(window), reserve)


def fit_prompt(llm: LLM, prompt: str, *, reply_tokens: int) -> None:
    """Raise :class:`QuestionTooLongError` when a prompt with no passages left to drop does not fit."""
    limit = room(llm, reply_tokens)
    if limit is not None and not _fits(llm, prompt, limit):
        raise QuestionTooLongError(count_tokens(llm, [prompt])[0], int(llm.context_window), int(reply_tokens) + SAFETY)


def fit_passages(
    llm: LLM, prompt: Callable[[list[Document]], str], documents: Sequence[Document], *, reply_tokens: int
) -> Fitted:
    """The longest best-ranked prefix of ``documents`` whose ``prompt(prefix)`` fits with ``reply_tokens`` to spare.

    ``documents`` are best first. When not even the best passage fits whole, it is trimmed to the
    words that do; when the prompt without any passage does not fit, that is a
    :class:`QuestionTooLongError` (the question is too long for this model).
    """
    docs = list(documents)
    limit = room(llm, reply_tokens)
    if limit is None or _fits(llm, prompt(docs), limit):
        return Fitted(docs)
    fit_prompt(llm, prompt([]), reply_tokens=reply_tokens)
    low, high = 0, len(docs) - 1  # prompt(docs[:low]) fits, prompt(docs[:high + 1]) does not
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if _fits(llm, prompt(docs[:mid]), limit) else (low, mid - 1)
    if low:
        return Fitted(docs[:low], dropped=len(docs) - low)
    best = _trimmed(llm, prompt, docs[0], limit)
    if best is None:
        return Fitted([], dropped=len(docs))
    return Fitted([best], dropped=len(docs) - 1, trimmed=1)


def _trimmed(llm: LLM, prompt: Callable[[list[Document]], str], doc: Document, limit: int) -> Document | None:
    """``doc`` cut to its most leading words that still fit, or None when not even one word does."""
    words = doc.page_content.split()

    def cut(n: int) -> Document:
        return Document(id=doc.id, page_content=" ".join(words[:n]) + " …", metadata={**doc.metadata, "trimmed": True})

    low, high = 0, len(words)  # cut(low) fits (0 = none), cut(high + 1) does not
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if _fits(llm, prompt([cut(mid)]), limit) else (low, mid - 1)
    return cut(low) if low else None
