"""Evaluation at scale: questions in flight (``concurrency``), shards over machines (``shard="I/N"``), and
results that stay exact through ``kill -9`` at any moment, with the fake model and embeddings."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.datasets import load_dataset
from causalrag.eval.runner import RESULTS, EvalConfig, in_shard, merge_runs, read_results, run_eval
from tests.fakes import FakeLLM

ROOT = Path(__file__).resolve().parents[2]


def config(**kw) -> EvalConfig:
    base = {"dataset": "hotpotqa", "methods": ["no_rag", "standard_rag"], "inject": [0, 2], "limit": 6}
    return EvalConfig(**{**base, **kw})


def by_prompt(prompt: str) -> str:
    """A reply that depends on the whole prompt (question and passages), so a row paired with the wrong
    question or evidence shows."""
    return f" {len(prompt)}"


def answers(rows: list[dict]) -> dict[str, tuple]:
    """Each row's answer, evidence, error and model usage (metered per question, whichever thread asked it)."""
    return {
        r["key"]: (r["prediction"], [d["id"] for d in r["documents"]], r["error"], r["llm_calls"], r["prompt_tokens"])
        for r in rows
    }


def test_questions_in_flight_give_the_rows_of_one_at_a_time(tmp_path, fake_embeddings):
    meet = threading.Barrier(2, timeout=60)  # passes only when two questions are in the model at once
    met: list[bool] = []
    first = threading.Lock()

    def together(prompt: str) -> str:
        with first:  # only the first two calls wait: a third arriving before they met would wait for a fourth
            waits = len(met) < 2
            if waits:
                met.append(True)
        if waits:
            meet.wait()
        return by_prompt(prompt)

    quiet = {"embeddings": fake_embeddings, "progress": False}
    one = run_eval(config(), tmp_path / "one", llm=FakeLLM(default=by_prompt), **quiet)
    many = run_eval(config(), tmp_path / "many", llm=FakeLLM(default=together), **quiet, concurrency=4)
    assert met and len(many) == 24 and answers(many) == answers(one)
    assert all(r["error"] is None for r in many)
    lines = (tmp_path / "many" / RESULTS).read_text().splitlines()
    assert len(lines) == len({json.loads(line)["key"] for line in lines}) == 24


@pytest.mark.slow
def test_a_local_model_serves_questions_in_flight_one_call_at_a_time(tmp_path, real_llm, fake_embeddings):
    """The local backends hold one lock per model: questions in flight are safe, and each row's usage is its own."""
    cfg = config(methods=["standard_rag"], inject=[0], limit=3, params={"standard_rag": {"k": 2, "max_new_tokens": 8}})
    one = run_eval(cfg, tmp_path / "one", llm=real_llm, embeddings=fake_embeddings, progress=False)
    many = run_eval(cfg, tmp_path / "many", llm=real_llm, embeddings=fake_embeddings, progress=False, concurrency=3)
    assert len(many) == 3 and not any(r["error"] for r in many) and all(r["prediction"].strip() for r in many)
    usage = lambda rows: {r["key"]: (r["llm_calls"], r["prompt_tokens"]) for r in rows}  # noqa: E731
    assert usage(many) == usage(one)  # the same prompts, each metered in its own question


def test_a_setup_error_in_flight_stops_the_run(tmp_path, fake_embeddings):
    from causalrag.errors import ServerUnreachableError

    def down(prompt: str) -> str:
        raise ServerUnreachableError("http://127.0.0.1:9/v1", "ConnectError")

    with pytest.raises(ServerUnreachableError):
        run_eval(config(), tmp_path, llm=FakeLLM(default=down), embeddings=fake_embeddings, progress=False,
                 concurrency=3)
    assert read_results(tmp_path) == []  # no row of error for a run that cannot work at all


def test_shards_split_the_questions_and_merge_into_the_whole_run(tmp_path, fake_embeddings):
    ids = [e.id for e in load_dataset("hotpotqa")]
    assert all(sum(in_shard(i, f"{s}/3") for s in (1, 2, 3)) == 1 for i in ids)  # each question in exactly one shard
    assert [s for s in (1, 2, 3) if in_shard("5a8b57f25542995d1e6f1371", f"{s}/3")] == [1]  # stable on every machine
    # the open setting: each shard's corpus still holds every question's injected passages
    whole = run_eval(config(setting="open"), tmp_path / "whole", llm=FakeLLM(default=by_prompt),
                     embeddings=fake_embeddings, progress=False)
    for s in (1, 2):
        shard = run_eval(config(setting="open", shard=f"{s}/2"), tmp_path / f"s{s}", llm=FakeLLM(default=by_prompt),
                         embeddings=fake_embeddings, progress=False, concurrency=2)
        assert shard and {r["question_id"] for r in shard} == {i for i in ids[:6] if in_shard(i, f"{s}/2")}
        assert json.loads((tmp_path / f"s{s}" / "config.json").read_text())["shard"] == f"{s}/2"
    merge_runs([tmp_path / "s1", tmp_path / "s2"], tmp_path / "merged")
    assert answers(read_results(tmp_path / "merged")) == answers(whole)
    assert json.loads((tmp_path / "merged" / "config.json").read_text())["shard"] is None  # every shard of 2 is there


def test_a_shard_resumes_only_as_itself_and_merges_only_with_its_split(tmp_path, fake_embeddings):
    run = dict(llm=FakeLLM(), embeddings=fake_embeddings, progress=False)
    run_eval(config(shard="1/2"), tmp_path / "a", **run)
    with pytest.raises(CausalRAGError, match=r"other settings \(shard='1/2'\)"):
        run_eval(config(shard="2/2"), tmp_path / "a", **run)
    run_eval(config(shard="1/3"), tmp_path / "b", **run)
    with pytest.raises(CausalRAGError, match="sharded differently"):
        merge_runs([tmp_path / "a", tmp_path / "b"], tmp_path / "m")
    run_eval(config(shard="3/3"), tmp_path / "c", **run)
    merge_runs([tmp_path / "b", tmp_path / "c"], tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["shard"] == "1/3,3/3"


@pytest.mark.parametrize(("kw", "message"), [
    ({"shard": "3/2"}, "is not I/N with 1 <= I <= N"),
    ({"shard": "first"}, "is not I/N"),
    ({"concurrency": 0}, "--concurrency 0 is not valid"),
])
def test_bad_shard_or_concurrency_is_one_sentence_before_any_work(tmp_path, fake_embeddings, kw, message):
    shard = kw.get("shard")
    with pytest.raises(CausalRAGError, match=message):
        run_eval(config(shard=shard), tmp_path, llm=FakeLLM(), embeddings=fake_embeddings, progress=False,
                 concurrency=kw.get("concurrency", 1))
    assert not (tmp_path / "config.json").exists()


KILLABLE = """
import sys, time
from langchain_core.embeddings import DeterministicFakeEmbedding
from causalrag.eval.runner import EvalConfig, run_eval
from tests.eval.test_runner_scale import by_prompt
from tests.fakes import FakeLLM

def slow(prompt):
    time.sleep(0.02)
    return by_prompt(prompt)

config = EvalConfig(dataset="hotpotqa", methods=["no_rag", "standard_rag"], inject=[0, 2], limit=10)
run_eval(config, sys.argv[1], llm=FakeLLM(default=slow), embeddings=DeterministicFakeEmbedding(size=32), progress=False,
         concurrency=4)
"""


def lines_in(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def test_kill_9_at_any_moment_loses_and_doubles_nothing(tmp_path, fake_embeddings):
    reference = run_eval(config(limit=10), tmp_path / "ref", llm=FakeLLM(default=by_prompt), embeddings=fake_embeddings,
                         progress=False)
    out, script = tmp_path / "killed", tmp_path / "killable.py"
    script.write_text(KILLABLE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for after in (1, 9, 23):  # kill -9 once this many rows are on disk, then start again
        proc = subprocess.Popen([sys.executable, str(script), str(out)], cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while lines_in(out / RESULTS) < after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        rows = read_results(out)
        assert len(rows) >= after and len(rows) == len({r["key"] for r in rows})
    done = subprocess.run([sys.executable, str(script), str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    lines = (out / RESULTS).read_text().splitlines()
    assert len(lines) == len(reference) == 40
    assert answers([json.loads(line) for line in lines]) == answers(reference)


def test_eval_command_takes_concurrency_and_shard(tmp_path, monkeypatch, fake_embeddings):
    from typer.testing import CliRunner

    from causalrag.cli import app

    monkeypatch.setattr("causalrag.tools.llm.default_llm", lambda: FakeLLM(default=by_prompt))
    monkeypatch.setattr("causalrag.tools.encoders.default_embeddings", lambda: fake_embeddings)
    args = ["eval", "--dataset", "hotpotqa", "--methods", "standard_rag", "--limit", "6", "--concurrency", "3"]
    for s in (1, 2):
        result = CliRunner().invoke(app, [*args, "--shard", f"{s}/2", "--out", str(tmp_path / f"s{s}")])
        assert result.exit_code == 0, result.output
    ids = [e.id for e in load_dataset("hotpotqa")[:6]]
    for s in (1, 2):
        assert {r["question_id"] for r in read_results(tmp_path / f"s{s}")} == {i for i in ids if in_shard(i, f"{s}/2")}
    bad = CliRunner().invoke(app, [*args, "--shard", "0/2", "--out", str(tmp_path / "bad")])
    assert isinstance(bad.exception, CausalRAGError) and "--shard '0/2' is not I/N" in str(bad.exception)
