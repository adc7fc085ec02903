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
from typing import Any

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

_PUNCT = set(string.punctuation)
_LEADS = re.compile(r"^(?:final answer|the answer is|answer)\s*[:\-]?\s*", re.IGNORECASE)
_YES_NO_SENTENCE = re.compile(r"^(yes|no)\s*[,.;:!]", re.IGNORECASE)  # "Yes, both are American." answers "Yes"
_GLUED_REASON = re.compile(r"\s+(?:because|since)\s.*$", re.IGNORECASE)  # "Robert Childers because [1] ..."
# a reply that runs on past its answer on the same line: into the prompt's next field ("Charles Babbage · Answer: Ada
# Lovelace · ..."), or past a page's item separator ("George Washington · The US president made ...")
_RUN_ON = re.compile(r"(?<=\S)(?:\s+[·•|])?\s+(?:question|passages?|answer|reason|rewrite)\s*:.*$|\s+[·•|]\s.*$", re.I)


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines too) collapsed to one space."""
    return " ".join(text.split())


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def readable(text: str) -> str:
    """``text`` safe to embed, tokenize and print.

    Bytes that were not UTF-8 (lone surrogates, as ``sys.argv`` carries them) become U+FFFD, and control
    characters (NUL, ANSI escapes) a space.
    """
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
    """The short answer in a model's reply: its first non-empty line, cleaned.

    Control characters are blanked; an "Answer:" lead, a reason glued on ("… because …"), a run-on past the
    answer (the prompt's next field echoed on the same line, "… · Question: …", or text after a page's item
    separator " · " or " | ", as news snippets and web pages invite), wrapping quotes and a trailing period
    are dropped; a yes/no sentence ("Yes, both are American.") becomes its yes or no.

    Small base models often answer in a sentence or append their reason on the same line; the
    short answer is what EM/F1 and the methods' answer agreement compare.
    """
    # a control character (NUL, an escape) is never part of an answer: a blank, as in :func:`readable`
    line = next((s for ln in text.splitlines() if (s := _CONTROL.sub(" ", ln).strip())), "")
    line = _LEADS.sub("", line, count=1)
    if yes_no := _YES_NO_SENTENCE.match(line):
        return yes_no.group(1)
    line = _RUN_ON.sub("", _GLUED_REASON.sub("", line))
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


def parse_json_object(text: str) -> dict[str, Any] | None:
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



def mentions(answer: str, text: str) -> bool:
    """The normalized answer occurs as whole words in the normalized text (an empty answer never does)."""
    a = normalize_answer(answer)
    return bool(a) and f" {a} " in f" {normalize_answer(text)} "


def states(text: str, answer: str, question: str = "") -> bool:
    """Whether ``text`` states ``answer``.

    Every word the answer adds to the question, stop words aside, must occur in the text (a sentence
    answer's "Saturn" in "Titan is the moon of Saturn" for "Which planet does the moon Titan orbit?");
    an answer that adds no such word must occur as whole words.
    """
    asked = set(normalize_answer(question).split()) | ENGLISH_STOP_WORDS
    added = [w for w in normalize_answer(answer).split() if w not in asked]
    if not added:
        return mentions(answer, text)
    words = set(normalize_answer(text).split())
    return all(w in words for w in added)


def states_part(text: str, answer: str, question: str = "") -> bool:
    """Whether ``text`` states ``answer``, or a run of it that adds a name or term to the question.

    A reply written as a sentence rarely has every word in one passage: "Tosca is an opera by Giacomo Puccini,
    first performed in Rome in January 19" (cut at the token budget) and "The winner was Teodora Mirelescu, a
    Romanian runner" (words of the model's own) are stated by a passage naming "Giacomo Puccini" or "Teodora
    Mirelescu". A run of only the question's words and stop words states nothing.
    """
    return states(text, answer, question) or grounded(answer, text, beyond=question) is not None


def same_answer(a: str, b: str) -> bool:
    """String agreement of two answers: normalized equality or whole-word containment either way."""
    return mentions(a, b) or mentions(b, a)


GROUNDED_WORDS = 12
"""Words of a written answer :func:`grounded` looks at: a short answer's; past that the model is rambling
(and the search over runs of words grows with the square of their number)."""


def restates(answer: str, question: str) -> bool:
    """Whether the answer only repeats what the question names, so it cannot be the answer.

    ``"the Joker"`` restates "Who played the Joker in The Dark Knight?"; a question that offers its own
    options ("X or Y?") is exempt.
    """
    return mentions(answer, question) and not question_options(question)


def name_only(answer: str) -> str:
    """A name without the lowercase words trailing it.

    ``"Michael Keaton as the"`` → ``"Michael Keaton"``, ``"Tom Hardy played the"`` → ``"Tom Hardy"``: a
    short reply cut mid-phrase keeps its filler, and a length-normalized score favours filler words.
    Answers that start lowercase (``"carbon dioxide"``) or end on a name or number (``"Heath Ledger as
    Joker"``) are left as they are.
    """
    words = answer.split()
    if not words or not words[0][:1].isupper():
        return answer
    end = len(words)
    while end > 1 and words[end - 1][:1].islower():
        end -= 1
    return " ".join(words[:end]).rstrip(" ,;:") if end < len(words) else answer


def mention_pattern(answer: str) -> re.Pattern[str]:
    """Where running text mentions ``answer`` (whole words, any case).

    A name's mention takes the name's leading words with it where they stand mid-sentence: ``"Steinbeck"``
    matches ``"John Steinbeck"`` in "a novella by John Steinbeck", so that swapping the answer for another
    leaves no "John Ernest Hemingway". A capitalized word at a sentence's start is left alone ("Windy
    Wellington": it may be an adjective), and a title mid-sentence goes with the name ("Emperor" in "the
    French Emperor Napoleon").
    """
    core = rf"(?<!\w)(?i:{re.escape(answer.strip())})(?!\w)"
    if answer_kind(answer) != "name":
        return re.compile(core)
    word = rf"(?:[A-Z][\w'’-]*|[A-Z]\.|{'|'.join(sorted(NAME_PARTICLES))})"
    return re.compile(rf"(?:(?<=[a-z,] )(?:{word} )+)?{core}")


def answer_kind(answer: str) -> str:
    """What sort of answer this is: ``number``, ``name`` or ``phrase``.

    A ``number`` holds a digit, a ``name`` a capitalized word; anything else is a ``phrase``
    (``"the architect"``, ``"carbon dioxide"``).
    """
    if any(c.isdigit() for c in answer):
        return "number"
    return "name" if any(w[:1].isupper() for w in answer.split()) else "phrase"


def grounded(answer: str, text: str, *, beyond: str = "") -> str | None:
    """The longest run of ``answer``'s words that ``text`` states, as a :func:`name_only`.

    ``"carbon dioxide and sunlight"`` → ``"carbon dioxide"`` in a passage naming only the gas; None when
    the text states none of substance (function words alone, as "is a" of "is a midwinter celebration", are none;
    nor, when ``beyond`` (the question) is given, its words and stop words: what :func:`states` asks the
    answer to add).
    """
    words = answer.split()[:GROUNDED_WORDS]
    stated = f" {normalize_answer(text)} "
    nothing = _NO_SUBSTANCE | (set(normalize_answer(beyond).split()) | ENGLISH_STOP_WORDS if beyond else set())
    for size in range(len(words), 0, -1):
        for start in range(len(words) - size + 1):
            part = name_only(" ".join(words[start : start + size]).strip(" ,.;:\"'"))
            norm = normalize_answer(part)
            if norm and f" {norm} " in stated and set(norm.split()) - nothing:
                return part
    return None


# --------------------------------------------------------------------------- answer candidates
# Explicit options for scored choices: the small default model ranks given options far better than it
# writes an answer (docs/methods.md), so answers are chosen among spans the evidence itself contains.
_YES_NO_QUESTION = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|shall)\b", re.IGNORECASE
)
_EITHER_OR = re.compile(r"[,:]\s*([^,:?]+?)\s+or\s+([^,:?]+?)\s*\?\s*$")
_SPAN_WORD = re.compile(r"\d[\d,]*\d|\d|[^\W\d_][\w'’\-&]*\.?|[,;:()\"“”]")
NAME_PARTICLES = frozenset({"de", "von", "van", "la", "le", "du", "del", "da", "di"})
"""Lowercase words inside a name ("Ludwig van Beethoven")."""
_SPAN_JOINERS = frozenset({"of", "the", "&", "for", "upon"}) | NAME_PARTICLES
_LEADING_FUNCTION_WORDS = frozenset(
    "are is was were did does do who what which when where why how in on at a an has have had can could will "
    "would".split()
)
"""Capitalized only because a question or sentence starts with them: never part of a name."""
_NOT_ANSWERS = frozenset(
    "it he she they his her their this that these those when where which who what in on at after before during however "
    "although as there its a an the by from with while since according some many one today you your yours we our "
    "ours us my me".split()  # the second person and the first: page boilerplate ("Your privacy choices")
)
_NO_SUBSTANCE = _NOT_ANSWERS | _LEADING_FUNCTION_WORDS
"""Words that name nothing alone: a stated run of only these ("is a") is no answer."""


def question_options(question: str) -> list[str]:
    """The options a question names itself; empty when the answer must come from the evidence.

    ``["yes", "no"]`` for a yes/no question, ``[A, B]`` for "…, A or B?".
    """
    if m := _EITHER_OR.search(question):
        return [m.group(1).strip(), m.group(2).strip()]
    return ["yes", "no"] if _YES_NO_QUESTION.match(question) else []


def key_sentences(question: str, text: str, n: int = 2) -> str:
    """The ``n`` sentences of ``text`` that share most content words with the question, in text order."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"“])", " ".join(text.split()))
    wanted = {w for w in normalize_answer(question).split() if len(w) > 2 and w not in _NOT_ANSWERS}
    overlap = [len(wanted & set(normalize_answer(s).split())) for s in sentences]
    best = sorted(sorted(range(len(sentences)), key=lambda i: -overlap[i])[:n])
    return " ".join(sentences[i] for i in best)


def answer_spans(text: str, *, exclude: str = "", limit: int = 12) -> list[str]:
    """Short answer candidates a passage contains.

    The candidates are runs of capitalized words or numbers (with inner "of"/"de"/... joiners), numbers
    with their unit word, year ranges and quoted titles.

    Spans that the text ``exclude`` (the question) already names are left out: an answer rarely
    repeats its question. A reader then chooses among them; nothing here decides which is right.
    """
    words = _SPAN_WORD.findall(text)

    def capital(w: str) -> bool:
        return w[:1].isupper() or w[:1].isdigit()

    found: list[str] = []
    i = 0
    while i < len(words):
        if not capital(words[i]):
            i += 1
            continue
        j = i + 1
        while j < len(words) and not words[j - 1].endswith(".") and (
            capital(words[j]) or (words[j].lower() in _SPAN_JOINERS and j + 1 < len(words) and capital(words[j + 1]))
        ):
            j += 1
        run = [w.rstrip(".") if k == j - 1 and len(w) > 2 else w for k, w in enumerate(words[i:j], i)]
        while len(run) > 1 and run[0].lower() in _LEADING_FUNCTION_WORDS:
            run = run[1:]
        found.append(" ".join(run))
        if run[0] in ("The", "A", "An") and len(run) > 1:
            found.append(" ".join(run[1:]))
        i = j
    found += re.findall(r"\b\d[\d,]*\s+[a-z]{3,}\b", text)
    found += re.findall(r"\b(?:from\s+)?\d{4}\s*(?:to|until|–|-)\s*\d{4}\b", text)
    found += re.findall(r"[\"“]([^\"”]{2,60})[\"”]", text)
    asked = f" {normalize_answer(exclude)} "
    unique: dict[str, str] = {}
    for span in found:
        span = span.strip(" ,;:()\"“”")
        key = normalize_answer(span)
        if len(span) > 1 and key and key not in _NOT_ANSWERS and f" {key} " not in asked:
            unique.setdefault(key, span)
    return list(unique.values())[:limit]
