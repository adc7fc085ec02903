"""``stream_mode="messages"``: every method's answer arrives as message chunks with the node's metadata,
as from any LangChain chat model, whether it was generated token by token or chosen by score; the
custom evidence events stay."""

from __future__ import annotations

import asyncio
from collections import defaultdict

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessageChunk

import causalrag
from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM

QUESTION = "What is the capital of France?"
FACTS = [
    Passage("Paris", "Paris is the capital and largest city of France."),
    Passage("France", "France is a country in Western Europe; its capital is Paris."),
    Passage("Lyon", "Lyon is the third-largest city of France."),
]
RUNS = [
    (m, judge)
    for m in causalrag.METHODS
    for judge in (("score", "generate") if "judge" in causalrag.METHODS[m].parameters() else (None,))
]


@pytest.fixture(scope="module")
def store():
    return Store.in_memory(FACTS, embeddings=DeterministicFakeEmbedding(size=16))


def paris_llm() -> FakeLLM:
    """Says Paris, prefers Paris among options, and yes to what mentions Paris."""
    return FakeLLM(
        default="Paris",
        option=lambda prompt, option: 0.0 if "Paris" in option else -5.0,
        yes=lambda prompt: 0.9 if "Paris" in prompt else 0.2,
    )


def graph_of(method: str, judge: str | None, store):
    params = {**causalrag.METHODS[method].cpu_params, **({"judge": judge} if judge else {})}
    return build_graph(method, llm=paris_llm(), store=store, **params)


def split(events) -> tuple[dict, dict[str, str], list[dict], dict]:
    """(final state, text per node from message chunks, custom events, metadata per node)."""
    texts: dict[str, str] = defaultdict(str)
    meta: dict[str, dict] = {}
    custom, final = [], {}
    for mode, event in events:
        if mode == "messages":
            chunk, metadata = event
            assert isinstance(chunk, AIMessageChunk)
            texts[metadata["langgraph_node"]] += str(chunk.content)
            meta[metadata["langgraph_node"]] = metadata
        elif mode == "custom":
            custom.append(event)
        else:
            final = event
    return final, dict(texts), custom, meta


@pytest.mark.parametrize(("method", "judge"), RUNS, ids=[f"{m}-{j}" if j else m for m, j in RUNS])
def test_every_method_streams_its_answer_as_message_chunks(method, judge, store):
    graph = graph_of(method, judge, store)
    final, texts, custom, meta = split(
        graph.stream({"question": QUESTION}, stream_mode=["messages", "custom", "values"])
    )
    answer = final["answer"]
    assert answer and "Paris" in answer
    answered = [e for e in custom if e["type"] == "answer"]
    assert answered, "the answer event stays in the custom stream"
    node = next(n for n, text in texts.items() if answer in text)  # the node that answered, by its metadata
    assert node in graph.get_graph().nodes and meta[node]["causalrag_stage"]
    if causalrag.METHODS[method].retrieves:
        assert any(e["type"] == "evidence" and e["documents"] for e in custom)


def test_a_streamed_answer_is_not_said_twice(store):
    """standard_rag generates its answer token by token: the chunks are the tokens, each once."""
    graph = graph_of("standard_rag", None, store)
    chunks = [c for c, meta in graph.stream({"question": QUESTION}, stream_mode="messages") if c.content]
    tokens = [e["text"] for e in graph.stream({"question": QUESTION}, stream_mode="custom") if e["type"] == "token"]
    assert [c.content for c in chunks] == tokens == ["Paris"]
    assert len({c.id for c in chunks}) == 1


def test_a_scored_answer_is_said_once_by_the_node_that_chose_it(store):
    graph = graph_of("cf_rag", "score", store)
    chunks = [(c, m) for c, m in graph.stream({"question": QUESTION}, stream_mode="messages")]
    said = [(m["langgraph_node"], m["causalrag_stage"]) for c, m in chunks if c.content == "Paris"]
    assert said and len(said) == len(set(said)) and all(node in ("accept", "synthesize") for node, _ in said)


def test_messages_stream_under_astream_too(store):
    graph = graph_of("moi", None, store)

    async def collect():
        return [
            (mode, event)
            async for mode, event in graph.astream({"question": QUESTION}, stream_mode=["messages", "values"])
        ]

    final, texts, _, meta = split(asyncio.run(collect()))
    assert final["answer"] in "".join(texts.values()) and all(m["langgraph_node"] in texts for m in meta.values())


def test_an_empty_completion_is_an_empty_answer_not_an_error(store):
    """A model that stops at once (no token at all) streams an empty reply; the graph still answers."""
    llm = FakeLLM(default="")
    graph = build_graph("standard_rag", llm=llm, store=store)
    state = graph.invoke({"question": QUESTION})
    assert state["answer"] == ""
    assert list(graph.stream({"question": QUESTION}, stream_mode="messages"))  # nothing raised, the run streamed
