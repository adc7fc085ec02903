"""``causalrag eval --concurrency N`` against an OpenAI-compatible server: questions per second at N = 1, 2, 4
and 8, side by side in one run.

Starts llama-cpp-python's server on the bundled GGUF (as ``benchmarks/async_openai.py`` does: 2 threads,
``--interrupt_requests false``) and runs ``standard_rag`` over the first ``--questions`` HotpotQA questions
(distractor setting, their own pools) through :func:`causalrag.eval.runner.run_eval`, each N into a fresh run
folder, with the openai backend on the completions API (``max_concurrency`` = the largest N). The embeddings
are computed once before the timed runs, so the times are the questions' own. Prints seconds, questions per
second, the ratio to N = 1, the most requests in flight, and how many answers equal N = 1's.

llama-cpp-python's server answers one request at a time (one model, one context): what overlaps is the
client's work around the requests and the HTTP round trips; a server that batches requests in flight
(vLLM's continuous batching) is where N pays (docs/deploy.md).

Usage: ``python benchmarks/eval_concurrency.py [--questions 16] [--levels 1,2,4,8] [--threads 2]``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _needs import LLAMA_SERVER, need

need("llamacpp", *LLAMA_SERVER)
need("openai", "httpx")

from async_openai import Counted, llama_server  # noqa: E402

from causalrag.eval.conditions import load_examples  # noqa: E402
from causalrag.eval.runner import EvalConfig, run_eval  # noqa: E402
from causalrag.eval.settings import CachedEmbeddings, Pools  # noqa: E402
from causalrag.tools.encoders import default_embeddings  # noqa: E402


def warmed(questions: int) -> CachedEmbeddings:
    """The embeddings of every pool passage and question the runs will ask for, computed once."""
    embeddings = CachedEmbeddings(default_embeddings())
    examples = load_examples("hotpotqa")[:questions]
    Pools("distractor", examples, embeddings).close()
    for ex in examples:
        embeddings.embed_query(ex.question)
    return embeddings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--levels", default="1,2,4,8", help="questions in flight, in this order (ratios to the first)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads of the server")
    args = parser.parse_args()
    levels = [int(n) for n in args.levels.split(",")]
    config = EvalConfig(dataset="hotpotqa", methods=["standard_rag"], limit=args.questions)

    with llama_server(args.threads) as url, tempfile.TemporaryDirectory() as tmp:
        embeddings = warmed(args.questions)
        llm = Counted(url, api="completions", sampling={"repeat_penalty": 1.0}, max_concurrency=max(levels))
        print(f"standard_rag, {args.questions} HotpotQA questions (distractor), llama-cpp-python server "
              f"({args.threads} threads), load {os.getloadavg()[0]:.1f} at the start")
        header = f"{'in flight':>9} {'seconds':>8} {'q/s':>6} {'× N=1':>6} {'requests at once':>17}"
        print(f"{header}  same answers as N=1", flush=True)
        base: tuple[float, dict[str, str]] | None = None
        for n in levels:
            llm.most = 0
            start = time.perf_counter()
            rows = run_eval(config, Path(tmp) / f"n{n}", llm=llm, embeddings=embeddings, progress=False, concurrency=n)
            seconds = time.perf_counter() - start
            answers = {r["key"]: r["prediction"] for r in rows}
            errors = sum(r["error"] is not None for r in rows)
            base = base or (seconds, answers)
            same = sum(answers.get(k) == v for k, v in base[1].items())
            print(f"{n:>9} {seconds:>8.1f} {len(rows) / seconds:>6.2f} {base[0] / seconds:>5.2f}× {llm.most:>17}  "
                  f"{same}/{len(answers)}{f' ({errors} errors)' if errors else ''}", flush=True)
        print(f"load {os.getloadavg()[0]:.1f} at the end")

if __name__ == "__main__":
    main()
