"""Concurrent ``generate`` calls with the same decoding settings run as one batch.

LangGraph runs the branches of one step in threads: CF-RAG's M ``Send`` hypotheses, or
``graph.batch`` over several questions. On one local model their calls would queue behind the
model lock and decode one after another. A :class:`Coalescer` in front of a backend's batched
``generate`` gathers the calls that arrive within a few milliseconds of each other, or while the
previous batch is still decoding, into one batched call, and hands each caller its own rows back.

Usage stays per caller: the merged call's counters are split over the callers by their share of
the prompts (calls are exact; token and forward-pass counts are that share, rounded), and land in
each caller's own :func:`~causalrag.tools.usage.metered` blocks — so a graph's ``trace`` counts what
its own nodes asked for. The backend's running total counts the merged call once.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from causalrag.tools.usage import Usage, active_meters, metered

Generate = Callable[..., list[list[str]]]


@dataclass
class _Call:
    prompts: list[str]
    meters: tuple[Usage, ...]
    done: threading.Event = field(default_factory=threading.Event)
    result: list[list[str]] | None = None
    error: BaseException | None = None


class Coalescer:
    """``generate(prompts, **settings)`` that merges concurrent calls sharing ``settings``.

    The first caller of a group waits ``window`` seconds for its siblings, then waits for the
    batch before it to finish (callers arriving meanwhile join its group), then decodes the group.
    A lone caller pays only ``window`` (10 ms by default, against seconds per generation on a CPU).
    Calls with a ``seed`` run alone, so seeded sampling gives the same text whatever runs beside it.
    """

    def __init__(self, generate: Generate, *, window: float = 0.01) -> None:
        self._generate = generate
        self._window = window
        self._groups: dict[tuple[Any, ...], list[_Call]] = {}
        self._groups_lock = threading.Lock()
        self._decoding = threading.Lock()  # one merged batch at a time; the next group gathers meanwhile

    def __call__(self, prompts: Sequence[str], **settings: Any) -> list[list[str]]:
        """The backend's ``generate(prompts, **settings)``, decoded together with concurrent calls like it."""
        if not prompts:
            return []
        if settings.get("seed") is not None:  # seeded sampling must not depend on who else is decoding
            return self._generate(list(prompts), **settings)
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in settings.items()))
        call = _Call(list(prompts), active_meters())
        with self._groups_lock:
            group = self._groups.setdefault(key, [])
            group.append(call)
            leads = len(group) == 1
        if leads:
            time.sleep(self._window)
            with self._decoding:
                with self._groups_lock:
                    calls = self._groups.pop(key)
                self._decode(calls, settings)
        call.done.wait()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    def _decode(self, calls: list[_Call], settings: dict[str, Any]) -> None:
        """One batched call for the whole group; every caller gets its rows and its share of the usage."""
        prompts = [p for c in calls for p in c.prompts]

        def run() -> tuple[list[list[str]], Usage]:
            with metered() as used:  # a fresh context: no caller's meters see the merged call
                return self._generate(prompts, **settings), used

        try:
            outputs, used = contextvars.Context().run(run)
        except BaseException as exc:  # every caller of the group sees the error
            for c in calls:
                c.error = exc
                c.done.set()
            return
        start = 0
        for c in calls:
            c.result = outputs[start : start + len(c.prompts)]
            start += len(c.prompts)
            share = len(c.prompts) / len(prompts)
            delta = Usage(**{f.name: round(getattr(used, f.name) * share) for f in dataclasses.fields(Usage)})
            for meter in c.meters:
                meter.add(delta)
            c.done.set()
