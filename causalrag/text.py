"""Text helpers shared by prompts, nodes and evaluation: answer normalization, token F1, tolerant parsing.

A leaf: it imports nothing from causalrag, so methods use the same normalization as the metrics
without depending on ``causalrag.eval``.

* :func:`normalize_answer` is the official HotpotQA / SQuAD one (lower-case, drop punctuation and
  the articles a/an/the, squeeze whitespace); :func:`f1_score` the official token F1;
* the parsers never raise on malformed model output: they return ``None`` (or a cleaned string),
  so a bad output degrades an answer and never crashes a graph. Each method's own output parsers
  live beside its prompt in ``causalrag/prompts/<method>.py`` and are built from these.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from collections.abc import Sequence

_PUNCT = set(string.punctuation)
_LEADS = re.compile(r"^(?:final answer|the answer is|answer)\s*[:\-]?\s*", re.IGNORECASE)
_YES_NO_SENTENCE = re.compile(r"^(yes|no)\s*[,.;:!]", re.IGNORECASE)  # "Yes, both are American." answers "Yes"
_GLUED_REASON = re.compile(r"\s+(?:because|since)\s.*$", re.IGNORECASE)  # "Robert Childers because [1] ..."


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) collapsed to one space."""
    return " ".join(text.split())


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def readable(text: str) -> str:
    """``text`` safe to embed, tokenize and print: bytes that were not UTF-8 (lone surrogates, as
    ``sys.argv`` carries them) become U+FFFD, and control characters (NUL, ANSI escapes) a space."""
    return _CONTROL.sub(" ", _SURROGATE.sub("\ufffd", str(text)))


# --------------------------------------------------------------------------- answers
def normalize_answer(text: str) -> str:
    """Lower-case, no punctuation, no articles (a/an/the), single spaces: the official HotpotQA / SQuAD rule."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    # official rule: a yes/no/noanswer on either side only scores when the two are identical
    if (pred in ("yes", "no", "noanswer") or ref in ("yes", "no", "noanswer")) and pred != ref:
        return 0.0
    common = Counter(pred.split()) & Counter(ref.split())
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred.split()), same / len(ref.split())
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    """Token F1 of ``prediction`` against the best of ``golds`` (0.0 when there are none)."""
    return max((_f1(prediction, g) for g in golds), default=0.0)


# --------------------------------------------------------------------------- parsing
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
    """True/False for the first standalone "yes"/"no" in ``text``; None when there is neither."""
    m = re.search(r"\b(yes|no)\b", text, re.IGNORECASE)
    return None if m is None else m.group(1).lower() == "yes"

