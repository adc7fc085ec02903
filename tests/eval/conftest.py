import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding


@pytest.fixture
def fake_embeddings():
    """Hash-seeded random vectors: real Chroma plumbing without loading the embedding model."""
    return DeterministicFakeEmbedding(size=32)
