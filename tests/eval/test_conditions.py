"""Dataset conditions: the answer-swap conflict, RGB pools (on a small fixture in RGB's format), the bundled
conflict set."""

from __future__ import annotations

from pathlib import Path

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.conditions import CONFLICT, load_examples, parse_spec
from causalrag.eval.metrics import containment

RGB = Path(__file__).parent / "fixtures" / "rgb_sample.jsonl"


def test_spec_options_are_typed_and_checked():
    assert parse_spec(f"rgb:{RGB}?noise=0.4&swapped=2") == (f"rgb:{RGB}", {"noise": 0.4, "swapped": 2})
    assert parse_spec("hotpotqa?swap=1") == ("hotpotqa", {"swap": 1})
    with pytest.raises(CausalRAGError, match="not one of swap, seed"):
        parse_spec("hotpotqa?noise=0.2")
    with pytest.raises(CausalRAGError, match="is not a int"):
        parse_spec("hotpotqa?swap=many")


def test_swap_gives_every_gold_paragraph_one_twin_with_one_wrong_answer():
    plain = {e.id: e for e in load_examples("hotpotqa")}
    for ex in load_examples("hotpotqa?swap=1"):
        original = plain[ex.id]
        twins = [p for p in ex.passages if p.source == "injected"]
        assert len(twins) == len(original.gold_titles) and len(ex.wrong_answers) == 1
        assert not any(containment(p.text, ex.answers) for p in twins)  # a twin never states the gold answer
        assert all(containment(f"{p.title} {p.text}", ex.wrong_answers) for p in twins)
        assert original.passages == ex.passages[: len(original.passages)]


def test_rgb_pools_mix_correct_swapped_and_noise_passages_by_count():
    first, second = load_examples(f"rgb:{RGB}?passages=5&noise=0&swapped=2")
    sources = sorted(p.source for p in first.passages)
    assert sources == ["rgb:positive"] * 3 + ["rgb:positive_wrong"] * 2
    assert first.answers == ["Port Elling", "Elling"] and first.wrong_answers == ["Vessa"]
    # the second row has one positive and no swapped passages: the rest is noise, and nothing can mislead
    assert sorted(p.source for p in second.passages) == ["rgb:negative"] * 3 + ["rgb:positive"]
    assert second.answers == ["Ilse Marr", "I. Marr"] and second.wrong_answers == []
    noisy = load_examples(f"rgb:{RGB}?passages=5&noise=0.4")[0]
    assert (
        sorted(p.source for p in noisy.passages) == ["rgb:negative"] * 2 + ["rgb:positive"] * 3
        and noisy.wrong_answers == []
    )
    assert [p.text for p in load_examples(f"rgb:{RGB}?noise=0.4")[0].passages] == [
        p.text for p in noisy.passages
    ]  # seeded


def test_rgb_bad_input_is_one_sentence(tmp_path):
    with pytest.raises(CausalRAGError, match="Cannot read"):
        load_examples(f"rgb:{tmp_path / 'missing.jsonl'}")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "positive": []}\n', encoding="utf-8")
    with pytest.raises(CausalRAGError, match="no query or answer"):
        load_examples(f"rgb:{bad}")
    with pytest.raises(CausalRAGError, match="swapped"):
        load_examples(f"rgb:{RGB}?swapped=9")


@pytest.mark.skipif(not CONFLICT.exists(), reason="the bundled conflict set is not there yet")
def test_bundled_conflict_set_marks_its_wrong_answers():
    examples = load_examples("conflict")
    assert len(examples) >= 40
    for ex in examples:
        assert ex.wrong_answers and ex.passages and ex.gold_titles
        stated = any(containment(f"{p.title} {p.text}", ex.answers) for p in ex.passages)
        assert stated or ex.answers[0].lower() in ("yes", "no")  # a yes/no is decided by facts, not stated
