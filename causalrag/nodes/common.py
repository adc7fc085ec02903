"""Shared nodes (retrieve, answer) and the helpers every node uses.

* :func:`traced` wraps a node so its ``trace`` entry records seconds and LLM usage (and any
  scores the node adds as ``{"trace": [{...}]}``);
* :func:`context` resolves ``runtime.context`` merged over the defaults bound by ``build_graph``;
  :func:`llm_of` / :func:`store_of` its model and store (the process-wide defaults when None);
* :func:`emit_evidence` / :func:`emit` stream small typed events to ``stream_mode="custom"``, and a
  final answer to ``"messages"`` too; :func:`stream_text` streams generated text to both;
* :func:`generate_parsed` asks a model, parses each output and re-asks only the prompts whose
  output did not parse, then falls back (a malformed output degrades an answer, never a graph).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from langchain_core.documents import Document
from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Command

from causalrag.budget import Fitted, fit_passages
from causalrag.errors import CausalRAGError, EmptyQuestionError
from causalrag.params import check_context
from causalrag.prompts.common import ANSWER_STOP, answer_prompt
from causalrag.state.base import RAGContext, RAGState, RAGUpdate, TraceEntry
from causalrag.text import clean_answer, readable
from causalrag.tools.backends.chat_model import LLMChatModel, ReplyChatModel
from causalrag.tools.usage import metered

if TYPE_CHECKING:  # annotations only: Chroma and BM25 load when a node first retrieves
    from causalrag.tools.backends.base import LLM
    from causalrag.tools.store import Mode, Store

log = logging.getLogger(__name__)

C = TypeVar("C", bound=RAGContext)
"""A method's context: shared nodes take any method's (LangGraph checks a node's context against its graph's)."""
T = TypeVar("T")
N = TypeVar("N", bound=Callable[..., Any])
DEFAULT_CONTEXT_KEY = "causalrag_context"


def context(runtime: Runtime[C]) -> C:
    """The run's context: the one passed to ``invoke``/``stream`` merged over the one ``build_graph`` bound.

    The merge is :meth:`RAGContext.over` (the fields the caller named win, the rest keep the bound values),
    checked like ``build_graph``'s parameters so a bad value is one sentence; with no context passed, the bound
    one.
    """
    bound: C | None = get_config().get("configurable", {}).get(DEFAULT_CONTEXT_KEY)
    given = runtime.context
    if given is None and bound is None:
        raise CausalRAGError(
            "This graph has no context: build it with causalrag.build_graph(name) or pass context=... to invoke."
        )
    if given is None:
        return bound
    checked: C = check_context(given if bound is None else given.over(bound))
    return checked


def llm_of(ctx: RAGContext) -> LLM:
    """The context's LLM; None → the process-wide default model.

    The default is loaded once per process, so one model serves every node of every run. The context is left
    as it is: it belongs to the caller.
    """
    if ctx.llm is not None:
        return ctx.llm
    from causalrag.tools.llm import default_llm  # looked up per call, so a replaced default is seen

    return default_llm()


def store_of(ctx: RAGContext) -> Store:
    """The context's store; None → the process-wide store of ``collection``.

    That store is opened once, the demo collection seeded on first use. The context is left as it is: it
    belongs to the caller.
    """
    if ctx.store is not None:
        return ctx.store
    from causalrag.corpus import default_store  # Chroma loads only when a node first retrieves

    return default_store(ctx.collection)


def judge_of(ctx: Any) -> str:
    """The judgment mode of a run: the context's ``judge``, with "auto" resolved by what the model can do."""
    mode = getattr(ctx, "judge", "generate")
    if mode != "auto":
        return mode
    return "score" if getattr(llm_of(ctx), "can_choose", False) else "generate"


def question_of(state: Mapping[str, Any]) -> str:
    """The question as one clean line (bytes that were not UTF-8 and control characters made harmless)."""
    question = " ".join(readable(str(state.get("question") or "")).split())
    if not question:
        raise EmptyQuestionError()
    return question


def titled_text(doc: Document) -> str:
    """The passage as the prompts show it: ``title: text`` (the text alone when it has no title)."""
    title = doc.metadata.get("title")
    return f"{title}: {doc.page_content}" if title else doc.page_content


def doc_json(doc: Document) -> dict[str, Any]:
    """A document as plain JSON: id, title, text, score and any other scalar metadata."""
    extra = {
        k: v for k, v in doc.metadata.items() if isinstance(v, (int, float, str, bool)) and k not in ("title", "score")
    }
    return {
        "id": doc.id,
        "title": doc.metadata.get("title", ""),
        "text": doc.page_content,
        "score": doc.metadata.get("score"),
        **extra,
    }


def emit(runtime: Runtime[Any], event_type: str, stage: str, **payload: Any) -> None:
    """Stream ``{"type", "stage", ...}`` to ``stream_mode="custom"`` (a no-op when nobody listens).

    A final answer (``event_type="answer"``) also reaches ``stream_mode="messages"`` as a message
    chunk, unless the node streamed it token by token already (:func:`stream_text`).
    """
    runtime.stream_writer({"type": event_type, "stage": stage, **payload})
    if event_type == "answer":
        say(str(payload.get("answer") or ""), stage)


_STREAMED: ContextVar[tuple[str, str]] = ContextVar("causalrag_streamed", default=("", ""))
"""(task, text) that the running task streamed with :func:`stream_text`, so its answer is not said twice."""


def _task() -> str:
    """The running task's id (its node name and task uuid), from the run's metadata."""
    return str(get_config().get("metadata", {}).get("langgraph_checkpoint_ns", ""))


def say(answer: str, stage: str) -> None:
    """``answer`` as one message chunk to ``stream_mode="messages"``, as a chat model's reply.

    The chunk carries the node's metadata and ``causalrag_stage``; nothing is said when ``answer`` is empty or
    this task streamed it already.
    """
    task, streamed = _STREAMED.get()
    if answer and not (task == _task() and answer in streamed):
        ReplyChatModel(reply=answer).invoke([], config={"metadata": {"causalrag_stage": stage}})


def emit_evidence(runtime: Runtime[Any], stage: str, documents: Sequence[Document], **payload: Any) -> None:
    """Stream an ``evidence`` event: ``documents`` as plain JSON (:func:`doc_json`) with ``payload``."""
    emit(runtime, "evidence", stage, documents=[doc_json(d) for d in documents], **payload)


_fitted: ContextVar[list[Fitted] | None] = ContextVar("causalrag_fitted", default=None)


def fit(
    llm: Any, documents: Sequence[Document], prompt: Callable[[list[Document]], str], *, reply_tokens: int
) -> list[Document]:
    """The best-ranked ``documents`` whose ``prompt(documents)`` fits the model's window with room for the reply.

    Lower-ranked passages are dropped and an overlong best one trimmed (:func:`causalrag.budget.fit_passages`);
    what was left out is added to the running node's trace (``budget_dropped``/``budget_trimmed``).
    """
    fitted = fit_passages(llm, prompt, documents, reply_tokens=reply_tokens)
    notes = _fitted.get()
    if notes is not None and (fitted.dropped or fitted.trimmed):
        notes.append(fitted)
    return fitted.documents


def traced(node: N) -> N:
    """Record the node's wall time and LLM usage as one ``trace`` entry (and any passages the budget left out).

    The wrapper keeps the node's signature (its state and context types), so the graph checks them.
    """

    @functools.wraps(node)
    def wrapper(state: Any, runtime: Runtime[Any]) -> Any:
        start = time.perf_counter()
        notes = _fitted.set([])
        try:
            with metered() as usage:
                result = node(state, runtime)
            fitted = _fitted.get() or []
        finally:
            _fitted.reset(notes)
        entry: TraceEntry = {
            "node": get_config().get("metadata", {}).get("langgraph_node", node.__name__),
            "seconds": round(time.perf_counter() - start, 4),
            "llm_calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "new_tokens": usage.new_tokens,
            "forward_passes": usage.forward_passes,
        }
        if fitted:
            entry |= {
                "budget_dropped": sum(f.dropped for f in fitted),
                "budget_trimmed": sum(f.trimmed for f in fitted),
            }
            # said once a node, not silently: the answer was read from less evidence than retrieved
            cuts = [
                f"{n} passage(s) {what}"
                for n, what in ((entry["budget_dropped"], "left out"), (entry["budget_trimmed"], "cut short"))
                if n
            ]
            log.warning(
                "%s: %s to fit the model's context window (a shorter question or a longer-context model keeps them).",
                entry["node"],
                " and ".join(cuts),
            )
        update = result.update if isinstance(result, Command) else result
        update = dict(update or {})
        for extra in update.pop("trace", []):
            entry.update(extra)
        update["trace"] = [entry]
        if isinstance(result, Command):
            return Command(update=update, goto=result.goto, graph=result.graph, resume=result.resume)
        return update

    return cast(N, wrapper)


def summarize_trace(trace: Sequence[TraceEntry]) -> dict[str, Any]:
    """Totals over a run's trace: seconds, LLM calls, prompt/new tokens, forward passes."""
    keys = ("seconds", "llm_calls", "prompt_tokens", "new_tokens", "forward_passes")
    totals = {k: sum(e.get(k, 0) for e in trace) for k in keys}
    totals["seconds"] = round(totals["seconds"], 3)
    return totals


def stream_text(
    runtime: Runtime[Any],
    llm: Any,
    prompt: str,
    *,
    stage: str,
    max_new_tokens: int,
    stop: Sequence[str],
    exact: bool = False,
) -> str:
    """Generate one completion, each piece a ``token`` event and a message chunk.

    Pieces go to ``stream_mode="custom"`` as events and to ``"messages"`` through the model's chat-model view,
    so LangGraph sees a chat model stream. ``exact``: the text depends on the prompt alone
    (:meth:`~causalrag.tools.backends.base.LLM.stream`).
    """
    chat = LLMChatModel(llm=llm, max_new_tokens=max_new_tokens, stop=list(stop))
    pieces = []
    for chunk in chat.stream(prompt, config={"metadata": {"causalrag_stage": stage}}, exact=exact):
        if chunk.content:
            pieces.append(str(chunk.content))
            emit(runtime, "token", stage, text=pieces[-1])
    text = "".join(pieces)
    task, streamed = _STREAMED.get()
    _STREAMED.set((_task(), (streamed if task == _task() else "") + text))
    return text


@dataclass
class Parsed:
    """Parsed values (one per prompt) and how many fell back after the retries."""

    values: list[Any]
    fallbacks: int


def generate_parsed(
    llm: Any,
    prompts: Sequence[str],
    parse: Callable[[str], T | None],
    *,
    fallback: Callable[[str], T] | T,
    retries: int = 1,
    retry_temperature: float = 0.7,
    **generate_kwargs: Any,
) -> Parsed:
    """Generate, parse, re-ask only the unparsed prompts (sampling) up to ``retries`` times, then fall back.

    ``fallback`` is a value or a function of the last raw output.
    """
    values: list[Any] = [None] * len(prompts)
    raw: list[str] = [""] * len(prompts)
    todo = list(range(len(prompts)))
    for attempt in range(retries + 1):
        if not todo:
            break
        kwargs = dict(generate_kwargs)
        if attempt:
            kwargs["temperature"] = max(retry_temperature, kwargs.get("temperature", 0.0))
        outputs = llm.generate([prompts[i] for i in todo], **kwargs)
        for i, out in zip(todo, outputs, strict=True):
            raw[i] = out[0] if out else ""
            values[i] = parse(raw[i])
        todo = [i for i in todo if values[i] is None]
    for i in todo:
        values[i] = fallback(raw[i]) if callable(fallback) else fallback
    return Parsed(values, len(todo))


# --------------------------------------------------------------------------- shared nodes
@traced
def retrieve(state: RAGState, runtime: Runtime[C]) -> RAGUpdate:
    """Top-k passages for the question (dense, BM25 or hybrid, as the context says)."""
    return top_k(state, runtime, context(runtime).retrieval)


def top_k(state: RAGState, runtime: Runtime[C], mode: Mode) -> RAGUpdate:
    """The ``retrieve`` update with the top-k passages by ``mode``."""
    ctx = context(runtime)
    docs = store_of(ctx).retrieve(question_of(state), ctx.k, mode=mode, ids=ctx.ids)
    emit_evidence(runtime, "retrieve", docs)
    return {"documents": docs}


@traced
def answer(state: RAGState, runtime: Runtime[C]) -> RAGUpdate:
    """Short answer from the top-k ``documents`` (closed book when there are none), streamed token by token.

    Computed ``exact``: a routed method that keeps standard RAG's answer (nothing conflicts) gives the
    very answer ``standard_rag`` gives, whatever the backend's cache held from earlier questions (a cached
    prefix changes llama.cpp's arithmetic; measured in research/notebook.md, "the test half again, with
    standard RAG's reading computed exact").
    """
    ctx = context(runtime)
    question, llm = question_of(state), llm_of(ctx)
    used = fit(
        llm,
        list(state.get("documents") or [])[: ctx.k],
        lambda docs: answer_prompt(question, docs),
        reply_tokens=ctx.max_new_tokens,
    )
    prompt = answer_prompt(question, used)
    text = stream_text(
        runtime, llm, prompt, stage="answer", max_new_tokens=ctx.max_new_tokens, stop=ANSWER_STOP, exact=True
    )
    final = clean_answer(text)
    emit(runtime, "answer", "answer", answer=final)
    return {"answer": final, "documents": used}


def answer_reranked(state: RAGState, runtime: Runtime[C]) -> RAGUpdate:
    """:func:`answer` from the passages a method has reordered or chosen (MoI's utility order, CIS's top-k).

    It is its own node, so the trace names the step.
    """
    return answer(state, runtime)
