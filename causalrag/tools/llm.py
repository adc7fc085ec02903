"""The LLM factory: which backend serves ``--backend`` / ``CAUSALRAG_BACKEND``, and the process-wide model.

Backends are peers in :mod:`causalrag.tools.backends` (transformers, llama.cpp, OpenAI-compatible
servers, LangChain chat models), each behind the :class:`LLM` protocol of
:mod:`causalrag.tools.backends.base`, re-exported here for type hints, with the hardware checks that pick
a backend (:func:`pick_device`, :func:`cpu_has_bf16`). This module sits on top:
it imports a backend only when :func:`load_llm` needs it, and no backend imports it.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache

from causalrag.config import settings
from causalrag.errors import UnknownBackendError
from causalrag.tools.backends.base import LLM, cpu_has_bf16, pick_device

__all__ = ["BACKENDS", "LLM", "choose_backend", "cpu_has_bf16", "default_llm", "load_llm", "pick_device"]

BACKENDS = ("auto", "transformers", "llamacpp", "openai")


def choose_backend(backend: str | None = None, model: str | None = None, device: str | None = None) -> str:
    """The backend named by ``--backend`` / ``CAUSALRAG_BACKEND``.

    ``auto``: llama.cpp on a CPU when ``causalrag[llamacpp]`` is installed and the model is a GGUF
    file (the bundled one is) — 4–7× faster there (``benchmarks/backends.py``); transformers
    otherwise (CUDA/MPS keep transformers, with bf16 on CUDA).
    """
    name = (backend or settings().backend).lower()
    if name not in BACKENDS:
        raise UnknownBackendError(name, list(BACKENDS))
    if name != "auto":
        return name
    spec = model or settings().model
    gguf = spec is None or str(spec).endswith(".gguf")
    installed = importlib.util.find_spec("llama_cpp") is not None
    return "llamacpp" if gguf and installed and pick_device(device or settings().device) == "cpu" else "transformers"


def load_llm(model: str | None = None, device: str | None = None, backend: str | None = None) -> LLM:
    """Load a model once per process (per model/device/backend and ``CAUSALRAG_DTYPE``).

    Every graph and node shares it.

    ``openai`` talks to ``CAUSALRAG_OPENAI_URL``; its model is ``CAUSALRAG_OPENAI_MODEL``, else
    ``model``, else the server's first model.
    """
    return _load(model, device, backend, settings().dtype)


@lru_cache(maxsize=4)
def _load(model: str | None, device: str | None, backend: str | None, dtype: str) -> LLM:
    chosen = choose_backend(backend, model, device)
    if chosen == "llamacpp":
        from causalrag.tools.backends.llamacpp import LlamaCppLLM

        return LlamaCppLLM(model)
    if chosen == "openai":
        from causalrag.tools.backends.openai import OpenAILLM

        return OpenAILLM.from_settings(model)
    from causalrag.tools.backends.transformers import TransformersLLM

    return TransformersLLM(model, device=device, dtype=dtype)


def default_llm() -> LLM:
    """The model named by ``CAUSALRAG_MODEL`` (or the bundled one) on ``CAUSALRAG_BACKEND``, loaded once per process."""
    s = settings()
    return load_llm(s.model, s.device, s.backend)
