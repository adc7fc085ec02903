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
holds every question's passages, so shards merged by :func:`merge_runs` equal one whole run. In the open
setting each distinct question is asked once (:func:`~causalrag.eval.settings.distinct_questions`).

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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from langchain_core.embeddings import Embeddings

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
from causalrag.eval.metrics import AnswerScores, answer_scores, containment, ndcg_at_k, recall_at_k
from causalrag.eval.settings import CachedEmbeddings, Pools, Setting, distinct_questions, gold_ids
from causalrag.state.base import RAGContext, TraceEntry
from causalrag.state.triage import Decision, Evidence, Route

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

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
    """The settings of one run, recorded in its ``config.json``."""

    dataset: str
    """``demo``, ``hotpotqa``, ``hotpotqa:PATH``, ``jsonl:PATH``, ``conflict`` or ``rgb:PATH``, with a condition
    after ``?`` (``hotpotqa?swap=1``, ``rgb:PATH?noise=0.4&swapped=2``; ``causalrag.eval.conditions``)."""
    methods: list[str]
    """Names of the registered methods to run."""
    setting: str = "distractor"
    """``distractor`` (each question's own pool) or ``open`` (one collection of every paragraph)."""
    inject: list[int] = field(default_factory=lambda: [0])
    """Numbers K of misleading passages added to each question's pool."""
    limit: int | None = None
    """First N questions only."""
    params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-method context parameters (``{"standard_rag": {"k": 3}}``)."""
    model: str | None = None
    """A local model folder, .gguf file or hub id; ``None``: the default model."""
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


# --------------------------------------------------------------------------- the shape of a result
class EvidenceDocument(TypedDict):
    """One passage a method answered from, as its result records it."""

    id: str | None
    title: str
    score: float | None
    """The retriever's score, where it gave one."""
    gold: bool
    """One of the question's gold paragraphs."""
    injected: bool
    """A misleading passage (:mod:`causalrag.eval.inject`)."""


class StepFallbacks(TypedDict):
    """How often one judgment step ran on a question, and how many of those runs fell back."""

    runs: int
    fallbacks: int
    """Runs with a ``*fallback*`` count above 0 in the step's trace entry (an output that did not parse)."""


class TraceCost(TypedDict):
    """Cost totals over a run's trace (:func:`causalrag.nodes.common.summarize_trace`)."""

    seconds: float
    llm_calls: int
    prompt_tokens: int
    new_tokens: int
    forward_passes: int


class Routing(TypedDict):
    """The path a question took through a method's graph (:func:`score_result`)."""

    path: list[str | None]
    """Node names in the order they ran."""
    route: Route | None
    """The decision's route; None for a method that does not route."""
    decision: Decision | None
    evidence: Evidence | None
    """The routed method's evidence record."""


class Scores(AnswerScores, TraceCost, Routing):
    """What :func:`score_result` measures of one finished graph run."""

    prediction: str
    recall: float | None
    """Recall@k of the gold paragraphs; None without evidence or gold paragraphs."""
    ndcg: float | None
    """NDCG@k of the gold paragraphs; None likewise."""
    k: int
    """The method's evidence size."""
    misled: float | None
    """1 when the answer states a wrong answer planted or injected passages assert; None where none is."""
    injected_in_evidence: int
    leaked: int
    """Evidence passages from outside the question's own pool (distractor setting)."""
    documents: list[EvidenceDocument]
    fallbacks: int
    """Parse fallbacks the nodes reported."""
    fallback_steps: dict[str, StepFallbacks]
    """Per step that can fall back: its runs and fallbacks."""


class ResultRow(Scores):
    """One result, a line of ``results.jsonl``: one method on one question with K injected passages.

    Runs written by earlier versions lack some fields (``condition``, ``style``, ``route``, ``path``, ...), so
    readers of stored rows use ``row.get`` for those.
    """

    key: str
    """:func:`result_key`: unique in a run folder."""
    method: str
    question_id: str
    inject: int
    """K, the number of injected misleading passages."""
    instruction: bool
    setting: str
    dataset: str
    type: str
    condition: str
    style: str
    question: str
    answers: list[str]
    wall_seconds: float
    """Wall-clock time of the question, scoring included."""
    error: str | None
    """``ExceptionType: message`` when the method raised (the answer is then empty)."""
    params: dict[str, Any]
    seed: int
    finished_at: str
    """UTC time the result was known (ISO 8601, seconds)."""


class _NoPools:
    """Stands in for :class:`Pools` when no chosen method retrieves (``no_rag`` on a questions-only dataset)."""

    store = None

    def ids_for(self, example: Example) -> None:
        return None

    def close(self) -> None:
        pass


def result_key(method: str, question_id: str, inject: int) -> str:
    """The key of one result in a run folder: method, K and question id."""
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
def read_results(folder: Path) -> list[ResultRow]:
    """Finished results, one per key; a truncated or corrupt line (an interrupted write) is dropped from the file."""
    path = Path(folder) / RESULTS
    if not path.exists():
        return []
    rows: dict[str, ResultRow] = {}
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
        rows[row["key"]] = cast(ResultRow, row)  # a stored row, as written (older runs lack some fields)
    if not clean:  # rewrite atomically so later appends start on a fresh line
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows.values()), encoding="utf-8")
        os.replace(tmp, path)
    return list(rows.values())


def _append(path: Path, row: ResultRow) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _read_config(folder: Path) -> dict[str, Any]:
    """A run's ``config.json``; runs written before ``backend`` was recorded used transformers."""
    config: dict[str, Any] = json.loads((Path(folder) / CONFIG).read_text(encoding="utf-8"))
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
    rows: dict[str, ResultRow] = {}
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
    """The shard field of merged runs.

    None when none was sharded or every shard of N is there, else the shards they hold ("1/4,3/4"); shards of
    different N do not split one dataset alike.
    """
    parts = {parse_shard(s) for s in shards if s is not None}
    if len({n for _, n in parts}) > 1:
        split = ", ".join(sorted(filter(None, shards)))
        raise CausalRAGError(f"The runs were sharded differently ({split}): merge shards of one I/N split.")
    if not parts or len(parts) == next(iter(parts))[1]:
        return None
    return ",".join(f"{i}/{n}" for i, n in sorted(parts))


# --------------------------------------------------------------------------- one result
def _fallback_count(entry: TraceEntry) -> int:
    return int(sum(v for k, v in entry.items() if "fallback" in k and isinstance(v, (int, float))))


def _fallbacks(trace: Iterable[TraceEntry]) -> int:
    """Sum of the parse fallbacks the nodes reported (trace keys containing ``fallback``)."""
    return sum(_fallback_count(e) for e in trace)


def _fallback_steps(trace: Iterable[TraceEntry]) -> dict[str, StepFallbacks]:
    """How often each step that can fall back ran, and how often it fell back.

    A step can fall back when its trace entry has a ``*fallback*`` key; a report gives the fallback rate per
    judgment step.
    """
    steps: dict[str, StepFallbacks] = {}
    for e in trace:
        if any("fallback" in k for k in e):
            step = steps.setdefault(str(e.get("node", "?")), {"runs": 0, "fallbacks": 0})
            step["runs"] += 1
            step["fallbacks"] += int(_fallback_count(e) > 0)
    return steps


def _routing(state: dict[str, Any], trace: Sequence[TraceEntry]) -> Routing:
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
    state: dict[str, Any],
    example: Example,
    *,
    gold: Sequence[str],
    pool: Sequence[str] | None,
    asserted: Sequence[str],
    k: int,
) -> Scores:
    """Answer and retrieval metrics, evidence, cost and path (``_routing``) of one finished graph run.

    Args:
        state: The graph's final state.
        example: The question.
        gold: Ids of its gold paragraphs.
        pool: Ids the question may retrieve from; None: any.
        asserted: The wrong answers its planted and injected passages assert.
        k: The method's evidence size.
    """
    from causalrag.nodes.common import summarize_trace

    prediction = str(state.get("answer") or "")
    docs = list(state.get("documents") or [])
    ids = [d.id for d in docs]
    allowed = set(pool) if pool is not None else None
    trace = state.get("trace") or []
    cost = cast(TraceCost, summarize_trace(trace))  # its totals are these five figures
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
        **cost,
        "fallbacks": _fallbacks(trace),
        "fallback_steps": _fallback_steps(trace),
        **_routing(state, trace),
    }


# --------------------------------------------------------------------------- the run
_J = TypeVar("_J")
_R = TypeVar("_R")
_Job = tuple[Example, Example, str]
"""One question to ask: (the question as the dataset has it, the question with its pool at K, the method)."""


class _Progress:
    """tqdm bar whose postfix shows each method's running containment accuracy."""

    def __init__(self, total: int, done: list[ResultRow], enabled: bool) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="eval", unit="result", disable=not enabled)
        self.acc: dict[str, list[float]] = {}
        for row in done:
            self.add(row, advance=False)

    def add(self, row: ResultRow, *, advance: bool = True) -> None:
        self.acc.setdefault(row["method"], []).append(row["acc"])
        self.bar.set_postfix_str(" ".join(f"{m}={sum(v) / len(v):.2f}" for m, v in self.acc.items()), refresh=False)
        if advance:
            self.bar.update()

    def close(self) -> None:
        self.bar.close()


@dataclass
class _Recorder:
    """Takes each new result, in the calling thread only: appends it to the results file, then reports it."""

    path: Path
    bar: _Progress
    on_result: Callable[[ResultRow], None] | None
    written: list[ResultRow] = field(default_factory=list)

    def add(self, row: ResultRow) -> None:
        _append(self.path, row)
        self.written.append(row)
        self.bar.add(row)
        if self.on_result:
            self.on_result(row)


@dataclass(frozen=True)
class _Run:
    """What every question of a run shares."""

    config: EvalConfig
    dataset: list[Example]
    """Every question of the dataset (the donors of the injected passages)."""
    examples: list[Example]
    """The questions asked (the first ``limit``), whichever shard asks them."""
    mine: list[Example]
    """Those of this shard."""
    llm: Any
    graphs: dict[str, CompiledStateGraph[Any, Any, Any, Any]]


def _completed(jobs: Sequence[_J], work: Callable[[_J], _R], concurrency: int) -> Iterator[_R]:
    """``work(job)`` for every job, yielded as each finishes.

    One after another in this thread, or ``concurrency`` at a time in worker threads (each with a copy of this
    thread's context variables).
    """
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


def _check_methods(config: EvalConfig) -> None:
    """Fail before any work on an unknown method, a bad parameter value or a bad shard."""
    from causalrag.graphs.registry import make_context

    for method in config.methods:
        make_context(method, **config.params.get(method, {}))
    if config.shard is not None:
        parse_shard(config.shard)


def _with_backend(config: EvalConfig, llm: Any) -> EvalConfig:
    """``config`` with its backend named: ``CAUSALRAG_BACKEND``'s choice, or the class of the model given."""
    if config.backend is not None:
        return config
    from causalrag.tools.llm import choose_backend

    backend = choose_backend(None, config.model) if llm is None else type(llm).__name__
    return dataclasses.replace(config, backend=backend)


def _run_folder(out: str | Path) -> Path:
    """The run folder, made when missing (a file there is refused)."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise CausalRAGError(f"--out {folder} is a file: pass a folder for the run (it is made when missing).")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _questions(config: EvalConfig) -> tuple[list[Example], list[Example], list[Example]]:
    """The dataset, the questions asked (its first ``limit``) and this shard's share of them."""
    dataset = load_examples(config.dataset)
    examples = dataset[: config.limit] if config.limit else dataset
    if config.setting == "open":
        examples = distinct_questions(examples)
    if not examples:
        raise CausalRAGError(f"Dataset {config.dataset!r} has no questions.")
    if any(config.inject) and not any(e.passages for e in examples):
        raise CausalRAGError("Injected passages need per-question pools, which this dataset lacks: use --inject 0.")
    return dataset, examples, [ex for ex in examples if in_shard(ex.id, config.shard)]


def _pending(config: EvalConfig, mine: Sequence[Example], finished: set[str]) -> list[tuple[int, Example, str]]:
    """Every (K, question, method) of this shard without a result yet."""
    return [
        (k, ex, m) for k in config.inject for ex in mine for m in config.methods
        if result_key(m, ex.id, k) not in finished
    ]


def _model(config: EvalConfig, llm: Any, *, default: bool) -> Any:
    """The run's model: ``llm`` when given, else the default model (``default``) or the one ``config`` names."""
    if llm is not None:
        return llm
    from causalrag.config import settings
    from causalrag.tools.llm import default_llm, load_llm

    return default_llm() if default else load_llm(config.model or settings().model, settings().device, config.backend)


def _cached(embeddings: Embeddings | None) -> CachedEmbeddings:
    """``embeddings`` (the default embedding model when None), memoized by text for the run."""
    if embeddings is None:
        from causalrag.tools.encoders import default_embeddings

        embeddings = default_embeddings()
    return CachedEmbeddings(embeddings)


def _pools(run: _Run, pooled: list[Example], embeddings: Embeddings) -> Pools | _NoPools:
    """The store of the questions' pools at one K (none when no method retrieves)."""
    from causalrag.graphs.registry import get_method

    if not any(get_method(m).retrieves for m in run.config.methods):
        return _NoPools()
    asked = {ex.id for ex in run.examples}
    rest = [ex for ex in run.dataset if ex.id not in asked]
    setting = cast(Setting, run.config.setting)  # Pools rejects any other value in one sentence
    return Pools(setting, pooled, embeddings, collection=run.config.collection, background=rest)


def _answer(
    graph: CompiledStateGraph[Any, Any, Any, Any], question: str, ctx: RAGContext
) -> tuple[dict[str, Any], str | None]:
    """The graph's final state on ``question`` and no error, or an empty state and the error it raised."""
    try:
        return graph.invoke({"question": question}, context=ctx), None
    except SETUP_ERRORS:
        raise
    except Exception as exc:  # noqa: BLE001 - one failing question must not end the run
        return {}, f"{type(exc).__name__}: {exc}"


def _ask(job: _Job, *, run: _Run, k: int, pools: Pools | _NoPools) -> ResultRow:
    """Ask one method one question with its pool at K injected passages, and score the answer."""
    from causalrag.graphs.registry import make_context

    original, ex, method = job
    config = run.config
    injected = asserted_answers(original, k, donors=run.dataset, seed=config.seed) if k else []
    asserted = [*original.wrong_answers, *injected]
    params = config.params.get(method, {})
    ctx = make_context(method, llm=run.llm, store=pools.store, ids=pools.ids_for(ex), **params)
    started = time.perf_counter()
    state, error = _answer(run.graphs[method], ex.question, ctx)
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
        **score_result(state, ex, gold=gold_ids(original), pool=pools.ids_for(ex), asserted=asserted, k=ctx.k),
        "wall_seconds": round(time.perf_counter() - started, 3),
        "error": error,
        "params": params,
        "seed": config.seed,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _ask_at(
    run: _Run, k: int, todo: set[tuple[str, str]], embeddings: Embeddings, recorder: _Recorder, concurrency: int
) -> None:
    """Ask the (question id, method) pairs ``todo`` with K injected passages, recording each result as it comes."""
    # the open setting's corpus holds every asked question's passages, whichever shard asks it
    pooled = [with_distractors(ex, k, donors=run.dataset, seed=run.config.seed, instruction=run.config.instruction)
              for ex in (run.examples if run.config.setting == "open" else run.mine)]
    pools = _pools(run, pooled, embeddings)
    originals = {ex.id: ex for ex in run.examples}
    jobs = [(originals[ex.id], ex, m) for ex in pooled for m in run.config.methods if (ex.id, m) in todo]
    try:
        for row in _completed(jobs, partial(_ask, run=run, k=k, pools=pools), concurrency):
            recorder.add(row)
    finally:
        pools.close()


def run_eval(
    config: EvalConfig,
    out: str | Path,
    *,
    llm: Any = None,
    embeddings: Embeddings | None = None,
    progress: bool = True,
    on_result: Callable[[ResultRow], None] | None = None,
    concurrency: int = 1,
) -> list[ResultRow]:
    """Run every pending (method, question, K) of ``config`` into ``out``; returns all results of the folder.

    Args:
        config: The run's settings.
        out: The run folder: made when missing, resumed when it holds results of the same settings.
        llm: Replaces the default model (e.g. a fake in tests).
        embeddings: Replaces the default embedding model.
        progress: Show a progress bar with each method's running accuracy.
        on_result: Called with each new result as soon as it is written.
        concurrency: Questions in flight at once (module docstring).

    Returns:
        Every result of the folder: those found there first, then the new ones.
    """
    from causalrag.graphs.registry import build_graph

    _check_concurrency(concurrency, None)
    _check_methods(config)  # unknown names and bad values fail before any work
    default_model = llm is None and config.model is None and config.backend is None
    config = _with_backend(config, llm)
    folder = _run_folder(out)
    _check_config(folder, config)
    done = read_results(folder)
    dataset, examples, mine = _questions(config)
    pending = _pending(config, mine, {r["key"] for r in done})
    bar = _Progress(len(pending), [r for r in done if r["method"] in config.methods], progress)
    if not pending:
        bar.close()
        return done
    llm = _model(config, llm, default=default_model)
    _check_concurrency(concurrency, llm)
    cached = _cached(embeddings)
    run = _Run(config, dataset, examples, mine, llm, {m: build_graph(m) for m in config.methods})
    recorder = _Recorder(folder / RESULTS, bar, on_result)
    try:
        for k in sorted(set(config.inject)):
            todo = {(ex.id, m) for kk, ex, m in pending if kk == k}
            if todo:
                _ask_at(run, k, todo, cached, recorder, concurrency)
    finally:
        bar.close()
    return done + recorder.written
