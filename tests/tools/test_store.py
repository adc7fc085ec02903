import json

import pytest

from causalrag.errors import CausalRAGError, CollectionNotFoundError, EmptyCollectionError
from causalrag.tools.store import Passage, Store, read_passages, split_words


@pytest.fixture
def corpus(tmp_path):
    zebra_facts = " ".join(f"Zebra fact number {i} is about Kenya." for i in range(40))
    (tmp_path / "zebras.txt").write_text(zebra_facts + "\n\nThey have stripes.", encoding="utf-8")
    (tmp_path / "notes.md").write_text("# Notes\nThe Eiffel Tower was completed in 1889.", encoding="utf-8")
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({"id": "x1", "title": "Canberra", "text": "Canberra is the capital of Australia."}) + "\n\n",
        encoding="utf-8",
    )
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (tmp_path / "ignored.csv").write_text("a,b", encoding="utf-8")
    return tmp_path


def test_split_words_keeps_about_100_words():
    chunks = split_words("word " * 250)
    assert [len(c.split()) for c in chunks] == [100, 100, 50]


def test_read_passages_skips_unreadable_files_and_keeps_the_rest(corpus):
    passages, report = read_passages([corpus, corpus / "missing.txt"])
    assert report.files == 3
    assert {r for _, r in report.skipped} == {"not UTF-8 text", "no such file or folder"}
    titles = {p.title for p in passages}
    assert {"zebras", "notes", "Canberra"} <= titles
    assert all(len(p.text.split()) <= 100 for p in passages)


def test_malformed_jsonl_is_reported(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"title": "no text"}\n', encoding="utf-8")
    _, report = read_passages([tmp_path])
    assert report.files == 0 and "line 1" in report.skipped[0][1]


def test_ingest_is_idempotent_on_disk(corpus, tmp_path):
    store = Store("idem-test", path=tmp_path / "chroma")
    first = store.ingest([corpus], progress=False)
    again = Store("idem-test", path=tmp_path / "chroma").ingest([corpus], progress=False)
    assert first.added == first.passages > 0
    assert again.added == 0
    assert store.count() == first.added


def test_passage_ids_are_content_hashes():
    assert Passage("T", "text").id == Passage("T", "text").id != Passage("T", "text2").id


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_retrieve_modes_find_the_answering_passage(memory_store, mode):
    docs = memory_store.retrieve("What is the capital city of Australia?", 3, mode=mode)
    assert len(docs) == 3
    assert "Canberra" in [d.metadata["title"] for d in docs]
    assert all(d.id and isinstance(d.metadata["score"], float) for d in docs)
    assert [d.metadata["score"] for d in docs] == sorted((d.metadata["score"] for d in docs), reverse=True)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_retrieve_restricted_to_ids(memory_store, mode):
    pool = memory_store.retrieve("Eiffel Tower", 2)
    ids = [d.id for d in pool] + [memory_store.retrieve("Jane Austen novel", 1)[0].id]
    docs = memory_store.retrieve("Who wrote Pride and Prejudice?", 5, mode=mode, ids=ids)
    assert {d.id for d in docs} <= set(ids) and len(docs) == 3
    assert memory_store.retrieve("Who wrote Pride and Prejudice?", 5, mode=mode, ids=[]) == []


def test_missing_and_empty_collections_have_clear_errors(tmp_path):
    with pytest.raises(CollectionNotFoundError, match="causalrag ingest"):
        Store("never-made", path=tmp_path).retrieve("q")
    empty = Store("empty-one", path=tmp_path)
    empty.add([])
    with pytest.raises(EmptyCollectionError, match="holds no passages"):
        empty.retrieve("q")


def test_invalid_collection_name():
    with pytest.raises(CausalRAGError, match="not valid"):
        Store("x")
