"""Astute RAG node helpers: choosing among candidates, fallback grouping, source labels."""

from langchain_core.documents import Document

from causalrag.nodes.astute import labelled, match_candidate, members, most_reliable, one_group_per_passage

CANDIDATES = [
    {"sources": ["ext 3"], "answer": "1901", "confidence": 0.9},
    {"sources": ["ext 1", "ext 2", "int 1"], "answer": "March 1889", "confidence": 0.9},
    {"sources": ["ext 4"], "answer": "Paris", "confidence": 0.2},
]


def test_marked_answer_must_name_a_candidate():
    assert match_candidate("1889", CANDIDATES) == 1  # contained in "March 1889"
    assert match_candidate("paris.", CANDIDATES) == 2
    assert match_candidate("Oslo", CANDIDATES) == -1  # e.g. copied from the prompt's example
    assert match_candidate(None, CANDIDATES) == -1
    assert match_candidate("", CANDIDATES) == -1


def test_exact_match_wins_over_containment():
    cands = [{"sources": ["ext 1"], "answer": "1889 World's Fair"}, {"sources": ["ext 2"], "answer": "1889"}]
    assert match_candidate("1889", cands) == 1


def test_most_reliable_breaks_confidence_ties_by_support():
    assert most_reliable(CANDIDATES) == 1
    assert most_reliable([]) == -1
    assert most_reliable([{"sources": ["ext 1"], "confidence": None}]) == 0


def test_fallback_grouping_and_members_keep_labels():
    pool = [labelled(Document(id="a", page_content=" ".join(["word"] * 40), metadata={"title": "A"}), "ext 1"),
            Document(id="internal-1", page_content="memory text", metadata={"label": "int 1"})]
    groups = one_group_per_passage(pool)
    assert [g["sources"] for g in groups] == [["ext 1"], ["int 1"]]
    assert len(groups[0]["claim"].split()) == 20
    assert members({"sources": ["int 1", "ext 9", "ext 1"]}, pool) == [pool[1], pool[0]]


def test_labelled_copies_and_leaves_the_retrieved_document_alone():
    original = Document(id="x", page_content="t", metadata={"title": "T", "score": 0.5})
    copy = labelled(original, "ext 2")
    assert copy.metadata == {"title": "T", "score": 0.5, "label": "ext 2"} and copy.id == "x"
    assert "label" not in original.metadata
