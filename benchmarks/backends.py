"""The LLM backends side by side in one run, on the same model (the bundled Gemma 3 270M GGUF).

Per backend: load time, new tokens/s for 8 prompts generated one at a time and the same 8 as one batch
(fresh: each pass starts from an emptied cache, so both compute the same prompt tokens; then warm: the same
again, where llama.cpp's cache leaves only the decoding), ``logprob``
candidates/s for 50 passages sharing one query prefix (the CIS / MoI pattern), seconds per
``standard_rag`` question on the bundled demo questions, and how many of those answers equal the
transformers backend's. Ratios are against transformers; the goal for llama.cpp on CPU is ≥ 3×.

Usage: ``python benchmarks/backends.py [--new-tokens 32] [--backends transformers,llamacpp,openai]``
(``openai`` needs ``CAUSALRAG_OPENAI_URL``, e.g. a ``python -m llama_cpp.server`` on the same GGUF;
it is skipped when unset).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time

from causalrag.config import settings
from causalrag.corpus import demo_passages, demo_questions, hotpotqa_questions
from causalrag.graphs.registry import build_graph
from causalrag.prompts.common import answer_prompt
from causalrag.tools.store import Passage, Store
from causalrag.tools.usage import metered


def answer_prompts(n: int) -> list[str]:
    rows = hotpotqa_questions()[:n]
    return [
        answer_prompt(r["question"], [Passage(t, " ".join(s)).to_document() for t, s in r["context"][:2]]) for r in rows
    ]


def load(name: str):
    if name == "transformers":
        from causalrag.tools.backends.transformers import TransformersLLM

        return TransformersLLM()
    if name == "llamacpp":
        from causalrag.tools.backends.llamacpp import LlamaCppLLM

        return LlamaCppLLM()
    from causalrag.tools.backends.openai import OpenAILLM

    return OpenAILLM(
        settings().openai_url, settings().openai_model, api="completions", sampling={"repeat_penalty": 1.0}
    )


def timed(fn):
    start = time.perf_counter()
    with metered() as usage:
        result = fn()
    return time.perf_counter() - start, usage, result


def measure(name: str, new_tokens: int, store: Store) -> dict:
    start = time.perf_counter()
    llm = load(name)
    row: dict = {"load s": time.perf_counter() - start}
    prompts = answer_prompts(10)
    llm.generate(prompts[9:], max_new_tokens=2)  # warm-up on a prompt measured nowhere else
    eight = prompts[1:9]
    runs = {
        "1by1": lambda: [llm.generate([p], max_new_tokens=new_tokens) for p in eight],
        "batch8": lambda: llm.generate(eight, max_new_tokens=new_tokens),
    }
    for kind in (
        "fresh",
        "warm",
    ):  # fresh: an emptied cache; warm: the same prompts again (llama.cpp: only decoding left)
        for label, run in runs.items():
            if kind == "fresh" and hasattr(llm, "clear_cache"):
                llm.clear_cache()
            seconds, usage, _ = timed(run)
            row[f"{kind} {label} tok/s"] = usage.new_tokens / seconds
    question = demo_questions()[0]["question"]
    passages = [f" {p.text}" for p in demo_passages()[:50]]
    seconds, _, _ = timed(lambda: llm.logprob([f"Question: {question}\nPassage:"] * len(passages), passages))
    row["logprob cand/s"] = len(passages) / seconds
    graph = build_graph("standard_rag", llm=llm, store=store)
    questions = demo_questions()
    seconds, _, answers = timed(lambda: [graph.invoke({"question": q["question"]})["answer"] for q in questions])
    row["s/question"] = seconds / len(questions)
    row["answers"] = answers
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--backends", default="transformers,llamacpp,openai")
    args = parser.parse_args()
    wanted = args.backends.split(",")
    skip = {"llamacpp": importlib.util.find_spec("llama_cpp") is None, "openai": not settings().openai_url}
    names = [n for n in wanted if not skip.get(n)]
    store = Store.in_memory(demo_passages())
    columns = [
        "load s",
        "fresh 1by1 tok/s",
        "fresh batch8 tok/s",
        "warm 1by1 tok/s",
        "warm batch8 tok/s",
        "logprob cand/s",
        "s/question",
    ]
    print(
        f"Gemma 3 270M Q4_K_M GGUF, {args.new_tokens} new tokens, {len(demo_questions())} demo questions"
        f" (skipped: {', '.join(n for n in wanted if skip.get(n)) or 'none'}); "
        f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()}"
    )
    print(f"{'backend':<14}" + "".join(f"{c:>20}" for c in columns) + f"{'same answers':>14}", flush=True)
    rows: dict[str, dict] = {}
    for name in names:  # one row as soon as it is measured
        row = rows[name] = measure(name, args.new_tokens, store)
        reference = rows.get("transformers")
        same = (
            f"{sum(a == b for a, b in zip(row['answers'], reference['answers'], strict=True))}/{len(row['answers'])}"
            if reference
            else "–"
        )
        print(f"{name:<14}" + "".join(f"{row[c]:>20.2f}" for c in columns) + f"{same:>14}", flush=True)
    reference = rows.get("transformers")
    if reference:
        for name, row in rows.items():
            if name == "transformers":
                continue
            ratios = {
                "generation (8 fresh prompts one at a time)": row["fresh 1by1 tok/s"] / reference["fresh 1by1 tok/s"],
                "generation (8 fresh prompts together)": row["fresh batch8 tok/s"] / reference["fresh batch8 tok/s"],
                "scoring": row["logprob cand/s"] / reference["logprob cand/s"],
                "standard_rag": reference["s/question"] / row["s/question"],
            }
            print(f"{name} vs transformers (goal >= 3x): " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))
            for q, ours, theirs in zip(demo_questions(), row["answers"], reference["answers"], strict=False):
                if ours != theirs:
                    print(f"  {q['id']}: transformers {theirs!r} vs {name} {ours!r}")
    for name, row in rows.items():
        print(
            f"{name}: 8 prompts together vs one at a time, tok/s: "
            f"fresh {row['fresh batch8 tok/s'] / row['fresh 1by1 tok/s']:.2f}x, "
            f"warm (decoding only on llama.cpp) {row['warm batch8 tok/s'] / row['warm 1by1 tok/s']:.2f}x (goal >= 2x)"
        )
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
