"""cost.py's table on a CUDA GPU: the transformers backend in bf16 with large batches, every method with the
full softmax and with the scored-token shortlist (issue 32), as multiples of ``standard_rag`` in one run.

Where no CUDA device is visible it says so and exits 0 without measuring anything (the CPU figures are
``benchmarks/floor.py`` and ``benchmarks/cost.py``). The questions run one after another, as in cost.py;
"batched" is the backend's: each method's prompts and scored rows go up to ``--batch`` rows at a time
(32 by default on CUDA, 8 on a CPU).

Usage: ``python benchmarks/cuda.py [--questions 5] [--methods all] [--full] [--batch 64]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from cost import MODES, machine, measure, table  # importing cost.py first gives the run a fresh CAUSALRAG_HOME

from causalrag.graphs.registry import methods as registry


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument(
        "--methods", default="all", help="Comma-separated; standard_rag is always measured (the ratios' base)."
    )
    parser.add_argument(
        "--full", action="store_true", help="The papers' defaults instead of the demo's CPU-sized knobs."
    )
    parser.add_argument("--batch", type=int, default=64, help="Rows a forward pass of the transformers backend takes.")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print(
            f"cuda: no CUDA GPU is visible (torch {torch.__version__}): not run. "
            "The CPU figures are benchmarks/floor.py and cost.py."
        )
        return
    from causalrag.tools.backends.transformers import TransformersLLM

    chosen = list(registry()) if args.methods == "all" else args.methods.split(",")
    methods = ["standard_rag", *[m for m in chosen if m != "standard_rag"]]
    llm = TransformersLLM(
        device="cuda", dtype="bfloat16", batch_size=args.batch, max_batch_tokens=512 * args.batch, shortlist=True
    )
    print(
        f"cuda: {torch.cuda.get_device_name(0)}, bf16, batch {args.batch}; {args.questions} HotpotQA questions, "
        f"{'paper defaults' if args.full else 'CPU-sized knobs'}; {machine()}",
        flush=True,
    )
    started = time.perf_counter()
    rows = measure(
        "transformers",
        methods,
        args.questions,
        args.full,
        Path(tempfile.mkdtemp(prefix="causalrag-cuda-")),
        MODES,
        llm=llm,
    )
    print(table("transformers on CUDA (bf16)", rows))
    print(f"\ntotal {time.perf_counter() - started:.0f} s; {machine()}")


if __name__ == "__main__":
    main()
