"""OpenAI-compatible inference servers (vLLM, llama-cpp-python's server, ...) behind the LLM interface.

* generation: ``chat/completions`` (``api="chat"``, for instruct models: the server applies the
  chat template) or ``completions`` (``api="completions"``, plain text: base models, and the same
  prompts the local backends see);
* ``logprob``: ``completions`` with ``echo=true`` and ``logprobs``, summing the echoed prompt
  tokens that start inside the continuation (by character offset). An empty prefix loses its first
  token: the API reports no log-prob for the first prompt token;
* ``yes_probability``: the top-20 next-token log-probs after the prompt (``chat`` or
  ``completions`` as for generation); yes/no variants missing from the top 20 count as zero, and
  0.5 when both are missing.

A server that lacks a capability (llama.cpp's own ``llama-server`` and TGI refuse ``echo``; OpenAI's
own API gives no prompt log-probs) gives :class:`~causalrag.errors.ScoringUnavailableError` naming it;
llama-cpp-python's server scores with ``--logits_all true``, and needs ``--interrupt_requests false``
for requests in flight together (by default a new request cuts a running stream short). Requests run
``max_concurrency`` at a time from a thread pool, each retried with exponential back-off on timeouts, connection errors,
429 and 5xx answers. Usage is counted from the servers' ``usage`` fields in the calling thread, so
:func:`~causalrag.tools.usage.metered` blocks see it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import httpx
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from causalrag.config import settings
from causalrag.errors import ScoringUnavailableError, ServerRequestError, ServerUnreachableError
from causalrag.tools.backends.base import (
    NO_WORDS,
    YES_WORDS,
    Judge,
    Reduce,
    estimate_tokens,
    reduce_logprobs,
    regroup,
    truncate_at_stop,
)
from causalrag.tools.usage import Usage, record

T = TypeVar("T")
R = TypeVar("R")
Api = Literal["chat", "completions"]
"""The server API a client speaks: chat messages, or plain completions (which can score replies)."""

RETRY_STATUS = {408, 429, 500, 502, 503, 504}
ECHO = "prompt log-probabilities (completions with echo=true and logprobs)"
NEXT = "next-token log-probabilities (logprobs with top alternatives)"


def is_transient(exc: BaseException) -> bool:
    """Timeouts, dropped connections, rate limits and 5xx answers are worth another try."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code in RETRY_STATUS
    return isinstance(exc, httpx.TransportError)


class OpenAILLM(Judge):
    """A model on an OpenAI-compatible server, by base URL (``http://host:port/v1``) and model name.

    ``sampling`` adds server-specific fields to every generation request, e.g.
    ``{"repeat_penalty": 1.0}`` for llama.cpp's server (its default 1.1 changes greedy answers).
    ``transport`` replaces httpx's network transport (proxies, tests).
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api: Api = "chat",
        api_key: str | None = None,
        timeout: float = 120.0,
        max_concurrency: int = 4,
        attempts: int = 4,
        sampling: dict[str, Any] | None = None,
        chat_template: str | None = None,
        transport: httpx.BaseTransport | None = None,
        context_window: int = 8192,
    ) -> None:
        if api not in ("chat", "completions"):
            raise ValueError(f"api must be 'chat' or 'completions', not {api!r} (CAUSALRAG_OPENAI_API).")
        self.base_url = base_url.rstrip("/")
        self.api = api
        self.sampling = dict(sampling or {})
        self.has_chat_template = api == "chat"
        self.chat_template = chat_template
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.base_url + "/", headers=headers, timeout=timeout, transport=transport)
        self.max_concurrency = max_concurrency
        """Requests in flight at once, from every thread that uses this client."""
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="openai-llm")
        self._post = retry(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.5, max=8),
            retry=retry_if_exception(is_transient),
            reraise=True,
        )(self._post_once)
        self.name = model or self._first_model()
        self.usage = Usage()
        self.context_window = context_window
        """The served model's context (``CAUSALRAG_OPENAI_CONTEXT``): the API does not report it."""

    @classmethod
    def from_settings(cls, model: str | None = None) -> OpenAILLM:
        """From ``CAUSALRAG_OPENAI_URL`` / ``_MODEL`` (else ``model``) / ``_API`` / ``_KEY`` / ``_CONCURRENCY``."""
        s = settings()
        if not s.openai_url:
            raise ServerUnreachableError(None)
        template = (
            Path(s.openai_chat_template).expanduser().read_text(encoding="utf-8") if s.openai_chat_template else None
        )
        return cls(
            s.openai_url,
            s.openai_model or model,
            api=cast(Api, s.openai_api),  # __init__ rejects any other value with a clear error
            api_key=s.openai_key,
            chat_template=template,
            context_window=s.openai_context,
            max_concurrency=s.openai_concurrency,
        )

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Estimated from the text's length: the OpenAI API has no tokenize call, and the estimate errs long."""
        return estimate_tokens(texts)

    @property
    def can_choose(self) -> bool:
        """Scored choices need the text the model sees: the completions API, or the chat template."""
        return self.api == "completions" or bool(self.chat_template)

    def format(self, prompt: str) -> str:
        """The text the server's model sees for ``prompt``, for scoring.

        On the completions API the prompt as it is; on the chat API the prompt rendered with the model's
        chat template (``chat_template``).
        """
        if self.api == "completions":
            return prompt
        if not self.chat_template:
            raise ScoringUnavailableError(
                f"openai ({self.base_url}, model {self.name}, chat API)",
                "scored choices without the model's chat template (set CAUSALRAG_OPENAI_CHAT_TEMPLATE to its Jinja "
                "file, or use CAUSALRAG_OPENAI_API=completions)",
            )
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(self.chat_template)
        return template.render(
            messages=[{"role": "user", "content": prompt}], add_generation_prompt=True, bos_token="", eos_token=""
        )

    # ---- HTTP
    def _first_model(self) -> str:
        """The server's first model; also checks, once and without retries, that the server answers."""
        try:
            response = self._client.get("models")
            response.raise_for_status()
            first: str = response.json()["data"][0]["id"]
            return first
        except httpx.TransportError as exc:
            raise ServerUnreachableError(self.base_url, type(exc).__name__) from exc
        except (httpx.HTTPStatusError, ValueError, KeyError, IndexError) as exc:
            raise ServerUnreachableError(self.base_url, f"no model list at {self.base_url}/models") from exc

    def _post_once(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One POST of ``payload`` (plus the model's name) to ``path``; the reply's JSON body."""
        response = self._client.post(path, json={"model": self.name, **payload})
        response.raise_for_status()
        reply: dict[str, Any] = response.json()
        return reply

    def _request(self, path: str, payload: dict[str, Any], *, capability: str | None = None) -> dict[str, Any]:
        """POST with retries; a refused request names the missing ``capability`` when scoring."""
        try:
            return self._post(path, payload)
        except httpx.TransportError as exc:
            raise ServerUnreachableError(self.base_url, type(exc).__name__) from exc
        except httpx.HTTPStatusError as exc:
            if capability:
                raise ScoringUnavailableError(f"openai ({self.base_url}, model {self.name})", capability) from exc
            raise ServerRequestError(self.base_url, exc.response.status_code, exc.response.text) from exc

    def _map(self, fn: Callable[[T], R], jobs: Sequence[T]) -> list[R]:
        return list(self._pool.map(fn, jobs))

    def _record(self, replies: Sequence[dict[str, Any]], calls: int) -> None:
        used = [r.get("usage") or {} for r in replies]
        record(
            self.usage,
            Usage(
                calls=calls,
                prompt_tokens=sum(u.get("prompt_tokens", 0) for u in used),
                new_tokens=sum(u.get("completion_tokens", 0) for u in used),
                forward_passes=len(replies),
            ),
        )

    # ---- generation
    def _payload(
        self, prompt: str, *, max_new_tokens: int, temperature: float, stop: Sequence[str] | None, seed: int | None
    ) -> tuple[str, dict[str, Any]]:
        body: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": temperature, **self.sampling}
        if temperature > 0:
            body["top_p"] = 1.0
        if stop:
            body["stop"] = list(stop)
        if seed is not None:
            body["seed"] = seed
        if self.api == "chat":
            return "chat/completions", {"messages": [{"role": "user", "content": prompt}], **body}
        return "completions", {"prompt": prompt, **body}

    def _text(self, reply: dict[str, Any]) -> str:
        choice = reply["choices"][0]
        return (choice.get("message") or {}).get("content") or "" if self.api == "chat" else choice.get("text") or ""

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
        """``n`` completions per prompt, one request each (``seed + k`` for the k-th sample)."""
        calls = n if temperature > 0 else 1
        jobs = [
            self._payload(
                p,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                stop=stop,
                seed=None if seed is None else seed + k,
            )
            for p in prompts
            for k in range(calls)
        ]
        replies = self._map(lambda job: self._request(*job), jobs)
        self._record(replies, len(prompts) * n)
        texts = [truncate_at_stop(self._text(r), stop) for r in replies]
        grouped = [texts[i * calls : (i + 1) * calls] for i in range(len(prompts))]
        return [g * n if calls == 1 else g for g in grouped]

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        """Greedy completion of one prompt, piece by piece from the server's event stream.

        ``exact`` is the server's business: its batching may or may not change the arithmetic.
        """
        path, payload = self._payload(prompt, max_new_tokens=max_new_tokens, temperature=0.0, stop=stop, seed=None)
        text = ""
        try:
            with self._client.stream("POST", path, json={"model": self.name, "stream": True, **payload}) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                        continue
                    choice = (json.loads(line[5:]).get("choices") or [{}])[0]
                    piece = (
                        (choice.get("delta") or {}).get("content") or ""
                        if self.api == "chat"
                        else choice.get("text") or ""
                    )
                    full = text + piece
                    cut = truncate_at_stop(full, stop)
                    if len(cut) > len(text):
                        yield cut[len(text) :]
                    text = cut
                    if len(cut) < len(full):  # a stop string appeared
                        break
        except httpx.TransportError as exc:
            raise ServerUnreachableError(self.base_url, type(exc).__name__) from exc
        except httpx.HTTPStatusError as exc:
            raise ServerRequestError(self.base_url, exc.response.status_code, "streaming refused") from exc
        record(self.usage, Usage(calls=1, forward_passes=1))

    # ---- scoring
    def _echo(self, job: tuple[str, str]) -> tuple[list[float], dict[str, Any]]:
        prefix, continuation = job
        if not continuation:
            return [], {}
        reply = self._request(
            "completions",
            {"prompt": prefix + continuation, "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 1},
            capability=ECHO,
        )
        logprobs = reply["choices"][0].get("logprobs") or {}
        offsets, values = logprobs.get("text_offset"), logprobs.get("token_logprobs")
        if not offsets or values is None:
            raise ScoringUnavailableError(f"openai ({self.base_url}, model {self.name})", ECHO)
        start, end = len(prefix), len(prefix) + len(continuation)
        # the server's two lists: a token without an offset (or a value) is not one of the continuation's
        return [float(v) for o, v in zip(offsets, values, strict=False) if start <= o < end and v is not None], reply

    def token_logprobs(self, prefixes: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """Per-token log-probs of each continuation, from the server's echoed prompt."""
        if len(prefixes) != len(continuations):
            raise ValueError("logprob needs one prefix per continuation.")
        results = self._map(self._echo, list(zip(prefixes, continuations, strict=True)))
        self._record([r for _, r in results if r], len(results))
        return [lps for lps, _ in results]

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum") -> list[float]:
        """Sum (or mean) of token log-probs of each continuation given its prefix; 0.0 for an empty one."""
        return reduce_logprobs(self.token_logprobs(prefixes, continuations), reduce)

    def option_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[list[list[float]]]:
        """Token log-probs of every option as the reply to its prompt: one echoed completion per option.

        The API has no shared prefix; the requests run ``max_concurrency`` at a time.
        """
        heads = [self.format(p) for p in prompts]
        jobs = [(h, self.reply_text(p, o)) for h, p, opts in zip(heads, prompts, options, strict=True) for o in opts]
        results = self._map(self._echo, jobs)
        self._record([r for _, r in results if r], len(prompts))
        return regroup([lps for lps, _ in results], [len(opts) for opts in options])

    def _top_next(self, prompt: str) -> tuple[dict[str, float], dict[str, Any]]:
        """The top-20 next tokens after ``prompt`` with their log-probs."""
        if self.api == "chat":
            payload = {"messages": [{"role": "user", "content": prompt}], "logprobs": True, "top_logprobs": 20}
            reply = self._request("chat/completions", {"max_tokens": 1, "temperature": 0.0, **payload}, capability=NEXT)
            content = (reply["choices"][0].get("logprobs") or {}).get("content") or []
            top = {t["token"]: t["logprob"] for t in content[0].get("top_logprobs", [])} if content else {}
        else:
            reply = self._request(
                "completions", {"prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": 20}, capability=NEXT
            )
            tops = (reply["choices"][0].get("logprobs") or {}).get("top_logprobs") or []
            top = dict(tops[0] or {}) if tops else {}
        if not top:
            raise ScoringUnavailableError(f"openai ({self.base_url}, model {self.name})", NEXT)
        return top, reply

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) over the yes/no variants among the top-20 next tokens."""
        results = self._map(self._top_next, list(prompts))
        self._record([r for _, r in results], len(results))
        probs = []
        for top, _ in results:
            yes = sum(math.exp(v) for k, v in top.items() if k in YES_WORDS)
            no = sum(math.exp(v) for k, v in top.items() if k in NO_WORDS)
            probs.append(yes / (yes + no) if yes + no > 0 else 0.5)
        return probs
