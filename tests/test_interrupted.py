"""kill -9 in the middle of an ingest and of an eval, then the same command again: nothing lost, nothing doubled.

Real processes on a real Chroma folder and a real run folder; the embeddings and the model are fakes
slowed down so the kill lands mid-way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from causalrag.eval.runner import read_results
from causalrag.tools.store import Store, read_passages

ROOT = str(Path(__file__).resolve().parents[1])

INGEST = """
import sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.tools.store import Store

class Slow(DeterministicFakeEmbedding):
    def embed_documents(self, texts):
        print("batch", flush=True)
        time.sleep(0.4)
        return super().embed_documents(texts)

Store("zoo", path=sys.argv[1], embeddings=Slow(size=16)).ingest([sys.argv[2]], progress=False)
print("done", flush=True)
"""

EVAL = """
import sys, time
sys.path.insert(0, sys.argv[2])
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.eval.runner import EvalConfig, run_eval
from tests.fakes import FakeLLM

class Slow(FakeLLM):
    def generate(self, prompts, **kwargs):
        time.sleep(0.3)
        return super().generate(prompts, **kwargs)

config = EvalConfig("demo", ["no_rag", "standard_rag"], limit=6)
run_eval(config, sys.argv[1], llm=Slow(default="Paris"), embeddings=DeterministicFakeEmbedding(size=16), progress=False,
         on_result=lambda row: print("row", flush=True))
print("done", flush=True)
"""


def start(script: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def kill_after(process: subprocess.Popen, marker: str, count: int) -> None:
    """SIGKILL once the process has printed ``marker`` ``count`` times (no cleanup runs: a power cut)."""
    seen = 0
    for line in process.stdout:
        seen += line.strip() == marker
        if seen == count:
            os.kill(process.pid, signal.SIGKILL)
            break
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL, process.stderr.read()


def finish(script: str, *args: str) -> None:
    process = start(script, *args)
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0 and out.strip().endswith("done"), err


def stored_rows(chroma: Path) -> int:
    """Passages in the Chroma folder, read with plain SQLite so no client of this process holds it."""
    import sqlite3

    with sqlite3.connect(f"file:{chroma / 'chroma.sqlite3'}?mode=ro", uri=True) as db:
        return db.execute("SELECT count(*) FROM embeddings").fetchone()[0]


def test_ingest_killed_mid_way_then_rerun(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(600):
        (docs / f"doc{i:03}.txt").write_text(
            f"Document {i} says that city {i} lies on river {i % 7}.", encoding="utf-8"
        )
    chroma = str(tmp_path / "chroma")
    kill_after(start(INGEST, chroma, str(docs)), "batch", 3)  # two of five batches written, the third in flight
    assert 0 < stored_rows(Path(chroma)) < 600
    finish(INGEST, chroma, str(docs))
    expected, _ = read_passages([docs])
    stored = Store("zoo", path=chroma).passages()
    assert len(stored) == len(expected) == 600
    assert {p.id for p in stored} == {p.id for p in expected}


def test_eval_killed_mid_way_then_rerun(tmp_path):
    run = tmp_path / "run"
    kill_after(start(EVAL, str(run), ROOT), "row", 4)
    before = {row["key"]: row for row in read_results(run)}
    assert 4 <= len(before) < 12
    finish(EVAL, str(run), ROOT)
    lines = (run / "results.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    keys = [row["key"] for row in rows]
    assert len(keys) == len(set(keys)) == 12  # 6 questions x 2 methods, none twice
    after = {row["key"]: row for row in rows}
    assert all(after[key] == row for key, row in before.items())  # rows written before the kill are kept as they were
