"""MoI prompts (Lee et al., §3.1, Eq. 1-3): the Bayes-saliency scoring layout.

The saliency of an ordered list of passages is log p(q | passages) − log p(q): how much reading
the passages raises the likelihood of the question. Position 0 is the first passage of the
prompt, as in the paper (its Fig. 6 finds the first positions weigh most; the bundled 270M model
agrees: on the demo question its listwise scores rise when the best passage comes first, while
pointwise scores rank that passage top). The question is the continuation, its leading space kept
inside it (KV-cache reuse).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from causalrag.prompts.common import format_passages
from causalrag.text import one_line

NO_PASSAGES = "(none)"


def saliency_prefix(documents: Sequence[Document]) -> str:
    """The passages in the given order (position 0 first), then the question cue."""
    passages = format_passages(documents) if documents else NO_PASSAGES
    return f"Passages:\n{passages}\nQuestion:"


def question_continuation(question: str) -> str:
    """The question as the scored continuation of :func:`saliency_prefix`, its leading space kept."""
    return f" {one_line(question)}"
