"""The repo's graphs behind LangGraph's API server (``langgraph dev`` on ``langgraph.json``), called from
``langgraph_sdk`` and ``RemoteGraph`` as LangGraph users do; the server's store is a real Chroma server
and, in the last test, its checkpoints go to a real PostgreSQL server.

Proves: every graph in langgraph.json is served; a run takes its parameters as LangGraph ``context``, merged
over what the deployment's ``build_graph`` bound;
``stream_mode`` custom / updates / messages carry the evidence events, node updates and answer tokens
over HTTP; a bad parameter is one sentence in the run's error; with the ``checkpointer`` hook of
langgraph.json pointing at ``causalrag.checkpoints:server_checkpointer``, a thread's steps are rows in
PostgreSQL and the thread's state reads back from there.
"""

from __future__ import annotations

import importlib.util

import psycopg
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

import causalrag
from causalrag.tools.store import Passage, Store
from tests.servers.conftest import langgraph_dev

pytestmark = pytest.mark.slow  # each server process loads the bundled model (llama.cpp: ~1 s) and MiniLM

BACKEND = "llamacpp" if importlib.util.find_spec("llama_cpp") else "transformers"
COLLECTION = "lg-zoo"
QUESTION = "Which island is the quokka found on?"
CONTEXT = {"collection": COLLECTION, "k": 1, "retrieval": "bm25", "max_new_tokens": 6}  # BM25: no query embedding
PASSAGES = [
    Passage("quokka", "The quokka is a small wallaby found on Rottnest Island near Perth in Western Australia."),
    Passage("okapi", "The okapi lives in the rainforests of the Democratic Republic of the Congo."),
    Passage("axolotl", "The axolotl is a salamander native to Lake Xochimilco in Mexico City."),
]


@pytest.fixture(scope="module")
def zoo(chroma_server):
    Store(COLLECTION, url=chroma_server, embeddings=DeterministicFakeEmbedding(size=16)).add(PASSAGES)
    return chroma_server


def server_env(home, chroma_url: str, **extra: str) -> dict[str, str]:
    return {
        "CAUSALRAG_HOME": str(home),
        "CAUSALRAG_BACKEND": BACKEND,
        "CAUSALRAG_CHROMA_URL": chroma_url,
        "HF_HUB_OFFLINE": "1",
        **extra,
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory, zoo):
    folder = tmp_path_factory.mktemp("langgraph-dev")
    with langgraph_dev(
        folder, server_env(folder / "home", zoo), graphs={"bound": "tests/servers/bound_graph.py:graph"}
    ) as url:
        yield url


def test_sdk_invokes_and_streams_evidence_updates_and_tokens(api):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=api)
    assert {a["graph_id"] for a in client.assistants.search(limit=50)} == {*causalrag.METHODS, "bound"}

    state = client.runs.wait(None, "standard_rag", input={"question": QUESTION}, context=CONTEXT)
    assert state["answer"].strip()
    assert [d["metadata"]["title"] for d in state["documents"]] == ["quokka"]
    assert [e["node"] for e in state["trace"]] == ["retrieve", "answer"]

    parts = list(client.runs.stream(None, "standard_rag", input={"question": QUESTION}, context=CONTEXT,
                                    stream_mode=["custom", "updates", "messages-tuple"]))
    custom = [p.data for p in parts if p.event == "custom"]
    evidence = [e for e in custom if e["type"] == "evidence"]
    assert evidence[0]["stage"] == "retrieve" and [d["title"] for d in evidence[0]["documents"]] == ["quokka"]
    assert any(e["type"] == "token" for e in custom) and custom[-1] == {
        "type": "answer",
        "stage": "answer",
        "answer": state["answer"],
    }
    assert [next(iter(p.data)) for p in parts if p.event == "updates"] == ["retrieve", "answer"]
    chunks = [p.data for p in parts if p.event == "messages"]
    assert chunks and all(meta["langgraph_node"] == "answer" for _, meta in chunks)
    assert "".join(chunk["content"] for chunk, _ in chunks).strip() == state["answer"]


def test_run_context_merges_over_what_the_deployment_bound(api):
    from langgraph_sdk import get_sync_client

    from tests.servers.bound_graph import ANSWER

    client = get_sync_client(url=api)
    bound = client.runs.wait(None, "bound", input={"question": QUESTION})
    assert bound["answer"] == ANSWER and [d["metadata"]["title"] for d in bound["documents"]] == ["quokka"]
    state = client.runs.wait(None, "bound", input={"question": QUESTION}, context={"k": 2})
    assert state["answer"] == ANSWER  # the bound LLM, collection and retrieval are kept ...
    docs = state["documents"]
    assert (
        len(docs) == 2
        and docs[0]["metadata"]["title"] == "quokka"
        and {d["metadata"]["retrieval"] for d in docs} == {"bm25"}
    )
    state = client.runs.wait(None, "bound", input={"question": QUESTION}, context={"max_new_tokens": 4, "k": 5})
    assert (
        state["answer"] == ANSWER and len(state["documents"]) == 3
    )  # ... and k=5 (the class default) wins over k=1: all 3


def test_remote_graph_invokes_and_streams(api):
    from langgraph.pregel.remote import RemoteGraph

    remote = RemoteGraph("standard_rag", url=api)
    state = remote.invoke({"question": QUESTION}, context=CONTEXT)
    assert state["answer"].strip() and state["documents"][0]["metadata"]["title"] == "quokka"
    events = [
        (e["type"], e["data"])
        for e in remote.stream({"question": QUESTION}, context=CONTEXT, stream_mode=["custom", "updates"], version="v2")
    ]
    assert {mode for mode, _ in events} == {"custom", "updates"}
    assert any(
        mode == "custom" and chunk["type"] == "evidence" and chunk["documents"][0]["title"] == "quokka"
        for mode, chunk in events
    )
    assert [next(iter(chunk)) for mode, chunk in events if mode == "updates"] == ["retrieve", "answer"]


def test_a_bad_parameter_is_one_sentence_in_the_run_error(api):
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=api)
    thread = client.threads.create()
    client.runs.wait(
        thread["thread_id"],
        "standard_rag",
        input={"question": QUESTION},
        context={**CONTEXT, "k": 0},
        raise_error=False,
    )
    runs = client.runs.list(thread["thread_id"])
    assert runs[0]["status"] == "error"
    error = client.threads.get(thread["thread_id"])["error"]
    assert error["error"] == "InvalidParameterError" and error["message"].startswith("Parameter k=0 of "), error
    assert error["message"].endswith("is not valid: give at least 1."), error


def test_server_checkpoints_go_to_postgres(tmp_path, zoo, postgres_server):
    from langgraph_sdk import get_sync_client

    env = server_env(tmp_path / "home", zoo, CAUSALRAG_CHECKPOINT_URL=postgres_server)
    with langgraph_dev(tmp_path, env, checkpointer=True) as url:
        client = get_sync_client(url=url)
        thread = client.threads.create()["thread_id"]
        done = client.runs.wait(thread, "standard_rag", input={"question": QUESTION}, context=CONTEXT)
        with psycopg.connect(postgres_server) as conn:
            stored = conn.execute("select count(*) from checkpoints where thread_id = %s", (thread,)).fetchone()[0]
        assert stored >= 2  # the thread's steps are rows in PostgreSQL
        state = client.threads.get_state(thread)
        assert state["values"]["answer"] == done["answer"] and state["next"] == []
        assert len(client.threads.get_history(thread, limit=10)) >= 3
    assert "Using custom checkpointer: ServerPostgresSaver" in (tmp_path / "log.txt").read_text()
