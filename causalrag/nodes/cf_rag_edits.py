"""Counterfactual edits of a question (pure text): the explicit options CF-RAG's scored judgment chooses among.

The 270M base model, decoding greedily, copies the question when asked to rewrite it
(docs/methods/cf_rag.md). With ``judge="score"`` the five transformation types of §4.1.1 (App. E.3,
Table 6) become *edits* that change one thing by construction, and the model only chooses which
edit of a type reads as the most natural question (a scored choice); Eq. 2 then validates the
chosen one as before. Each type yields options only where it applies:

* **entity** — a named entity of the question swapped for a similar one the retrieved passages
  name (the caller ranks them by embedding similarity to the original);
* **role** — a role or relation word swapped for its counterpart (director → producer, born → died);
* **categorical** — the kind of fact asked changed (when ↔ where, which city → which country);
* **temporal** — a year of the question shifted;
* **scope** — a qualifying phrase dropped, so the question asks something broader.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from causalrag.text import answer_spans, normalize_answer

ROLE_SWAPS: dict[str, tuple[str, ...]] = {
    "directed": ("produced", "wrote"), "director": ("producer", "screenwriter"), "produced": ("directed",),
    "producer": ("director",), "wrote": ("directed", "edited"), "written": ("directed", "produced"),
    "writer": ("director", "editor"), "author": ("publisher", "illustrator"), "born": ("buried", "married"),
    "died": ("was born",), "founded": ("acquired", "dissolved"), "founder": ("owner", "chairman"),
    "played": ("voiced", "directed"), "starred": ("appeared",), "starring": ("directed by",),
    "capital": ("largest city", "oldest city"), "older": ("younger",), "younger": ("older",),
    "first": ("last", "second"), "last": ("first",), "won": ("lost", "hosted"), "largest": ("smallest",),
    "smallest": ("largest",), "highest": ("lowest",), "singer": ("drummer", "guitarist"), "composer": ("lyricist",),
    "coach": ("captain",), "president": ("vice president",), "husband": ("brother",), "wife": ("sister",),
    "father": ("son",), "mother": ("daughter",), "team": ("league",), "city": ("country",), "country": ("city",),
}
"""Role/relation words and counterparts that ask for a different answer about the same topic."""

CATEGORY_SWAPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bin (?:what|which) year\b", ("in which city", "in which country")),
    (r"\b(?:what|which) year\b", ("what city",)),
    (r"\b(?:what|which) city\b", ("which country", "which year")),
    (r"\b(?:what|which) country\b", ("which city", "which year")),
    (r"\b(?:what|which) state\b", ("which city", "which year")),
    (r"\bwhat nationality\b", ("what profession",)),
    (r"^\s*when\b", ("where",)),
    (r"^\s*where\b", ("when",)),
    (r"^\s*how many\b", ("in which year",)),
    (r"^\s*who\b", ("which company", "which country")),
    (r"\bby who(?:m)?(?=\s*\?)", ("by which company", "in which year")),
)
"""Wh-phrases and the other kinds of fact they can ask for (the first pattern that matches applies);
bare who/when/where only open a question (inside a sentence they join clauses: "the arena where")."""

_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_PREPOSITION = re.compile(r"\s+(?:in|of|from|at|for|during|with|by|on)\s+")


def _keep_case(original: str, new: str) -> str:
    return new[:1].upper() + new[1:] if original[:1].isupper() else new


def _unique(question: str, edits: Sequence[str]) -> list[str]:
    asked = normalize_answer(question)
    seen: dict[str, str] = {}
    for edit in edits:
        key = normalize_answer(edit)
        if key and key != asked:
            seen.setdefault(key, " ".join(edit.split()))
    return list(seen.values())


def question_entities(question: str) -> list[str]:
    """The question's named entities (capitalized runs), longest first."""
    return sorted(answer_spans(question, limit=8), key=len, reverse=True)


def entity_edits(question: str, replacements: Mapping[str, Sequence[str]]) -> list[str]:
    """The question with one entity replaced by each of its ``replacements`` (most similar first)."""
    return _unique(
        question, [question.replace(entity, other, 1) for entity, others in replacements.items() for other in others]
    )


def role_edits(question: str) -> list[str]:
    """Lower-case role words only: "city" in "Kansas City" is part of a name."""
    edits = []
    for word, counterparts in ROLE_SWAPS.items():
        if m := re.search(rf"(?:^|(?<=\s))(?:{word}|{word.capitalize()})\b", question):
            if m.start() > 0 and m.group(0)[:1].isupper():
                continue
            edits += [question[: m.start()] + _keep_case(m.group(0), c) + question[m.end() :] for c in counterparts]
    return _unique(question, edits)


def category_edits(question: str) -> list[str]:
    """The question asking another kind of fact: the first wh-phrase of :data:`CATEGORY_SWAPS` it has, swapped."""
    for pattern, alternatives in CATEGORY_SWAPS:
        if m := re.search(pattern, question, re.IGNORECASE):
            return _unique(
                question,
                [question[: m.start()] + _keep_case(m.group(0), a) + question[m.end() :] for a in alternatives],
            )
    return []


def temporal_edits(question: str) -> list[str]:
    """The question with its first year shifted by −10, +10 and −1 years."""
    if not (m := _YEAR.search(question)):
        return []
    year = int(m.group(0))
    return _unique(question, [question[: m.start()] + str(year + d) + question[m.end() :] for d in (-10, 10, -1)])


def scope_edits(question: str) -> list[str]:
    """Broader questions: the last short qualifying phrase dropped (``"… in The Dark Knight?"`` → ``"…?"``)."""
    body = question.rstrip().rstrip("?").rstrip()
    cuts = [m.start() for m in _PREPOSITION.finditer(body) if len(body[m.end() :].split()) <= 6]
    edits = [f"{body[: cuts[-1]]}?"] if cuts else []
    return [e for e in _unique(question, edits) if len(e.split()) >= 4]


def edits_by_type(question: str, replacements: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Every applicable transformation type with its candidate edits (types without any are left out)."""
    found = {
        "entity": entity_edits(question, replacements),
        "role": role_edits(question),
        "categorical": category_edits(question),
        "temporal": temporal_edits(question),
        "scope": scope_edits(question),
    }
    return {kind: edits[:4] for kind, edits in found.items() if edits}
