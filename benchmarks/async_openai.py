"""Sync vs async graphs against an OpenAI-compatible server: is an async HTTP client worth having?

Starts llama-cpp-python's server on the bundled GGUF (``causalrag.tools.servers.llama_server_command``:
2 threads, ``--interrupt_requests false``) and points the ``openai`` backend at it
(completions API, ``max_concurrency`` requests in flight from its thread pool). Then, in one run:

* ``--method cf_rag`` (default): CF-RAG's hypotheses stage. Each question runs once up to its
  ``Send`` fan-out (``interrupt_before=["hypothesize"]``, CPU parameters, ``judge=generate``); every
  mode then resumes the same checkpoints: the parallel hypotheses, arbitration and the final step.
  (Whole CF-RAG questions took 344 s each against this server on the shared 2-core machine.)
* ``--method standard_rag``: whole questions (one answer request each).

Modes: ``invoke`` one question after another (LangGraph already runs a step's ``Send`` branches in
threads), ``batch`` (LangGraph's thread pool), ``ainvoke`` one after another and ``abatch`` (sync
nodes in the event loop's executor threads). Prints seconds, the ratio to ``invoke``, the most
requests in flight at once, the backend's calls, and whether every answer equals ``invoke``'s.

Usage: ``python benchmarks/async_openai.py [--method cf_rag] [--questions 3] [--threads 2] [--concurrency 4]
[--modes invoke,abatch,batch,ainvoke] [--cache]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from _needs import LLAMA_SERVER, need

need("llamacpp", *LLAMA_SERVER)
need("openai", "httpx")

import httpx  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

import causalrag  # noqa: E402
from causalrag.corpus import hotpotqa_questions  # noqa: E402
from causalrag.tools.backends.openai import OpenAILLM  # noqa: E402
from causalrag.tools.servers import llama_server_command  # noqa: E402
from causalrag.tools.store import Passage, Store  # noqa: E402


class Counted(OpenAILLM):
    """The openai backend, counting how many HTTP requests are in flight at once."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self.now = self.most = 0

    def _enter(self) -> None:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def _leave(self) -> None:
        with self._lock:
            self.now -= 1

    def _post_once(self, path, payload):
        self._enter()
        try:
            return super()._post_once(path, payload)
        finally:
            self._leave()

    def stream(self, prompt, **kwargs):
        self._enter()
        try:
            yield from super().stream(prompt, **kwargs)
        finally:
            self._leave()


@contextmanager
def llama_server(threads: int, cache: bool = False) -> Iterator[str]:
    """llama-cpp-python's server on the bundled GGUF while the block runs: its base URL. Stopped at the end,
    on SIGTERM too (a timeout)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    proc, url = start_server(threads, cache)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def start_server(threads: int, cache: bool = False) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = llama_server_command(port=port, n_threads=threads, verbose=False, **({"cache": True} if cache else {}))
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start (pip install 'causalrag[llamacpp]')")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=["cf_rag", "standard_rag"], default="cf_rag")
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads of the server")
    parser.add_argument("--concurrency", type=int, default=4, help="the backend's max_concurrency (requests in flight)")
    parser.add_argument("--modes", default="invoke,abatch,batch,ainvoke", help="in this order; ratios are to the first")
    parser.add_argument("--cache", action="store_true", help="the server keeps prompt prefixes in RAM (--cache true)")
    args = parser.parse_args()

    rows = hotpotqa_questions()[: args.questions]
    questions = [{"question": r["question"]} for r in rows]
    passages = [Passage(t, " ".join(s)) for r in rows for t, s in r["context"]]
    with llama_server(args.threads, args.cache) as url:
        llm = Counted(url, api="completions", sampling={"repeat_penalty": 1.0}, max_concurrency=args.concurrency)
        store = Store.in_memory(passages)
        if args.method == "cf_rag":
            params = {**causalrag.METHODS["cf_rag"].cpu_params, "judge": "generate", "regenerate": False}
            graph = causalrag.build_graph("cf_rag", llm=llm, store=store, checkpointer=InMemorySaver(), **params)
            start = time.perf_counter()
            forks = []  # (input None, config at the checkpoint before the hypotheses) per question
            for n, q in enumerate(questions):
                config = {"configurable": {"thread_id": f"q{n}"}}
                graph.invoke(q, config, interrupt_before=["hypothesize"])
                forks.append(graph.get_state(config).config)
            print(f"up to the hypotheses, once per question: {time.perf_counter() - start:.1f} s", flush=True)
            inputs, configs = [None] * len(forks), forks
        else:
            params = {"k": 3, "max_new_tokens": 16}
            graph = causalrag.build_graph("standard_rag", llm=llm, store=store, **params)
            graph.invoke(questions[0])  # warm-up: embeddings loaded
            inputs, configs = questions, [None] * len(questions)

        modes = {
            "invoke": lambda: [graph.invoke(i, c) for i, c in zip(inputs, configs, strict=True)],
            "abatch": lambda: asyncio.run(graph.abatch(inputs, configs)),
            "batch": lambda: graph.batch(inputs, configs),
            "ainvoke": lambda: asyncio.run(one_by_one()),
        }

        async def one_by_one():
            return [await graph.ainvoke(i, c) for i, c in zip(inputs, configs, strict=True)]

        print(
            f"{args.method} ({params}), {len(questions)} HotpotQA questions, "
            f"llama-cpp-python server ({args.threads} threads), "
            f"max_concurrency={args.concurrency}, load {os.getloadavg()[0]:.1f} at the start"
        )
        print(
            f"{'mode':<9} {'seconds':>8} {'× invoke':>9} {'in flight':>10} {'LLM calls':>10}  same answers as invoke",
            flush=True,
        )
        base: tuple[float, list[str]] | None = None
        for name in args.modes.split(","):
            llm.most = 0
            start = time.perf_counter()
            calls = llm.usage.calls
            states = modes[name]()
            seconds, answers = time.perf_counter() - start, [s["answer"] for s in states]
            base = base or (seconds, answers)
            same = sum(a == b for a, b in zip(answers, base[1], strict=True))
            print(
                f"{name:<9} {seconds:>8.1f} {base[0] / seconds:>8.2f}× {llm.most:>10} {llm.usage.calls - calls:>10}"
                f"  {same}/{len(answers)}",
                flush=True,
            )
        print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
