"""Retrieval metrics of rerankers (causalrag.eval.reranking) with a fake LM on real per-question pools."""

import pytest

from causalrag.eval.datasets import load_dataset
from causalrag.eval.reranking import (
    compare,
    lm_rerankers,
    markdown_table,
    score_agreement,
    score_pools,
    similarity,
)
from causalrag.tools.cis import CISScorer, PriorCache
from tests.fakes import FakeLLM


@pytest.fixture(scope="module")
def examples():
    return load_dataset("demo")[:4]


def gold_first(examples):
    """A fake LM whose p(K|Q) is high exactly for the question's gold passages."""
    gold = {t for ex in examples for t in ex.gold_titles}
    return lambda prefix, cont: -10.0 if prefix == "" else (-1.0 if any(f" {t}:" in cont for t in gold) else -20.0)


def test_cis_ranks_gold_first_and_metrics_see_it(memory_store, examples, tmp_path):
    llm = FakeLLM(logprob=gold_first(examples))
    scorer = CISScorer(llm, cache=PriorCache(tmp_path / "p.sqlite"))
    pools = score_pools(examples, memory_store, {"similarity": similarity, **lm_rerankers(scorer)})
    assert len(pools) == 4 and all(len(p.candidates) == len(p.example.passages) for p in pools)
    results = compare(pools, ks=(1, 5))
    assert results["cis"]["recall@5"] == 1.0 and results["cis"]["ndcg@5"] == 1.0
    assert results["cis"]["questions"] == 4
    assert results["similarity"]["ndcg@1"] <= results["cis"]["ndcg@1"]
    # one LM pass serves both CIS and the ablation: 2 scored texts per candidate, not 3
    assert llm.usage.calls == 2 * sum(len(p.candidates) for p in pools)
    assert score_agreement(pools, "cis", "cis-no-prior")["pooled"] == pytest.approx(1.0)
    table = markdown_table(results)
    assert table.splitlines()[0] == "| reranker | recall@5 | ndcg@5 |" and "| cis | 1.000 | 1.000 |" in table


def test_a_reverse_reranker_scores_worse(memory_store, examples, tmp_path):
    llm = FakeLLM(logprob=lambda p, c: -gold_first(examples)(p, c))
    pools = score_pools(examples, memory_store, lm_rerankers(CISScorer(llm, cache=PriorCache(tmp_path / "p.sqlite"))))
    results = compare(pools, ks=(1,))
    assert results["cis"]["ndcg@1"] == 0.0
    assert score_agreement(pools, "cis", "cis-no-prior")["per_question"] == pytest.approx(1.0)
