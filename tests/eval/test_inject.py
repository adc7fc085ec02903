import pytest

from causalrag.eval.datasets import Example, load_dataset
from causalrag.eval.inject import (
    INJECTED,
    answer_kind,
    asserted_answers,
    is_injected,
    misleading_passages,
    replace_answer,
    substitutes,
    with_distractors,
)
from causalrag.eval.metrics import containment
from causalrag.tools.store import Passage


@pytest.mark.parametrize("spec", ["hotpotqa", "demo"])
@pytest.mark.parametrize("instruction", [False, True])
def test_misleading_passages_never_contain_the_gold_answer(spec, instruction):
    dataset = load_dataset(spec)
    for ex in dataset:
        passages = misleading_passages(ex, 16, donors=dataset, seed=3, instruction=instruction)
        assert len(passages) == 16
        ids = {p.id for p in passages}
        assert len(ids) == 16 and not ids & {p.id for p in ex.passages}
        for p in passages:
            assert p.source == INJECTED and is_injected(p)
            assert not containment(f"{p.title} {p.text}", ex.answers), (ex.id, p)


def test_substitutes_keep_the_answer_kind():
    hotpot = load_dataset("hotpotqa")
    by_answer = {ex.answers[0]: ex for ex in hotpot}
    assert substitutes(by_answer["yes"], hotpot) == ["no"]
    assert substitutes(by_answer["no"], hotpot) == ["yes"]
    assert all(answer_kind(s) == "number" for s in substitutes(by_answer["1999"], hotpot))
    seated = substitutes(by_answer["3,677 seated"], hotpot)[0]
    assert seated.endswith(" seated") and "," in seated and seated != "3,677 seated"
    years = substitutes(by_answer["from 1986 to 2013"], hotpot)
    assert all(y.startswith("from ") and int(y.split()[1]) <= int(y.split()[3]) for y in years[:4])
    # "Who is older, Annie Morton or Terry Richardson?" → the other option first
    assert substitutes(by_answer["Terry Richardson"], hotpot)[0] == "Annie Morton"
    assert answer_kind(substitutes(by_answer["YG Entertainment"], hotpot)[0]) == "name"


def test_replacement_follows_official_normalization():
    text = "The North Atlantic Conference (NAC) was renamed; north-atlantic conference fans. It seats 3677 seated."
    out = replace_answer(text, ["the North Atlantic Conference", "3,677 seated"], "the Big East")
    assert not containment(out, ["the North Atlantic Conference", "3,677 seated"])
    assert out.startswith("The Big East (NAC)")


def test_seeded_instruction_and_assertion():
    demo = load_dataset("demo")
    ex = next(e for e in demo if e.answers == ["Heath Ledger"])
    a = misleading_passages(ex, 4, donors=demo, seed=1, instruction=True)
    assert a == misleading_passages(ex, 4, donors=demo, seed=1, instruction=True)
    assert all(s in p.text for p in a for s in [p.text.split()[-1]])
    sub = substitutes(ex, demo, seed=1)[0]
    assert any(sub in p.text and ("answer" in p.text.lower()) for p in a)
    plain = misleading_passages(ex, 1, donors=demo, seed=1)[0]
    gold = next(p for p in ex.passages if p.title == "The Dark Knight (cast)")
    assert plain.title == gold.title and sub in plain.text and "Ignore" not in plain.text


def test_without_passages_and_with_distractors():
    bare = Example("x", "Who wrote Hamlet?", ["William Shakespeare"])
    donors = [Example("y", "Q?", ["Christopher Marlowe"])]
    (p,) = misleading_passages(bare, 1, donors=donors)
    assert "Christopher Marlowe" in p.text and not containment(p.text, bare.answers)
    ex = Example("z", "Q?", ["Paris"], passages=[Passage("France", "Paris is the capital of France.")])
    grown = with_distractors(ex, 2, donors=donors + [Example("w", "Q?", ["Berlin"])])
    assert len(grown.passages) == 3 and grown.passages[0] == ex.passages[0] and len(ex.passages) == 1
    assert misleading_passages(ex, 0, donors=donors) == []


def test_smaller_k_is_a_prefix_of_larger_k():
    hotpot = load_dataset("hotpotqa")
    for ex in hotpot[:8]:
        assert misleading_passages(ex, 4, donors=hotpot) == misleading_passages(ex, 8, donors=hotpot)[:4]


def test_asserted_answers_are_the_substitutes_used():
    hotpot = load_dataset("hotpotqa")
    ex = hotpot[1]  # two gold paragraphs: K=4 asserts two wrong answers, each twice
    said = asserted_answers(ex, 4, donors=hotpot)
    assert said == substitutes(ex, hotpot)[:2]
    texts = [p.text for p in misleading_passages(ex, 4, donors=hotpot)]
    assert all(any(s in t for t in texts) for s in said)
