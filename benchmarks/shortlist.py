"""Issue 32's contract for the scored-token shortlist (``causalrag.tools.shortlist``), measured, in one run.

1. **Speed** per backend: ``logprob`` of 50 bundled passages after one query prefix (the CIS / MoI pattern,
   as in ``benchmarks/backends.py``), the full softmax and the shortlist alternating on one loaded model,
   each from an emptied cache: candidates/s and ms per scored token, medians of ``--repeats``.
2. **Agreement** on the methods' own scored calls: the methods run (CPU knobs, llama.cpp, full softmax) over
   the first questions of the bundled conflict set and HotpotQA-20 while every scored call is recorded —
   ``choose``, ``logprob`` and ``yes_probability`` calls, CIS's scoring of a question's candidates and MoI's
   saliency of its orderings. Each recorded call is then replayed twice from an emptied cache (so llama.cpp
   decodes the same batches both ways and only the normalizer differs): full softmax, then shortlist.
   Printed: mean / max |Δ log p| per scored token; how many choices keep their best option; how many CIS
   rankings (by CIS, candidates as retrieved) and MoI rankings (by utility, Eq. 4 solved on each run's
   saliencies) keep their order and their top-k set; the largest |Δ| of P(yes) / (P(yes) + P(no)).

Choosing the shortlist (how ``SIZE`` and the derivation were picked, 2,224 positions of question-prefixed
passages, llama.cpp's logits; mean Δ = log of full normalizer − shortlist normalizer, the row's own tokens
included): the model's mean distribution over the bundled text beat token counts of the same text, English
word frequencies and the tokenizer's merge ranks at every size (32,768 tokens, conflict-set rows: 0.028 vs
0.034, 0.041 and 0.34 nats); the row's own tokens cut it by a third to a half; 16,384 tokens gave 0.074.

Usage: ``python benchmarks/shortlist.py [--conflict 6] [--hotpot 4] [--methods astute,cf_rag,retro,cis,moi]
[--backends llamacpp,transformers] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path

from cost import machine  # importing cost.py first gives the run a fresh CAUSALRAG_HOME

import causalrag.nodes.moi as moi_nodes
from causalrag.corpus import demo_passages, demo_questions
from causalrag.eval.runner import EvalConfig, run_eval
from causalrag.graphs.registry import methods as registry
from causalrag.nodes.moi_solve import solve_position_bias, utility_ranking
from causalrag.tools.cis import CISScorer, PriorCache


def load(backend: str, shortlist: bool):
    if backend == "llamacpp":
        from causalrag.tools.backends.llamacpp import LlamaCppLLM

        return LlamaCppLLM(shortlist=shortlist)
    from causalrag.tools.backends.transformers import TransformersLLM

    return TransformersLLM(shortlist=shortlist)


def switched(llm, on: bool, run):
    """``run()`` with ``llm``'s shortlist on or off (its attribute is the switch), from an emptied cache."""
    kept = llm.shortlist
    llm.shortlist = kept if on else None
    try:
        llm.clear_cache()
        return run()
    finally:
        llm.shortlist = kept


def speed(backend: str, repeats: int) -> dict[str, float]:
    llm = load(backend, True)
    question = demo_questions()[0]["question"]
    passages = [f" {p.text}" for p in demo_passages()[:50]]
    prefixes = [f"Question: {question}\nPassage:"] * len(passages)
    tokens = sum(len(t) for t in llm.token_logprobs(prefixes[:1] * len(passages), passages))
    times: dict[str, list[float]] = {"full": [], "shortlist": []}
    for _ in range(repeats):  # alternating, so both see the same load
        for label, on in (("full", False), ("shortlist", True)):
            start = time.perf_counter()
            switched(llm, on, lambda: llm.logprob(prefixes, passages))
            times[label].append(time.perf_counter() - start)
    out = {}
    for label, values in times.items():
        seconds = statistics.median(values)
        out[f"{label} cand/s"], out[f"{label} ms/token"] = len(passages) / seconds, 1e3 * seconds / tokens
    print(f"  {backend}: {tokens} scored tokens a call; seconds full {times['full']}, shortlist {times['shortlist']} ({machine()})", flush=True)
    return out


class Recorder:
    """Wraps an LLM's scoring entry points (instance attributes shadow the methods) and CIS / MoI's scoring."""

    def __init__(self, llm) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []
        self.cis: list[tuple] = []
        self.moi: list[tuple] = []
        for name in ("choose", "logprob", "yes_probability"):
            setattr(llm, name, self._wrap(name, getattr(llm, name)))
        score, saliency, debias = CISScorer.score, moi_nodes.saliency, moi_nodes.debias
        recorder = self

        def cis_score(scorer, question, docs):
            recorder.cis.append((question, list(docs), scorer.form, scorer.use_prior))
            return score(scorer, question, docs)

        def moi_saliency(llm_, question, candidates, perms):
            recorder.moi.append([question, list(candidates), list(perms), None])
            return saliency(llm_, question, candidates, perms)

        def moi_debias(ctx, candidates, perms, scores):
            recorder.moi[-1][3] = ctx.ridge
            return debias(ctx, candidates, perms, scores)

        CISScorer.score, moi_nodes.saliency, moi_nodes.debias = cis_score, moi_saliency, moi_debias
        self._restore = lambda: (setattr(CISScorer, "score", score), setattr(moi_nodes, "saliency", saliency), setattr(moi_nodes, "debias", debias))

    def _wrap(self, name, original):
        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return original(*args, **kwargs)

        return call

    def close(self, llm) -> None:
        self._restore()
        for name in ("choose", "logprob", "yes_probability"):
            delattr(llm, name)


def record(llm, methods: list[str], conflict: int, hotpot: int) -> Recorder:
    recorder, out = Recorder(llm), Path(tempfile.mkdtemp(prefix="causalrag-shortlist-"))
    try:
        for dataset, limit in (("conflict", conflict), ("hotpotqa", hotpot)):
            for method in methods:
                if limit:
                    config = EvalConfig(dataset=dataset, methods=[method], limit=limit, params={method: registry()[method].cpu_params}, backend="llamacpp")
                    run_eval(config, out / f"{dataset}-{method}", llm=llm, progress=False)
                    print(f"  recorded {dataset} {method}: {len(recorder.calls)} calls, {len(recorder.cis)} CIS, {len(recorder.moi)} MoI ({machine()})", flush=True)
    finally:
        recorder.close(llm)
    return recorder


def replay(llm, recorder: Recorder, k: int) -> None:
    deltas, choices, same_choices, yes = [], 0, 0, []
    seconds = {False: 0.0, True: 0.0}

    def timed(on, run):
        start = time.perf_counter()
        result = switched(llm, on, run)
        seconds[on] += time.perf_counter() - start
        return result

    for name, args, kwargs in recorder.calls:
        if name == "yes_probability":
            off, on = (timed(s, lambda: llm.yes_probability(*args, **kwargs)) for s in (False, True))
            yes += [abs(a - b) for a, b in zip(on, off)]
            continue
        if name == "logprob":
            prefixes, continuations = args[:2]
            off, on = (timed(s, lambda: llm.token_logprobs(prefixes, continuations)) for s in (False, True))
        else:
            captured = []
            option_logprobs = llm.option_logprobs

            def keeping(*a, **kw):
                captured.append(option_logprobs(*a, **kw))
                return captured[-1]

            llm.option_logprobs = keeping
            try:
                results = [timed(s, lambda: llm.choose(*args, **kwargs)) for s in (False, True)]
            finally:
                del llm.option_logprobs
            choices += len(results[0])
            same_choices += sum(a.best == b.best for a, b in zip(*results))
            off, on = ([t for prompt in c for t in prompt] for c in captured)
        deltas += [b - a for x, y in zip(off, on) for a, b in zip(x, y)]
    cis_same, cis_top = 0, 0
    for question, docs, form, use_prior in recorder.cis:
        ranks = []
        for on in (False, True):
            scorer = CISScorer(llm, form=form, use_prior=use_prior, cache=PriorCache(Path(tempfile.mkdtemp()) / "prior.sqlite"))
            scores = [s.cis for s in switched(llm, on, lambda: scorer.score(question, docs))]
            ranks.append(sorted(range(len(scores)), key=lambda i: -scores[i]))
        cis_same += ranks[0] == ranks[1]
        cis_top += set(ranks[0][:k]) == set(ranks[1][:k])
    moi_same, moi_top = 0, 0
    for question, candidates, perms, ridge in recorder.moi:
        ranks = []
        for on in (False, True):
            scores, _ = switched(llm, on, lambda: moi_nodes.saliency(llm, question, candidates, perms))
            ranks.append(utility_ranking(solve_position_bias(perms, scores, len(candidates), ridge=ridge).utilities))
        moi_same += ranks[0] == ranks[1]
        moi_top += set(ranks[0][:k]) == set(ranks[1][:k])
    magnitudes = [abs(d) for d in deltas]
    print(f"\nscored tokens: {len(deltas)}; |Δ log p| mean {statistics.mean(magnitudes):.4f}, median {statistics.median(magnitudes):.4f}, "
          f"p95 {sorted(magnitudes)[int(0.95 * len(magnitudes))]:.3f}, max {max(magnitudes):.3f}; Δ below -1e-3 (shortlist lower): "
          f"{sum(d < -1e-3 for d in deltas)}")
    print(f"choices with the same best option: {same_choices}/{choices} ({100 * same_choices / max(1, choices):.1f} %)")
    print(f"CIS rankings: same order {cis_same}/{len(recorder.cis)}, same top {k} {cis_top}/{len(recorder.cis)}")
    print(f"MoI rankings: same order {moi_same}/{len(recorder.moi)}, same top {k} {moi_top}/{len(recorder.moi)}")
    print(f"yes_probability: {len(yes)} prompts, max |Δ| {max(yes, default=0):.2e}")
    print(f"replay seconds (choose, logprob, yes_probability calls): full {seconds[False]:.1f}, shortlist {seconds[True]:.1f} "
          f"({seconds[False] / max(seconds[True], 1e-9):.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conflict", type=int, default=6, help="Questions of the bundled conflict set to record.")
    parser.add_argument("--hotpot", type=int, default=4, help="HotpotQA-20 questions to record.")
    parser.add_argument("--methods", default="astute,cf_rag,retro,cis,moi")
    parser.add_argument("--backends", default="llamacpp,transformers", help="Backends whose speed is measured.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top", type=int, default=3, help="k of the top-k sets compared.")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b != "llamacpp" or importlib.util.find_spec("llama_cpp")]
    print(f"shortlist contract; {machine()}", flush=True)
    rows = {b: speed(b, args.repeats) for b in backends}
    print("\n| backend | full cand/s | shortlist cand/s | × | full ms/scored token | shortlist ms/scored token |")
    print("|---|---|---|---|---|---|")
    for b, r in rows.items():
        print(f"| {b} | {r['full cand/s']:.2f} | {r['shortlist cand/s']:.2f} | {r['shortlist cand/s'] / r['full cand/s']:.2f} | "
              f"{r['full ms/token']:.2f} | {r['shortlist ms/token']:.2f} |", flush=True)
    if importlib.util.find_spec("llama_cpp") and (args.conflict or args.hotpot):
        llm = load("llamacpp", True)
        kept, llm.shortlist = llm.shortlist, None  # the recording run is the full-softmax run
        recorder = record(llm, args.methods.split(","), args.conflict, args.hotpot)
        llm.shortlist = kept
        replay(llm, recorder, args.top)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
