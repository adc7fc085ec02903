"""Generation throughput of the LLM tool, measured side by side in one run.

1. a batch of 8 prompts in one ``generate`` call vs a Python loop of 8 single calls;
2. our ``generate`` vs raw ``model.generate`` on the same tokenized input (overhead ratio, goal ≥ 0.9).

Usage: ``python benchmarks/llm_throughput.py [--new-tokens 32] [--repeats 2]``
"""

from __future__ import annotations

import argparse
import time

import torch

from causalrag.corpus import hotpotqa_questions
from causalrag.prompts.common import answer_prompt
from causalrag.tools.llm import load_llm
from causalrag.tools.store import Passage
from causalrag.tools.usage import metered


def prompts(n: int) -> list[str]:
    rows = hotpotqa_questions()[:n]
    return [
        answer_prompt(r["question"], [Passage(t, " ".join(s)).to_document() for t, s in r["context"][:2]]) for r in rows
    ]


def timed(fn):
    start = time.perf_counter()
    with metered() as usage:
        fn()
    return time.perf_counter() - start, usage


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    llm = load_llm(backend="transformers")  # compares against the raw transformers model.generate
    batch = prompts(8)
    llm.generate(batch[:1], max_new_tokens=4)  # warm-up

    best = {}
    for _ in range(args.repeats):
        for name, fn in {
            "batch of 8": lambda: llm.generate(batch, max_new_tokens=args.new_tokens),
            "loop of 8 single": lambda: [llm.generate([p], max_new_tokens=args.new_tokens) for p in batch],
        }.items():
            seconds, usage = timed(fn)
            rate = usage.new_tokens / seconds
            best[name] = max(best.get(name, (0, 0)), (rate, seconds))

    # overhead: our generate vs raw model.generate on one identical prompt
    one = batch[0]
    ids = llm.tokenizer(llm.format(one), return_tensors="pt").to(llm.device)
    raw_rates, ours_rates = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        with torch.inference_mode():
            out = llm.model.generate(
                **ids, max_new_tokens=args.new_tokens, do_sample=False, pad_token_id=llm.tokenizer.pad_token_id
            )
        raw_rates.append((out.shape[1] - ids["input_ids"].shape[1]) / (time.perf_counter() - start))
        seconds, usage = timed(lambda: llm.generate([one], max_new_tokens=args.new_tokens))
        ours_rates.append(usage.new_tokens / seconds)

    print(
        f"model {llm.name} on {llm.device}, {torch.get_num_threads()} threads, {args.new_tokens} new tokens, "
        f"best of {args.repeats}"
    )
    print(f"{'setting':<22}{'new tok/s':>10}{'seconds':>9}")
    for name, (rate, seconds) in best.items():
        print(f"{name:<22}{rate:>10.1f}{seconds:>9.2f}")
    print(f"batching speed-up: {best['batch of 8'][0] / best['loop of 8 single'][0]:.2f}x")
    print(f"raw model.generate: {max(raw_rates):.1f} tok/s; ours: {max(ours_rates):.1f} tok/s; "
          f"overhead ratio (ours/raw, goal >= 0.9): {max(ours_rates) / max(raw_rates):.2f}")


if __name__ == "__main__":
    main()
