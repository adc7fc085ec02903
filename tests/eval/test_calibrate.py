"""Fitting triage's policy (causalrag.eval.calibrate) and deciding with it (causalrag.nodes.decide.decide_fitted),
on hand-made calibration rows whose outcomes follow one clear pattern."""

import json
import random

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.calibrate import answers_of, fit_policy, outcome, read_rows, validate
from causalrag.graphs.registry import build_graph
from causalrag.nodes.decide import FittedPolicy, decide_fitted
from tests.graphs.test_triage import reader, store_of


def row(i: int, condition: str, sure: float, closed_right: bool) -> dict:
    """Five sources agree on Sydney (the joint reading); the model answers Canberra at ``sure``; Canberra is right
    where ``closed_right``."""
    evidence = {
        "standard": "Sydney", "stated": True, "compared": False, "closed_book": "Canberra", "confidence": sure,
        "groups": [{"answer": "Sydney", "sources": [f"p{j}" for j in range(3)]}],
    }
    return {"method": "triage", "question_id": f"q{i}", "condition": condition, "prediction": "Sydney",
            "answers": ["Canberra"] if closed_right else ["Sydney"], "evidence": evidence}


@pytest.fixture(scope="module")
def rows():
    rng = random.Random(0)
    made = []
    for i in range(120):
        sure = rng.uniform(-3.0, 0.0)
        made.append(row(i, ("a", "b", "c")[i % 3], sure, closed_right=sure > -1.0))  # a sure model is right
    return made


def test_outcomes_are_counted_against_keep(rows):
    sure, unsure = row(0, "a", -0.2, True), row(1, "a", -2.5, False)
    assert answers_of(sure) == {"keep": "Sydney", "vote": "Sydney", "knowledge": "Canberra"}
    assert (outcome(sure, "knowledge"), outcome(unsure, "knowledge")) == (2, 0)  # win, loss
    assert outcome(sure, "vote") is None  # the vote gave keep's very answer


def test_the_fitted_policy_takes_the_route_where_it_wins(rows):
    policy = fit_policy(rows, model="fake", margin=0.1)
    assert list(policy.routes) == ["knowledge"]
    assert decide_fitted(row(0, "a", -0.2, True)["evidence"], policy)["route"] == "knowledge"
    assert decide_fitted(row(0, "a", -2.5, False)["evidence"], policy)["route"] == "keep"
    again = FittedPolicy.from_json(json.loads(json.dumps(policy.to_json())))
    assert again == policy


def test_leave_one_condition_out_decides_each_condition_with_a_policy_fitted_without_it(rows):
    table = validate(rows, lambda r: r["condition"], lambda part: fit_policy(part, model="fake", margin=0.1),
                     fit_policy(rows, model="fake", margin=2.0))  # a margin no gain clears: keep everywhere
    assert set(table) == {"a", "b", "c"}
    for tally in table.values():
        assert tally["fitted"].wins > 5 and tally["fitted"].losses <= 2
        assert (tally["rules"].wins, tally["rules"].losses) == (0, 0)


def test_a_run_folder_gives_its_calibration_rows(tmp_path, rows):
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in [*rows, {"method": "x"}]) + "\n")
    assert len(read_rows(tmp_path)) == len(rows)


def test_triage_with_a_fitted_policy_runs_every_probe_and_decides_by_it(tmp_path, rows):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(fit_policy(rows, model="fake", margin=0.1).to_json()))
    llm = reader(standard="Sydney", closed="Canberra", sure=-0.2)
    state = build_graph("triage", llm=llm, store=store_of("Sydney", "Sydney", "Sydney"), k=5, judge="score",
                        policy=str(path)).invoke({"question": "What is the capital of Australia?"})
    assert "contrast" in [e["node"] for e in state["trace"]]  # asked of a sure answer and a guess alike
    assert state["decision"]["route"] == "knowledge" and "predicted gain" in state["decision"]["why"]
    assert state["answer"] == "Canberra"


def test_an_unreadable_policy_is_one_sentence(tmp_path):
    bad = tmp_path / "policy.json"
    bad.write_text("{not json")
    graph = build_graph("triage", llm=reader(standard="Sydney", closed="Canberra"), store=store_of("Sydney"), k=5,
                        policy=str(bad))
    with pytest.raises(CausalRAGError, match="Cannot read the triage policy"):
        graph.invoke({"question": "What is the capital of Australia?"})


def test_replay_pairs_every_policy_with_standard_rag_on_the_same_records(rows):
    from causalrag.eval.calibrate import replay

    sure = {**row(0, "a", -0.2, True), "inject": 0}
    out = replay([sure], {"triage[fitted]": fit_policy(rows, model="fake", margin=0.1)}, {"q0": ["Sydney"]})
    by_method = {r["method"]: r for r in out}
    assert by_method["standard_rag"]["prediction"] == "Sydney" and by_method["standard_rag"]["misled"] == 1.0
    fitted = by_method["triage[fitted]"]
    assert (fitted["route"], fitted["prediction"]) == ("knowledge", "Canberra")
    assert (fitted["acc"], fitted["misled"]) == (1.0, 0.0)
    assert all(r["replayed"] and "seconds" not in r for r in out)


def test_fitted_thresholds_follow_the_data_and_load_as_a_rules_policy(rows, tmp_path):
    from causalrag.eval.calibrate import fit_thresholds
    from causalrag.nodes.decide import RulePolicy
    from causalrag.nodes.triage import load_policy

    fitted = fit_thresholds(rows)  # a model right from −1.0 up: the bar moves down from the hand-set −0.5
    assert -1.0 <= fitted.knowledge_confidence < -0.5
    assert fitted != RulePolicy()
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(fitted.to_json(model="fake", provenance="test rows")))
    assert load_policy(str(path)) == fitted


def test_the_calibrate_command_fits_and_validates_from_run_folders(tmp_path, rows):
    from typer.testing import CliRunner

    from causalrag.cli import app
    from causalrag.nodes.triage import load_policy

    for name, part in (("a", rows[:60]), ("b", rows[60:])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text("\n".join(json.dumps(r) for r in part) + "\n")
    out = tmp_path / "policy.json"
    result = CliRunner().invoke(app, ["calibrate", "--fit-only", "--runs", str(tmp_path / "a"), "--runs",
                                      str(tmp_path / "b"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_policy(str(out)).knowledge_confidence < -0.5  # fitted thresholds, loadable as a policy
    report = out.with_suffix(".md").read_text()
    assert "Leave one condition out" in report and "| a | 40 |" in report


def test_the_bundled_models_fitted_policy_ships_and_loads():
    from causalrag.nodes.decide import RulePolicy
    from causalrag.nodes.triage import BUNDLED_MODEL_NAME, BUNDLED_POLICY, load_policy

    policy = load_policy(str(BUNDLED_POLICY))
    assert isinstance(policy, RulePolicy)
    assert json.loads(BUNDLED_POLICY.read_text())["model"] == BUNDLED_MODEL_NAME
