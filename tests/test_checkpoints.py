"""A graph interrupted after one node resumes to the same final answer as an uninterrupted run."""

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from causalrag.checkpoints import sqlite_checkpointer, thread_config, thread_method
from causalrag.graphs.registry import build_graph
from tests.fakes import FakeLLM

QUESTION = {"question": "What is the capital city of Australia?"}


def test_interrupt_and_resume_matches_uninterrupted(memory_store):
    llm = FakeLLM({"Canberra is the capital": " Canberra"})
    straight = build_graph("standard_rag", llm=llm, store=memory_store).invoke(QUESTION)

    graph = build_graph("standard_rag", llm=llm, store=memory_store, checkpointer=InMemorySaver())
    config = thread_config("t-1")
    graph.invoke(QUESTION, config, interrupt_after=["retrieve"])
    paused = graph.get_state(config)
    assert paused.next == ("answer",) and "answer" not in paused.values
    resumed = graph.invoke(None, config)
    assert resumed["answer"] == straight["answer"] == "Canberra"
    assert [d.id for d in resumed["documents"]] == [d.id for d in straight["documents"]]


def test_sqlite_checkpoints_persist_across_connections(memory_store, tmp_path):
    db = tmp_path / "cp.sqlite"
    llm = FakeLLM(default=" Rome")
    with sqlite_checkpointer(db) as saver:
        graph = build_graph("standard_rag", llm=llm, store=memory_store, checkpointer=saver)
        graph.invoke(
            {"question": "Where is the Colosseum?"}, thread_config("t-2", "standard_rag"), interrupt_after=["retrieve"]
        )
    with sqlite_checkpointer(db) as saver:  # a new process would see the same thing
        assert thread_method(saver, "t-2") == "standard_rag"
        graph = build_graph("standard_rag", llm=llm, store=memory_store, checkpointer=saver)
        assert graph.invoke(None, thread_config("t-2"))["answer"] == "Rome"
        steps = list(graph.get_state_history(thread_config("t-2")))
    assert [s.next for s in steps][:2] == [(), ("answer",)]


def test_a_damaged_checkpoint_database_is_one_sentence_and_kept(tmp_path):
    from causalrag.checkpoints import sqlite_checkpointer, thread_method
    from causalrag.errors import CausalRAGError

    path = tmp_path / "checkpoints.sqlite"
    path.write_bytes(b"this is not sqlite " * 100)
    with pytest.raises(CausalRAGError, match="cannot be read .*move it away"):
        with sqlite_checkpointer(path) as saver:
            thread_method(saver, "t1")
    assert path.read_bytes().startswith(b"this is not sqlite")
