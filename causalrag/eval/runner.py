"""Run methods over a dataset: every (method, question, K injected passages) once, resumable.

One JSON line per result is appended to ``OUT/results.jsonl`` as soon as it is known (flushed and
synced, by one writer thread), so an interrupted run, even by ``kill -9``, loses at most the results in
flight; rerunning the same command skips every finished key and a half-written last line is dropped.
``OUT/config.json`` records the settings; a rerun with different settings (dataset, setting, seed,
parameters, shard, ...) into the same folder is refused rather than mixing results. One model load and
one embedding model serve the run.

``concurrency`` questions are in flight at once (worker threads; 1 runs them in the calling thread, so
Ctrl-C stops the question at once; with more, the questions in flight finish first and are asked again
on resume). Against an OpenAI-compatible server their requests overlap (up to the backend's own limit,
``CAUSALRAG_OPENAI_CONCURRENCY``); the local backends hold one lock per model, so their calls run one at
a time, safely, and only the work around them overlaps.

``shard="I/N"`` asks only the questions whose id hashes to shard I of N (SHA-256 of the id, modulo N:
stable across machines, dataset order and ``--limit``, about 1/N each); the open setting's corpus still
holds every question's passages, so shards merged by :func:`merge_runs` equal one whole run.

A method that raises on a question gets a result row with ``error`` set (and empty answer), so
reports count failures instead of silently skipping them; an interrupt (Ctrl-C) is never recorded,
and neither is a setup error (a missing collection or model, a store that does not answer): that
stops the run with its one sentence, since every question would fail the same way.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from causalrag.errors import (
    BackendUnavailableError,
    CausalRAGError,
    CollectionNotFoundError,
    DamagedStoreError,
    EmptyCollectionError,
    ModelNotFoundError,
    ScoringUnavailableError,
    ServerUnreachableError,
    StoreUnreachableError,
)
from causalrag.eval.conditions import load_examples
from causalrag.eval.datasets import Example
from causalrag.eval.inject import asserted_answers, is_injected, with_distractors
from causalrag.eval.metrics import answer_scores, containment, ndcg_at_k, recall_at_k
from causalrag.eval.settings import CachedEmbeddings, Pools, Setting, gold_ids

RESULTS = "results.jsonl"
CONFIG = "config.json"
MUST_MATCH = ("dataset", "setting", "seed", "instruction", "params", "model", "collection", "backend", "shard")
"""Settings that change what a result means: a resumed run must use the same ones (merged runs too, but for
``params``, which are per method, and ``shard``, which differs by design)."""
SETUP_ERRORS = (
    BackendUnavailableError, CollectionNotFoundError, DamagedStoreError, EmptyCollectionError, ModelNotFoundError,
    ScoringUnavailableError, ServerUnreachableError, StoreUnreachableError,
)
"""Errors of the run's setup, not of one question: they stop the run instead of filling it with error rows."""


@dataclass
class EvalConfig:
    dataset: str
    """``demo``, ``hotpotqa``, ``hotpotqa:PATH``, ``jsonl:PATH``, ``conflict`` or ``rgb:PATH``, with a condition
    after ``?`` (``hotpotqa?swap=1``, ``rgb:PATH?noise=0.4&swapped=2``; ``causalrag.eval.conditions``)."""
    methods: list[str]
    setting: str = "distractor"
    """``distractor`` (each question's own pool) or ``open`` (one collection of every paragraph)."""
    inject: list[int] = field(default_factory=lambda: [0])
    """Numbers K of misleading passages added to each question's pool."""
    limit: int | None = None
    """First N questions only."""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-method context parameters (``{"standard_rag": {"k": 3}}``)."""
    model: str | None = None
    seed: int = 0
    """Seed of the injected passages."""
    instruction: bool = False
    """Misleading passages also carry a prompt-injection sentence."""
    collection: str | None = None
    """Open setting over a dataset without passages: the collection to retrieve from."""
    backend: str | None = None
    """LLM backend; ``None`` takes ``CAUSALRAG_BACKEND`` (``auto`` resolved), recorded so runs on different
    backends never mix."""
    shard: str | None = None
    """``"I/N"``: only the questions of shard I of N (1 ≤ I ≤ N; :func:`in_shard`), for one of N machines."""


class _NoPools:
    """Stands in for :class:`Pools` when no chosen method retrieves (``no_rag`` on a questions-only dataset)."""

    store = None

    def ids_for(self, example: Example) -> None:
        return None

    def close(self) -> None:
        pass


def result_key(method: str, question_id: str, inject: int) -> str:
    return f"{method}|K={inject}|{question_id}"


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → (I, N), or one sentence naming the form."""
    index, _, count = str(text).partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not 1 <= i <= n:
        raise CausalRAGError(f"--shard {text!r} is not I/N with 1 <= I <= N: e.g. 2/4 for the second of four machines.")
    return i, n


def in_shard(question_id: str, shard: str | None) -> bool:
    """Whether a question belongs to ``shard`` ("I/N"; None: every question): SHA-256 of its id, modulo N."""
    if shard is None:
        return True
    i, n = parse_shard(shard)
    return int.from_bytes(hashlib.sha256(question_id.encode("utf-8")).digest()[:8], "big") % n == i - 1


# --------------------------------------------------------------------------- the results file
def read_results(folder: Path) -> list[dict]:
    """Finished results, one per key; a truncated or corrupt line (an interrupted write) is dropped from the file."""
    path = Path(folder) / RESULTS
    if not path.exists():
        return []
    rows: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    clean = True
    for line in lines:
        try:
            row = json.loads(line)
            if not line.endswith("\n") or not isinstance(row, dict) or "key" not in row:
                raise ValueError("incomplete row")
        except ValueError:
            clean = False
            continue
        if row["key"] in rows:
            clean = False
            continue
        rows[row["key"]] = row
    if not clean:  # rewrite atomically so later appends start on a fresh line
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows.values()), encoding="utf-8")
        os.replace(tmp, path)
    return list(rows.values())


def _append(path: Path, row: dict) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _read_config(folder: Path) -> dict:
    """A run's ``config.json``; runs written before ``backend`` was recorded used transformers."""
    config = json.loads((Path(folder) / CONFIG).read_text(encoding="utf-8"))
    config.setdefault("backend", "transformers")
    return config


def _check_config(folder: Path, config: EvalConfig) -> None:
    """Write ``config.json``, or check a resumed run uses the same settings (methods/K/limit may grow).

    A folder without results (a run that failed before its first answer) takes the new settings.
    """
    path = folder / CONFIG
    new = dataclasses.asdict(config)
    if path.exists() and read_results(folder):
        old = _read_config(folder)
        differ = [k for k in MUST_MATCH if json.dumps(old.get(k), sort_keys=True) != json.dumps(new[k], sort_keys=True)]
        if differ:
            raise CausalRAGError(
                f"{folder} holds a run with other settings ({', '.join(f'{k}={old.get(k)!r}' for k in differ)}): "
                "rerun with the same settings to resume, or pass another --out folder."
            )
        new["methods"] = list(dict.fromkeys(old.get("methods", []) + config.methods))
        new["inject"] = sorted(set(old.get("inject", [])) | set(config.inject))
    path.write_text(json.dumps(new, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def merge_runs(folders: Sequence[Path], out: Path) -> None:
    """One run folder ``out`` from several (methods or questions split over processes or machines).

    The runs must share every setting in ``MUST_MATCH`` except ``params``, which are per method and
    must not disagree; methods and K values are the union, and a result found in two runs is an error.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise CausalRAGError(f"--out {out} is a file: pass a folder for the merged run (it is made when missing).")
    if any(Path(f).resolve() == out.resolve() for f in folders):
        raise CausalRAGError(f"--out {out} is one of the runs being merged: pass a new folder.")
    configs = [_read_config(f) for f in folders if (Path(f) / CONFIG).exists()]
    if len(configs) < len(folders):
        raise CausalRAGError(
            "Every merged folder needs its config.json: pass folders written by `causalrag eval --out`."
        )
    merged = dict(configs[0], methods=[], inject=[], params={}, shard=_merged_shards([c.get("shard") for c in configs]))
    for folder, config in zip(folders, configs, strict=True):
        differ = [k for k in MUST_MATCH if k not in ("params", "shard") and config.get(k) != configs[0].get(k)]
        clash = [m for m, p in config.get("params", {}).items() if merged["params"].get(m, p) != p]
        if differ or clash:
            raise CausalRAGError(
                f"{folder} was run with other settings ({', '.join(differ + clash)}) "
                f"than {folders[0]}: its results do not compare."
            )
        merged["params"].update(config.get("params", {}))
        merged["methods"] = list(dict.fromkeys(merged["methods"] + config.get("methods", [])))
        merged["inject"] = sorted(set(merged["inject"]) | set(config.get("inject", [])))
    rows: dict[str, dict] = {}
    for folder in folders:
        for row in read_results(Path(folder)):
            if row["key"] in rows:
                raise CausalRAGError(f"Result {row['key']} is in more than one of the merged runs.")
            rows[row["key"]] = row
    out.mkdir(parents=True, exist_ok=True)
    (out / CONFIG).write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / RESULTS).write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows.values()), encoding="utf-8"
    )


def _merged_shards(shards: Sequence[str | None]) -> str | None:
    """The shard field of merged runs: None when none was sharded or every shard of N is there, else the
    shards they hold ("1/4,3/4"); shards of different N do not split one dataset alike."""
    parts = {parse_shard(s) for s in shards if s is not None}
    if len({n for _, n in parts}) > 1:
        split = ", ".join(sorted(filter(None, shards)))
        raise CausalRAGError(f"The runs were sharded differently ({split}): merge shards of one I/N split.")
    if not parts or len(parts) == next(iter(parts))[1]:
        return None
    return ",".join(f"{i}/{n}" for i, n in sorted(parts))


# --------------------------------------------------------------------------- one result
def _fallback_count(entry: dict) -> int:
    return int(sum(v for k, v in entry.items() if "fallback" in k and isinstance(v, (int, float))))


def _fallbacks(trace: Iterable[dict]) -> int:
    """Sum of the parse fallbacks the nodes reported (trace keys containing ``fallback``)."""
    return sum(_fallback_count(e) for e in trace)


def _fallback_steps(trace: Iterable[dict]) -> dict[str, dict[str, int]]:
    """Per step that can fall back (its trace entry has a ``*fallback*`` key): how often it ran and
    how often it fell back, so a report gives the fallback rate per judgment step."""
    steps: dict[str, dict[str, int]] = {}
    for e in trace:
        if any("fallback" in k for k in e):
            step = steps.setdefault(str(e.get("node", "?")), {"runs": 0, "fallbacks": 0})
            step["runs"] += 1
            step["fallbacks"] += int(_fallback_count(e) > 0)
    return steps


def _routing(state: dict, trace: Sequence[dict]) -> dict[str, Any]:
    """The path a question took: node names in the order they ran, and the routed method's decision and evidence.

    ``route`` is the decision's route (keep, vote, knowledge or focus; None for a method that does not route).
    """
    decision = state.get("decision")
    return {
        "path": [e.get("node") for e in trace],
        "route": (decision or {}).get("route"),
        "decision": decision,
        "evidence": state.get("evidence"),
    }


def score_result(
    state: dict, example: Example, *, gold: Sequence[str], pool: Sequence[str] | None, asserted: Sequence[str], k: int
) -> dict:
    """Answer and retrieval metrics, evidence, cost and path (``_routing``) of one finished graph run."""
    from causalrag.nodes.common import summarize_trace

    prediction = str(state.get("answer") or "")
    docs = list(state.get("documents") or [])
    ids = [d.id for d in docs]
    allowed = set(pool) if pool is not None else None
    trace = state.get("trace") or []
    return {
        "prediction": prediction,
        **answer_scores(prediction, example.answers),
        "recall": recall_at_k(ids, gold, k) if docs and gold else None,
        "ndcg": ndcg_at_k(ids, gold, k) if docs and gold else None,
        "k": k,
        "misled": containment(prediction, asserted) if asserted else None,
        "injected_in_evidence": sum(map(is_injected, docs)),
        "leaked": sum(1 for i in ids if i and allowed is not None and i not in allowed),
        "documents": [
            {"id": d.id, "title": d.metadata.get("title", ""), "score": d.metadata.get("score"),
             "gold": d.id in gold, "injected": is_injected(d)}
            for d in docs
        ],
        **summarize_trace(trace),
        "fallbacks": _fallbacks(trace),
        "fallback_steps": _fallback_steps(trace),
        **_routing(state, trace),
    }


# --------------------------------------------------------------------------- the run
class _Progress:
    """tqdm bar whose postfix shows each method's running containment accuracy."""

    def __init__(self, total: int, done: list[dict], enabled: bool) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="eval", unit="result", disable=not enabled)
        self.acc: dict[str, list[float]] = {}
        for row in done:
            self.add(row, advance=False)

    def add(self, row: dict, *, advance: bool = True) -> None:
        self.acc.setdefault(row["method"], []).append(row["acc"])
        self.bar.set_postfix_str(" ".join(f"{m}={sum(v) / len(v):.2f}" for m, v in self.acc.items()), refresh=False)
        if advance:
            self.bar.update()

    def close(self) -> None:
        self.bar.close()


def _completed(jobs: Sequence[Any], work: Callable[[Any], dict], concurrency: int) -> Iterator[dict]:
    """``work(job)`` for every job, yielded as each finishes: one after another in this thread, or
    ``concurrency`` at a time in worker threads (each with a copy of this thread's context variables)."""
    if concurrency <= 1:
        yield from map(work, jobs)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="causalrag-eval") as pool:
        futures = [pool.submit(contextvars.copy_context().run, work, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:  # a setup error or Ctrl-C: start nothing new (the pool waits for the questions in flight)
            for future in futures:
                future.cancel()


def _check_concurrency(concurrency: int, llm: Any) -> None:
    if not isinstance(concurrency, int) or concurrency < 1:
        raise CausalRAGError(
            f"--concurrency {concurrency!r} is not valid: give the number of questions in flight, at least 1."
        )
    limit = getattr(llm, "max_concurrency", None)
    if concurrency > 1 and limit is not None and limit < concurrency:
        print(f"note: {concurrency} questions in flight, but the openai backend sends at most {limit} requests "
              f"at once: set CAUSALRAG_OPENAI_CONCURRENCY={concurrency} or more.", file=sys.stderr)


def run_eval(
    config: EvalConfig,
    out: str | Path,
    *,
    llm: Any = None,
    embeddings: Any = None,
    progress: bool = True,
    on_result: Callable[[dict], None] | None = None,
    concurrency: int = 1,
) -> list[dict]:
    """Run every pending (method, question, K) of ``config`` into ``out``; returns all results of the folder.

    ``llm`` / ``embeddings`` replace the default model and embedding model (e.g. a fake in tests);
    ``concurrency`` questions are in flight at once (module docstring).
    """
    from causalrag.graphs.registry import build_graph, get_method, make_context

    _check_concurrency(concurrency, None)
    for method in config.methods:
        make_context(method, **config.params.get(method, {}))  # unknown names and bad values fail before any work
    if config.shard is not None:
        parse_shard(config.shard)
    default_model = llm is None and config.model is None and config.backend is None
    if config.backend is None:
        from causalrag.tools.llm import choose_backend

        config = dataclasses.replace(
            config, backend=choose_backend(None, config.model) if llm is None else type(llm).__name__
        )
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise CausalRAGError(f"--out {folder} is a file: pass a folder for the run (it is made when missing).")
    folder.mkdir(parents=True, exist_ok=True)
    _check_config(folder, config)
    results_path = folder / RESULTS
    done = read_results(folder)
    finished = {r["key"] for r in done}
    dataset = load_examples(config.dataset)
    examples = dataset[: config.limit] if config.limit else dataset
    if not examples:
        raise CausalRAGError(f"Dataset {config.dataset!r} has no questions.")
    mine = [ex for ex in examples if in_shard(ex.id, config.shard)]
    pending = [
        (k, ex, m) for k in config.inject for ex in mine for m in config.methods
        if result_key(m, ex.id, k) not in finished
    ]
    if any(config.inject) and not any(e.passages for e in examples):
        raise CausalRAGError("Injected passages need per-question pools, which this dataset lacks: use --inject 0.")
    bar = _Progress(len(pending), [r for r in done if r["method"] in config.methods], progress)
    if not pending:
        bar.close()
        return done
    if llm is None:
        from causalrag.config import settings
        from causalrag.tools.llm import default_llm, load_llm

        llm = (
            default_llm()
            if default_model
            else load_llm(config.model or settings().model, settings().device, config.backend)
        )
    _check_concurrency(concurrency, llm)
    if embeddings is None:
        from causalrag.tools.encoders import default_embeddings

        embeddings = default_embeddings()
    embeddings = CachedEmbeddings(embeddings)
    graphs = {m: build_graph(m) for m in config.methods}
    written: list[dict] = []
    try:
        for k in sorted(set(config.inject)):
            todo = {(ex.id, m) for kk, ex, m in pending if kk == k}
            if not todo:
                continue
            # the open setting's corpus holds every asked question's passages, whichever shard asks it
            pooled = [with_distractors(ex, k, donors=dataset, seed=config.seed, instruction=config.instruction)
                      for ex in (examples if config.setting == "open" else mine)]
            asked = {ex.id for ex in examples}
            rest = [ex for ex in dataset if ex.id not in asked]
            retrieving = any(get_method(m).retrieves for m in config.methods)
            setting = cast(Setting, config.setting)  # Pools rejects any other value in one sentence
            pools = (
                Pools(setting, pooled, embeddings, collection=config.collection, background=rest)
                if retrieving
                else _NoPools()
            )
            originals = {ex.id: ex for ex in examples}
            jobs = [(originals[ex.id], ex, m) for ex in pooled for m in config.methods if (ex.id, m) in todo]

            def ask(job: tuple[Example, Example, str], k: int = k, pools: Any = pools) -> dict:
                original, ex, method = job
                injected = asserted_answers(original, k, donors=dataset, seed=config.seed) if k else []
                asserted = [*original.wrong_answers, *injected]
                params = config.params.get(method, {})
                ctx = make_context(method, llm=llm, store=pools.store, ids=pools.ids_for(ex), **params)
                started = time.perf_counter()
                try:
                    state, error = graphs[method].invoke({"question": ex.question}, context=ctx), None
                except SETUP_ERRORS:
                    raise
                except Exception as exc:  # noqa: BLE001 - one failing question must not end the run
                    state, error = {}, f"{type(exc).__name__}: {exc}"
                return {
                    "key": result_key(method, ex.id, k),
                    "method": method,
                    "question_id": ex.id,
                    "inject": k,
                    "instruction": config.instruction,
                    "setting": config.setting,
                    "dataset": config.dataset,
                    "type": ex.type,
                    "condition": ex.condition,
                    "style": ex.style,
                    "question": ex.question,
                    "answers": ex.answers,
                    **score_result(state, ex, gold=gold_ids(original), pool=pools.ids_for(ex), asserted=asserted,
                                   k=ctx.k),
                    "wall_seconds": round(time.perf_counter() - started, 3),
                    "error": error,
                    "params": params,
                    "seed": config.seed,
                    "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
                }

            try:
                for row in _completed(jobs, ask, concurrency):  # rows are written here, by this thread only
                    _append(results_path, row)
                    written.append(row)
                    bar.add(row)
                    if on_result:
                        on_result(row)
            finally:
                pools.close()
    finally:
        bar.close()
    return done + written
