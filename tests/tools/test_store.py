import json
from pathlib import Path

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


def test_read_passages_reads_every_text_file_and_names_what_it_skips(corpus):
    (corpus / "nul.txt").write_bytes(b"\x00" * 5000)
    passages, report = read_passages([corpus, corpus / "missing.txt"])
    assert report.files == 4
    assert {(Path(f).name, r) for f, r in report.skipped} == {
        ("nul.txt", "no text in it (empty, or binary such as NUL bytes)"), ("missing.txt", "no such file or folder")}
    titles = {p.title for p in passages}
    assert {"zebras", "notes", "Canberra", "latin1"} <= titles
    assert all(len(p.text.split()) <= 100 for p in passages)
    assert all(Path(p.source).is_absolute() for p in passages)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (
            "Le caf\xe9 est tr\xe8s bon \xe0 Paris, pr\xe8s de l'\xe9glise.".encode("latin-1"),
            "Le café est très bon à Paris, près de l'église.",
        ),
        (
            "\u201cSmart quotes\u201d \u2013 and a euro \u20ac sign.".encode("cp1252"),
            "\u201cSmart quotes\u201d \u2013 and a euro \u20ac sign.",
        ),
        ("Zebras live in Kenya and Tanzania.".encode("utf-16"), "Zebras live in Kenya and Tanzania."),
        ("\ufeffA BOM then text.".encode("utf-8"), "A BOM then text."),
        *[
            (text.encode(code), text)
            for text, code in [
                # short Western European texts, which the detector alone read as cp1250 or a CJK encoding
                ("Moli\xe8re wrote a cr\xe8me recipe.", "latin-1"),
                ("Beethoven composed F\xfcr Elise.", "latin-1"),
                ("El ni\xf1o comi\xf3 pi\xf1a.", "cp1252"),
                ("It costs \xa35 at the caf\xe9.", "cp1252"),
                # and other code pages still read as themselves
                ("Łódź leży w Polsce.", "cp1250"),
                ("Привет, как дела? Это тест.", "cp1251"),
            ]
        ],
    ],
    ids=["latin-1", "cp1252", "utf-16", "utf-8-bom", "short-latin-1", "latin-1-umlaut", "short-cp1252", "pound",
         "cp1250", "cp1251"],
)
def test_files_in_other_encodings_are_decoded(tmp_path, data, text):
    (tmp_path / "doc.txt").write_bytes(data)
    passages, report = read_passages([tmp_path])
    assert report.skipped == [] and [p.text for p in passages] == [text]


def test_nul_bytes_inside_text_become_spaces(tmp_path):
    (tmp_path / "doc.txt").write_bytes(b"Zebras\x00live in\x1b[31m Kenya.")
    passages, _ = read_passages([tmp_path])
    assert [p.text for p in passages] == ["Zebras live in [31m Kenya."]


def test_one_malformed_jsonl_line_keeps_the_valid_ones(tmp_path):
    (tmp_path / "rows.jsonl").write_text(
        '{"title": "A", "text": "Zebras live in Kenya."}\n{broken\n{"title": "no text"}\n{"title": "B", "text": '
        '"Lions live in Tanzania."}\n',
        encoding="utf-8",
    )
    passages, report = read_passages([tmp_path])
    assert [p.title for p in passages] == ["A", "B"] and report.files == 1
    assert [r for _, r in report.skipped] == [
        "line 2 is not a JSON object with a 'text' field",
        "line 3 is not a JSON object with a 'text' field",
    ]


def test_a_jsonl_file_without_one_valid_line_is_skipped(tmp_path):
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


# --------------------------------------------------------------------------- re-ingest, store failures
@pytest.fixture
def fake_store(tmp_path):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    return lambda name="zoo": Store(name, path=tmp_path / "chroma", embeddings=DeterministicFakeEmbedding(size=16))


def two_paragraphs(where: str) -> str:
    return "Zebras live in Kenya. " * 20 + "\n\n" + f"Lions live in {where}. " * 20  # two 80-word passages


def test_reingesting_a_changed_file_replaces_its_passages(tmp_path, fake_store):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zoo.txt").write_text(two_paragraphs("Tanzania"), encoding="utf-8")
    (docs / "other.txt").write_text("Penguins live in Antarctica.", encoding="utf-8")
    assert fake_store().ingest([docs], progress=False).added == 3
    (docs / "zoo.txt").write_text(two_paragraphs("Botswana"), encoding="utf-8")
    report = fake_store().ingest([docs / "zoo.txt"], progress=False)
    assert (report.added, report.removed) == (1, 1)
    texts = [p.text for p in fake_store().passages()]
    assert len(texts) == 3 and not any("Tanzania" in t for t in texts) and any("Penguins" in t for t in texts)


def test_a_file_deleted_from_an_ingested_folder_loses_its_passages(tmp_path, fake_store):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Zebras live in Kenya.", encoding="utf-8")
    (docs / "b.txt").write_text("Lions live in Tanzania.", encoding="utf-8")
    fake_store().ingest([docs], progress=False)
    (docs / "b.txt").unlink()
    report = fake_store().ingest([docs], progress=False)
    assert (report.added, report.removed) == (0, 1)
    assert [p.text for p in fake_store().passages()] == ["Zebras live in Kenya."]


def test_keep_history_keeps_old_passages(tmp_path, fake_store):
    doc = tmp_path / "zoo.txt"
    doc.write_text("Lions live in Tanzania.", encoding="utf-8")
    fake_store().ingest([doc], progress=False)
    doc.write_text("Lions live in Botswana.", encoding="utf-8")
    report = fake_store().ingest([doc], progress=False, keep_history=True)
    assert (report.added, report.removed) == (1, 0) and fake_store().count() == 2


def test_nothing_read_creates_no_collection(tmp_path, fake_store):
    report = fake_store("ghost").ingest([tmp_path / "missing"], progress=False)
    assert report.passages == 0 and not fake_store("ghost").exists()


@pytest.mark.parametrize("name", ["a..b", "x", "-abc", "abc-", "a b c", "[/bold]", "é" * 5])
def test_invalid_collection_names(name):
    with pytest.raises(CausalRAGError, match="is not valid: use 3-512 letters"):
        Store(name)


def test_a_zero_length_database_is_reported_not_replaced(tmp_path, fake_store):
    from causalrag.errors import DamagedStoreError

    (tmp_path / "chroma").mkdir()
    db = tmp_path / "chroma" / "chroma.sqlite3"
    db.write_bytes(b"")
    with pytest.raises(DamagedStoreError, match=r"empty \(0 bytes\).*nothing was changed"):
        fake_store().count()
    assert db.stat().st_size == 0
    db.write_bytes(b"not sqlite at all" * 10)
    with pytest.raises(DamagedStoreError, match="not an SQLite database"):
        fake_store().count()


DAMAGE_SCRIPT = """
import json, random, shutil, sqlite3, sys, traceback
from pathlib import Path
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.errors import DamagedStoreError
from causalrag.tools.store import Passage, Store

healthy, work, cases = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
operations = {
    "open": lambda store: store.exists(),
    "count": lambda store: store.count(),
    "read": lambda store: store.passages(),
    "query": lambda store: store.retrieve("passage number 17", k=3),
    "bm25": lambda store: store.retrieve("passage number 17", k=3, mode="bm25"),
    "add": lambda store: store.add(NEW),
    "remove": lambda store: store.remove([p.id for p in NEW]),
}
NEW = [Passage("New", f"a passage added later {i}") for i in range(5)]
for name, file, where, size in cases:
    folder = work / name
    shutil.copytree(healthy, folder)
    target = next(folder.glob(file))
    if isinstance(where, str) and where.startswith("UPDATE"):  # damage inside a row, which SQLite cannot see
        with sqlite3.connect(target) as db:
            db.execute(where)
        where, size = 0, 0
    elif isinstance(where, str):  # a table's root page, wherever this build of the database put it
        with sqlite3.connect(target.as_uri() + "?mode=ro", uri=True) as db:
            page = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (where,)).fetchone()[0]
            where = (page - 1) * db.execute("PRAGMA page_size").fetchone()[0]
    data = bytearray(target.read_bytes())
    start = where if isinstance(where, int) else int(where * len(data))  # bytes, or a share of the file
    data[start : start + size] = random.Random(name).randbytes(len(data[start : start + size]))
    target.write_bytes(bytes(data))
    for operation, run in operations.items():
        store = Store("zoo", path=folder, embeddings=DeterministicFakeEmbedding(size=16))
        try:
            run(store)
            said = None
        except DamagedStoreError as exc:
            said = str(exc)
        except BaseException as exc:  # Chroma's Rust side panics with a BaseException
            said = "NOT MAPPED: " + "".join(traceback.format_exception_only(exc)).strip()
        print(json.dumps([name, operation, said]), flush=True)
    print(json.dumps([name, "files", sorted(p.name for p in folder.rglob("*") if p.is_file())]), flush=True)
"""

# (name, file, where: a byte offset, a share of the file, a table whose root page it is or an UPDATE, bytes
# overwritten with seeded random bytes, whether some operation must notice): a sweep over the SQLite file (table
# by table, page by page wherever this build put them, and inside a row) and over the HNSW segment's files.
DAMAGE = [
    ("sqlite-schema-page", "chroma.sqlite3", 16, 4080, True),  # after the 16-byte magic (the magic: the test above)
    *[(f"sqlite-root-of-{table}", "chroma.sqlite3", table, 4096, True) for table in (
        "collections",  # Chroma cannot start
        "segments",  # only SQLite's quick_check names it
        "embeddings_queue",  # the write log: "Failed to pull logs from the log store"
        "embeddings",  # "Failed to apply logs to the metadata segment", when adding
        "embedding_metadata",
        "embedding_fulltext_search_content",
        "max_seq_id",
    )],
    *[(f"sqlite-page-at-{k}of8", "chroma.sqlite3", k / 8, 4096, False) for k in range(1, 8)],
    ("sqlite-64k-at-a-third", "chroma.sqlite3", 1 / 3, 65536, False),  # the damage that first showed the traceback
    # inside rows, where SQLite's checks see nothing: Chroma's log reader panics, or it cannot decode a value
    *[(f"sqlite-row-{name}", "chroma.sqlite3", update, 0, True) for name, update in (
        ("log-metadata-not-utf8", "UPDATE embeddings_queue SET metadata = CAST(X'7B22FF' AS TEXT) WHERE seq_id = "
                                  "(SELECT max(seq_id) FROM embeddings_queue)"),
        ("passage-id-not-utf8", "UPDATE embeddings SET embedding_id = CAST(X'FF' AS TEXT) WHERE id = 17"),
        ("progress-not-a-number", "UPDATE max_seq_id SET seq_id = CAST(X'FF' AS BLOB)"),
    )],
    ("hnsw-links-level0", "*/data_level0.bin", 0.5, 4096, True),  # hnswlib would follow them and crash
    ("hnsw-header-shape", "*/header.bin", 0, 100, True),
    ("hnsw-header-m-and-mult", "*/header.bin", 81, 19, True),
    ("hnsw-links-upper-levels", "*/link_lists.bin", 0.75, 4096, True),
    ("hnsw-id-map", "*/index_metadata.pickle", 0.5, 4096, True),  # "Error deserializing pickle file"
    ("hnsw-vectors", "*/data_level0.bin", 132, 64, False),  # the first node's vector (after its 132 bytes of links)
]


@pytest.fixture(scope="module")
def healthy_store(tmp_path_factory) -> Path:
    """A real Chroma folder of 3,000 passages (a persisted HNSW segment and a write log), built in its own process."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("healthy") / "chroma"
    script = (
        "import sys\nfrom langchain_core.embeddings import DeterministicFakeEmbedding\nfrom causalrag.tools.store "
        "import Passage, Store\nstore = Store('zoo', path=sys.argv[1], "
        "embeddings=DeterministicFakeEmbedding(size=16))\nstore.add([Passage(f'T{i}', f'passage number {i} ' * 30) "
        "for i in range(3000)])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(folder)], check=True, timeout=300)
    assert list(folder.glob("*/header.bin")), "Chroma persisted no HNSW segment to damage"
    return folder


def test_a_damaged_store_is_one_sentence_for_every_operation(healthy_store, tmp_path):
    """Seeded damage swept over the SQLite file and the HNSW segment: opening, counting, reading, querying and
    adding either work or say DamagedStoreError's one sentence, never a traceback or a crash, and no file is
    deleted. The damaged folders are opened in one child process: a crash there fails this test, not the run."""
    import json
    import subprocess
    import sys

    cases = [case[:4] for case in DAMAGE]
    run = subprocess.run([sys.executable, "-c", DAMAGE_SCRIPT, str(healthy_store), str(tmp_path), json.dumps(cases)],
                         capture_output=True, text=True, timeout=900)
    seen: dict[str, dict[str, object]] = {}
    for line in run.stdout.splitlines():
        name, operation, said = json.loads(line)
        seen.setdefault(name, {})[operation] = said
    files = sorted(p.name for p in healthy_store.rglob("*") if p.is_file())
    problems = []
    for name, _, _, _, noticed in DAMAGE:
        said = seen.get(name, {})
        if "files" not in said:
            died = f"exit {run.returncode} after {list(said)}"
            problems.append(f"{name}: the process died ({died}):\n{run.stderr[-2000:]}")
            continue
        errors = {op: text for op, text in said.items() if op != "files" and text}
        problems += [f"{name}, {op}: {text}"
                     for op, text in errors.items() if text.startswith("NOT MAPPED") or "\n" in text]
        if noticed and not errors:
            problems.append(f"{name}: no operation noticed the damage")
        if not set(files) <= set(said["files"]):
            problems.append(f"{name}: files gone: {set(files) - set(said['files'])}")
    assert problems == [], "\n".join(problems)
    sentences = [text for ops in seen.values() for op, text in ops.items() if op != "files" and text]
    assert sentences and all(text.endswith("(nothing was changed).") for text in sentences)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://127.0.0.1:9", "nothing answers there"),
        ("not a url", "not an http:// or https:// URL"),
        ("ftp://host", "not an http"),
    ],
)
def test_a_chroma_url_that_does_not_answer_is_one_sentence(monkeypatch, url, says):
    from causalrag.errors import StoreUnreachableError

    monkeypatch.setenv("CAUSALRAG_CHROMA_URL", url)
    with pytest.raises(StoreUnreachableError, match=says):
        Store("zoo").count()


def test_whole_collection_reads_come_in_pages(fake_store, monkeypatch):
    """Every read of the whole collection (passages, BM25's index build, stale-file checks) and of many
    ids goes through pages: one get of 100k rows fails in Chroma's SQLite ("too many SQL variables")."""
    import causalrag.tools.store as store_module

    monkeypatch.setattr(store_module, "READ_PAGE", 3, raising=False)
    store = fake_store()
    facts = [Passage(f"Animal {i}", f"The animal number {i} lives in country {i}.", "") for i in range(10)]
    facts.append(Passage("Okapi", "The okapi lives in the Congo rainforest.", ""))
    assert store.add(facts) == 11
    from chromadb.api.models.Collection import Collection

    rows_read, original = [], Collection.get
    monkeypatch.setattr(
        Collection, "get", lambda self, *a, **k: rows_read.append(len((got := original(self, *a, **k))["ids"])) or got
    )
    assert sorted(p.title for p in store.passages()) == sorted(p.title for p in facts)
    wanted = [p.id for p in facts[::-1]][:7]
    assert [d.id for d in store.get(wanted)] == wanted
    assert store.retrieve("Where does the okapi live?", 1, mode="bm25")[0].metadata["title"] == "Okapi"
    assert rows_read and max(rows_read) <= 3
