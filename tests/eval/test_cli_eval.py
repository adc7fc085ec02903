"""`causalrag eval` / `causalrag report` through typer's CliRunner, with the fake model and embeddings."""

import json

import pytest
from typer.testing import CliRunner

from causalrag.cli import app
from causalrag.errors import CausalRAGError
from tests.fakes import FakeLLM


@pytest.fixture
def fakes(monkeypatch, fake_embeddings):
    llm = FakeLLM(default="Heath Ledger")
    monkeypatch.setattr("causalrag.tools.llm.default_llm", lambda: llm)
    monkeypatch.setattr("causalrag.tools.encoders.default_embeddings", lambda: fake_embeddings)
    return llm


def test_eval_then_report(tmp_path, fakes):
    runner = CliRunner()
    out = tmp_path / "run"
    args = ["eval", "--dataset", "demo", "--methods", "no_rag,standard_rag", "--inject", "0,2", "--limit", "3",
            "--out", str(out), "--param", "k=3", "--param", "max_new_tokens=8"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| standard_rag | 2 | 3 |" in result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and rows[0]["prediction"] == "Heath Ledger"
    assert all(len(r["documents"]) == 3 for r in rows if r["method"] == "standard_rag")
    assert rows[0]["params"] == {"k": 3, "max_new_tokens": 8}
    prompts = len(fakes.prompts)
    again = runner.invoke(app, args)  # resumed: nothing to do, the model is not called
    assert again.exit_code == 0 and len(fakes.prompts) == prompts
    assert len((out / "results.jsonl").read_text().splitlines()) == 12

    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert "standard_rag" in report.output and "report.md" in report.output
    assert (out / "accuracy_vs_inject.png").read_bytes()[:4] == b"\x89PNG" and (out / "report.csv").stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "--inject", "0,x"], "not a comma-separated list"),
        (["eval", "--param", "nope=1"], "No chosen method has parameter 'nope'"),
        (["eval", "--methods", "nope"], "Unknown method 'nope'"),
        (["eval", "--setting", "closed", "--limit", "1"], "Unknown setting"),
        (["report", "/no/such/run"], "No results"),
        (["report", "/no/such/run", "--against", "standard_rag"], "No results"),
    ],
)
def test_bad_input_is_one_sentence(args, message, tmp_path, fakes):
    result = CliRunner().invoke(app, [*args, *(["--out", str(tmp_path / "r")] if args[0] == "eval" else [])])
    assert isinstance(result.exception, CausalRAGError) and message in str(result.exception)


def test_runs_split_over_processes_merge_into_one_report(tmp_path, fakes):
    """Methods run in two processes (two folders) make one report; settings that differ are refused."""
    runner = CliRunner()
    common = ["eval", "--dataset", "demo", "--inject", "0", "--limit", "2"]
    assert (
        runner.invoke(app, [*common, "--methods", "no_rag,standard_rag", "--out", str(tmp_path / "a")]).exit_code == 0
    )
    assert (
        runner.invoke(
            app, [*common, "--methods", "cis", "-p", "n_candidates=4", "--out", str(tmp_path / "b")]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "all")])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "all" / "config.json").read_text())
    assert config["methods"] == ["no_rag", "standard_rag", "cis"] and config["params"] == {"cis": {"n_candidates": 4}}
    assert len((tmp_path / "all" / "results.jsonl").read_text().splitlines()) == 6
    assert "| cis | 0 | 2 |" in (tmp_path / "all" / "report.md").read_text()

    assert runner.invoke(app, [*common, "--methods", "moi", "--seed", "3", "--out", str(tmp_path / "c")]).exit_code == 0
    clash = runner.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(tmp_path / "bad")])
    assert isinstance(clash.exception, CausalRAGError) and "seed" in str(clash.exception)
    twice = runner.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "a"), "--out", str(tmp_path / "bad")])
    assert isinstance(twice.exception, CausalRAGError) and "more than one" in str(twice.exception)
    no_out = runner.invoke(app, ["report", str(tmp_path / "a"), str(tmp_path / "b")])
    assert isinstance(no_out.exception, CausalRAGError) and "--out" in str(no_out.exception)


def test_report_against_a_baseline_in_another_run(tmp_path, fakes):
    """The baseline run apart from the methods: merged, paired per question, printed and written."""
    runner = CliRunner()
    common = ["eval", "--dataset", "demo", "--inject", "0", "--limit", "3"]
    methods = ["--methods", "no_rag,cis", "-p", "n_candidates=4"]
    assert runner.invoke(app, [*common, *methods, "--out", str(tmp_path / "a")]).exit_code == 0
    assert runner.invoke(app, [*common, "--methods", "standard_rag", "--out", str(tmp_path / "b")]).exit_code == 0
    both = tmp_path / "all"
    args = ["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(both), "--against", "standard_rag"]
    result = runner.invoke(app, args, env={"COLUMNS": "140"})
    assert result.exit_code == 0, result.output
    assert "no_rag − standard_rag (K = 0)" in result.output and "cis − standard_rag (K = 0)" in result.output
    assert "W/L" in result.output and "paired.md" in result.output
    text = (both / "paired.md").read_text()
    assert "| no_rag | 0 | all | 3 |" in text and "| cis | 0 | all | 3 |" in text
    assert len((both / "paired.csv").read_text().splitlines()) == 1 + 2
    assert (both / "paired.png").read_bytes()[:4] == b"\x89PNG"
    assert (both / "report.md").exists()  # the usual report too

    missing = runner.invoke(app, ["report", str(tmp_path / "a"), "--against", "standard_rag"])
    assert isinstance(missing.exception, CausalRAGError)
    assert "The baseline 'standard_rag' has no results" in str(missing.exception)
    assert not any((tmp_path / "a" / name).exists() for name in ("paired.md", "report.md"))  # nothing written


def config_of(folder):
    return json.loads((folder / "config.json").read_text())


def test_per_method_parameters_and_cpu_sizes(tmp_path, fakes):
    """-p NAME=VALUE goes to every chosen method that has NAME, -p METHOD.NAME=VALUE to that one;
    --cpu starts from cpu_params."""
    import causalrag

    runner = CliRunner()
    args = ["eval", "--dataset", "demo", "--methods", "no_rag,standard_rag,cis", "--limit", "1", "--cpu",
            "-p", "max_new_tokens=8", "-p", "standard_rag.k=2", "-p", "cis.k=3", "--out", str(tmp_path / "run")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    params = config_of(tmp_path / "run")["params"]
    cpu = causalrag.METHODS["cis"].cpu_params
    assert params == {"no_rag": {"max_new_tokens": 8}, "standard_rag": {"max_new_tokens": 8, "k": 2},
                      "cis": {**cpu, "max_new_tokens": 8, "k": 3}}
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert {r["method"]: r["k"] for r in rows} == {"no_rag": 5, "standard_rag": 2, "cis": 3}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (["-p", "cf_rag.hypotheses=2"], "is for method 'cf_rag', which is not in --methods"),
        (["-p", "standard_rag.hypotheses=2"], "has no parameter 'hypotheses'"),
        (["-p", "k=0"], "at least 1"),
        (["-p", "standard_rag.k=many"], "a whole number"),
        (["-p", "retrieval=nosuch"], "one of dense, bm25, hybrid"),
        (["-p", "ids=a,b"], "is set by eval itself"),
        (["-p", "standard_rag.collection=x"], "is set by eval itself"),
    ],
)
def test_bad_parameters_stop_before_any_work_and_leave_no_config(params, message, tmp_path, fakes):
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--dataset",
            "demo",
            "--methods",
            "no_rag,standard_rag",
            "--limit",
            "1",
            *params,
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert isinstance(result.exception, CausalRAGError) and message in str(result.exception)
    assert not (tmp_path / "run" / "config.json").exists() and fakes.prompts == []


def test_a_questions_only_dataset_runs_no_rag(tmp_path, fakes):
    data = tmp_path / "questions.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": str(i), "question": f"Largest planet {i}?", "golden_answers": ["Jupiter"]}) + "\n"
            for i in range(2)
        )
    )
    ok = CliRunner().invoke(
        app, ["eval", "--dataset", f"jsonl:{data}", "--methods", "no_rag", "--out", str(tmp_path / "a")]
    )
    assert ok.exit_code == 0, ok.output
    assert len((tmp_path / "a" / "results.jsonl").read_text().splitlines()) == 2
    refused = CliRunner().invoke(
        app, ["eval", "--dataset", f"jsonl:{data}", "--methods", "standard_rag", "--out", str(tmp_path / "b")]
    )
    assert isinstance(refused.exception, CausalRAGError) and "--setting open with --collection" in str(
        refused.exception
    )


def test_a_run_that_failed_before_its_first_result_does_not_block_the_next(tmp_path, fakes):
    data = tmp_path / "questions.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "Largest planet?", "golden_answers": ["Jupiter"]}) + "\n")
    run = ["eval", "--dataset", f"jsonl:{data}", "--methods", "standard_rag", "--out", str(tmp_path / "run")]
    failed = CliRunner().invoke(app, [*run, "--setting", "open", "--collection", "never-made"])
    assert isinstance(failed.exception, CausalRAGError) and "does not exist" in str(failed.exception)
    assert not (tmp_path / "run" / "results.jsonl").exists() or not (tmp_path / "run" / "results.jsonl").read_text()
    again = CliRunner().invoke(app, [*run[:4], "no_rag", *run[5:]])
    assert again.exit_code == 0, again.output
    assert config_of(tmp_path / "run")["methods"] == ["no_rag"]


def test_out_naming_a_file_is_one_sentence(tmp_path, fakes):
    (tmp_path / "taken").write_text("mine")
    result = CliRunner().invoke(
        app, ["eval", "--dataset", "demo", "--methods", "no_rag", "--limit", "1", "--out", str(tmp_path / "taken")]
    )
    assert isinstance(result.exception, CausalRAGError) and "is a file" in str(result.exception)
    assert (tmp_path / "taken").read_text() == "mine"
