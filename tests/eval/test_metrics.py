import pytest

from causalrag.eval.metrics import containment, exact_match, f1_score, ndcg_at_k, normalize_answer, recall_at_k


def test_official_normalization():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"


def test_exact_match_and_f1():
    assert exact_match("the Rhine.", ["Rhine"]) == 1.0
    assert f1_score("Greenwich Village", ["Greenwich Village, New York City"]) == pytest.approx(
        2 * 1 * 0.4 / 1.4
    )  # 2 of 5 gold words
    assert f1_score("yes it is", ["yes"]) == 0.0  # yes/no only score when identical (official rule)
    assert f1_score("no", ["no"]) == 1.0
    assert exact_match("London", ["Paris", "London"]) == 1.0


def test_containment_is_word_aligned():
    assert containment("Heath Ledger as the Joker", ["Heath Ledger"]) == 1.0
    assert containment("1889", ["188"]) == 0.0
    assert containment("anything", [""]) == 0.0


def test_retrieval_metrics():
    ranked = ["A", "x", "A", "B", "y"]
    assert recall_at_k(ranked, ["A", "B"], 2) == 0.5
    assert recall_at_k(ranked, ["A", "B"], 4) == 1.0
    assert ndcg_at_k(["A", "B"], ["A", "B"], 2) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "A"], ["A"], 2) == pytest.approx(1 / 1.584962500721156)


def test_official_normalization_edge_cases():
    # articles go only as whole words; punctuation is deleted (not spaced); whitespace squeezed
    assert normalize_answer("The Theater of an Anthem") == "theater of anthem"
    assert normalize_answer("  A.  B.  Smith ") == "b smith"  # "A" is an article once the dot is gone
    assert normalize_answer("U.S.A.") == "usa"
    assert normalize_answer("rock 'n' roll") == "rock n roll"
    assert exact_match("The North Atlantic Conference", ["the North Atlantic Conference"]) == 1.0
    assert exact_match("Yes.", ["yes"]) == 1.0 and exact_match("no", ["yes"]) == 0.0
    assert f1_score("no", ["yes"]) == 0.0 and f1_score("Yes!", ["yes"]) == 1.0
    assert f1_score("yes", ["yes sir"]) == 0.0  # the yes/no rule applies when either side is yes/no


def test_f1_by_hand():
    # prediction "3,677 seated arena" → {3677, seated, arena}; gold {3677, seated}: P=2/3, R=1 → F1=0.8
    assert f1_score("3,677 seated arena", ["3,677 seated"]) == pytest.approx(0.8)
    assert f1_score("Chief", ["Chief of Protocol"]) == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))
    assert f1_score("", ["anything"]) == 0.0


def test_containment_with_normalization():
    assert (
        containment("It was the North-Atlantic Conference.", ["the North Atlantic Conference"]) == 0.0
    )  # hyphen joins words
    assert containment("It was the North Atlantic Conference.", ["the North Atlantic Conference"]) == 1.0
    assert containment("No, they are not.", ["no"]) == 1.0 and containment("Not really", ["no"]) == 0.0
