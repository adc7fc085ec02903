"""The shared BM25 index (bm25s): BM25Okapi's scores, one index built once for several processes, and index
file names that are hashes whatever the collection is called."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from causalrag.tools.lexical import LexicalIndex, index_name, tokenize
from causalrag.tools.store import Passage, Store

QUESTIONS = [
    "Who played the Joker in The Dark Knight?",
    "the the of Paris zzznowhere",
    "In which city was the author born?",
]


@pytest.fixture(scope="module")
def texts(demo_passages):
    return [f"{p.title} {p.text}" for p in demo_passages]


def test_scores_are_bm25okapi_for_the_collection_and_for_a_pool(demo_passages, texts):
    """rank_bm25's BM25Okapi with ``epsilon=0``: a term in more than half the passages adds nothing."""
    pool = [3, 40, 41, 7, 150, 99, 12]
    for chosen in (range(len(texts)), pool):
        index = LexicalIndex.build([demo_passages[i].id for i in chosen], [texts[i] for i in chosen])
        reference = BM25Okapi([tokenize(texts[i]) for i in chosen], k1=1.5, b=0.75, epsilon=0)
        for q in QUESTIONS:
            ours, theirs = index.scores(q), np.asarray(reference.get_scores(tokenize(q)))
            assert np.allclose(ours, theirs, rtol=1e-5, atol=1e-6)  # bm25s keeps float32 scores
            assert list(np.argsort(-ours, kind="stable")[:5]) == list(np.argsort(-theirs, kind="stable")[:5])


def test_only_terms_in_most_passages_score_apart_from_rank_bm25s_default(demo_passages, texts):
    index = LexicalIndex.build([p.id for p in demo_passages], texts)
    default = BM25Okapi([tokenize(t) for t in texts])  # epsilon=0.25: a negative idf becomes 0.25 x the mean idf
    rare = index.scores("Joker Ledger Nolan"), default.get_scores(["joker", "ledger", "nolan"])
    assert np.allclose(*rare, rtol=1e-5, atol=1e-6)
    common = [w for w in ("the", "of", "in") if sum(w in tokenize(t) for t in texts) > len(texts) / 2]
    assert common and not index.scores(" ".join(common)).any() and np.asarray(default.get_scores(common)).any()


def test_passages_without_a_word_score_zero():
    index = LexicalIndex.build(["a", "b"], ["!!!", "…"])
    assert list(index.scores("anything at all")) == [0.0, 0.0]


def test_save_and_load_give_the_same_index(demo_passages, texts, tmp_path):
    index = LexicalIndex.build([p.id for p in demo_passages], texts)
    index.save(tmp_path / "ix")
    loaded = LexicalIndex.load(tmp_path / "ix")
    assert isinstance(loaded.ids, np.memmap) and isinstance(loaded.bm25.scores["data"], np.memmap)  # shared pages
    assert list(loaded.ids) == list(index.ids)
    assert np.array_equal(loaded.scores(QUESTIONS[0]), index.scores(QUESTIONS[0]))


def test_a_long_collection_name_ingests_and_searches_and_names_no_file(tmp_path):
    """Issue 29: a 300-character name (the check allows 512) made ingest fail with 'File name too long'."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    name = "c" + "ollection-name." * 10 + "x" * 148 + "9"
    assert len(name) == 300
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "okapi.txt").write_text("The okapi is a giraffid native to the Congo.", encoding="utf-8")
    (docs / "quokka.txt").write_text("The quokka lives on Rottnest Island.", encoding="utf-8")
    (docs / "axolotl.txt").write_text("The axolotl is a salamander of Lake Xochimilco.", encoding="utf-8")
    store = Store(name, path=tmp_path / "chroma", embeddings=DeterministicFakeEmbedding(size=8))
    assert store.ingest([docs], progress=False).added == 3
    assert store.retrieve("Where does the quokka live?", 1, mode="bm25")[0].page_content.startswith("The quokka")
    assert store.retrieve("okapi", 1, mode="hybrid")[0].page_content.startswith("The okapi")
    names = [p.name for p in (tmp_path / "chroma").rglob("*")]
    assert index_name(name) in names and not any("ollection-name" in n for n in names)


def test_an_index_of_the_earlier_format_is_rebuilt_and_removed(tmp_path):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    store = Store("zoo", path=tmp_path, embeddings=DeterministicFakeEmbedding(size=8))
    store.add([Passage("Okapi", "The okapi is a giraffid native to the Congo."),
               Passage("Quokka", "The quokka lives on Rottnest."), Passage("Axolotl", "The axolotl is a salamander.")])
    legacy = tmp_path / "causalrag-lexical" / "zoo"  # where the hand-written index kept its .npy files
    legacy.mkdir(parents=True)
    (legacy / "ids.npy").write_bytes(b"not an index of this version")
    assert store.retrieve("Where does the okapi live?", 1, mode="bm25")[0].metadata["title"] == "Okapi"
    assert not legacy.exists() and (tmp_path / "causalrag-lexical" / index_name("zoo") / "ids.npy").exists()


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

    def run(mode: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(tmp_path), mode], check=True, capture_output=True, text=True, timeout=300
        )
        return done.stdout.strip().split("|")

    assert run("add")[0] == "Okapi"
    store = Store("zoo", path=tmp_path, embeddings=DeterministicFakeEmbedding(size=8))
    monkeypatch.setattr(Store, "_lexical_texts", lambda self: pytest.fail("the index was rebuilt instead of shared"))
    assert store.retrieve("Where does the okapi live?", 1, mode="bm25")[0].metadata["title"] == "Okapi"
    monkeypatch.undo()
    store.add([Passage("Okapi reserve", "The Okapi Wildlife Reserve: where the okapi lives, in the Ituri forest.")])
    assert "Okapi reserve" in run("read")
