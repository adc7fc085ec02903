"""Settings read from ``CAUSALRAG_*`` environment variables, with defaults that work offline.

| variable | meaning | default |
| --- | --- | --- |
| CAUSALRAG_HOME | folder with Chroma collections, BM25/score caches and runs | ``~/.causalrag`` |
| CAUSALRAG_CACHE | model cache (plain copies of de-quantized GGUF models) | ``~/.cache/causalrag`` |
| CAUSALRAG_MODEL | local model folder, ``.gguf`` file or hub id | bundled Gemma 3 270M |
| CAUSALRAG_DEVICE | ``cuda``, ``mps`` or ``cpu`` | best available |
| CAUSALRAG_DTYPE | transformers weights: ``auto``, ``float32``, ``bfloat16``, ``float16`` | ``auto`` (CUDA: bf16) |
| CAUSALRAG_EMBEDDINGS | sentence-transformers model folder | bundled all-MiniLM-L6-v2 |
| CAUSALRAG_CHROMA_URL | ``http://host:port`` of a Chroma server (client/server mode) | embedded PersistentClient |
| CAUSALRAG_CHROMA_TENANT, _DATABASE | tenant, database on that server (existing) | ``default_tenant``, ``_database`` |
| CAUSALRAG_CHROMA_TOKEN | sent to the server as ``Authorization: Bearer TOKEN`` (an auth proxy) | none |
| CAUSALRAG_CHROMA_HEADERS | JSON object of extra HTTP headers (Chroma Cloud: ``{"x-chroma-token": "..."}``) | none |
| CAUSALRAG_CHECKPOINT_URL | ``postgresql://...``: graph checkpoints (``--thread``) in PostgreSQL | SQLite in the home |
| CAUSALRAG_BACKEND | LLM backend: ``auto``, ``transformers``, ``llamacpp`` or ``openai`` | ``auto`` |
| CAUSALRAG_SHORTLIST | ``1``: scored tokens normalized over a shortlist (``tools.shortlist``) | ``0``: full softmax |
| CAUSALRAG_OPENAI_URL | base URL of an OpenAI-compatible server (vLLM, llama-cpp-python) | none |
| CAUSALRAG_OPENAI_MODEL | model name on that server | the server's first model |
| CAUSALRAG_OPENAI_API | ``chat`` (chat/completions) or ``completions`` (plain text) for generation | ``chat`` |
| CAUSALRAG_OPENAI_KEY | API key sent as a bearer token, when the server wants one | none |
| CAUSALRAG_OPENAI_CHAT_TEMPLATE | Jinja chat-template file of the served model (scored choices on chat) | none |
| CAUSALRAG_OPENAI_CONTEXT | context window of the served model, in tokens (prompts are fitted to it) | 8192 |
| CAUSALRAG_OPENAI_CONCURRENCY | requests one client keeps in flight (``eval --concurrency N`` needs N or more) | 4 |
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from causalrag.errors import CausalRAGError

DEMO_COLLECTION = "demo"


def _env_path(name: str, default: str) -> Path:
    return Path(os.environ.get(name) or default).expanduser()


def _env_count(name: str, default: int) -> int:
    text = os.environ.get(name) or str(default)
    if not text.strip().isdigit() or int(text) < 1:
        raise CausalRAGError(
            f"{name}={text!r} is not a positive whole number: set it to one, e.g. {default}, or unset it."
        )
    return int(text)


def _headers(name: str, text: str | None) -> dict[str, str]:
    """The JSON object of HTTP header names and values in ``text`` (the variable ``name``)."""
    text = text or "{}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise CausalRAGError(
            f"{name} is not a JSON object of header names and values: "
            'set it like {"x-chroma-token": "..."}, or unset it.'
        )
    return value


@dataclass(frozen=True)
class Settings:
    """One reading of the ``CAUSALRAG_*`` environment variables, each field with its default."""

    home: Path = field(default_factory=lambda: _env_path("CAUSALRAG_HOME", "~/.causalrag"))
    cache: Path = field(default_factory=lambda: _env_path("CAUSALRAG_CACHE", "~/.cache/causalrag"))
    model: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_MODEL") or None)
    device: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_DEVICE") or None)
    dtype: str = field(default_factory=lambda: (os.environ.get("CAUSALRAG_DTYPE") or "auto").lower())
    embeddings: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_EMBEDDINGS") or None)
    chroma_url: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_CHROMA_URL") or None)
    chroma_tenant: str = field(default_factory=lambda: os.environ.get("CAUSALRAG_CHROMA_TENANT") or "default_tenant")
    chroma_database: str = field(
        default_factory=lambda: os.environ.get("CAUSALRAG_CHROMA_DATABASE") or "default_database"
    )
    chroma_token: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_CHROMA_TOKEN") or None)
    chroma_headers_json: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_CHROMA_HEADERS") or None)
    checkpoint_url: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_CHECKPOINT_URL") or None)
    policy: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_POLICY") or None)
    backend: str = field(default_factory=lambda: (os.environ.get("CAUSALRAG_BACKEND") or "auto").lower())
    openai_url: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_OPENAI_URL") or None)
    openai_model: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_OPENAI_MODEL") or None)
    openai_api: str = field(default_factory=lambda: (os.environ.get("CAUSALRAG_OPENAI_API") or "chat").lower())
    openai_key: str | None = field(default_factory=lambda: os.environ.get("CAUSALRAG_OPENAI_KEY") or None)
    openai_chat_template: str | None = field(
        default_factory=lambda: os.environ.get("CAUSALRAG_OPENAI_CHAT_TEMPLATE") or None
    )
    openai_context: int = field(default_factory=lambda: _env_count("CAUSALRAG_OPENAI_CONTEXT", 8192))
    openai_concurrency: int = field(default_factory=lambda: _env_count("CAUSALRAG_OPENAI_CONCURRENCY", 4))

    @property
    def chroma_dir(self) -> Path:
        """The embedded Chroma store's folder, ``chroma`` in the home."""
        return self.home / "chroma"

    @property
    def chroma_headers(self) -> dict[str, str]:
        """Headers sent to the Chroma server: the token as a bearer token, then ``CAUSALRAG_CHROMA_HEADERS``."""
        token = {"Authorization": f"Bearer {self.chroma_token}"} if self.chroma_token else {}
        return token | _headers("CAUSALRAG_CHROMA_HEADERS", self.chroma_headers_json)

    @property
    def model_cache(self) -> Path:
        """The folder of cached model copies, ``models`` in the cache."""
        return self.cache / "models"


def settings() -> Settings:
    """Current settings (read from the environment on every call, so tests can monkeypatch it)."""
    return Settings()
