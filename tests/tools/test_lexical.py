"""The shared BM25 index: rank_bm25's scores, and one index built once for several processes."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from causalrag.tools.lexical import LexicalIndex, tokenize
from causalrag.tools.store import Passage, Store

QUESTIONS = ["Who played the Joker in The Dark Knight?", "the the of Paris zzznowhere", "In which city was the author born?"]


@pytest.fixture(scope="module")
def texts(demo_passages):
    return [f"{p.title} {p.text}" for p in demo_passages]


def test_scores_are_rank_bm25s_for_the_collection_and_for_a_pool(demo_passages, texts):
    index = LexicalIndex.build([p.id for p in demo_passages], texts)
    pool = np.array([3, 40, 41, 7, 150, 99, 12])
    for rows, reference in ((None, BM25Okapi([tokenize(t) for t in texts])), (pool, BM25Okapi([tokenize(texts[i]) for i in pool]))):
        for q in QUESTIONS:
            ours, theirs = index.scores(q, rows), np.asarray(reference.get_scores(tokenize(q)))
            assert np.allclose(ours, theirs, rtol=0, atol=1e-9)
            assert list(np.argsort(-ours, kind="stable")[:10]) == list(np.argsort(-theirs, kind="stable")[:10])


def test_save_and_load_give_the_same_index(demo_passages, texts, tmp_path):
    index = LexicalIndex.build([p.id for p in demo_passages], texts)
    index.save(tmp_path / "ix")
    loaded = LexicalIndex.load(tmp_path / "ix")
    assert list(loaded.ids) == list(index.ids) and np.array_equal(loaded.scores(QUESTIONS[0]), index.scores(QUESTIONS[0]))


SCRIPT = """
import sys
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.tools.store import Passage, Store
store = Store("zoo", path=sys.argv[1], embeddings=DeterministicFakeEmbedding(size=8))
if sys.argv[2] == "add":
    store.add([Passage(f"Animal {i}", f"The animal number {i} lives in the zoo.") for i in range(50)])
    store.add([Passage("Okapi", "The okapi is a giraffid native to the Congo.")])
print("|".join(d.metadata["title"] for d in store.retrieve("Where does the okapi live?", 3, mode="bm25")))
"""


def test_two_processes_share_one_index_and_see_each_others_passages(tmp_path, monkeypatch):
    """Process A adds passages and builds the index; this process reads it without reading the collection;
    a passage this process adds is what process A's next search finds."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    run = lambda mode: subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), mode], check=True, capture_output=True, text=True, timeout=300).stdout.strip().split("|")  # noqa: E731
    assert run("add")[0] == "Okapi"
    store = Store("zoo", path=tmp_path, embeddings=DeterministicFakeEmbedding(size=8))
    monkeypatch.setattr(Store, "_lexical_texts", lambda self: pytest.fail("the index was rebuilt instead of shared"))
    assert store.retrieve("Where does the okapi live?", 1, mode="bm25")[0].metadata["title"] == "Okapi"
    monkeypatch.undo()
    store.add([Passage("Okapi reserve", "The Okapi Wildlife Reserve: where the okapi lives, in the Ituri forest.")])
    assert "Okapi reserve" in run("read")
