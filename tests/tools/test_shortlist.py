"""The shortlist normalizer (causalrag.tools.shortlist) on a tiny fake output layer, then on the real model (slow)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from causalrag.errors import CausalRAGError
from causalrag.tools.shortlist import Shortlist, derive, quantize_q8_0, shortlist_wanted

VOCAB, WIDTH = 50, 8


@pytest.fixture()
def layer():
    generator = torch.Generator().manual_seed(0)
    weight = torch.randn(VOCAB, WIDTH, generator=generator) * 2
    hidden = torch.randn(6, WIDTH, generator=generator)
    return weight, hidden


def full_logprob(weight, hidden, token, softcap=None):
    logits = hidden @ weight.T
    if softcap:
        logits = torch.tanh(logits / softcap) * softcap
    return float(torch.log_softmax(logits, dim=-1)[token])


def test_the_whole_vocabulary_as_shortlist_gives_the_full_softmax(layer):
    weight, hidden = layer
    rows = [[3, 7, 7, 41, 0, 12, 9]]
    where = [(0, p) for p in range(1, 7)]
    shortlist = Shortlist(range(VOCAB), lambda ids: weight[torch.as_tensor(ids)])
    got = shortlist.logprobs(hidden, rows, where)
    want = [full_logprob(weight, h, rows[0][p]) for h, (_, p) in zip(hidden, where, strict=True)]
    assert got == pytest.approx(want, abs=1e-5)


def test_softcapping_is_applied_before_the_normalizer(layer):
    weight, hidden = layer
    shortlist = Shortlist(range(VOCAB), lambda ids: weight[torch.as_tensor(ids)], softcap=3.0)
    got = shortlist.logprobs(hidden[:1], [[1, 2]], [(0, 1)])
    assert got == pytest.approx([full_logprob(weight, hidden[0], 2, softcap=3.0)], abs=1e-5)


def test_scored_and_earlier_row_tokens_join_the_normalizer_and_nothing_else(layer):
    weight, hidden = layer
    fixed = [0, 1, 2, 3, 4]
    rows = [[1, 30, 2, 44], [1, 2, 20]]  # 30, 44 and 20 are outside the fixed shortlist
    where = [(0, 1), (0, 3), (1, 2)]
    shortlist = Shortlist(fixed, lambda ids: weight[torch.as_tensor(ids)])
    got = shortlist.logprobs(hidden[:3], rows, where)
    for value, h, (r, p) in zip(got, hidden[:3], where, strict=True):
        subset = sorted(set(fixed) | set(rows[r][: p + 1]))  # 44 is not in row 1; 30 only up to where row 0 reached it
        logits = h @ weight.T
        assert value == pytest.approx(float(logits[rows[r][p]] - torch.logsumexp(logits[subset], 0)), abs=1e-5)
        assert value >= full_logprob(weight, h, rows[r][p]) - 1e-6  # a sub-sum: never below the full log-prob
        assert np.isfinite(value)


def test_logits_are_exact_for_any_ids(layer):
    weight, hidden = layer
    shortlist = Shortlist([0, 1], lambda ids: weight[torch.as_tensor(ids)])
    assert shortlist.logits(hidden[:2], [5, 49]) == pytest.approx((hidden[:2] @ weight[[5, 49]].T).numpy(), abs=1e-5)


def test_derive_ranks_by_mean_probability_and_breaks_ties_by_id():
    assert derive(np.array([0.1, 0.3, 0.3, 0.05, 0.25]), size=4).tolist() == [1, 2, 4, 0]


def test_q8_0_quantization_rounds_each_block_to_its_grid():
    x = torch.linspace(-3, 5, 64).reshape(1, 64)
    q = quantize_q8_0(x)
    for block in range(2):
        part, got = x[0, block * 32 : (block + 1) * 32], q[0, block * 32 : (block + 1) * 32]
        scale = float(torch.tensor(float(part.abs().max()) / 127).to(torch.float16))
        assert torch.allclose(got / scale, torch.round(got / scale), atol=1e-3)  # on the grid
        assert float((got - part).abs().max()) <= scale  # within a step


@pytest.mark.parametrize(
    ("value", "wanted"), [(None, False), ("1", True), ("on", True), ("0", False), ("off", False), ("False", False)]
)
def test_the_switch_reads_causalrag_shortlist(monkeypatch, value, wanted):
    if value is None:
        monkeypatch.delenv("CAUSALRAG_SHORTLIST", raising=False)
    else:
        monkeypatch.setenv("CAUSALRAG_SHORTLIST", value)
    assert shortlist_wanted() is wanted
    assert shortlist_wanted(False) is False and shortlist_wanted(True) is True  # a backend's argument wins


def test_a_bad_switch_value_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("CAUSALRAG_SHORTLIST", "maybe")
    with pytest.raises(CausalRAGError, match="CAUSALRAG_SHORTLIST"):
        shortlist_wanted()


# --------------------------------------------------------------------------- the real model
PROMPTS = [
    (
        "Passage: The Eiffel Tower was completed in 1889 for the World's Fair.\n"
        "Question: When was it completed?\nAnswer:",
        [" 1889", " 1925", " in 1889, for the World's Fair", " a yellow banana"],
    ),
    ("Question: Who wrote Hamlet?\nAnswer:", [" William Shakespeare", " Christopher Marlowe", " Shakespeare"]),
    ("The chemical symbol for gold is", [" Au", " Ag", " the Latin word aurum"]),
]


def both_ways(llm, score):
    """``score(llm)`` with the shortlist, then with the full softmax (one instance: its attribute is the switch)."""
    shortlist = llm.shortlist
    assert shortlist is not None, "the fixture turns the shortlist on"
    try:
        llm.clear_cache()
        on = score(llm)
        llm.shortlist = None
        llm.clear_cache()
        return on, score(llm)
    finally:
        llm.shortlist = shortlist


@pytest.fixture(scope="module", params=["transformers", "llamacpp"])
def scoring_llm(request):
    if request.param == "llamacpp":
        pytest.importorskip("llama_cpp")
        from causalrag.tools.backends.llamacpp import LlamaCppLLM

        return LlamaCppLLM(n_ctx=2048, shortlist=True)
    from causalrag.tools.backends.transformers import TransformersLLM

    return TransformersLLM(shortlist=True)


@pytest.mark.slow
def test_shortlist_logprobs_stay_near_the_full_softmax_and_choose_alike(scoring_llm):
    prefixes = [p for p, options in PROMPTS for _ in options]
    continuations = [o for _, options in PROMPTS for o in options]
    on, off = both_ways(scoring_llm, lambda llm: llm.token_logprobs(prefixes, continuations))
    deltas = [a - b for x, y in zip(on, off, strict=True) for a, b in zip(x, y, strict=True)]
    assert all(-1e-3 <= d <= 0.5 for d in deltas)  # a sub-sum normalizer: never lower, and close
    assert sum(deltas) / len(deltas) < 0.05
    on, off = both_ways(scoring_llm, lambda llm: llm.choose([p for p, _ in PROMPTS], [o for _, o in PROMPTS]))
    assert [c.best for c in on] == [c.best for c in off]
    on, off = both_ways(
        scoring_llm, lambda llm: llm.yes_probability(["Is Paris in France? Answer:", "Is the sky green? Answer:"])
    )
    assert on == pytest.approx(off, abs=1e-4)  # the normalizer cancels: exact up to arithmetic


@pytest.mark.slow
def test_the_switch_turns_the_shortlist_off(monkeypatch):
    pytest.importorskip("llama_cpp")
    from causalrag.tools.backends.llamacpp import LlamaCppLLM

    monkeypatch.delenv("CAUSALRAG_SHORTLIST", raising=False)
    assert LlamaCppLLM(n_ctx=512).shortlist is None  # off by default
    monkeypatch.setenv("CAUSALRAG_SHORTLIST", "0")
    assert LlamaCppLLM(n_ctx=512).shortlist is None
    monkeypatch.setenv("CAUSALRAG_SHORTLIST", "1")
    assert LlamaCppLLM(n_ctx=512).shortlist is not None
