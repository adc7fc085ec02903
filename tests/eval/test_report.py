import json
import re
import warnings

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.report import (
    CONDITION_GROUPS,
    ROUTES,
    bootstrap,
    markdown_table,
    mcnemar_exact,
    paired_markdown,
    paired_rows,
    paired_summary,
    summarize,
    write_paired_report,
    write_report,
)
from causalrag.eval.runner import EvalConfig, run_eval
from tests.fakes import FakeLLM


def row(method, k, acc, seconds, calls, qid):
    return {"key": f"{method}|{k}|{qid}", "method": method, "inject": k, "em": acc, "f1": acc, "acc": acc,
            "recall": None if method == "no_rag" else 0.5, "ndcg": None, "misled": None if k == 0 else 1 - acc,
            "llm_calls": calls, "prompt_tokens": 10, "new_tokens": 3, "seconds": seconds, "error": None}


def test_bootstrap_interval():
    constant = bootstrap([1.0] * 10)
    assert constant.mean == constant.low == constant.high == 1.0 and constant.n == 10
    half = bootstrap([0.0, 1.0] * 20, seed=1)
    assert half.mean == 0.5 and 0.3 < half.low < 0.5 < half.high < 0.7
    assert bootstrap([None, None]).mean is None and bootstrap([None, 1.0]).n == 1


def test_summary_means_and_ratios_to_standard_rag():
    rows = [row("standard_rag", 0, a, 2.0, 1, i) for i, a in enumerate([1, 0, 1, 1])]
    rows += [row("slow", 0, a, 6.0, 4, i) for i, a in enumerate([1, 1, 1, 1])]
    rows += [row("no_rag", 8, 0, 1.0, 1, i) for i in range(4)]
    summary = {(e["method"], e["inject"]): e for e in summarize(rows)}
    std, slow = summary[("standard_rag", 0)], summary[("slow", 0)]
    assert std["acc"].mean == 0.75 and std["recall"].mean == 0.5
    assert slow["seconds_ratio"] == pytest.approx(3.0) and slow["llm_calls_ratio"] == pytest.approx(4.0)
    closed = summary[("no_rag", 8)]
    assert closed["seconds_ratio"] is None and closed["recall"].mean is None and closed["misled"].mean == 1.0
    table = markdown_table(list(summary.values()))
    assert "| slow | 0 | 4 | 1.00 (1.00–1.00) |" in table and "| 3.00 | 4.00 |" in table


def test_report_on_a_fake_run_writes_table_csv_and_real_pngs(tmp_path, fake_embeddings):
    cfg = EvalConfig("demo", ["no_rag", "standard_rag"], inject=[0, 2], limit=4)
    run_eval(cfg, tmp_path, llm=FakeLLM(default="Heath Ledger"), embeddings=fake_embeddings, progress=False)
    report = write_report(tmp_path, resamples=200)
    text = report.markdown.read_text()
    assert "| method | K | n | EM | F1 | Acc |" in text and "| standard_rag | 2 | 4 |" in text
    assert report.csv.read_text().splitlines()[0].startswith("method,inject,n,errors,em,em_low,em_high")
    assert len(report.csv.read_text().splitlines()) == 1 + 4
    for png in report.plots:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".jsonl"] == ["results.jsonl"]


def test_report_of_an_empty_folder_says_what_to_do(tmp_path):
    with pytest.raises(CausalRAGError, match="causalrag eval"):
        write_report(tmp_path)


def test_fallbacks_are_counted_per_judgment_step(tmp_path, fake_embeddings):
    """A step whose output never parses falls back on every run: the report gives its rate per step."""
    from causalrag.eval.report import fallback_rows
    from causalrag.eval.runner import _fallback_steps

    trace = [{"node": "retrieve"}, {"node": "select", "select_fallback": 1, "marker_missing": 1},
             {"node": "propose", "confidence_fallbacks": 0}, {"node": "select", "select_fallback": 0}]
    assert _fallback_steps(trace) == {"select": {"runs": 2, "fallbacks": 1}, "propose": {"runs": 1, "fallbacks": 0}}
    rows = [{"method": "astute", "fallback_steps": _fallback_steps(trace)}] * 2
    assert fallback_rows(rows) == [["astute", "select", "4", "2", "50%"], ["astute", "propose", "2", "0", "0%"]]

    cfg = EvalConfig(
        "demo",
        ["astute"],
        inject=[0],
        limit=2,
        params={"astute": {"judge": "generate", "iterations": 1}},
    )
    run_eval(cfg, tmp_path, llm=FakeLLM(default="no format at all"), embeddings=fake_embeddings, progress=False)
    report = write_report(tmp_path, resamples=100)
    assert report.fallbacks and all(row[0] == "astute" for row in report.fallbacks)
    assert "Parse fallbacks per judgment step" in report.markdown.read_text()


# --------------------------------------------------------------------------- paired comparison with a baseline
def result(method, qid, acc, *, condition="", misled=None, error=None, k=0):
    return {"key": f"{method}|K={k}|{qid}", "method": method, "question_id": qid, "inject": k, "condition": condition,
            "acc": acc, "misled": misled, "f1": acc, "error": error}


def duel(outcomes, *, method="robust", condition="", prefix="q"):
    """Rows of ``method`` and standard_rag from (method right, baseline right) pairs, one question each."""
    rows = []
    for i, (mine, theirs) in enumerate(outcomes):
        qid = f"{prefix}{i}"
        rows += [result(method, qid, float(mine), condition=condition),
                 result("standard_rag", qid, float(theirs), condition=condition)]
    return rows


def _run(folder, rows):
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def cell(summary, method="robust", condition="all", k=0):
    [entry] = [e for e in summary if (e["method"], e["condition"], e["inject"]) == (method, condition, k)]
    return entry


def test_mcnemar_exact_p_is_the_two_sided_binomial_test_of_wins_against_losses():
    # by hand: 2 · P(X ≤ 1) for X ~ Bin(8, 1/2) = 2 · (1 + 8) / 256,
    # and 2 · P(X ≤ 2) for X ~ Bin(12, 1/2) = 2 · (1 + 12 + 66) / 4096
    assert mcnemar_exact(7, 1) == pytest.approx(18 / 256) and mcnemar_exact(1, 7) == pytest.approx(18 / 256)
    assert mcnemar_exact(10, 2) == pytest.approx(158 / 4096)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0


def test_known_wins_and_losses_give_the_delta_its_interval_and_p():
    # 10 wins, 2 losses, 4 both right, 4 both wrong: ΔAcc = (10 − 2) / 20
    rows = duel([(1, 0)] * 10 + [(0, 1)] * 2 + [(1, 1)] * 4 + [(0, 0)] * 4)
    e = cell(paired_summary(rows))
    assert (e["n"], e["wins"], e["losses"]) == (20, 10, 2)
    assert e["acc"] == pytest.approx(14 / 20) and e["base_acc"] == pytest.approx(6 / 20)
    assert e["d_acc"].mean == pytest.approx(0.4) and 0 < e["d_acc"].low < 0.4 < e["d_acc"].high <= 1
    assert e["p"] == pytest.approx(158 / 4096)
    reverse = cell(paired_summary(rows, "robust"), method="standard_rag")  # the other way round: the mirror image
    assert (reverse["wins"], reverse["losses"], reverse["p"]) == (2, 10, e["p"])
    assert reverse["d_acc"].mean == pytest.approx(-0.4) and reverse["d_acc"].high < 0


def test_misled_is_compared_where_both_define_it():
    rows = duel([(1, 0)] * 4)
    for r, m in zip(rows, [0.0, 1.0, 0.0, 1.0, None, 1.0, 0.0, 0.0], strict=True):  # pairs: (0,1) (0,1) (None,1) (0,0)
        r["misled"] = m
    e = cell(paired_summary(rows))
    assert e["n_misled"] == 3 and e["misled"] == 0.0 and e["base_misled"] == pytest.approx(2 / 3)
    assert e["d_misled"].mean == pytest.approx(-2 / 3) and e["d_misled"].high <= 0
    none = cell(paired_summary(duel([(1, 0)] * 3)))
    assert none["n_misled"] == 0 and none["misled"] is None and none["d_misled"].text() == "–"


def test_pairing_keeps_only_questions_both_answered():
    rows = duel([(1, 0), (0, 0), (1, 1)])
    rows += [result("robust", "only-mine", 1.0), result("robust", "q0", 1.0, k=4),  # no baseline partner
             result("standard_rag", "only-theirs", 0.0)]
    e = cell(paired_summary(rows))
    assert e["n"] == 3 and e["wins"] == 1 and e["unpaired"] == (2, 1)
    assert [(x["inject"], x["condition"]) for x in paired_summary(rows)] == [(0, "all")]
    text = paired_markdown(paired_summary(rows), "standard_rag", resamples=2000)
    assert "robust: 2 of its results, 1 of standard_rag's" in text


def test_errors_count_as_wrong_answers():
    rows = duel([(1, 1), (1, 0), (1, 0)])
    rows[0]["error"] = "RuntimeError: boom"  # robust raised on q0 (its acc field says 1, the answer is still wrong)
    rows[5]["error"] = "ValueError: bad"  # the baseline raised on q2
    e = cell(paired_summary(rows))
    assert (e["acc"], e["base_acc"]) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert (e["wins"], e["losses"], e["errors"], e["base_errors"]) == (2, 1, 1, 1)
    assert paired_rows([e])[0][-1] == "1/1"


def test_conditions_and_pooled_groups():
    suite = [c for members in CONDITION_GROUPS.values() for c in members]
    rows = []
    for i, condition in enumerate(suite):  # condition i: the method wins i of its 3 questions (baseline always wrong)
        rows += duel([(j < i % 4, 0) for j in range(3)], condition=condition, prefix=condition)
    summary = paired_summary(rows)
    assert [e["condition"] for e in summary] == [*suite, "clean", "conflict", "worst_case", "all"]
    wins = {c: i % 4 for i, c in enumerate(suite)}
    for group, members in CONDITION_GROUPS.items():
        e = cell(summary, condition=group)
        assert e["n"] == 3 * len(members) and e["wins"] == sum(wins[c] for c in members)
        assert e["d_acc"].mean == pytest.approx(sum(wins[c] for c in members) / (3 * len(members)))
    assert cell(summary)["n"] == 3 * len(suite) and cell(summary)["wins"] == sum(wins.values())
    # a group is only reported when all its conditions are there
    partial = paired_summary([r for r in rows if r["condition"] != "no_relevant"])
    assert "worst_case" not in {e["condition"] for e in partial} and "clean" in {e["condition"] for e in partial}


def test_results_without_a_condition_only_pool_into_all():
    rows = duel([(1, 0), (0, 0)])
    del rows[0]["condition"], rows[1]["condition"]  # runs written before conditions were recorded
    rows += duel([(1, 1)], condition="", prefix="other")
    assert [(e["condition"], e["n"]) for e in paired_summary(rows)] == [("all", 3)]


def test_degenerate_samples_give_point_intervals_without_warnings_or_nan(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = cell(paired_summary(duel([(1, 0)] * 5)))  # every difference +1
        one = cell(paired_summary(duel([(0, 1)])))  # n = 1
        tied = cell(paired_summary(duel([(1, 1), (0, 0)])))  # no discordant question
        written = write_paired_report(_run(tmp_path, duel([(1, 0)] * 5 + [(0, 1)])))
    assert (same["d_acc"].low, same["d_acc"].high) == (1.0, 1.0)
    assert same["d_acc"].text(signed=True) == "+1.00 [+1.00, +1.00]"
    assert (one["d_acc"].mean, one["d_acc"].low, one["d_acc"].high) == (-1.0, -1.0, -1.0) and one["p"] == 1.0
    assert tied["d_acc"].text(signed=True) == "+0.00 [+0.00, +0.00]" and tied["p"] == 1.0
    assert "nan" not in written.csv.read_text().lower() and "nan" not in written.markdown.read_text().lower()


def test_paired_summary_is_deterministic():
    rows = duel([(1, 0), (0, 1), (1, 1), (0, 0), (1, 0)] * 8)
    first, again = paired_summary(rows), paired_summary(rows)
    assert paired_rows(first) == paired_rows(again)
    assert cell(first)["d_acc"] == cell(again)["d_acc"]


@pytest.mark.parametrize(
    ("rows", "against", "message"),
    [
        (duel([(1, 0)]), "astute", "The baseline 'astute' has no results in the run(s)"),
        ([result("standard_rag", "q0", 1.0)], "standard_rag", "hold only the baseline 'standard_rag'"),
        ([result("robust", "q0", 1.0), result("standard_rag", "q1", 1.0)], "standard_rag",
         "robust and the baseline standard_rag share no question"),
        ([result("robust", "q0", 1.0, k=2), result("standard_rag", "q0", 1.0)], "standard_rag", "share no question"),
    ],
)
def test_paired_summary_refuses_with_one_sentence(rows, against, message):
    with pytest.raises(CausalRAGError) as caught:
        paired_summary(rows, against)
    text = str(caught.value)
    assert message in text and text.endswith(".") and not re.search(r"\.\s+[A-Z]", text)  # one sentence


def test_paired_report_writes_markdown_csv_and_a_png(tmp_path):
    rows = duel([(1, 0), (1, 1), (0, 1)], condition="clean_single")
    rows.append(result("other", "q0", 1.0, condition="clean_single"))
    report = write_paired_report(_run(tmp_path, rows))
    text = report.markdown.read_text()
    assert "| robust | 0 | clean_single | 3 | 0.67 | 0.67 | +0.00 [" in text
    assert "| other | 0 | all | 1 | 0.00 | 1.00 | +1.00 [" in text
    assert "other: 0 of its results, 2 of standard_rag's" in text
    lines = report.csv.read_text().splitlines()
    assert lines[0].startswith("method,inject,condition,n,base_acc,acc,d_acc,d_acc_low,d_acc_high")
    assert len(lines) == 1 + 2 * 2  # robust and other: clean_single and all
    data = report.plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def routed(method, qid, prediction, *, k=0, route=None, path=("retrieve", "answer"), error=None):
    """A result row as the runner writes it now (path, route, decision)."""
    decision = None if route is None else {"route": route, "shape": "conflict", "believed": None, "why": "w"}
    return {**row(method, k, 1.0, 1.0, 1, qid), "key": f"{method}|K={k}|{qid}", "question_id": str(qid),
            "prediction": prediction, "path": list(path), "route": route, "decision": decision, "evidence": {},
            "error": error}


def old(method, qid, prediction, k=0):
    """A result row of a run written before paths and routes were recorded."""
    return {**row(method, k, 1.0, 1.0, 1, qid), "key": f"{method}|K={k}|{qid}", "question_id": str(qid),
            "prediction": prediction}


def test_route_shares_per_routed_method_and_k():
    from causalrag.eval.report import NO_ROUTE, route_counts, route_table

    rows = [routed("triage", i, "x", route=r) for i, r in enumerate(["keep", "keep", "vote", "focus"])]
    rows += [routed("triage", 9, "", error="RuntimeError: boom"), routed("standard_rag", 0, "x"), old("cis", 0, "x")]
    rows += [routed("triage", 0, "x", k=4, route="knowledge")]
    counts = route_counts(rows)
    assert set(counts) == {("triage", 0), ("triage", 4)}  # methods that never routed have no row
    assert counts[("triage", 0)] == {"keep": 2, "vote": 1, "focus": 1, NO_ROUTE: 1}
    columns, table = route_table(rows)
    assert columns == ["method", "K", "n", "keep", "vote", "knowledge", "focus", NO_ROUTE]
    assert table == [["triage", "0", "5", "2 (40%)", "1 (20%)", "0 (0%)", "1 (20%)", "1 (20%)"],
                     ["triage", "4", "1", "0 (0%)", "0 (0%)", "1 (100%)", "0 (0%)", "0 (0%)"]]
    assert route_table([old("cis", 0, "x"), routed("standard_rag", 0, "x")]) == (["method", "K", "n", *ROUTES], [])


def test_agreement_pairs_the_same_question_and_k():
    from causalrag.eval.report import agreement, agreement_rows

    rows = [routed("a", 0, "The Eiffel Tower."), routed("a", 1, "Paris"), routed("a", 2, "1889"),
            routed("a", 3, "", error="RuntimeError: x"), routed("a", 0, "Paris", k=4)]
    rows += [old("b", 0, "eiffel tower"), old("b", 1, "London"), old("b", 2, "1889"), old("b", 3, ""),
             old("b", 5, "only b")]
    rows += [routed("c", 0, "x", k=4)]  # shares no (question, K) with b
    assert agreement(rows) == [{"a": "a", "b": "b", "same": 2, "shared": 4},
                               {"a": "a", "b": "c", "same": 0, "shared": 1}]
    assert agreement_rows(rows) == [["a", "b", "2 / 4 (50%)"], ["a", "c", "0 / 1 (0%)"]]
    assert agreement([routed("a", 0, "x")]) == [] and agreement([{"method": "a", "inject": 0}]) == []


def test_common_paths_keep_the_three_most_frequent():
    from causalrag.eval.report import common_paths, path_rows

    long_path = ("retrieve", "assess", "vote", "answer")
    rows = [routed("triage", i, "x", path=long_path) for i in range(3)]
    rows += [routed("triage", 10 + i, "x", path=p) for i, p in enumerate(
        [("retrieve", "answer"), ("retrieve", "answer"), ("retrieve", "focus"), ("retrieve",), ()])]
    rows += [old("cis", 0, "x")]
    top = common_paths(rows)
    assert top == {"triage": [("retrieve → assess → vote → answer", 3), ("retrieve → answer", 2),
                              ("retrieve → focus", 1)]}
    assert path_rows(rows)[0] == ["triage", "retrieve → assess → vote → answer", "3"]
    assert common_paths([old("cis", 0, "x")]) == {}


def test_report_markdown_has_routes_agreement_and_paths(tmp_path):
    rows = [routed("triage", i, a, route=r, path=("retrieve", "assess", r)) for i, (a, r) in
            enumerate([("Paris", "keep"), ("Rome", "vote"), ("Oslo", "keep")])]
    rows += [routed("standard_rag", i, a) for i, a in enumerate(["Paris", "Milan", "Oslo"])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = write_report(tmp_path, resamples=50)
    text = report.markdown.read_text()
    assert "Routes taken" in text and "| triage | 0 | 3 | 2 (67%) | 1 (33%) | 0 (0%) | 0 (0%) |" in text
    assert "Answer agreement" in text and "| triage | standard_rag | 2 / 3 (67%) |" in text
    assert "Most common node paths" in text and "| triage | retrieve → assess → keep | 2 |" in text
    assert "| standard_rag | retrieve → answer | 3 |" in text
    assert report.routes[1] and report.agreement and report.paths


def test_report_of_an_old_run_skips_the_new_sections(tmp_path):
    rows = [old(m, i, "Paris") for m in ("no_rag", "standard_rag") for i in range(3)]
    for r in rows:
        del r["question_id"]  # the oldest rows: pairing needs question_id, so agreement is left out too
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = write_report(tmp_path, resamples=50)
    text = report.markdown.read_text()
    assert "Routes taken" not in text and "Answer agreement" not in text and "Most common node paths" not in text
    assert report.routes[1] == [] and report.agreement == [] and report.paths == []
    assert "| standard_rag | 0 | 3 |" in text
