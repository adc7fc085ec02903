"""The ``causalrag`` command: ingest, ask, draw, methods, demo.

Errors a person can fix print one sentence and exit 1, never a traceback. Retrieved and generated
text is data: it is printed as plain text (never read as Rich markup) with control characters
neutralized, so a passage cannot crash the command or drive the terminal.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

import causalrag  # first: it sets the offline environment
from causalrag.config import DEMO_COLLECTION, settings
from causalrag.errors import CausalRAGError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from causalrag.state.base import RAGContext
    from causalrag.tools.store import Mode

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Robust RAG methods as LangGraph graphs.",
)
out = Console()
err = Console(stderr=True, soft_wrap=True)

ModelOpt = Annotated[str | None, typer.Option("--model", help="Local model folder, .gguf file or hub id.")]
BackendOpt = Annotated[
    str | None,
    typer.Option("--backend", help="LLM backend: auto, transformers, llamacpp or openai (default: CAUSALRAG_BACKEND)."),
]
CollectionOpt = Annotated[str, typer.Option("--collection", "-c", help="Chroma collection.")]
ParamOpt = Annotated[list[str], typer.Option("--param", "-p", help="Method parameter NAME=VALUE (repeatable).")]


# --------------------------------------------------------------------------- helpers
def _context(
    method: str, collection: str, model: str | None, params: list[str], backend: str | None = None, **fixed: Any
) -> RAGContext:
    from causalrag.api import make_context, parse_params
    from causalrag.config import settings
    from causalrag.tools.llm import load_llm

    fixed = {k: v for k, v in fixed.items() if v is not None}
    # -p may name what an option names too: -p collection=x beats the default, an explicit --k beats -p k=...
    ctx = make_context(method, **{"collection": collection, **parse_params(method, params), **fixed})
    if model or backend:
        ctx.llm = load_llm(model or settings().model, backend=backend)
    return ctx


def _short(text: str, width: int = 110) -> str:
    from causalrag.text import readable

    text = " ".join(readable(str(text)).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def line(*parts: str | tuple[str, str]) -> Text:
    """A line of our own styled labels and plain data.

    ``(text, style)`` pairs are ours; bare strings are data (retrieved or generated), shown as they are
    with control characters neutralized.
    """
    from causalrag.text import readable

    return Text.assemble(*(p if isinstance(p, tuple) else readable(p) for p in parts))


_C1 = re.compile(r"[\x80-\x9f]")


def json_text(payload: Any) -> str:
    r"""JSON with every control character escaped.

    C0 ones always are; C1 ones (8-bit escape codes some terminals obey) are written as \u0080-\u009f
    too, the same data.
    """
    text = json.dumps(payload, ensure_ascii=False, indent=2, default=str)
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def read_question(question: str | None, question_file: Path | None) -> str | None:
    """The question from the argument, ``-`` (standard input) or ``--question-file``.

    Bytes that are not UTF-8 (from any of them) are decoded by detection, not rejected.
    """
    from causalrag.tools.store import decode_text

    if question_file is not None:
        try:
            return decode_text(question_file.read_bytes())
        except OSError as exc:
            raise CausalRAGError(
                f"Cannot read the question file {question_file}: {exc.strerror or exc}; pass a readable text file."
            ) from None
    if question == "-":
        return decode_text(sys.stdin.buffer.read())
    if question is None:
        return None
    return decode_text(os.fsencode(question))  # argv holds undecodable bytes as surrogates: recover them


def print_event(event: dict[str, Any]) -> None:
    """One streamed event as a line (tokens inline)."""
    kind, stage = event.get("type"), str(event.get("stage", ""))
    if kind == "token":
        out.print(line(str(event["text"])), end="", highlight=False)
        return
    if kind == "evidence":
        out.print(line("\n", (stage, "bold cyan"), f" evidence ({len(event['documents'])}):"))
        for i, d in enumerate(event["documents"], 1):
            score = f"{d['score']:.3f}" if isinstance(d.get("score"), (int, float)) else "   - "
            out.print(
                line(f"  {i:>2}. [{score}] ", (_short(d.get("title", ""), 60), "bold"), f": {_short(d['text'], 90)}"),
                highlight=False,
            )
        return
    if kind == "answer":
        out.print(line("\n", (f"{stage} →", "bold green"), f" {_short(event['answer'], 400)}"), highlight=False)
        return
    payload = {k: v for k, v in event.items() if k not in ("type", "stage")}
    out.print(
        line("\n", (f"{stage} {kind}", "magenta"), f": {_short(json.dumps(payload, default=str), 160)}"),
        highlight=False,
    )


def run_graph(
    method: str,
    question: str | None,
    ctx: Any,
    *,
    stream: bool,
    checkpointer: Any = None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """Invoke (or stream, printing as events arrive) and return the final state.

    ``question=None`` resumes the thread in ``config`` from its last checkpoint.
    """
    graph = causalrag.build_graph(method, checkpointer=checkpointer)
    inputs = None if question is None else {"question": question}
    if not stream:
        return graph.invoke(inputs, config, context=ctx)
    final: dict[str, Any] = {}
    events = graph.stream(inputs, config, context=ctx, stream_mode=["updates", "custom", "values"])
    # with a list of stream modes every event is a (mode, chunk) pair; langgraph's return type does not say so
    for mode, chunk in cast(Iterator[tuple[str, Any]], events):
        if mode == "custom":
            print_event(chunk)
        elif mode == "updates":
            for node, update in chunk.items():
                spent: dict[str, Any] = next(
                    (e for e in (update or {}).get("trace", []) if e.get("node") == node), {}
                )
                out.print(f"\n[dim]✓ {node} ({spent.get('seconds', 0):.1f}s, {spent.get('llm_calls', 0)} LLM calls)[/]")
        else:
            final = chunk
    out.print()
    return final


def result_json(state: dict[str, Any]) -> dict[str, Any]:
    """A run's final state as ``--json`` prints it: answer, documents, trace and the summed cost."""
    from causalrag.api import doc_json, summarize_trace

    docs = [{k: d[k] for k in ("id", "title", "text", "score")} for d in map(doc_json, state.get("documents", []))]
    return {
        "answer": state.get("answer", ""),
        "documents": docs,
        "trace": state.get("trace", []),
        "cost": summarize_trace(state.get("trace", [])),
    }


# --------------------------------------------------------------------------- commands
@app.command()
def methods() -> None:
    """List the methods and their parameters."""
    table = Table("method", "what it does", "parameters (defaults)")
    for m in causalrag.METHODS.values():
        params = ", ".join(f"{k}={v}" for k, v in m.parameters().items() if k not in ("collection", "ids"))
        table.add_row(m.name, m.summary, params)
    out.print(table)


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt, .md, .jsonl with id/title/text).")],
    collection: CollectionOpt = DEMO_COLLECTION,
    words: Annotated[int, typer.Option(help="Words per passage.", min=1)] = 100,
    keep_history: Annotated[
        bool,
        typer.Option(
            "--keep-history", help="Keep the passages of files that changed or were deleted since the last ingest."
        ),
    ] = False,
) -> None:
    """Split files into ~100-word passages and add the new ones to a collection.

    Re-ingesting a file that changed replaces its passages, and a file deleted from an ingested
    folder loses its passages, unless --keep-history is given.
    """
    from causalrag.tools.store import Store

    store = Store(collection)
    report = store.ingest(paths, words=words, keep_history=keep_history)  # logs a warning per skipped file or line
    if report.passages == 0:
        raise CausalRAGError("No text was found to ingest: pass .txt, .md or .jsonl files, or folders that hold some.")
    out.print(line(
        f"{report.files} files, {report.passages} passages read, {report.added} new, {report.removed} stale removed → "
        f"collection {collection!r} now holds {store.count()} passages."
    ), soft_wrap=True)


@app.command()
def ask(
    question: Annotated[
        str | None, typer.Argument(help="The question; - reads it from standard input (omit with --resume).")
    ] = None,
    question_file: Annotated[
        Path | None, typer.Option("--question-file", "-f", help="Read the question from this file (long questions).")
    ] = None,
    method: Annotated[str | None, typer.Option("--method", "-m", help="Default: standard_rag.")] = None,
    collection: CollectionOpt = DEMO_COLLECTION,
    k: Annotated[int | None, typer.Option(help="Passages for the answer step.")] = None,
    retrieval: Annotated[str | None, typer.Option(help="dense, bm25 or hybrid.")] = None,
    stream: Annotated[bool, typer.Option("--stream", help="Print evidence and tokens as they come.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer, documents and trace as JSON.")] = False,
    thread: Annotated[str | None, typer.Option(help="Persist every step under this thread id (SQLite).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the --thread's interrupted run.")] = False,
    model: ModelOpt = None,
    backend: BackendOpt = None,
    param: ParamOpt = [],  # noqa: B006 - typer reads the default
) -> None:
    """Answer a question with a method."""
    from contextlib import nullcontext

    from causalrag.api import check_fits, question_text
    from causalrag.checkpoints import checkpointer, thread_config, thread_method

    if resume and not thread:
        raise CausalRAGError("--resume needs the --thread id of the run to continue.")
    if not resume:
        question = question_text(read_question(question, question_file))
    with checkpointer() if thread else nullcontext() as saver:
        if resume and saver is not None and thread:  # --resume comes with a --thread (checked above)
            method = method or thread_method(saver, thread)
            question = None
        method = method or "standard_rag"
        ctx = _context(method, collection, model, param, backend, k=k, retrieval=retrieval)
        if question is not None:
            check_fits(question, ctx)
        config = thread_config(thread, method) if thread else None
        state = run_graph(method, question, ctx, stream=stream and not as_json, checkpointer=saver, config=config)
    result = result_json(state)
    if as_json:
        print(json_text(result))
        return
    if not stream:
        for i, d in enumerate(result["documents"], 1):
            out.print(line(f"  {i}. ", (_short(d["title"], 60), "bold"), f": {_short(d['text'], 90)}"), highlight=False)
    cost = result["cost"]
    out.print(line(("Answer:", "bold green"), f" {_short(result['answer'], 400) or '(no answer)'}"), highlight=False)
    out.print(
        f"[dim]{method}: {cost['llm_calls']} LLM calls, {cost['prompt_tokens']} prompt + {cost['new_tokens']} new "
        f"tokens, {cost['seconds']:.1f}s[/]"
    )


@app.command()
def history(thread: Annotated[str, typer.Option(help="Thread id given to `ask --thread`.")]) -> None:
    """List the stored steps of a thread, newest first."""
    from causalrag.checkpoints import checkpointer, thread_config, thread_method

    with checkpointer() as saver:
        method = thread_method(saver, thread)
        graph = causalrag.build_graph(method, checkpointer=saver)
        table = Table(
            "step", "next", "question", "answer", "documents", "last node", title=f"thread {thread} ({method})"
        )
        for snap in graph.get_state_history(thread_config(thread)):
            values = snap.values or {}
            trace = values.get("trace") or []
            table.add_row(
                str((snap.metadata or {}).get("step", "")),
                ", ".join(snap.next) or "(done)",
                Text(_short(values.get("question", ""), 40)),
                Text(_short(values.get("answer", ""), 30)),
                str(len(values.get("documents") or [])),
                trace[-1]["node"] if trace else "",
            )
    out.print(table)


@app.command()
def draw(
    method: Annotated[str, typer.Argument(help="Method name.")],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="FILE.png (graphviz) or FILE.mmd (Mermaid text).")],
) -> None:
    """Draw a method's graph offline (PNG through pygraphviz, or Mermaid text)."""
    graph = causalrag.build_graph(method).get_graph()
    if out_file.suffix in (".png", ".mmd", ".mermaid"):
        out_file.parent.mkdir(parents=True, exist_ok=True)
    if out_file.suffix == ".png":
        out_file.write_bytes(graph.draw_png(None))  # no file: the PNG's bytes
    elif out_file.suffix in (".mmd", ".mermaid"):
        out_file.write_text(graph.draw_mermaid(), encoding="utf-8")
    else:
        raise CausalRAGError(f"Cannot draw to {out_file.name!r}: use a file name ending in .png or .mmd.")
    out.print(line(f"wrote {out_file}"))


def _demo_route(state: dict[str, Any]) -> list[Text]:
    """The lines under a demo answer.

    They show the nodes the question went through, in order, and a routed method's decision (its route and
    why) when the final state holds one.
    """
    nodes = [str(e.get("node", "?")) for e in state.get("trace") or []]
    lines = [line(("  path: ", "dim"), " → ".join(nodes) or "–")]
    decision = state.get("decision")
    if isinstance(decision, dict) and decision.get("route"):
        parts: list[str | tuple[str, str]] = [("  route: ", "dim"), str(decision["route"])]
        if decision.get("why"):
            parts += [("  why: ", "dim"), _short(decision["why"], 300)]
        lines.append(line(*parts))
    return lines


@app.command()
def demo(
    methods_: Annotated[str | None, typer.Option("--methods", help="Comma-separated methods (default: all).")] = None,
    questions: Annotated[
        int,
        typer.Option(help="How many demo questions: the trap first, then a knowledge conflict and a bridge question."),
    ] = 1,
    full: Annotated[bool, typer.Option("--full", help="The papers' defaults even on a CPU (slower).")] = False,
    model: ModelOpt = None,
    backend: BackendOpt = None,
) -> None:
    """Seed the demo collection and answer a few demo questions with every method, streaming evidence.

    Under each answer: the nodes the question went through, in order, and for a routed method (triage) the
    route its decision took and why.

    On a CPU each method runs with its ``cpu_params`` (fewer candidates, rounds and iterations)
    and, on the transformers backend of a CPU with native bf16, bf16 weights (unless
    ``CAUSALRAG_DTYPE`` is set), unless ``--full`` is given.
    """
    from causalrag.config import settings
    from causalrag.corpus import demo_questions, open_store
    from causalrag.tools.llm import choose_backend, cpu_has_bf16, pick_device

    registry = causalrag.METHODS
    chosen = methods_.split(",") if methods_ else list(registry)
    sized = not full and pick_device() == "cpu"
    chosen_backend = choose_backend(backend, model)
    if sized and chosen_backend == "transformers" and cpu_has_bf16():
        # half the bytes per decoded token; CAUSALRAG_DTYPE=float32 keeps fp32
        os.environ.setdefault("CAUSALRAG_DTYPE", "bfloat16")
    dtype = f" ({settings().dtype} weights)" if chosen_backend == "transformers" else ""
    out.print(line(("causalrag demo", "bold"), f" — methods: {', '.join(chosen)}; backend: {chosen_backend}{dtype}"))
    knobs = "; ".join(
        f"{m}: {registry[m].cpu_params}" for m in chosen if m in registry and registry[m].cpu_params
    )
    if sized and knobs:
        out.print(f"[dim]CPU-sized parameters ({knobs}); --full runs the papers' defaults.[/]")
    started = time.perf_counter()
    store = open_store(DEMO_COLLECTION)
    out.print(f"demo collection ready: {store.count()} passages ({time.perf_counter() - started:.1f}s)")
    picked = [q for q in demo_questions() if q["type"] in ("trap", "conflict", "bridge")][:questions]
    score: dict[str, int] = {m: 0 for m in chosen}
    for n, q in enumerate(picked, 1):
        for method in chosen:
            out.rule(f"[{n}/{len(picked)}] {method}: {q['question']}  (expected: {q['answers'][0]}; {q['type']})")
            cpu_params = registry[method].cpu_params if sized and method in registry else {}
            ctx = _context(method, DEMO_COLLECTION, model, [], backend, **cpu_params)
            ctx.store = store
            state = run_graph(method, q["question"], ctx, stream=True)
            ok = any(a.lower() in state.get("answer", "").lower() for a in q["answers"])
            score[method] += ok
            out.print(
                line(("✓ " if ok else "✗ ", "green" if ok else "red"), f"{method}: {state.get('answer', '')!r}"),
                highlight=False,
            )
            for extra in _demo_route(state):
                out.print(extra, highlight=False)
    out.rule("summary")
    for method, s in score.items():
        out.print(f"{method:>14}: {s}/{len(picked)} answers contain the expected string")
    out.print(f"[dim]total {time.perf_counter() - started:.0f}s[/]")


@app.command("distill-cis")
def distill_cis(
    questions: Annotated[Path, typer.Option(help="Training questions: one a line, or JSONL with a 'question' field.")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the distilled reranker (and its labels/checkpoints).")
    ],
    collection: CollectionOpt = DEMO_COLLECTION,
    n: Annotated[
        int, typer.Option("--n", help="Candidates per question (paper: 100; ~1 min per question on a CPU).")
    ] = 100,
    retrieval: Annotated[str, typer.Option(help="First stage: bm25 (paper), dense or hybrid.")] = "bm25",
    form: Annotated[str, typer.Option(help="CIS prompt form of the teacher: qa or plain.")] = "qa",
    epochs: Annotated[int, typer.Option()] = 3,
    batch_size: Annotated[int, typer.Option()] = 16,
    lr: Annotated[float, typer.Option()] = 3e-5,
    max_length: Annotated[int, typer.Option(help="Max tokens of question + passage.")] = 256,
    seed: Annotated[int, typer.Option()] = 0,
    resume: Annotated[
        bool, typer.Option("--resume/--restart", help="Continue from saved labels and epoch checkpoints.")
    ] = True,
    model: ModelOpt = None,
) -> None:
    """Distill CIS into a small cross-encoder (paper §4.2); use it with `--param reranker=cis-distilled`."""
    from causalrag.corpus import open_store
    from causalrag.prompts.cis import FORMS
    from causalrag.tools.cis import CISScorer
    from causalrag.tools.cross_encoder import DistillConfig, distill_from_store, read_questions
    from causalrag.tools.llm import default_llm, load_llm

    if form not in FORMS:  # before any work: the scorer would only fail at its first question
        raise CausalRAGError(f"Unknown CIS form {form!r}: use --form {' or --form '.join(FORMS)}.")
    asked = read_questions(questions)
    store = open_store(collection)
    # Store.retrieve rejects an unknown --retrieval mode
    scorer = CISScorer(load_llm(model) if model else default_llm(), form=form)
    config = DistillConfig(epochs=epochs, batch_size=batch_size, lr=lr, max_length=max_length, seed=seed)
    _, losses, pairs = distill_from_store(
        scorer, store, asked, out_dir, n_candidates=n, retrieval=cast("Mode", retrieval), config=config, resume=resume
    )
    out.print(
        line(
            f"distilled {pairs} ⟨question, passage, CIS⟩ pairs from {len(asked)} questions → "
            f"{out_dir} (epoch losses {', '.join(f'{x:.3f}' for x in losses)}; p(K) computed "
            f"{scorer.prior_computed}, cached {scorer.prior_hits})"
        )
    )
    out.print(
        line(
            f'use it: causalrag ask "…" --method cis -c {collection} -p '
            f'reranker=cis-distilled -p distilled_path={out_dir}'
        )
    )


def _method_params(methods: list[str], raw: list[str], *, cpu: bool = False) -> dict[str, dict[str, Any]]:
    """Each chosen method's parameters, from its ``cpu_params`` and the ``-p`` assignments.

    A method starts from its ``cpu_params`` with ``cpu``; then every ``NAME=VALUE`` applies to each chosen
    method that has NAME, and every ``METHOD.NAME=VALUE`` to that method alone.
    """
    from causalrag.api import parse_params

    chosen = {m: causalrag.METHODS[m] for m in methods}
    params: dict[str, dict[str, Any]] = {m: dict(chosen[m].cpu_params) if cpu else {} for m in methods}
    for item in raw:
        owner, dot, assignment = item.partition("=")[0].partition(".")
        if (assignment if dot else owner).strip() in ("ids", "collection"):
            raise CausalRAGError(f"-p {item!r} is set by eval itself (each question's pool, or --collection): drop it.")
        if dot:
            if owner not in chosen:
                raise CausalRAGError(
                    f"-p {item!r} is for method {owner!r}, which is not in "
                    "--methods: add it there or drop the parameter."
                )
            targets, assignment = [owner], item.partition(".")[2]
        else:
            targets, assignment = [m for m in methods if owner.strip() in chosen[m].parameters()], item
            if not targets:
                raise CausalRAGError(f"No chosen method has parameter {owner.strip()!r}: see `causalrag methods`.")
        for method in targets:
            params[method].update(parse_params(method, [assignment]))
    return {m: p for m, p in params.items() if p}


@app.command("eval")
def eval_(
    dataset: Annotated[
        str,
        typer.Option(
            help="demo, hotpotqa, hotpotqa:PATH (HotpotQA/2Wiki JSON), jsonl:PATH (FlashRAG), conflict (bundled "
            "conflict/trap set), robust (bundled robustness suite, 8 conditions) or rgb:PATH (RGB), with a condition "
            "after ?: hotpotqa?swap=1 (answer-swap conflict), robust?split=test&condition=all_wrong,no_relevant, "
            "rgb:PATH?passages=5&noise=0.4&swapped=2."
        ),
    ] = "hotpotqa",
    methods_: Annotated[str, typer.Option("--methods", help="Comma-separated methods.")] = "no_rag,standard_rag",
    setting: Annotated[
        str, typer.Option(help="distractor (each question's own paragraphs) or open (all paragraphs).")
    ] = "distractor",
    inject: Annotated[
        str, typer.Option(help="Comma-separated numbers K of misleading passages to add, e.g. 0,4,8.")
    ] = "0",
    limit: Annotated[int | None, typer.Option(help="First N questions only.")] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Run folder (rerun the same command to resume).")] = Path(
        "runs/eval"
    ),
    seed: Annotated[int, typer.Option(help="Seed of the injected passages.")] = 0,
    instruction: Annotated[
        bool, typer.Option("--instruction", help="Injected passages also carry a prompt-injection sentence.")
    ] = False,
    collection: Annotated[
        str | None, typer.Option("--collection", "-c", help="Open setting without passage pools: collection to search.")
    ] = None,
    model: ModelOpt = None,
    param: Annotated[
        list[str],
        typer.Option(
            "--param",
            "-p",
            help="NAME=VALUE for every chosen method that has NAME, or METHOD.NAME=VALUE for one (repeatable).",
        ),
    ] = [],  # noqa: B006 - typer reads the default
    cpu: Annotated[
        bool,
        typer.Option(
            "--cpu", help="Each method's CPU-sized parameters, as `causalrag demo` uses on a CPU (-p overrides them)."
        ),
    ] = False,
    backend: BackendOpt = None,
    concurrency: Annotated[
        int,
        typer.Option(
            help="Questions in flight at once: their requests overlap on an OpenAI-compatible server; "
            "a local model answers one call at a time."
        ),
    ] = 1,
    shard: Annotated[
        str | None,
        typer.Option(
            help="I/N: only this machine's share of the questions (by a hash of their ids); "
            "`causalrag report` merges the N run folders."
        ),
    ] = None,
) -> None:
    """Evaluate methods on a dataset; one JSON line per (method, question, K) in OUT/results.jsonl, resumable."""
    from causalrag.eval.report import markdown_table, summarize
    from causalrag.eval.runner import EvalConfig, run_eval

    chosen = [m.strip() for m in methods_.split(",") if m.strip()]
    try:
        ks = sorted({int(k) for k in inject.split(",") if k.strip()})
    except ValueError:
        raise CausalRAGError(f"--inject {inject!r} is not a comma-separated list of numbers, e.g. 0,4,8.") from None
    config = EvalConfig(
        dataset,
        chosen,
        setting,
        ks or [0],
        limit,
        _method_params(chosen, param, cpu=cpu),
        model,
        seed,
        instruction,
        collection,
        backend,
        shard,
    )
    rows = run_eval(config, out_dir, concurrency=concurrency)
    mine = [r for r in rows if r["method"] in chosen and r["inject"] in config.inject]
    out.print(markdown_table(summarize(mine, resamples=500)), highlight=False, markup=False)
    out.print(line(f"{len(mine)} results in {out_dir}; `causalrag report {out_dir}` writes the report and plots."))


@app.command(
    help="""Fit triage's decision policy for the model in use on dev data; use it with `-p policy=PATH`
    (or CAUSALRAG_POLICY=PATH).

    Runs triage with every probe and the vote route forced on each question (so every route's answer is
    known), then fits the rules' thresholds to that model (or, with --kind logistic, a model of each route's
    gain over standard RAG's answer), and writes the policy and its validation (leave one condition out, and
    one passage style out when the data has several) beside it as Markdown.
    """
)  # given here, not as the docstring, so --help keeps its one-paragraph first line
def calibrate(
    dataset: Annotated[str, typer.Option(help="Calibration questions (dev data only), e.g. \"robust?split=dev\".")] = (
        "robust?split=dev"
    ),
    policy_out: Annotated[Path, typer.Option("--out", help="Where the fitted policy (JSON) goes.")] = Path(
        "triage-policy.json"
    ),
    runs: Annotated[
        list[Path],
        typer.Option("--runs", help="Calibration run folder(s): made (resumable) from --dataset when missing."),
    ] = [],  # noqa: B006 - typer reads the default
    model: ModelOpt = None,
    backend: BackendOpt = None,
    shard: Annotated[str | None, typer.Option(help="Run only shard I/N (then fit from --runs).")] = None,
    kind: Annotated[
        str, typer.Option(help="rules: fit the rules' thresholds; logistic: a model of each route's gain.")
    ] = "rules",
    fit_only: Annotated[bool, typer.Option("--fit-only", help="Fit on the --runs folders as they are.")] = False,
) -> None:
    """Fit triage's decision policy for the model in use on dev data.

    The command's ``help`` above (what ``causalrag calibrate --help`` prints) says how.
    """
    from causalrag.eval.calibrate import calibrate as fit
    from causalrag.eval.calibrate import calibration_config
    from causalrag.eval.runner import run_eval
    from causalrag.nodes.triage import BUNDLED_MODEL_NAME

    if kind not in ("rules", "logistic"):  # before any run: the fit would only fail at the end
        raise CausalRAGError(f"Unknown policy kind {kind!r}: use --kind rules or --kind logistic.")
    folders = runs or [policy_out.with_suffix(".runs")]
    if not fit_only:
        if len(folders) > 1:
            raise CausalRAGError("Several --runs are fitted together only: add --fit-only (run each one first).")
        run_eval(calibration_config(dataset, model=model, backend=backend, shard=shard), folders[0])  # resumes
        if shard:
            out.print(line(f"shard {shard} done in {folders[0]}; fit with --fit-only --runs over every shard's folder"))
            return
    given = model or settings().model
    name = Path(given).stem if given else BUNDLED_MODEL_NAME
    data, report = fit(folders, model=name, provenance=", ".join(f.name for f in folders), kind=kind)
    policy_out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    policy_out.with_suffix(".md").write_text("\n".join(report) + "\n", encoding="utf-8")
    out.print("\n".join(report), highlight=False, markup=False)
    out.print(line(f"wrote {policy_out} and its validation, {policy_out.with_suffix('.md')}"))


@app.command(
    help="""Decide every question of a calibration run with each policy, on the same evidence records, and write the
    answers as a run (standard_rag's answer is the joint reading), so that `causalrag report OUT --against
    standard_rag` pairs them. No model runs: the policies are compared on identical evidence.
    """
)  # given here, not as the docstring, so --help keeps its one-paragraph first line
def replay(
    run: Annotated[Path, typer.Argument(help="A calibration run folder (`causalrag calibrate` makes one).")],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the replayed run (then `causalrag report`).")],
    policy: Annotated[
        list[str], typer.Option("--policy", help="NAME=POLICY: rules, bundled or a policy file (repeatable).")
    ] = ["rules=rules"],  # noqa: B006 - typer reads the default
) -> None:
    """Decide every question of a calibration run with each policy, and write the answers as a run.

    The command's ``help`` above (what ``causalrag replay --help`` prints) says how.
    """
    from causalrag.eval.calibrate import read_rows
    from causalrag.eval.calibrate import replay as replayed
    from causalrag.eval.conditions import load_examples
    from causalrag.nodes.triage import policy_of
    from causalrag.state.triage import TriageContext

    rows = read_rows(run)
    if not rows:
        raise CausalRAGError(f"{run} holds no calibration rows: make one with `causalrag calibrate --runs {run}`.")
    chosen = {}
    for item in policy:
        name, _, spec = item.partition("=")
        chosen[f"triage[{name.strip()}]"] = policy_of(TriageContext(policy=spec.strip() or name.strip()))
    wrong: dict[str, list[str]] = {}
    for spec in {r["dataset"] for r in rows}:
        wrong |= {e.id: e.wrong_answers for e in load_examples(spec)}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text((run / "config.json").read_text(encoding="utf-8"), encoding="utf-8")
    lines = [json.dumps(r, ensure_ascii=False) for r in replayed(rows, chosen, wrong)]
    (out_dir / "results.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out.print(line(f"{len(lines)} replayed results in {out_dir}; `causalrag report {out_dir} --against standard_rag`"))


def _print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *, wrap: str | None = None) -> None:
    """A report section as a simple Rich table, nothing when it has no rows.

    Cells print as plain text, and only the ``wrap`` column folds on a narrow terminal.
    """
    if not rows:
        return
    from rich import box

    table = Table(title=title, box=box.SIMPLE)
    for name in columns:
        table.add_column(name, no_wrap=name != wrap, overflow="fold")
    for row in rows:
        table.add_row(*map(line, row))
    out.print(table)


@app.command()
def report(
    folders: Annotated[list[Path], typer.Argument(help="Run folder(s) written by `causalrag eval --out`.")],
    merged: Annotated[
        Path | None,
        typer.Option("--out", help="With several runs: the folder that gets the merged run and its report."),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            help="Also compare every method with this one (e.g. standard_rag), paired per question: "
            "ΔAcc and Δmisled with 95 % bootstrap intervals, wins/losses and McNemar's exact p, per condition and "
            "pooled, into paired.md, paired.csv and paired.png.",
        ),
    ] = None,
) -> None:
    """Table (mean and 95 % bootstrap interval per method and K), Markdown, CSV and PNG plots into the run folder.

    Several runs (methods split over processes or machines, or the baseline run apart from the methods, on
    the same dataset and settings) are merged into ``--out`` first; a result in two runs is an error.

    With ``--against BASELINE`` each other method is paired with the baseline on the questions both
    answered (same question and K; the others are left out and counted). Per condition of the question
    set, per pooled group of the robustness suite (clean, conflict, worst_case, when all their conditions
    are present) and over all questions: both accuracies, ΔAcc and Δmisled with a BCa bootstrap 95 %
    interval over resampled questions (seeded), wins (method right, baseline wrong), losses, and McNemar's
    exact two-sided p. A result that raised counts as a wrong answer.
    """
    from rich import box

    from causalrag.eval.report import (
        AGREEMENT_COLUMNS,
        COST_COLUMNS,
        FALLBACK_COLUMNS,
        PATH_COLUMNS,
        QUALITY_COLUMNS,
        TERMINAL_COLUMNS,
        TERMINAL_LEGEND,
        paired_blocks,
        table_rows,
        write_paired_report,
        write_report,
    )
    from causalrag.eval.runner import merge_runs

    if len(folders) > 1 and merged is None:
        raise CausalRAGError("Several runs need --out FOLDER for the merged run and its report.")
    folder = folders[0] if merged is None else merged
    if merged is not None:
        merge_runs(folders, merged)
    paired = write_paired_report(folder, against) if against else None  # a missing baseline stops before any other file
    result = write_report(folder)
    rows = table_rows(result.summary, sep="\n")
    quality = Table(title=f"{folder}: mean (95 % bootstrap interval)", box=box.SIMPLE)
    cost = Table(title="cost per question", box=box.SIMPLE)
    for table, names in ((quality, QUALITY_COLUMNS), (cost, ["method", "K", *COST_COLUMNS])):
        for name in names:
            table.add_column(name, no_wrap=name == "method", overflow="fold")
    for row in rows:
        quality.add_row(*row[: len(QUALITY_COLUMNS)])
        cost.add_row(*row[:2], *row[len(QUALITY_COLUMNS) :])
    out.print(quality)
    out.print(cost)
    _print_table("parse fallbacks per judgment step", FALLBACK_COLUMNS, result.fallbacks)
    _print_table("routes taken (results per route, share of the method's results at K)", *result.routes)
    _print_table("same answers on the same questions (normalized answers equal)", AGREEMENT_COLUMNS, result.agreement)
    _print_table("most common node paths per method", PATH_COLUMNS, result.paths, wrap="path")
    written = [result.markdown, result.csv, *result.plots]
    if paired and against:  # a paired report is made only --against a baseline
        out.print(line((f"paired with {against}", "bold"), f" ({TERMINAL_LEGEND})"))
        for title, block in paired_blocks(paired.summary, against):
            table = Table(title=Text(title), box=box.SIMPLE)
            for name in TERMINAL_COLUMNS:
                table.add_column(name, no_wrap=name == "condition")
            for row in block:
                table.add_row(*map(line, row))  # condition names come from the dataset: data, not markup
            out.print(table)
        written += [paired.markdown, paired.csv, paired.plot]
    out.print(line("wrote " + ", ".join(map(str, written))))


def main() -> None:
    """The ``causalrag`` entry point: a :class:`~causalrag.errors.CausalRAGError` prints one line and exits 1."""
    try:
        app()
    except CausalRAGError as exc:
        err.print(line(("error:", "bold red"), f" {exc}"), highlight=False)  # the message may quote user text
        sys.exit(1)


if __name__ == "__main__":
    main()
