"""CF-RAG prompts (our wording; Qin et al. §4.1.1 + App. E/F, §4.2.1 + App. G, §4.2.3 + App. J) and their parsers.

Written for a 270M base model: plain completions, one tiny worked example each, a line-end stop.
Instruct models get the same text through their chat template. Retrieved text only ever appears
inside the numbered passage block (``format_passages`` collapses its whitespace), so it cannot
open a new "Question:" or "Answer:" line.

Shared prefixes: a hypothesis prompt and the synthesis start with the same passage block (instruction,
worked example, passages) and differ only after it, so the synthesis re-reads the best path's passages
from the KV cache its hypothesis left (:func:`passage_block`, :func:`synthesis_prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from causalrag.prompts.common import format_passages, inert, reading_prefix
from causalrag.state.cf_rag import ScoredHypothesis
from causalrag.text import between, clean_answer, one_line

# --------------------------------------------------------------------------- §4.1.1 / App. F
# The five transformation types τ, most frequent first (App. E.3, Table 6), each with what it
# changes and one example rewrite of our own.
TRANSFORMATIONS: tuple[tuple[str, str, str, str], ...] = (
    ("entity", "the main entity, swapped for a similar one",
     "What river flows through Paris?", "What river flows through Rome?"),
    ("role", "the role or relation asked about",
     "Who wrote the novel Dracula?", "Who is the villain of the novel Dracula?"),
    ("categorical", "the category of fact asked about",
     "In which city was Mozart born?", "In which year was Mozart born?"),
    ("temporal", "the time period",
     "Who was the US president in 1990?", "Who was the US president in 1970?"),
    ("scope", "the breadth of the question",
     "Who invented the light bulb?", "Who helped develop electric lighting?"),
)
COUNTERFACTUAL_STOP = ("\n",)


def counterfactual_prompt(question: str, kind: str) -> str:
    """One rewrite of ``question`` along transformation ``kind`` (App. F template, paraphrased)."""
    _, change, example_q, example_cf = next(t for t in TRANSFORMATIONS if t[0] == kind)
    return (
        "Rewrite the question so it stays on the same topic but asks for a different answer. Change "
        f"{change}.\n\nQuestion: {example_q}\nRewrite: {example_cf}\n\nQuestion: {one_line(question)}\nRewrite:"
    )


def parse_rewrite(text: str) -> str:
    """The rewritten question of a counterfactual completion: one line, without wrapping quotes."""
    return one_line(text).strip("\"' ")


# --------------------------------------------------------------------------- §4.2.1 / App. G
HYPOTHESIS_STOP = ("\n\n", "\nPassages:", "\nQuestion:")
_HYPOTHESIS_EXAMPLE = (
    "[1] Alien (film): Alien is a 1979 film directed by Ridley Scott. Sigourney Weaver plays Ripley, the lead.\n"
    "[2] H. R. Giger: Giger designed the creature in Alien and won an Academy Award for it.",
    "Who plays the lead in Alien?",
    "Sigourney Weaver",
    "[1] names Weaver as Ripley, the lead; [2] is about the creature's designer, not the cast.",
)


def hypothesis_block(documents: Sequence[Document]) -> str:
    """The written hypothesis prompt up to its question: instruction, worked example, the passages in order.

    The example shows the distinction the paper asks for: evidence that decides the question
    versus evidence that is only on its topic.
    """
    passages, q, a, reason = _HYPOTHESIS_EXAMPLE
    return (
        "Answer the question from the passages that decide it, not from passages that are only on the "
        "same topic. Give a short answer, then the reason.\n\n"
        f"Passages:\n{passages}\nQuestion: {q}\nAnswer: {a}\nReason: {reason}\n\n"
        f"Passages:\n{format_passages(documents)}\n"
    )


def hypothesis_prompt(question: str, documents: Sequence[Document]) -> str:
    """Answer plus a one-line rationale from one evidence subset E_j (Eq. 8, App. G paraphrased)."""
    return f"{hypothesis_block(documents)}Question: {one_line(question)}\nAnswer:"


def reading_block(shown: Sequence[Document]) -> str:
    """The scored reading's prompt up to its question, with the passages shown in the order given.

    That prompt is :func:`~causalrag.prompts.common.answer_prompt`, which a scored hypothesis reads.
    """
    return reading_prefix(list(reversed(shown))).removesuffix("Question:")


def passage_block(shown: Sequence[Document], *, scored: bool) -> str:
    """The passage block a path's hypothesis prompt starts with: the scored reading's, or the written one's."""
    return reading_block(shown) if scored else hypothesis_block(shown)


def parse_hypothesis(text: str) -> tuple[str, str]:
    r"""(answer, rationale) from ``" answer\nReason: ..."``; missing parts are empty strings."""
    head = text.split("\nReason:", 1)[0]
    return clean_answer(head), one_line(between(text, "Reason:", "\n") or "")


# --------------------------------------------------------------------------- §4.2.3 / App. J
SYNTHESIS_STOP = ("\n",)


def synthesis_prompt(
    question: str, candidates: Sequence[ScoredHypothesis], shown: Sequence[Document], *, scored: bool
) -> str:
    """Combine the top-3 candidates (answer, Ψ, rationale) with the evidence into one answer (Eq. 12).

    The evidence comes first, as the hypotheses' :func:`passage_block` (``shown`` in reading order, the best
    path's passages as its hypothesis showed them first), so it is a prefix the cache already holds; the
    candidates and the task follow. Answers and rationales are model-written or quoted passages: inert data.
    """
    lines = "\n".join(
        f"Candidate {i} (score {c['psi']:.2f}): {inert(c['answer']) or '(none)'} because "
        f"{inert(c['rationale']) or '(no reason)'}"
        for i, c in enumerate(candidates, 1)
    )
    return (
        f"{passage_block(shown, scored=scored)}Several readers answered the question, each from some of these "
        f"passages:\n{lines}\nPick the answer that the passages support for this exact question; prefer agreement "
        f"and higher scores.\nQuestion: {one_line(question)}\nAnswer:"
    )
