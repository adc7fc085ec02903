"""RetroRAG prompts (paper Appendix A, Figures 7–13), in our own words and short, and their parsers.

The default model is a 270M base model at ~9 new tokens/s on a CPU, so every prompt is a plain
completion with at most two tiny worked examples and a stop string; the judge prompts
(M_sc, M_e, M_qr, M_ra) end in "Answer:" and are read as the next token's P(yes)/(P(yes)+P(no)).
Retrieved passages and generated inferences are data: whitespace is collapsed (``one_line``) so
they cannot open a new prompt line.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from causalrag.prompts.common import EXAMPLES, format_passages, inert
from causalrag.text import clean_answer, one_line

ANSWER_STOP = ("\n\n", "\nQuestion:", "\nPassages:")
LINE_STOP = ("\n",)
LIST_STOP = ("\n\n", "\nQuestion:", "\nPassages:")
CONTENT_FREE = "N/A"
"""The content-free input (Zhao et al., 2021) that calibrates each judge prompt."""

# The bridge example of the shared prompts, with a one-sentence reasoning (M_C) and facts (M_IE).
_BRIDGE_PASSAGES, _BRIDGE_Q, _BRIDGE_A = EXAMPLES[1]
_BRIDGE_REASONING = "Inception was directed by Christopher Nolan, and Nolan was born in London."
_BRIDGE_FACTS = ("Christopher Nolan directed Inception.", "The director of Inception was born in London.")
_PEAK_PASSAGES, _PEAK_Q, _PEAK_A = EXAMPLES[0]
_PEAK_REASONING = "Everest is on the Nepal-China border and K2 on the China-Pakistan border, so both are in China."


def context_block(documents: Sequence[Document], inferences: Sequence[str]) -> str:
    """E^(L): the source evidence as numbered passages, then the inferential evidence as facts."""
    block = f"Passages:\n{format_passages(documents)}" if documents else "Passages:\n(none)"
    if inferences:
        block += "\nKnown facts:\n" + "\n".join(f"- {inert(f)}" for f in inferences)
    return block


def cot_prompt(question: str, documents: Sequence[Document], inferences: Sequence[str]) -> str:
    """M_C (§Answerer): one sentence of reasoning r, then the short answer a."""
    shots = "".join(
        f"Passages:\n{p}\nQuestion: {q}\nReasoning: {r}\nAnswer: {a}\n\n"
        for p, q, r, a in (
            (_BRIDGE_PASSAGES, _BRIDGE_Q, _BRIDGE_REASONING, _BRIDGE_A),
            (_PEAK_PASSAGES, _PEAK_Q, _PEAK_REASONING, _PEAK_A),
        )
    )
    return (
        "Answer the question from the passages. Reason in one sentence, then answer with a short phrase.\n\n"
        f"{shots}{context_block(documents, inferences)}\nQuestion: {one_line(question)}\nReasoning:"
    )


def split_cot(text: str) -> tuple[str, str | None]:
    """(reasoning r, answer a) of an M_C completion; a is None when no "Answer:" line came."""
    head, sep, tail = text.partition("Answer:")
    reasoning = one_line(head)
    return reasoning, clean_answer(tail) if sep else None


def direct_prompt(question: str, documents: Sequence[Document], inferences: Sequence[str]) -> str:
    """M_D (§Answerer): the same knowledge, answered directly (sampled at temperature 1.0)."""
    shots = "".join(f"Passages:\n{p}\nQuestion: {q}\nAnswer: {a}\n\n" for p, q, a in EXAMPLES[:2])
    return (
        "Answer the question with a short phrase from the passages.\n\n"
        f"{shots}{context_block(documents, inferences)}\nQuestion: {one_line(question)}\nAnswer:"
    )


def consistency_prompt(question: str, answer: str, sc_answer: str) -> str:
    """M_sc (Eq. 1): do the chain-of-thought answer a and the monitoring answer a_sc agree?"""
    return (
        "Question: Where was Christopher Nolan born?\nAnswer A: London\nAnswer B: London, England\n"
        "Do A and B give the same answer? Yes\n\n"
        "Question: Where was Christopher Nolan born?\nAnswer A: London\nAnswer B: Paris\n"
        "Do A and B give the same answer? No\n\n"
        f"Question: {one_line(question)}\nAnswer A: {one_line(answer)}\nAnswer B: {one_line(sc_answer)}\n"
        "Do A and B give the same answer?"
    )


def relevance_prompt(evidence: str, query: str) -> str:
    """M_e (Eq. 2, 4): does this piece of evidence help answer the (matching) query?"""
    return (
        f"Text: {one_line(evidence)}\nQuestion: {one_line(query)}\n"
        "Does the text help answer the question? Answer Yes or No.\nAnswer:"
    )


def inference_prompt(question: str, entities: Sequence[str], documents: Sequence[Document]) -> str:
    """M_IE (§Evidence Discovery): deduce short facts about the key entities k from E_s^(L)."""
    facts = "\n".join(f"- {f}" for f in _BRIDGE_FACTS)
    about = ", ".join(entities) or one_line(question)
    return (
        "Write short facts, deduced from the passages, that help answer the question.\n\n"
        f"Passages:\n{_BRIDGE_PASSAGES}\nQuestion: {_BRIDGE_Q}\nFacts about Inception:\n{facts}\n\n"
        f"Passages:\n{format_passages(documents)}\nQuestion: {one_line(question)}\nFacts about {one_line(about)}:\n-"
    )


def parse_facts(text: str, limit: int) -> list[str]:
    """Bullet lines of the M_IE completion (the first bullet's dash is in the prompt), at most ``limit``.

    Fragments under three words (a line cut by the token budget) and repeats are dropped.
    """
    facts = []
    for line in text.splitlines():
        fact = one_line(line.lstrip("-*• ").strip())
        if len(fact.split()) >= 3 and not fact.lower().startswith(("facts about", "passages", "question")):
            facts.append(fact)
    return list(dict.fromkeys(facts))[:limit]


def question_relevance_prompt(inference: str, known: Sequence[str], query: str) -> str:
    """M_qr (Eq. 3): knowing E_i^(L-1), does the new inference e_ic directly help answer q_m?"""
    known_line = "; ".join(one_line(k) for k in known) or "nothing yet"
    return (
        f"Known: {known_line}\nNew fact: {one_line(inference)}\nQuestion: {one_line(query)}\n"
        "Does the new fact directly help answer the question? Answer Yes or No.\nAnswer:"
    )


def attribution_prompt(inference: str, documents: Sequence[Document]) -> str:
    """M_ra (Eq. 3): is the inference's claim stated in the source evidence E_s^(L)?"""
    return (
        f"Passages:\n{format_passages(documents)}\nClaim: {one_line(inference)}\n"
        "Is the claim stated in the passages? Answer Yes or No.\nAnswer:"
    )


def requery_prompt(question: str, documents: Sequence[Document], inferences: Sequence[str], reasoning: str) -> str:
    """M_R (Eq. 5): from (E_s, E_i, r, q), a search query for the missing information."""
    return (
        "Write a search query for the information still missing to answer the question.\n\n"
        f"Passages:\n{_BRIDGE_PASSAGES.splitlines()[0]}\nQuestion: {_BRIDGE_Q}\n"
        "Reasoning: Inception was directed by Christopher Nolan, but his birthplace is not given.\n"
        "Search query: Christopher Nolan birthplace\n\n"
        f"{context_block(documents, inferences)}\nQuestion: {one_line(question)}\n"
        f"Reasoning: {one_line(reasoning) or 'not enough information'}\nSearch query:"
    )


def claim_prompt(documents: Sequence[Document]) -> str:
    """Scored M_ra: after it, an inference's likelihood says how much the passage states it ("N/A": none)."""
    passages = format_passages(documents) if documents else CONTENT_FREE
    return f"Passages:\n{passages}\nA fact these passages state:"


def helps_prompt(fact: str) -> str:
    """Scored M_qr: after it, the question's likelihood says how much the inference helps answer it."""
    return f"Known fact: {inert(fact)}\nA question this fact helps answer:"
