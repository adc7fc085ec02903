"""LangChain interop, both ways.

* :class:`LLMChatModel` — a LangChain ``BaseChatModel`` view of a causalrag LLM, so the local model
  plugs into LangChain code and streams tokens through ``stream_mode="messages"``;
* :class:`ReplyChatModel` — a chat model whose reply is given: how an answer chosen by score (not
  generated token by token) reaches ``stream_mode="messages"`` as any chat model's reply would;
* :class:`ChatModelLLM` — any LangChain chat model (OpenAI-compatible vLLM/TGI server, Ollama, …)
  as a causalrag LLM for *generation*, with retries on transient failures. Scoring needs token
  log-probabilities, which a chat interface does not give: those calls raise a clear error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from causalrag.errors import ScoringUnavailableError
from causalrag.tools.backends.base import Choice, estimate_tokens, truncate_at_stop
from causalrag.tools.usage import Usage, record


def takes(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` accepts keyword ``name``.

    A user's backend written before ``LLM.stream`` had ``exact`` still streams (it promises nothing about
    exactness).
    """
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def messages_to_prompt(messages: Sequence[BaseMessage]) -> str:
    """One prompt text from a conversation (the LLM tool applies the model's chat template itself)."""
    return "\n\n".join(str(m.content) for m in messages)


class LLMChatModel(BaseChatModel):
    """A causalrag LLM seen as a LangChain chat model."""

    llm: Any
    max_new_tokens: int = 256
    temperature: float = 0.0
    stop: list[str] | None = None
    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    def _llm_type(self) -> str:
        return "causalrag"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = self.llm.generate(
            [messages_to_prompt(messages)],
            max_new_tokens=kwargs.get("max_new_tokens", self.max_new_tokens),
            temperature=kwargs.get("temperature", self.temperature),
            stop=stop or self.stop,
        )[0][0]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        pieces = self.llm.stream(
            messages_to_prompt(messages),
            max_new_tokens=kwargs.get("max_new_tokens", self.max_new_tokens),
            stop=stop or self.stop,
            **({"exact": True} if kwargs.get("exact") and takes(self.llm.stream, "exact") else {}),
        )
        said = False
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            said = True
            yield chunk
        if not said:  # an empty completion is an empty reply, not an error (LangChain refuses a stream of no chunks)
            yield ChatGenerationChunk(message=AIMessageChunk(content=""))


class ReplyChatModel(BaseChatModel):
    """Replies ``reply``, as one message chunk when streamed."""

    reply: str

    @property
    def _llm_type(self) -> str:
        return "causalrag-reply"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=self.reply))
        if run_manager:
            run_manager.on_llm_new_token(self.reply, chunk=chunk)
        yield chunk


_TRANSIENT_NAMES = ("Timeout", "RateLimit", "APIConnection", "ServiceUnavailable", "InternalServer", "Connect")


def is_transient(exc: BaseException) -> bool:
    """Network hiccups, timeouts, rate limits and 5xx errors from remote backends are worth a retry."""
    return isinstance(exc, (ConnectionError, TimeoutError)) or any(n in type(exc).__name__ for n in _TRANSIENT_NAMES)


class ChatModelLLM:
    """Generation through any LangChain chat model; sampling settings are the chat model's own.

    ``n`` samples are ``n`` calls (batched with ``max_concurrency``); ``temperature`` > 0 asks for
    them, and the chat model's configured temperature applies.
    """

    def __init__(
        self,
        chat_model: BaseChatModel,
        *,
        name: str | None = None,
        max_concurrency: int = 4,
        attempts: int = 4,
        context_window: int = 8192,
    ):
        self.chat_model = chat_model
        self.context_window = context_window
        """The chat model's context in tokens (a chat interface does not report it)."""
        self.name = name or getattr(chat_model, "model_name", None) or type(chat_model).__name__
        self.usage = Usage()
        self.max_concurrency = max_concurrency
        self._batch = retry(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.5, max=8),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )(self._batch_once)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Estimated from the text's length (a chat interface has no tokenizer to ask)."""
        return estimate_tokens(texts)

    def _batch_once(self, prompts: list[str], stop: Sequence[str] | None) -> list[str]:
        model = self.chat_model.bind(stop=list(stop)) if stop else self.chat_model
        replies = model.batch([[HumanMessage(p)] for p in prompts], config={"max_concurrency": self.max_concurrency})
        new = sum((getattr(r, "usage_metadata", None) or {}).get("output_tokens", 0) for r in replies)
        record(self.usage, Usage(calls=len(prompts), new_tokens=new))
        return [truncate_at_stop(str(r.content), stop) for r in replies]

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        n: int = 1,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        """``n`` replies per prompt: one chat call each when sampling, one shared reply when greedy.

        ``max_new_tokens`` and ``seed`` are not passed on (the chat model's own settings apply), and
        ``temperature`` only says whether to sample.
        """
        calls = n if temperature > 0 else 1
        texts = self._batch([p for p in prompts for _ in range(calls)], stop)
        grouped = [texts[i * calls : (i + 1) * calls] for i in range(len(prompts))]
        return [g * n if calls == 1 else g for g in grouped]

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        """One prompt's reply, piece by piece as the chat model streams it (``exact`` promises nothing here)."""
        model = self.chat_model.bind(stop=list(stop)) if stop else self.chat_model
        text = ""
        for chunk in model.stream([HumanMessage(prompt)]):
            piece = str(chunk.content)
            cut = truncate_at_stop(text + piece, stop)
            if len(cut) > len(text):
                yield cut[len(text) :]
            if len(cut) < len(text + piece):
                break
            text = cut
        record(self.usage, Usage(calls=1))

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: str = "sum") -> list[float]:
        """Not available: a chat interface gives no token log-probabilities."""
        raise ScoringUnavailableError(f"LangChain chat model ({self.name})", "token log-probabilities")

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """Not available: a chat interface gives no next-token probabilities."""
        raise ScoringUnavailableError(f"LangChain chat model ({self.name})", "yes/no probabilities")

    def choose(self, prompts: Sequence[str], options: Sequence[Sequence[str]], **_: Any) -> list[Choice]:
        """Not available: scored choices need token log-probabilities."""
        raise ScoringUnavailableError(f"LangChain chat model ({self.name})", "scored choices among options")
