"""Tolerant parsers for model output, and a batched parse-retry helper.

A malformed output degrades an answer; it never crashes a graph: every parser returns ``None``
(or a cleaned string) instead of raising, and :func:`generate_parsed` re-asks only the prompts
whose output did not parse, then falls back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

_LEADS = re.compile(r"^(?:final answer|the answer is|answer)\s*[:\-]?\s*", re.IGNORECASE)
_YES_NO_SENTENCE = re.compile(r"^(yes|no)\s*[,.;:!]", re.IGNORECASE)  # "Yes, both are American." answers "Yes"
_GLUED_REASON = re.compile(r"\s+(?:because|since)\s.*$", re.IGNORECASE)  # "Robert Childers because [1] ..."


def clean_answer(text: str) -> str:
    """First non-empty line, without an "Answer:" lead, a reason glued on ("… because …"), wrapping
    quotes or a trailing period; a yes/no sentence ("Yes, both are American.") becomes its yes or no.

    Small base models often answer in a sentence or append their reason on the same line; the
    short answer is what EM/F1 and the methods' answer agreement compare.
    """
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    line = _LEADS.sub("", line, count=1)
    if yes_no := _YES_NO_SENTENCE.match(line):
        return yes_no.group(1)
    line = _GLUED_REASON.sub("", line)
    line = line.strip().strip("\"'`*").strip()
    return line[:-1].rstrip() if line.endswith(".") and not re.search(r"\b[A-Z]\.$", line) else line


def between(text: str, start: str, end: str) -> str | None:
    """Text between the first ``start`` marker and the following ``end`` (or the end of text)."""
    i = text.find(start)
    if i < 0:
        return None
    rest = text[i + len(start) :]
    j = rest.find(end)
    return (rest if j < 0 else rest[:j]).strip()


def parse_float(text: str, lo: float = float("-inf"), hi: float = float("inf")) -> float | None:
    """The first number in ``text`` (``"0.8"``, ``"80%"`` → 0.8 when ``hi`` ≤ 1), clipped to [lo, hi]."""
    m = re.search(r"-?\d+(?:\.\d+)?", text)
    if not m:
        return None
    value = float(m.group())
    if "%" in text[m.end() : m.end() + 2] or (hi <= 1 < value <= 100):
        value /= 100
    return min(hi, max(lo, value))


def parse_json_object(text: str) -> dict | None:
    """The first ``{...}`` object in ``text`` that parses as JSON (code fences and chatter allowed)."""
    for m in re.finditer(r"\{", text):
        depth = 0
        for j in range(m.start(), len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                try:
                    value = json.loads(text[m.start() : j + 1])
                except json.JSONDecodeError:
                    break
                return value if isinstance(value, dict) else None
    return None


def parse_yes_no(text: str) -> bool | None:
    m = re.search(r"\b(yes|no)\b", text, re.IGNORECASE)
    return None if m is None else m.group(1).lower() == "yes"


@dataclass
class Parsed:
    """Parsed values (one per prompt) and how many fell back after the retries."""

    values: list[Any]
    fallbacks: int


def generate_parsed(
    llm: Any,
    prompts: Sequence[str],
    parse: Callable[[str], T | None],
    *,
    fallback: Callable[[str], T] | T,
    retries: int = 1,
    retry_temperature: float = 0.7,
    **generate_kwargs: Any,
) -> Parsed:
    """Generate, parse, re-ask only the unparsed prompts (sampling) up to ``retries`` times, then fall back.

    ``fallback`` is a value or a function of the last raw output.
    """
    values: list[Any] = [None] * len(prompts)
    raw: list[str] = [""] * len(prompts)
    todo = list(range(len(prompts)))
    for attempt in range(retries + 1):
        if not todo:
            break
        kwargs = dict(generate_kwargs)
        if attempt:
            kwargs["temperature"] = max(retry_temperature, kwargs.get("temperature", 0.0))
        outputs = llm.generate([prompts[i] for i in todo], **kwargs)
        for i, out in zip(todo, outputs):
            raw[i] = out[0] if out else ""
            values[i] = parse(raw[i])
        todo = [i for i in todo if values[i] is None]
    for i in todo:
        values[i] = fallback(raw[i]) if callable(fallback) else fallback
    return Parsed(values, len(todo))
