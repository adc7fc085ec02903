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


def test_2wikimultihopqa_rows(tmp_path):
    row = {
        "_id": "8813f87c0bdd11eba7f7acde48001122",
        "type": "compositional",
        "question": "Who is the mother of the director of film X?",
        "context": [["Film X", ["Film X is directed by Ann Lee."]], ["Ann Lee", ["Ann Lee's mother is Mia Lee."]]],
        "supporting_facts": [["Film X", 0], ["Ann Lee", 0]],
        "evidences": [["Film X", "director", "Ann Lee"], ["Ann Lee", "mother", "Mia Lee"]],
        "answer": "Mia Lee",
    }
    (tmp_path / "dev.json").write_text(json.dumps([row]))
    (ex,) = load_dataset(f"hotpotqa:{tmp_path / 'dev.json'}")
    assert (ex.id, ex.type, ex.answers, ex.gold_titles) == (
        row["_id"],
        "compositional",
        ["Mia Lee"],
        ["Ann Lee", "Film X"],
    )
    assert [p.title for p in ex.passages] == ["Film X", "Ann Lee"]


def test_hugging_face_dict_of_lists_and_flashrag_metadata(tmp_path):
    hf = {"id": "h1", "question": "Q?", "answer": "A", "type": "bridge",
          "supporting_facts": {"title": ["T2"], "sent_id": [0]},
          "context": {"title": ["T1", "T2"], "sentences": [["One."], ["Two.", "Three."]]}}
    (tmp_path / "hf.jsonl").write_text(json.dumps(hf) + "\n")
    (ex,) = load_dataset(f"hotpotqa:{tmp_path / 'hf.jsonl'}")
    assert ex.gold_titles == ["T2"] and ex.passages[1].text == "Two. Three."
    flash = {"id": "f1", "question": "Q?", "golden_answers": ["A", "a."],
             "metadata": {"type": "comparison", "supporting_facts": hf["supporting_facts"], "context": hf["context"]}}
    (tmp_path / "f.jsonl").write_text(json.dumps(flash) + "\n")
    (ex,) = load_dataset(f"jsonl:{tmp_path / 'f.jsonl'}")
    assert ex.answers == ["A", "a."] and ex.type == "comparison" and len(ex.passages) == 2 and ex.gold_titles == ["T2"]


def test_row_without_question_is_a_clear_error(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps([{"answer": "A"}]))
    with pytest.raises(CausalRAGError, match="expected fields"):
        load_dataset(f"hotpotqa:{tmp_path / 'x.json'}")
