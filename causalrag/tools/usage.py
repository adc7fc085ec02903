"""LLM cost counters: per backend, and per :func:`metered` block (so each graph node reports its own cost)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields


@dataclass
class Usage:
    """Cost counters; ``calls`` counts sequences (prompts × samples), as the papers count LLM calls.

    ``prompt_tokens`` are the prompt tokens a local backend computed: a prefix served from its cache,
    or shared by several rows of a call, counts once (a remote server reports its own count).
    """

    calls: int = 0
    prompt_tokens: int = 0
    new_tokens: int = 0
    forward_passes: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counters to these."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return asdict(self)


_meters: contextvars.ContextVar[tuple[Usage, ...]] = contextvars.ContextVar("causalrag_meters", default=())


@contextmanager
def metered() -> Iterator[Usage]:
    """Count the LLM usage of the code inside the block (nested blocks and threads with a copied context too)."""
    meter = Usage()
    token = _meters.set(_meters.get() + (meter,))
    try:
        yield meter
    finally:
        _meters.reset(token)


def record(total: Usage, delta: Usage) -> None:
    """Add ``delta`` to a backend's running total and to every active meter."""
    total.add(delta)
    for meter in _meters.get():
        meter.add(delta)


def active_meters() -> tuple[Usage, ...]:
    """The meters of the :func:`metered` blocks the caller is inside."""
    return _meters.get()
