"""MoI prompts (Lee et al., §3.1, Eq. 1-3): the Bayes-saliency scoring layout.

The saliency of an ordered list of passages is log p(q | passages) − log p(q): how much reading
the passages raises the likelihood of the question. The passages are laid out as the answer
prompt lays them out (``prompts.common.answer_prompt``: position 0, the answer step's top slot,
sits next to the question), so the position weights w describe the slots the answer step uses.
The question is the continuation, its leading space kept inside it (KV-cache reuse).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from causalrag.prompts.common import format_passages, one_line

NO_PASSAGES = "(none)"


def saliency_prefix(documents: Sequence[Document]) -> str:
    """Passages in answer-step layout (position 0 last, next to the question), then the question cue."""
    passages = format_passages(list(reversed(documents))) if documents else NO_PASSAGES
    return f"Passages:\n{passages}\nQuestion:"


def question_continuation(question: str) -> str:
    return f" {one_line(question)}"
