"""What computing standard RAG's answer ``exact`` costs and buys on llama.cpp (the ``answer`` node, issue 30).

For each question of the robustness suite's dev half (its own passages, in pool order), its answer prompt is
streamed after two histories: the previous question's answer prompt (what ``standard_rag`` has cached), and
that plus the previous question's closed-book and single-passage prompts (what a routed method has cached).
Modes: ``reuse`` (a cached prefix serves) and ``exact`` (``LLM.stream(..., exact=True)``: fixed blocks in an
otherwise emptied cache, whole blocks of the previous exact prompt kept; every stream of the mode is). Prints,
per mode, the cells computed and seconds per answer, and how often the two histories gave bit-identical
first-token logits, the same first token and the same answer text.

Usage: ``python benchmarks/exact.py [--questions 40]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _needs import need

need("llamacpp", "llama_cpp")

from langchain_core.documents import Document  # noqa: E402

from causalrag.eval.robust import load_robust  # noqa: E402
from causalrag.prompts.common import ANSWER_STOP, answer_prompt  # noqa: E402
from causalrag.tools.backends.llamacpp import LlamaCppLLM  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=40)
    args = parser.parse_args()
    examples = load_robust(split="dev")[: args.questions + 1]
    llm = LlamaCppLLM()
    firsts: list[np.ndarray] = []
    pick = llm._pick
    llm._pick = lambda logits, *a: firsts.append(np.array(logits)) or pick(logits, *a)  # type: ignore[method-assign]

    def docs(example):
        return [Document(page_content=p.text, metadata={"title": p.title}) for p in example.passages]

    def answer(prompt: str, exact: bool) -> tuple[str, np.ndarray, int, float]:
        firsts.clear()
        cells, start = llm.usage.prompt_tokens, time.perf_counter()
        text = "".join(llm.stream(prompt, max_new_tokens=32, stop=ANSWER_STOP, exact=exact))
        return text, firsts[0], llm.usage.prompt_tokens - cells, time.perf_counter() - start

    print(f"exact: {len(examples) - 1} robustness-suite dev questions, llama.cpp, {llm.n_threads} threads", flush=True)
    tally = {mode: {"cells": 0, "seconds": 0.0, "bits": 0, "token": 0, "text": 0} for mode in ("reuse", "exact")}
    for previous, example in zip(examples, examples[1:], strict=False):
        alone = [answer_prompt(previous.question, [d]) for d in docs(previous)]
        others = [answer_prompt(previous.question, []), *alone]
        prompt = answer_prompt(example.question, docs(example))
        for mode, t in tally.items():
            runs = []
            for history in ([], others):
                llm.clear_cache()
                answer(answer_prompt(previous.question, docs(previous)), exact=mode == "exact")
                if history:
                    llm.generate(history, max_new_tokens=4)
                runs.append(answer(prompt, exact=mode == "exact"))
            (text_a, logits_a, cells, seconds), (text_b, logits_b, _, _) = runs
            t["cells"] += cells
            t["seconds"] += seconds
            t["bits"] += int(np.array_equal(logits_a, logits_b))
            t["token"] += int(logits_a.argmax() == logits_b.argmax())
            t["text"] += int(text_a == text_b)
    n = len(examples) - 1
    print("| mode | cells/answer | s/answer | bit-identical logits | same first token | same answer |")
    print("|---|---|---|---|---|---|")
    for mode, t in tally.items():
        same = " | ".join(f"{t[k]}/{n}" for k in ("bits", "token", "text"))
        print(f"| {mode} | {t['cells'] / n:.0f} | {t['seconds'] / n:.2f} | {same} |")
    r, e = tally["reuse"], tally["exact"]
    print(f"exact / reuse: {e['cells'] / r['cells']:.2f}x cells, {e['seconds'] / r['seconds']:.2f}x seconds")


if __name__ == "__main__":
    main()
