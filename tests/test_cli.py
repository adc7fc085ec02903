"""The CLI as a user runs it: real subprocesses, exit codes, one-sentence errors, no tracebacks."""

import json
import os
import subprocess
import sys

import pytest


def cli(*args, home, timeout=600):
    env = {**os.environ, "CAUSALRAG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "causalrag.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "   "], "The question is empty"),
        (["ask", "Who?", "--method", "nope"], "Unknown method 'nope'"),
        (["ask", "Who?", "--collection", "never-made"], "does not exist"),
        (["ask", "Who?", "--param", "kk=3"], "has no parameter 'kk'"),
        (["ask", "Who?", "--model", "/no/such/model.gguf"], "could not be loaded"),
        (["draw", "standard_rag", "--out", "graph.txt"], "use a file name ending in .png or .mmd"),
        (["history", "--thread", "none-yet"], "has no stored steps"),
        (["ask", "--resume"], "--resume needs the --thread"),
        (
            ["distill-cis", "--questions", "q.txt", "--out", "m", "--form", "qna"],
            "Unknown CIS form 'qna': use --form qa",
        ),
    ],
)
def test_bad_input_is_one_sentence_and_exit_1(args, message, tmp_path):
    result = cli(*args, home=tmp_path)
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_ingest_skips_unreadable_files_and_keeps_the_rest(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text("Zebras live in Kenya and have black and white stripes.", encoding="utf-8")
    (docs / "bad.txt").write_bytes(bytes(range(32)) * 100)
    result = cli("ingest", str(docs), "--collection", "zoo", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "bad.txt" in result.stderr and "no text in it" in result.stderr
    assert "1 new" in result.stdout
    again = cli("ingest", str(docs), "--collection", "zoo", home=tmp_path)
    assert "0 new" in again.stdout and "now holds 1 passages" in again.stdout


def test_ingest_with_nothing_readable_fails_and_creates_nothing(tmp_path):
    result = cli("ingest", str(tmp_path / "missing"), "--collection", "zoo", home=tmp_path)
    assert result.returncode == 1 and "No text was found" in result.stderr
    assert "does not exist" in cli("ask", "Who?", "--collection", "zoo", home=tmp_path).stderr


def test_draw_png_and_mermaid(tmp_path):
    assert cli("draw", "standard_rag", "--out", str(tmp_path / "g.png"), home=tmp_path).returncode == 0
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"
    assert cli("draw", "no_rag", "--out", str(tmp_path / "g.mmd"), home=tmp_path).returncode == 0
    assert "__start__" in (tmp_path / "g.mmd").read_text()


def test_methods_lists_every_method(tmp_path):
    import causalrag

    result = cli("methods", home=tmp_path)
    assert result.returncode == 0 and all(name in result.stdout for name in causalrag.METHODS)


@pytest.mark.slow
def test_ask_json_and_stream_with_the_real_model(tmp_path):
    result = cli("ask", "Who wrote the novel Pride and Prejudice?", "--json", home=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert "Jane Austen" in payload["answer"]
    assert {"id", "title", "text", "score"} == set(payload["documents"][0])
    assert [e["node"] for e in payload["trace"]] == ["retrieve", "answer"]
    streamed = cli("ask", "Who wrote the novel Pride and Prejudice?", "--stream", "--thread", "t1", home=tmp_path)
    assert streamed.returncode == 0, streamed.stderr
    assert "retrieve evidence (5)" in streamed.stdout and "Answer: Jane Austen" in streamed.stdout
    history = cli("history", "--thread", "t1", home=tmp_path)
    assert "(done)" in history.stdout and "Jane Austen" in history.stdout


@pytest.mark.slow
def test_hostile_passages_and_a_huge_question_with_the_real_model(tmp_path):
    """Markup and ANSI escapes in a passage print as plain text; a question longer than the model's window is one
    sentence."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "castle.txt").write_text(
        "The castle [/bold] was built in [red]1066[/red] by \x1b[2J\x1b[31mWilliam\x1b[0m.", encoding="utf-8"
    )
    assert cli("ingest", str(docs), "--collection", "castle", home=tmp_path).returncode == 0
    streamed = cli("ask", "When was the castle built?", "--collection", "castle", "--k", "1", "--stream", home=tmp_path)
    assert streamed.returncode == 0, streamed.stderr
    assert "[/bold]" in streamed.stdout and "\x1b" not in streamed.stdout and "Traceback" not in streamed.stderr
    env = {**os.environ, "CAUSALRAG_HOME": str(tmp_path)}
    huge = subprocess.run(
        [sys.executable, "-m", "causalrag.cli", "ask", "-", "--collection", "castle"],
        input="why " * 30_000,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert huge.returncode == 1 and "shorten the question" in huge.stderr and "Traceback" not in huge.stderr


@pytest.fixture
def fake_demo(monkeypatch):
    """`causalrag demo` on the fake model and a throw-away demo collection with fake embeddings."""
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from causalrag.corpus import demo_passages
    from causalrag.tools.store import Store
    from tests.fakes import FakeLLM

    store = Store.in_memory(demo_passages(), embeddings=DeterministicFakeEmbedding(size=32))
    monkeypatch.setattr("causalrag.corpus.open_store", lambda name: store)
    monkeypatch.setattr("causalrag.tools.llm.default_llm", lambda: FakeLLM(default="Heath Ledger"))
    return store


def test_demo_prints_the_nodes_each_question_went_through(fake_demo):
    from typer.testing import CliRunner

    from causalrag.cli import app

    result = CliRunner().invoke(app, ["demo", "--methods", "no_rag,standard_rag"])
    assert result.exit_code == 0, result.output
    paths = [ln.strip() for ln in result.output.splitlines() if ln.strip().startswith("path:")]
    assert len(paths) == 2 and paths[1].endswith("answer") and "retrieve → " in paths[1]


def test_demo_route_lines_show_a_decisions_route_and_why():
    from causalrag.cli import _demo_route

    state = {"trace": [{"node": "retrieve"}, {"node": "assess"}, {"node": "vote"}],
             "decision": {"route": "vote", "shape": "conflict", "believed": None, "why": "two sources disagree"}}
    lines = [t.plain for t in _demo_route(state)]
    assert lines == ["  path: retrieve → assess → vote", "  route: vote  why: two sources disagree"]
    assert [t.plain for t in _demo_route({"trace": [{"node": "answer"}]})] == ["  path: answer"]


def test_report_prints_routes_agreement_and_paths(tmp_path):
    from typer.testing import CliRunner

    from causalrag.cli import app

    def result(method, qid, answer, route, path):
        return {"key": f"{method}|K=0|{qid}", "method": method, "question_id": str(qid), "inject": 0,
                "prediction": answer, "acc": 1.0, "em": 1.0, "f1": 1.0, "llm_calls": 1, "seconds": 1.0,
                "error": None, "path": path, "route": route, "decision": route and {"route": route, "why": "w"}}

    rows = [result("triage", i, a, r, ["retrieve", "assess", r]) for i, (a, r) in
            enumerate([("Paris", "keep"), ("Rome", "vote")])]
    rows += [result("standard_rag", i, a, None, ["retrieve", "answer"]) for i, a in enumerate(["Paris", "Milan"])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = CliRunner().invoke(app, ["report", str(tmp_path)], env={"COLUMNS": "200"})
    assert report.exit_code == 0, report.output
    assert "routes taken" in report.output and "1 (50%)" in report.output
    assert "same answers" in report.output and "1 / 2 (50%)" in report.output
    assert "retrieve → assess → keep" in report.output and "retrieve → answer" in report.output
