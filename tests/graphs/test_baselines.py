"""Baseline graphs with a fake LLM and a real in-memory store: wiring, streaming, trace, bad input."""

import pytest

import causalrag
from causalrag.errors import EmptyQuestionError, UnknownMethodError, UnknownParameterError
from causalrag.graphs.registry import build_graph, make_context
from causalrag.state.base import RAGContext
from tests.fakes import FakeLLM


def run(method, question, llm, store, **params):
    return build_graph(method, llm=llm, store=store, **params).invoke({"question": question})


def test_standard_rag_answers_from_retrieved_passages(memory_store):
    llm = FakeLLM({"Canberra is the capital": " Canberra\nQuestion: more"})
    state = run("standard_rag", "What is the capital city of Australia?", llm, memory_store, k=3)
    assert state["answer"] == "Canberra"
    assert len(state["documents"]) == 3
    assert [e["node"] for e in state["trace"]] == ["retrieve", "answer"]
    assert state["trace"][1]["llm_calls"] == 1
    prompt = llm.prompts[-1]
    assert prompt.rstrip().endswith("Question: What is the capital city of Australia?\nAnswer:")


def test_no_rag_uses_no_documents(memory_store):
    llm = FakeLLM(default=" Jupiter")
    state = run("no_rag", "Largest planet?", llm, memory_store)
    assert state["answer"] == "Jupiter" and state["documents"] == []
    assert "Passages:" not in llm.prompts[-1]


def test_stream_shows_evidence_tokens_and_answer(memory_store):
    graph = build_graph("standard_rag", llm=FakeLLM(default=" Jane Austen"), store=memory_store, k=2)
    events = list(graph.stream({"question": "Who wrote Pride and Prejudice?"}, stream_mode=["updates", "custom"]))
    custom = [e for mode, e in events if mode == "custom"]
    kinds = [e["type"] for e in custom]
    assert kinds[0] == "evidence" and kinds[-1] == "answer" and "token" in kinds
    assert len(custom[0]["documents"]) == 2 and {"id", "title", "text", "score"} <= set(custom[0]["documents"][0])
    assert "".join(e["text"] for e in custom if e["type"] == "token").strip() == "Jane Austen"
    assert [next(iter(u)) for mode, u in events if mode == "updates"] == ["retrieve", "answer"]


def test_invoke_context_replaces_build_defaults(memory_store):
    graph = build_graph("standard_rag", k=1, llm=FakeLLM(), store=memory_store)
    assert len(graph.invoke({"question": "Eiffel Tower"})["documents"]) == 1
    state = graph.invoke({"question": "Eiffel Tower"}, context={"k": 4, "llm": FakeLLM(), "store": memory_store})
    assert len(state["documents"]) == 4


def test_empty_question_is_a_clear_error(memory_store):
    with pytest.raises(EmptyQuestionError, match="question is empty"):
        run("standard_rag", "   ", FakeLLM(), memory_store)
    with pytest.raises(EmptyQuestionError):
        causalrag.answer("")


def test_unknown_method_and_parameter():
    with pytest.raises(UnknownMethodError, match="choose one of"):
        build_graph("nope")
    with pytest.raises(UnknownParameterError, match="no parameter 'kk'"):
        make_context("standard_rag", kk=3)


def test_registry_lists_baselines_first_with_parameters():
    names = list(causalrag.METHODS)
    assert names[:2] == ["no_rag", "standard_rag"]
    params = causalrag.METHODS["standard_rag"].parameters()
    assert params["k"] == 5 and "llm" not in params
    for name in names:
        assert issubclass(causalrag.METHODS[name].context, RAGContext)


def test_malformed_model_output_degrades_the_answer_not_the_graph(memory_store):
    state = run("standard_rag", "Who wrote Pride and Prejudice?", FakeLLM(default="\n\n\n"), memory_store)
    assert state["answer"] == ""


def test_every_graph_draws_offline():
    for name in causalrag.METHODS:
        graph = build_graph(name).get_graph()
        assert graph.draw_png()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "__start__" in graph.draw_mermaid()
