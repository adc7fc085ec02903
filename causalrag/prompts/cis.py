"""CIS scoring texts (paper §4.1): the question as a prompt, the passage K as the text scored after it.

* ``qa`` — the paper's "QA-prompt" variant ("Q: … A: K"): the question framed as a question whose
  answer is the passage. The bundled model is a small *base* model, so the prompt carries one tiny
  worked example that shows "an answer is a passage"; it is shared by every candidate of a
  query, so its KV cache is computed once per query.
* ``plain`` — the paper's first form: the question itself is the prefix, the passage follows it.

The passage text K is ``"Title: text"`` (whitespace collapsed) and always starts with a space, so
the very same tokens are scored in log p(K | Q) and in log p(K) (the prior's prefix is empty: the
model's begin-of-sequence token only). The leading space also keeps the tokenizer boundary at the
prefix's end ("Answer:" + " K"), which the LLM tool's shared-prefix KV reuse relies on.
"""

from __future__ import annotations

from typing import Literal, get_args

from langchain_core.documents import Document

from causalrag.text import one_line

Form = Literal["qa", "plain"]
FORMS: tuple[Form, ...] = get_args(Form)

QA_EXAMPLE = (
    "Where was the director of Inception born?",
    "Christopher Nolan: Christopher Nolan is a British-American filmmaker born in London in 1970.",
)

PRIOR_PREFIX = ""
"""log p(K) is scored after the begin-of-sequence token only (paper §4.1, 'document likelihood')."""


def passage_text(doc: Document) -> str:
    """K as scored: ``" Title: text"`` on one line, with the leading space (see the module docstring)."""
    title = one_line(str(doc.metadata.get("title") or ""))
    body = one_line(doc.page_content)
    return f" {title}: {body}" if title else f" {body}"


def query_prefix(question: str, form: Form = "qa") -> str:
    """The prefix Q of log p(K | Q): the QA prompt (default) or the bare question."""
    question = one_line(question)
    if form == "plain":
        return question
    if form != "qa":
        raise ValueError(f"CIS form must be 'qa' or 'plain', not {form!r}.")
    shot_q, shot_k = QA_EXAMPLE
    return (
        "Each question is answered by a passage that gives the answer.\n\n"
        f"Question: {shot_q}\nAnswer: {shot_k}\n\n"
        f"Question: {question}\nAnswer:"
    )
