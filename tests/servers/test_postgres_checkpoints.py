"""Graph checkpoints in a real PostgreSQL server (``langgraph-checkpoint-postgres``), the cluster started
by the test (initdb/pg_ctl on a free port) and stopped at the end.

Proves: ``CAUSALRAG_CHECKPOINT_URL`` makes a thread's steps go to PostgreSQL; a run interrupted before
its answer resumes from there in a new saver (another process would see the same); the CLI's
``ask --thread`` and ``history`` use it; a server that is down is one sentence.
"""

from __future__ import annotations

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from typer.testing import CliRunner

import causalrag
from causalrag.checkpoints import checkpointer, postgres_checkpointer, thread_config, thread_method
from causalrag.cli import app
from causalrag.errors import CausalRAGError
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM
from tests.servers.conftest import free_port

PASSAGES = [
    Passage("Colosseum", "The Colosseum is an ancient amphitheatre in the centre of the city of Rome, Italy."),
    Passage("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
]


@pytest.fixture
def pg(postgres_server, monkeypatch):
    monkeypatch.setenv("CAUSALRAG_CHECKPOINT_URL", postgres_server)
    return postgres_server


def rows(url: str, thread: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("select count(*) from checkpoints where thread_id = %s", (thread,)).fetchone()[0]


def test_a_thread_is_stored_in_postgres_and_resumes_there(pg):
    store = Store.in_memory(PASSAGES, embeddings=DeterministicFakeEmbedding(size=16))
    config = thread_config("pg-resume", "standard_rag")
    with checkpointer() as saver:
        assert type(saver).__name__ == "PostgresSaver"
        graph = causalrag.build_graph("standard_rag", checkpointer=saver, llm=FakeLLM(), store=store, k=1)
        graph.invoke({"question": "In which city is the Colosseum?"}, config, interrupt_before=["answer"])
        paused = graph.get_state(config)
        assert paused.next == ("answer",) and len(paused.values["documents"]) == 1 and "answer" not in paused.values
    assert rows(pg, "pg-resume") >= 2  # the steps are rows in PostgreSQL, not in a local file

    with checkpointer() as saver:  # a new connection, as another process or machine would open
        assert thread_method(saver, "pg-resume") == "standard_rag"
        graph = causalrag.build_graph("standard_rag", checkpointer=saver, llm=FakeLLM(), store=store, k=1)
        done = graph.invoke(None, config)
        assert done["answer"] and [e["node"] for e in done["trace"]] == ["retrieve", "answer"]
        assert graph.get_state(config).next == ()
        assert len(list(graph.get_state_history(config))) >= 4


@pytest.mark.slow
def test_the_cli_threads_use_postgres(pg, monkeypatch, tmp_path):
    """``ask --thread`` then ``history`` with the real bundled model (no_rag: no retrieval, a few tokens)."""
    import importlib.util

    backend = "llamacpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    monkeypatch.setenv("CAUSALRAG_HOME", str(tmp_path))
    runner = CliRunner()
    asked = runner.invoke(
        app,
        [
            "ask",
            "What is the capital of France?",
            "--method",
            "no_rag",
            "--thread",
            "pg-cli",
            "--backend",
            backend,
            "-p",
            "max_new_tokens=4",
            "--json",
        ],
    )
    assert asked.exit_code == 0, (asked.output, asked.exception)
    assert rows(pg, "pg-cli") >= 2
    shown = runner.invoke(app, ["history", "--thread", "pg-cli"])
    assert shown.exit_code == 0 and "(done)" in shown.output and "no_rag" in shown.output
    assert not (tmp_path / "checkpoints.sqlite").exists()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (
            lambda: f"postgresql://causalrag@127.0.0.1:{free_port()}/postgres",
            "No PostgreSQL database takes checkpoints",
        ),
        (lambda: "mysql://host/db", "is not a postgresql:// URL"),
    ],
)
def test_a_postgres_server_that_is_down_is_one_sentence(url, says):
    with pytest.raises(CausalRAGError, match=says) as caught:
        with postgres_checkpointer(url()):
            pass
    assert "\n" not in str(caught.value)


def test_a_missing_database_is_named_without_the_password(postgres_server):
    host = postgres_server.removeprefix("postgresql://causalrag@")
    with pytest.raises(CausalRAGError, match="database \"nosuch\" does not exist") as caught:
        with postgres_checkpointer(f"postgresql://causalrag:hunter2@{host.rsplit('/', 1)[0]}/nosuch"):
            pass
    assert "hunter2" not in str(caught.value) and "***" in str(caught.value)
