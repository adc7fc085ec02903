"""CIS scorer arithmetic, prompt forms, the p(K) cache and the w/o-p(K) ablation (fake LLM)."""

import pytest

from causalrag.prompts.cis import passage_text, query_prefix
from causalrag.tools.cis import CISScorer, PriorCache, text_key
from causalrag.tools.store import Passage
from tests.fakes import FakeLLM

DOCS = [
    Passage("Canberra", "Canberra is the capital city of Australia.").to_document(),
    Passage("Sydney", "Sydney is the largest city in Australia.").to_document(),
]


def lp(prefix: str, cont: str) -> float:
    """Prior: −len/10; conditional: the prior plus 3 when the passage names Canberra."""
    base = -len(cont) / 10
    return base if prefix == "" else base + (3.0 if "Canberra" in cont else 0.5)


@pytest.fixture
def cache(tmp_path):
    return PriorCache(tmp_path / "prior.sqlite")


def test_cis_is_conditional_minus_prior(cache):
    llm = FakeLLM(logprob=lp)
    scores = CISScorer(llm, cache=cache).score("What is the capital of Australia?", DOCS)
    for doc, s in zip(DOCS, scores, strict=True):
        k = passage_text(doc)
        assert s.logp_k == pytest.approx(-len(k) / 10)
        assert s.logp_k_given_q == pytest.approx(s.logp_k + (3.0 if "Canberra" in k else 0.5))
        assert s.cis == pytest.approx(s.logp_k_given_q - s.logp_k)
    assert scores[0].cis > scores[1].cis


def test_candidates_share_one_prefix_and_continuations_start_with_a_space(cache):
    llm = FakeLLM(logprob=lp)
    CISScorer(llm, cache=cache).score("What is the capital of Australia?", DOCS)
    conditional = [(p, c) for p, c in llm.scored if p]
    assert len({p for p, _ in conditional}) == 1
    prefix = conditional[0][0]
    assert prefix.endswith("Question: What is the capital of Australia?\nAnswer:")
    assert all(c.startswith(" ") and not c.startswith("  ") for _, c in llm.scored)
    assert [c for p, c in llm.scored if not p] == [c for _, c in conditional]  # same tokens in both terms
    assert llm.usage.calls == 4 and llm.usage.forward_passes == 1  # both terms in one batched call


def test_plain_form_uses_the_bare_question(cache):
    llm = FakeLLM(logprob=lp)
    CISScorer(llm, form="plain", cache=cache).score("  capital of   Australia? ", DOCS)
    assert {p for p, _ in llm.scored if p} == {"capital of Australia?"}
    with pytest.raises(ValueError):
        query_prefix("q", "chat")


def test_prior_is_computed_once_per_passage_and_model(cache, tmp_path):
    llm = FakeLLM(logprob=lp)
    first = CISScorer(llm, cache=cache)
    first.score("What is the capital of Australia?", DOCS)
    first.score("Which is the largest city of Australia?", DOCS + DOCS[:1])
    priors = [c for p, c in llm.scored if p == ""]
    assert len(priors) == 2 and first.prior_computed == 2 and first.prior_hits == 2
    # a new process reads the SQLite file back: nothing recomputed
    again = CISScorer(llm, cache=PriorCache(tmp_path / "prior.sqlite"))
    again.score("Another question?", DOCS)
    assert again.prior_computed == 0 and again.prior_hits == 2
    assert len([c for p, c in llm.scored if p == ""]) == 2
    # another model name is another cache entry
    other = FakeLLM(logprob=lp)
    other.name = "other-model"
    CISScorer(other, cache=cache).score("q?", DOCS)
    assert len([c for p, c in other.scored if p == ""]) == 2
    assert len(cache) == 4
    assert cache.get("fake", [text_key(passage_text(DOCS[0]))])


def test_precompute_fills_the_cache_ahead_of_queries(cache):
    llm = FakeLLM(logprob=lp)
    scorer = CISScorer(llm, cache=cache)
    assert scorer.precompute(DOCS) == 2 and scorer.precompute(DOCS) == 0
    scorer.score("q?", DOCS)
    assert len([c for p, c in llm.scored if p == ""]) == 2


def test_ablation_drops_the_prior_term(cache):
    llm = FakeLLM(logprob=lp)
    scores = CISScorer(llm, use_prior=False, cache=cache).score("What is the capital of Australia?", DOCS)
    assert all(s.logp_k is None and s.cis == s.logp_k_given_q for s in scores)
    assert not [c for p, c in llm.scored if p == ""] and len(cache) == 0


def test_prior_changes_the_order_a_familiar_passage_gets(cache):
    """A passage the model finds likely anyway (high p(K)) loses its lead once divided by p(K)."""

    def familiar(prefix: str, cont: str) -> float:
        if "Sydney" in cont:
            return -5.0 if prefix == "" else -4.0  # familiar text: high likelihood, small gain from Q
        return -30.0 if prefix == "" else -20.0  # rare text: low likelihood, large gain from Q

    llm = FakeLLM(logprob=familiar)
    with_prior = CISScorer(llm, cache=cache).score("q?", DOCS)
    without = CISScorer(llm, use_prior=False, cache=cache).score("q?", DOCS)
    assert with_prior[0].cis > with_prior[1].cis  # Canberra: +10 vs +1
    assert without[0].cis < without[1].cis  # raw p(K|Q) prefers the familiar Sydney text


def test_empty_candidate_list(cache):
    llm = FakeLLM(logprob=lp)
    assert CISScorer(llm, cache=cache).score("q?", []) == []
    assert llm.scored == []


def test_two_processes_share_one_prior_cache(tmp_path):
    """p(K) computed in another process (another replica, given the same file) is read here, not recomputed."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from causalrag.tools.cis import CISScorer, PriorCache\n"
        "from tests.fakes import FakeLLM\n"
        "from tests.tools.test_cis import DOCS, lp\n"
        "scorer = CISScorer(FakeLLM(logprob=lp), cache=PriorCache(sys.argv[1]))\n"
        "print(scorer.precompute(DOCS))\n"
    )
    shared = tmp_path / "shared" / "cis_prior.sqlite"
    done = subprocess.run(
        [sys.executable, "-c", script, str(shared)], check=True, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "2"
    llm = FakeLLM(logprob=lp)
    scorer = CISScorer(llm, cache=PriorCache(shared))
    scores = scorer.score("What is the capital of Australia?", DOCS)
    assert (scorer.prior_computed, scorer.prior_hits) == (0, 2)
    assert all(prefix for prefix, _ in llm.scored)  # only log p(K|Q) was scored here
    assert scores[0].logp_k == pytest.approx(-len(passage_text(DOCS[0])) / 10)
