"""The runner end to end with the real model and embeddings (small: 2 demo questions × K ∈ {0, 2})."""

import pytest

from causalrag.eval.report import write_report
from causalrag.eval.runner import EvalConfig, run_eval


@pytest.mark.slow
def test_real_run_records_answers_cost_and_injected_evidence(tmp_path, real_llm):
    cfg = EvalConfig("demo", ["standard_rag"], inject=[0, 2], limit=2, params={"standard_rag": {"k": 3}})
    rows = run_eval(cfg, tmp_path, llm=real_llm, progress=False)
    assert len(rows) == 4 and not any(r["error"] for r in rows)
    for r in rows:
        assert r["prediction"].strip() and r["llm_calls"] == 1 and r["prompt_tokens"] > 0 and r["new_tokens"] > 0
        assert r["seconds"] > 0 and len(r["documents"]) == 3
    clean = [r for r in rows if r["inject"] == 0]
    assert all(r["recall"] > 0 for r in clean)  # the dense retriever finds a gold paragraph in each small pool
    poisoned = [r for r in rows if r["inject"] == 2]
    # misleading passages are near-copies of the gold ones, so they rank among the top 3
    assert all(r["injected_in_evidence"] >= 1 for r in poisoned)
    report = write_report(tmp_path, resamples=100)
    assert "standard_rag" in report.markdown.read_text()
