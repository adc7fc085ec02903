"""The ``cis`` graph end to end with the real bundled model (small N: 3 candidates)."""

import pytest

from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Passage, Store

pytestmark = pytest.mark.slow

QUESTION = "When was the author of Hamlet born?"
# The paper's Figure 1 case, written by us: the two Hamlet passages share more words with the
# question (BM25 ranks them first), only the Shakespeare passage answers it. Three unrelated passages
# make the collection large enough that words in two passages of six carry a positive idf (BM25Okapi's
# idf of a word in more than half the passages is negative, and such a word adds nothing).
PASSAGES = [
    Passage(
        "William Shakespeare",
        "William Shakespeare, the English playwright, was born in 1564 in Stratford-upon-Avon.",
    ),
    Passage(
        "Prince Hamlet",
        "Prince Hamlet, the hero of Hamlet, was born when the author of the tale set it, "
        "the old king of Denmark's son.",
    ),
    Passage(
        "Hamlet (play)", "Hamlet is a tragedy. When was Hamlet written? The author of Hamlet wrote it around 1600."
    ),
    Passage("Sourdough", "Sourdough bread rises with wild yeast and lactic bacteria kept in a starter."),
    Passage("Mount Kilimanjaro", "Kilimanjaro, a dormant volcano in Tanzania, is Africa's highest mountain."),
    Passage("Jupiter", "Jupiter is the largest planet in the Solar System, a gas giant with dozens of moons."),
]


@pytest.fixture(scope="module")
def hamlet_store():
    return Store.in_memory(PASSAGES)


def test_answering_passage_outranks_lexically_closer_ones(real_llm, hamlet_store, monkeypatch, tmp_path):
    monkeypatch.setenv("CAUSALRAG_HOME", str(tmp_path))  # an empty p(K) cache
    graph = build_graph("cis", llm=real_llm, store=hamlet_store, n_candidates=3, k=1)
    state = graph.invoke({"question": QUESTION})
    ranking = state["cis_scores"]
    by_title = {row["title"]: row for row in ranking}
    # BM25 (the first stage) puts the answering passage last; CIS puts it first
    assert by_title["William Shakespeare"]["first_stage_rank"] == 3
    assert ranking[0]["title"] == "William Shakespeare", ranking
    assert state["documents"][0].metadata["title"] == "William Shakespeare"
    assert all(row["cis"] == pytest.approx(row["logp_k_given_q"] - row["logp_k"]) for row in ranking)
    assert "1564" in state["answer"]
    rerank = state["trace"][1]
    assert rerank["node"] == "rerank_cis" and rerank["moved_into_top_k"] == 1 and rerank["prompt_tokens"] > 0
    assert rerank["prior_computed"] == 3 and rerank["prior_cached"] == 0

    # a second query over the same passages reads every p(K) from the cache
    again = graph.invoke({"question": "Who wrote Hamlet?"})
    assert again["trace"][1]["prior_computed"] == 0 and again["trace"][1]["prior_cached"] == 3
