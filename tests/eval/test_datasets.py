import json

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.datasets import load_dataset


def test_bundled_sets():
    hotpot = load_dataset("hotpotqa")
    assert len(hotpot) == 20 and all(len(e.passages) == 10 for e in hotpot)
    assert all(set(e.gold_titles) <= {p.title for p in e.passages} for e in hotpot)
    demo = load_dataset("demo")
    assert len(demo) == 8
    assert all(set(e.gold_titles) <= {p.title for p in e.passages} for e in demo)


def test_official_and_flashrag_files(tmp_path):
    row = {"_id": "q1", "question": "Q?", "answer": "A", "type": "bridge", "supporting_facts": [["T1", 0]],
           "context": [["T1", ["First.", " Second."]], ["T2", ["Other."]]]}
    (tmp_path / "h.json").write_text(json.dumps([row]))
    (ex,) = load_dataset(f"hotpotqa:{tmp_path / 'h.json'}")
    assert ex.gold_titles == ["T1"] and ex.passages[0].text == "First. Second."
    (tmp_path / "f.jsonl").write_text(json.dumps({"id": "7", "question": "Q?", "golden_answers": ["a", "b"]}) + "\n")
    (ex,) = load_dataset(f"jsonl:{tmp_path / 'f.jsonl'}")
    assert ex.answers == ["a", "b"] and ex.passages == []


def test_bad_specs_and_files(tmp_path):
    with pytest.raises(CausalRAGError, match="Unknown dataset"):
        load_dataset("squad")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(CausalRAGError, match="Cannot read dataset"):
        load_dataset(f"hotpotqa:{tmp_path / 'bad.json'}")
