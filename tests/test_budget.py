"""Prompts fitted to the model's window: lowest-ranked passages dropped, the best one trimmed, a too-long question
refused."""

import pytest
from langchain_core.documents import Document

from causalrag.budget import SAFETY, Fitted, check_question, fit_passages, question_may_overflow
from causalrag.errors import QuestionTooLongError
from tests.fakes import FakeLLM


def docs(n, words=10):
    return [
        Document(id=str(i), page_content=" ".join(f"w{i}" for _ in range(words)), metadata={"title": f"T{i}"})
        for i in range(n)
    ]


def prompt_for(question):
    return lambda ds: f"Passages: {' '.join(d.page_content for d in ds)} Question: {question} Answer:"


def test_everything_fits_when_there_is_room():
    fitted = fit_passages(FakeLLM(context_window=1000), prompt_for("why"), docs(5), reply_tokens=10)
    assert fitted == Fitted(docs(5)) and fitted.trace() == {}


def test_lowest_ranked_passages_are_dropped_to_fit():
    llm = FakeLLM(context_window=60 + SAFETY + 10)  # the template (~6 tokens) and 5 passages of 10 words
    fitted = fit_passages(llm, prompt_for("why"), docs(8), reply_tokens=10)
    assert [d.id for d in fitted.documents] == ["0", "1", "2", "3", "4"]
    assert fitted.trace() == {"budget_dropped": 3, "budget_trimmed": 0}
    assert llm.count_tokens([prompt_for("why")(fitted.documents)])[0] <= 60


def test_the_best_passage_is_trimmed_when_it_alone_overflows():
    llm = FakeLLM(context_window=30 + SAFETY + 10)
    fitted = fit_passages(llm, prompt_for("why"), docs(3, words=500), reply_tokens=10)
    (best,) = fitted.documents
    assert best.id == "0" and best.metadata["trimmed"] and best.page_content.startswith("w0 w0")
    assert fitted.dropped == 2 and fitted.trimmed == 1
    assert llm.count_tokens([prompt_for("why")([best])])[0] <= 30


def test_a_question_that_cannot_fit_is_one_sentence():
    llm = FakeLLM(context_window=100)
    with pytest.raises(QuestionTooLongError, match="shorten the question"):
        fit_passages(llm, prompt_for("why " * 200), docs(3), reply_tokens=10)
    with pytest.raises(QuestionTooLongError) as caught:
        check_question(FakeLLM(context_window=2000), "why " * 2000)
    assert "2,000 tokens" in str(caught.value) and "\n" not in str(caught.value)
    check_question(FakeLLM(context_window=2000), "why " * 100)


def test_only_a_long_question_needs_the_model_to_count_it():
    assert not question_may_overflow("Who wrote Pride and Prejudice? " * 20)
    assert question_may_overflow("why " * 1000)


def test_a_model_without_a_window_is_not_fitted():
    class Plain:
        def generate(self, prompts, **kw):
            return [[""] for _ in prompts]

    assert fit_passages(Plain(), prompt_for("why"), docs(50, words=1000), reply_tokens=10).documents == docs(
        50, words=1000
    )
    check_question(Plain(), "why " * 100000)
