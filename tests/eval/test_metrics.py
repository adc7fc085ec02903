import pytest

from causalrag.eval.metrics import containment, exact_match, f1_score, ndcg_at_k, normalize_answer, recall_at_k


def test_official_normalization():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple a day") == "apple day"


def test_exact_match_and_f1():
    assert exact_match("the Rhine.", ["Rhine"]) == 1.0
    assert f1_score("Greenwich Village", ["Greenwich Village, New York City"]) == pytest.approx(2 * 1 * 0.4 / 1.4)  # 2 of 5 gold words
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
