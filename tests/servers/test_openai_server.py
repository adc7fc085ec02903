"""The openai backend against OpenAI-compatible servers over real sockets.

* llama-cpp-python's server on the bundled GGUF (the backend's conformance suite against it lives in
  tests/tools/test_backends.py): graphs run under ``ainvoke`` / ``astream`` / ``abatch`` and the batch's
  questions are in flight together.
* small stand-in servers (``http.server``) for what we cannot start here: one that refuses ``echo``
  (llama.cpp's own ``llama-server``, TGI), one that answers completions without ``logprobs``, one with
  only the chat endpoint. Scoring against each is one sentence naming the missing capability.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

import causalrag
from causalrag.errors import CausalRAGError, ScoringUnavailableError
from causalrag.tools.backends.openai import OpenAILLM
from causalrag.tools.store import Passage, Store

PASSAGES = [
    Passage("Colosseum", "The Colosseum is an ancient amphitheatre in the centre of the city of Rome, Italy."),
    Passage("Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889."),
    Passage("Okapi", "The okapi lives in the rainforests of the Democratic Republic of the Congo."),
    Passage("Quokka", "The quokka is a small wallaby found on Rottnest Island near Perth."),
    Passage("Axolotl", "The axolotl is a salamander native to Lake Xochimilco in Mexico."),
]
QUESTIONS = ["In which city is the Colosseum?", "When was the Eiffel Tower completed?"]


# --------------------------------------------------------------------------- stand-in servers
Route = Callable[[str, dict], tuple[int, dict]]


@contextmanager
def fake_openai(route: Route) -> Iterator[str]:
    """An HTTP server on a free local port: ``/v1/models`` lists one model, every POST is ``route(path, body)``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send(
                *(
                    (200, {"object": "list", "data": [{"id": "tiny", "object": "model"}]})
                    if self.path == "/v1/models"
                    else (404, {"error": "not found"})
                )
            )

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            self._send(*route(self.path, body))

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


def completion(text: str, **choice) -> tuple[int, dict]:
    return 200, {
        "choices": [{"text": text, "index": 0, "finish_reason": "stop", **choice}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def chat(text: str) -> tuple[int, dict]:
    return 200, {
        "choices": [{"message": {"role": "assistant", "content": text}, "index": 0}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def refuses_echo(path: str, body: dict) -> tuple[int, dict]:
    """As llama.cpp's llama-server: plain completions work, ``echo`` (prompt log-probs) is refused."""
    if body.get("echo"):
        return 400, {"error": {"code": 400, "message": "\"echo\" is not supported", "type": "invalid_request_error"}}
    return completion(" Rome")


def no_logprobs(path: str, body: dict) -> tuple[int, dict]:
    """Answers every completion, ``echo``/``logprobs`` asked or not, without any log-probabilities."""
    return completion((body.get("prompt", "") if body.get("echo") else "") + " Rome")


def chat_only(path: str, body: dict) -> tuple[int, dict]:
    return chat("Rome") if path.endswith("/chat/completions") else (404, {"error": "only /v1/chat/completions here"})


@pytest.mark.parametrize(
    ("route", "api"),
    [(refuses_echo, "completions"), (no_logprobs, "completions"), (chat_only, "chat")],
    ids=["refuses-echo", "no-logprobs", "chat-only"],
)
def test_a_server_without_prompt_logprobs_is_one_sentence(route, api):
    with fake_openai(route) as url:
        llm = OpenAILLM(url, api=api, attempts=1)
        assert llm.generate(["Q: In which city is the Colosseum?\nA:"])[0][0].strip() == "Rome"  # generation works
        with pytest.raises(
            ScoringUnavailableError, match=r"cannot compute (prompt|next-token) log-probabilities"
        ) as caught:
            llm.logprob(["Q: Where?\nA:"], [" Rome"])
        assert "\n" not in str(caught.value)
        with pytest.raises(ScoringUnavailableError, match="next-token log-probabilities"):
            llm.yes_probability(["Is Rome in Italy?"])
        # a method that scores (CIS: log p(K|Q) − log p(K)) stops with that one sentence, not a traceback
        store = Store.in_memory(PASSAGES, embeddings=DeterministicFakeEmbedding(size=16))
        with pytest.raises(CausalRAGError, match="log-probabilities"):
            cis = causalrag.build_graph(
                "cis", llm=llm, store=store, retrieval="bm25", k=1, n_candidates=2
            )
            cis.invoke({"question": QUESTIONS[0]})


# --------------------------------------------------------------------------- llama-cpp-python's server, async
class Timed(OpenAILLM):
    """Records when each answer request (the answer node streams it) starts and ends, to see requests in flight
    together."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spans: list[tuple[float, float]] = []

    def stream(self, prompt, **kwargs):
        start = time.monotonic()
        yield from super().stream(prompt, **kwargs)
        self.spans.append((start, time.monotonic()))


@pytest.mark.slow
def test_abatch_ainvoke_and_astream_against_the_server(llama_server):
    llm = Timed(llama_server, api="completions", sampling={"repeat_penalty": 1.0}, max_concurrency=2)
    store = Store.in_memory(PASSAGES, embeddings=DeterministicFakeEmbedding(size=16))
    graph = causalrag.build_graph("standard_rag", llm=llm, store=store, retrieval="bm25", k=1, max_new_tokens=8)

    async def run():
        states = await graph.abatch([{"question": q} for q in QUESTIONS])
        one = await graph.ainvoke({"question": QUESTIONS[0]})
        events = [chunk async for chunk in graph.astream({"question": QUESTIONS[1]}, stream_mode="custom")]
        return states, one, events

    began = time.monotonic()
    states, one, events = asyncio.run(run())
    print(f"abatch + ainvoke + astream: {time.monotonic() - began:.1f} s; answer requests (start, end): {llm.spans}")
    assert [s["documents"][0].metadata["title"] for s in states] == ["Colosseum", "Eiffel Tower"]
    assert all(s["answer"].strip() for s in states), [s["answer"] for s in states]
    assert "Rome" in states[0]["answer"] and "1889" in states[1]["answer"]
    assert "Rome" in one["answer"]  # asked again: the same answer, maybe other words (llama.cpp is not batch-invariant)
    assert events[0]["type"] == "evidence" and events[-1] == {
        "type": "answer",
        "stage": "answer",
        "answer": states[1]["answer"],
    }
    (a_start, a_end), (b_start, b_end) = llm.spans[:2]  # abatch's two answer requests
    assert max(a_start, b_start) < min(a_end, b_end), llm.spans  # both questions were in flight together
