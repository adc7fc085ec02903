import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.report import bootstrap, markdown_table, summarize, write_report
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

    cfg = EvalConfig("demo", ["astute"], inject=[0], limit=2, params={"astute": {"judge": "generate", "iterations": 1}})
    run_eval(cfg, tmp_path, llm=FakeLLM(default="no format at all"), embeddings=fake_embeddings, progress=False)
    report = write_report(tmp_path, resamples=100)
    assert report.fallbacks and all(row[0] == "astute" for row in report.fallbacks)
    assert "Parse fallbacks per judgment step" in report.markdown.read_text()
