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
    assert llm.exact_streams == [True]  # the reading a routed method keeps is computed exact
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


@pytest.fixture
def no_default_model(monkeypatch):
    """Loading the process-wide model would mean a bound ``llm`` was lost: make that fail at once."""

    def refuse():
        raise AssertionError("the default model was loaded: the bound llm was lost")

    monkeypatch.setattr("causalrag.tools.llm.default_llm", refuse)


def test_invoke_context_dict_merges_over_build_defaults(memory_store, no_default_model):
    llm = FakeLLM(default=" Paris")
    graph = build_graph("standard_rag", k=1, retrieval="bm25", llm=llm, store=memory_store)
    assert len(graph.invoke({"question": "Eiffel Tower"})["documents"]) == 1
    state = graph.invoke({"question": "Eiffel Tower"}, context={"k": 3})
    assert len(state["documents"]) == 3 and state["answer"] == "Paris" and len(llm.prompts) == 2  # llm and store kept
    assert {d.metadata["retrieval"] for d in state["documents"]} == {"bm25"}  # so is retrieval
    # a named field wins even when it equals the class default (RAGContext.k = 5) that build_graph changed
    assert len(graph.invoke({"question": "Eiffel Tower"}, context={"k": 5})["documents"]) == 5
    assert len(graph.invoke({"question": "Eiffel Tower"})["documents"]) == 1  # the bound context is untouched
    other = FakeLLM(default=" Lyon")
    assert graph.invoke({"question": "Eiffel Tower"}, context={"llm": other})["answer"] == "Lyon"


def test_invoke_context_dataclass_merges_the_fields_it_names(memory_store, no_default_model):
    graph = build_graph("standard_rag", k=1, retrieval="bm25", llm=FakeLLM(default=" Paris"), store=memory_store)
    state = graph.invoke({"question": "Eiffel Tower"}, context=RAGContext(k=2))
    assert len(state["documents"]) == 2 and state["answer"] == "Paris"
    assert {d.metadata["retrieval"] for d in state["documents"]} == {"bm25"}
    ctx = RAGContext()  # names nothing: every field keeps the bound value ...
    assert len(graph.invoke({"question": "Eiffel Tower"}, context=ctx)["documents"]) == 1
    ctx.retrieval = "dense"  # ... until assigned, even to the class default
    state = graph.invoke({"question": "Eiffel Tower"}, context=ctx)
    assert len(state["documents"]) == 1 and {d.metadata["retrieval"] for d in state["documents"]} == {"dense"}


def test_no_node_writes_the_default_model_or_store_into_a_context(memory_store, monkeypatch):
    """The defaults are looked up, not stored: the caller's context and the bound one stay as they were."""
    llm = FakeLLM(default=" Paris")
    monkeypatch.setattr("causalrag.tools.llm.default_llm", lambda: llm)
    monkeypatch.setattr("causalrag.corpus.default_store", lambda collection: memory_store)
    graph = build_graph("standard_rag", k=1)
    given = RAGContext(k=2)
    assert graph.invoke({"question": "Eiffel Tower"}, context=given)["answer"] == "Paris"
    assert graph.invoke({"question": "Eiffel Tower"})["answer"] == "Paris"
    bound = graph.config["configurable"]["causalrag_context"]
    assert (given.llm, given.store, given.named()) == (None, None, {"k"})
    assert (bound.llm, bound.store) == (None, None)
    assert len(llm.prompts) == 2


def test_context_names_its_constructor_arguments_and_assignments():
    ctx = RAGContext(k=3, llm=None)
    assert ctx.named() == {"k", "llm"}
    ctx.max_new_tokens = 8
    assert ctx.named() == {"k", "llm", "max_new_tokens"}
    base = make_context("standard_rag", k=1, retrieval="bm25", collection="books")
    merged = ctx.over(base)
    assert (merged.k, merged.max_new_tokens, merged.retrieval, merged.collection) == (3, 8, "bm25", "books")
    assert ctx.over(base) is merged  # one object per run, so every node sees the same context
    ctx.k = 4
    assert ctx.over(base).k == 4  # an assignment is seen by the next run
    with pytest.raises(UnknownParameterError, match="has no parameter 'kk'"):
        RAGContext(kk=3)


def test_a_context_of_another_method_names_fields_this_one_lacks(memory_store):
    graph = build_graph("standard_rag", llm=FakeLLM(), store=memory_store)
    with pytest.raises(UnknownParameterError, match="has no parameter 'judge'"):
        graph.invoke({"question": "Eiffel Tower"}, context=make_context("astute", judge="score"))
    with pytest.raises(UnknownParameterError, match="has no parameter 'kk'"):
        graph.invoke({"question": "Eiffel Tower"}, context={"kk": 3})


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
