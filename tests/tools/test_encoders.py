"""``embed`` keeps recent vectors per embeddings object: a passage embedded by one node is not encoded again by
the next."""

from __future__ import annotations

import numpy as np
from langchain_core.embeddings import DeterministicFakeEmbedding

from causalrag.tools import encoders


class Counting(DeterministicFakeEmbedding):
    """Fake embeddings that remember every batch they were asked to encode."""

    batches: list = []

    def embed_documents(self, texts):
        self.batches.append(list(texts))
        return super().embed_documents(texts)


def test_texts_seen_lately_are_not_encoded_again():
    model = Counting(size=16, batches=[])
    first = encoders.embed(["a river", "a city", "a river"], model)
    second = encoders.embed(["a city", "a mountain", "a river"], model)
    assert model.batches == [["a river", "a city"], ["a mountain"]]  # duplicates within a call go once too
    assert np.array_equal(second[[0, 2]], first[[1, 0]])
    assert np.allclose(np.linalg.norm(second, axis=1), 1.0)


def test_the_memo_is_bounded_and_per_model(monkeypatch):
    monkeypatch.setattr(encoders, "MEMO_SIZE", 2)
    one, other = Counting(size=16, batches=[]), Counting(size=8, batches=[])
    encoders.embed(["x", "y", "z"], one)
    encoders.embed(["x"], one)  # pushed out by y and z
    assert one.batches == [["x", "y", "z"], ["x"]]
    assert encoders.embed(["x"], other).shape == (1, 8)  # another model's vectors, not the first one's
    assert other.batches == [["x"]]
