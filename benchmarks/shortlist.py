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
from causalrag.tools.shortlist import Shortlist, ranking


def load(backend: str, shortlist: bool):
    if backend == "llamacpp":
        from causalrag.tools.backends.llamacpp import LlamaCppLLM

        return LlamaCppLLM(shortlist=shortlist)
    from causalrag.tools.backends.transformers import TransformersLLM

    return TransformersLLM(shortlist=shortlist)


def switched(llm, on, run):
    """``run()`` with ``llm``'s shortlist on (``True`` or a :class:`Shortlist` to use) or off (its attribute is
    the switch), from an emptied cache."""
    kept = llm.shortlist
    llm.shortlist = (kept if on is True else on) or None
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
    print(
        f"  {backend}: {tokens} scored tokens a call; seconds full {times['full']}, "
        f"shortlist {times['shortlist']} ({machine()})",
        flush=True,
    )
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
        self._restore = lambda: (
            setattr(CISScorer, "score", score),
            setattr(moi_nodes, "saliency", saliency),
            setattr(moi_nodes, "debias", debias),
        )

    def _wrap(self, name, original):
        def call(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return original(*args, **kwargs)

        return call

    def close(self, llm) -> None:
        self._restore()
        for name in ("choose", "logprob", "yes_probability"):
            delattr(llm, name)


def record(llm, methods: list[str], conflict: int, hotpot: int, out: Path) -> Recorder:
    recorder = Recorder(llm)
    try:
        for dataset, limit in (("conflict", conflict), ("hotpotqa", hotpot)):
            for method in methods:
                if limit:
                    config = EvalConfig(
                        dataset=dataset,
                        methods=[method],
                        limit=limit,
                        params={method: registry()[method].cpu_params},
                        backend="llamacpp",
                    )
                    run_eval(config, out / f"{dataset}-{method}-full", llm=llm, progress=False)
                    print(
                        f"  recorded {dataset} {method}: {len(recorder.calls)} calls, {len(recorder.cis)} CIS, "
                        f"{len(recorder.moi)} MoI ({machine()})",
                        flush=True,
                    )
    finally:
        recorder.close(llm)
    return recorder


def sized(llm, size: int) -> Shortlist:
    """The loaded shortlist cut to the model ranking's ``size`` most probable tokens (the same rows and arithmetic)."""
    full = llm.shortlist
    shortlist = Shortlist(
        ranking(llm.path.stem, lambda: None)[:size], full._rows, softcap=full.softcap, prepare=full.prepare
    )
    return shortlist


def replay(llm, recorder: Recorder, k: int, sizes: list[int]) -> None:
    """Every recorded call with the full softmax and with each shortlist size; one report per size."""
    variants = {size: sized(llm, size) for size in sizes}
    seconds = {size: 0.0 for size in [0, *sizes]}  # 0: the full softmax
    deltas = {size: [] for size in sizes}
    choices, same = 0, {size: 0 for size in sizes}
    yes = {size: [] for size in sizes}

    def timed(size, run):
        start = time.perf_counter()
        result = switched(llm, variants.get(size, False), run)
        seconds[size] += time.perf_counter() - start
        return result

    for name, args, kwargs in recorder.calls:
        if name == "yes_probability":
            off = timed(0, lambda args=args, kwargs=kwargs: llm.yes_probability(*args, **kwargs))
            for size in sizes:
                yes[size] += [
                    abs(a - b)
                    for a, b in zip(
                        timed(size, lambda args=args, kwargs=kwargs: llm.yes_probability(*args, **kwargs)),
                        off,
                        strict=True,
                    )
                ]
            continue
        if name == "logprob":
            prefixes, continuations = args[:2]
            runs = {
                size: timed(size, lambda p=prefixes, c=continuations: llm.token_logprobs(p, c)) for size in [0, *sizes]
            }
        else:
            captured = []
            option_logprobs = llm.option_logprobs

            def keeping(*a, captured=captured, option_logprobs=option_logprobs, **kw):
                captured.append(option_logprobs(*a, **kw))
                return captured[-1]

            llm.option_logprobs = keeping
            try:
                results = {
                    size: timed(size, lambda args=args, kwargs=kwargs: llm.choose(*args, **kwargs))
                    for size in [0, *sizes]
                }
            finally:
                del llm.option_logprobs
            choices += len(results[0])
            for size in sizes:
                same[size] += sum(a.best == b.best for a, b in zip(results[0], results[size], strict=True))
            runs = {size: [t for prompt in c for t in prompt] for size, c in zip([0, *sizes], captured, strict=True)}
        for size in sizes:
            deltas[size] += [b - a for x, y in zip(runs[0], runs[size], strict=True) for a, b in zip(x, y, strict=True)]
    rankings = {"CIS": {size: [0, 0] for size in sizes}, "MoI": {size: [0, 0] for size in sizes}}
    for question, docs, form, use_prior in recorder.cis:
        ranks = {}
        for size in [0, *sizes]:
            scorer = CISScorer(
                llm, form=form, use_prior=use_prior, cache=PriorCache(Path(tempfile.mkdtemp()) / "prior.sqlite")
            )
            scores = [
                s.cis
                for s in switched(
                    llm, variants.get(size, False), lambda scorer=scorer, q=question, d=docs: scorer.score(q, d)
                )
            ]
            ranks[size] = sorted(range(len(scores)), key=lambda i: -scores[i])
        for size in sizes:
            rankings["CIS"][size][0] += ranks[0] == ranks[size]
            rankings["CIS"][size][1] += set(ranks[0][:k]) == set(ranks[size][:k])
    for question, candidates, perms, ridge in recorder.moi:
        ranks = {}
        for size in [0, *sizes]:
            scores, _ = switched(
                llm,
                variants.get(size, False),
                lambda q=question, c=candidates, p=perms: moi_nodes.saliency(llm, q, c, p),
            )
            ranks[size] = utility_ranking(solve_position_bias(perms, scores, len(candidates), ridge=ridge).utilities)
        for size in sizes:
            rankings["MoI"][size][0] += ranks[0] == ranks[size]
            rankings["MoI"][size][1] += set(ranks[0][:k]) == set(ranks[size][:k])
    counts = {"CIS": len(recorder.cis), "MoI": len(recorder.moi)}
    for size in sizes:
        magnitudes = sorted(abs(d) for d in deltas[size])
        print(
            f"\nshortlist of {size} tokens (+ each row's own): {len(magnitudes)} scored tokens; "
            f"|Δ log p| mean {statistics.mean(magnitudes):.4f}, median {statistics.median(magnitudes):.4f}, "
            f"p95 {magnitudes[int(0.95 * len(magnitudes))]:.3f}, max {magnitudes[-1]:.3f}; "
            f"Δ below -1e-3 (shortlist lower): {sum(d < -1e-3 for d in deltas[size])}"
        )
        print(
            f"  choices with the same best option: {same[size]}/{choices} ({100 * same[size] / max(1, choices):.1f} %)"
        )
        for kind, (order, top) in ((kind, rankings[kind][size]) for kind in rankings):
            print(f"  {kind} rankings: same order {order}/{counts[kind]}, same top {k} {top}/{counts[kind]}")
        print(f"  yes_probability: {len(yes[size])} prompts, max |Δ| {max(yes[size], default=0):.2e}")
        print(
            f"  replay seconds of the recorded calls: full {seconds[0]:.1f}, shortlist {seconds[size]:.1f} "
            f"({seconds[0] / max(seconds[size], 1e-9):.2f}x)"
        )


def answers(llm, methods: list[str], conflict: int, hotpot: int, out: Path) -> None:
    """The same harness runs as the recording with the shortlist on (the default size), paired with it by question."""
    for dataset, limit in (("conflict", conflict), ("hotpotqa", hotpot)):
        for method in methods:
            if not limit:
                continue
            paired = []
            for mode in ("full", "shortlist"):
                config = EvalConfig(
                    dataset=dataset,
                    methods=[method],
                    limit=limit,
                    params={method: registry()[method].cpu_params},
                    backend="llamacpp",
                )
                paired.append(
                    {
                        r["question_id"]: r
                        for r in switched(
                            llm,
                            mode == "shortlist",
                            lambda config=config, folder=out / f"{dataset}-{method}-{mode}": run_eval(
                                config, folder, llm=llm, progress=False
                            ),
                        )
                    }
                )
            full, short = paired
            changed = [q for q in full if full[q]["prediction"] != short[q]["prediction"]]
            won = sum(short[q]["acc"] > full[q]["acc"] for q in changed)
            lost = sum(short[q]["acc"] < full[q]["acc"] for q in changed)
            acc = [statistics.mean(r["acc"] for r in p.values()) for p in paired]
            print(
                f"  answers {dataset} {method}: changed {len(changed)}/{len(full)}, won {won}, lost {lost}; "
                f"Acc {acc[0]:.2f} -> {acc[1]:.2f} "
                + "; ".join(f"{q}: {full[q]['prediction']!r} -> {short[q]['prediction']!r}" for q in changed),
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conflict", type=int, default=6, help="Questions of the bundled conflict set to record.")
    parser.add_argument("--hotpot", type=int, default=4, help="HotpotQA-20 questions to record.")
    parser.add_argument("--methods", default="astute,cf_rag,retro,cis,moi")
    parser.add_argument("--backends", default="llamacpp,transformers", help="Backends whose speed is measured.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top", type=int, default=3, help="k of the top-k sets compared.")
    parser.add_argument("--sizes", default="32768,65536", help="Shortlist sizes replayed.")
    args = parser.parse_args()
    backends = [b for b in args.backends.split(",") if b != "llamacpp" or importlib.util.find_spec("llama_cpp")]
    print(f"shortlist contract; {machine()}", flush=True)
    rows = {b: speed(b, args.repeats) for b in backends}
    print("\n| backend | full cand/s | shortlist cand/s | × | full ms/scored token | shortlist ms/scored token |")
    print("|---|---|---|---|---|---|")
    for b, r in rows.items():
        print(
            f"| {b} | {r['full cand/s']:.2f} | {r['shortlist cand/s']:.2f} | "
            f"{r['shortlist cand/s'] / r['full cand/s']:.2f} | "
            f"{r['full ms/token']:.2f} | {r['shortlist ms/token']:.2f} |",
            flush=True,
        )
    if importlib.util.find_spec("llama_cpp") and (args.conflict or args.hotpot):
        llm = load("llamacpp", True)
        kept, llm.shortlist = llm.shortlist, None  # the recording run is the full-softmax run
        out = Path(tempfile.mkdtemp(prefix="causalrag-shortlist-"))
        recorder = record(llm, args.methods.split(","), args.conflict, args.hotpot, out)
        llm.shortlist = kept
        replay(llm, recorder, args.top, [int(s) for s in args.sizes.split(",")])
        answers(llm, args.methods.split(","), args.conflict, args.hotpot, out)
    print(f"\n{machine()}")


if __name__ == "__main__":
    main()
