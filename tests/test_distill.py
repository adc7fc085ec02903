"""Distillation of CIS into a cross-encoder (paper §4.2): training mechanics, labels, the CLI end to end."""

import json

import pytest
from typer.testing import CliRunner

from causalrag.tools.cis import CISScorer, PriorCache
from causalrag.tools.cross_encoder import (
    CHECKPOINT_FILE,
    LABELS_FILE,
    DistillConfig,
    DistilledReranker,
    TrainingPair,
    distill,
    read_questions,
    teacher_pairs,
)
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM

PASSAGES = [
    Passage("Canberra", "Canberra is the capital city of Australia."),
    Passage("Sydney", "Sydney is the largest city in Australia."),
    Passage("Ottawa", "Ottawa is the capital city of Canada."),
    Passage("Toronto", "Toronto is the largest city in Canada."),
]
PAIRS = [
    TrainingPair("What is the capital of Australia?", " Canberra: Canberra is the capital city of Australia.", 6.0),
    TrainingPair("What is the capital of Australia?", " Sydney: Sydney is the largest city in Australia.", 1.0),
    TrainingPair("What is the capital of Canada?", " Ottawa: Ottawa is the capital city of Canada.", 5.0),
    TrainingPair("What is the capital of Canada?", " Toronto: Toronto is the largest city in Canada.", -1.0),
]
TINY = DistillConfig(epochs=1, batch_size=2, max_length=32, seed=3)


def test_distill_saves_a_reranker_that_loads_and_scores(tmp_path):
    reranker, losses = distill(PAIRS, tmp_path, config=TINY, progress=False)
    assert len(losses) == 1 and losses[0] > 0
    loaded = DistilledReranker.load(tmp_path)
    docs = [p.to_document() for p in PASSAGES[:2]]
    scores = loaded.score("What is the capital of Australia?", docs)
    assert scores == pytest.approx(reranker.score("What is the capital of Australia?", docs), abs=1e-5)
    assert loaded.mean == pytest.approx(2.75)  # labels are standardized; scores come back on the CIS scale
    meta = json.loads((tmp_path / "cis_distilled.json").read_text())
    assert meta["pairs"] == 4 and meta["max_length"] == 32


def test_training_is_seeded_and_resumes_per_epoch(tmp_path):
    _, straight = distill(PAIRS, tmp_path / "a", config=DistillConfig(**{**TINY.__dict__, "epochs": 2}), progress=False)
    distill(PAIRS, tmp_path / "b", config=TINY, progress=False)  # "interrupted" after epoch 1
    assert (tmp_path / "b" / CHECKPOINT_FILE).exists()
    _, resumed = distill(PAIRS, tmp_path / "b", config=DistillConfig(**{**TINY.__dict__, "epochs": 2}), progress=False)
    assert resumed == pytest.approx(straight, rel=1e-4)


def test_teacher_labels_are_cis_and_resume_from_the_labels_file(tmp_path):
    llm = FakeLLM(logprob=lambda p, c: -len(c) / 10 + (4.0 if p and "capital" in c else 0.0))
    scorer = CISScorer(llm, cache=PriorCache(tmp_path / "prior.sqlite"))
    groups = [("What is the capital of Australia?", [p.to_document() for p in PASSAGES[:2]])]
    pairs = teacher_pairs(scorer, groups, labels_file=tmp_path / LABELS_FILE)
    assert [p.label for p in pairs] == pytest.approx([4.0, 0.0])
    calls = llm.usage.calls
    assert teacher_pairs(scorer, groups, labels_file=tmp_path / LABELS_FILE) == pairs and llm.usage.calls == calls


def test_read_questions_accepts_lines_and_jsonl(tmp_path):
    (tmp_path / "q.txt").write_text("Who?\n\n  What   else? \n")
    (tmp_path / "q.jsonl").write_text('{"question": "Who?"}\n{"id": 2}\n')
    assert read_questions(tmp_path / "q.txt") == ["Who?", "What else?"]
    assert read_questions(tmp_path / "q.jsonl") == ["Who?"]


@pytest.mark.slow
def test_distill_cis_command_end_to_end(real_llm, tmp_path):
    """Tiny: 2 questions × 3 BM25 candidates, real teacher LM, 1 epoch, max length 64."""
    from causalrag.cli import app
    from causalrag.graphs.registry import build_graph

    store = Store("distill-tiny")
    store.add(PASSAGES)
    (tmp_path / "q.txt").write_text("What is the capital of Australia?\nWhat is the capital of Canada?\n")
    args = [
        "distill-cis",
        "--collection",
        "distill-tiny",
        "--questions",
        str(tmp_path / "q.txt"),
        "--out",
        str(tmp_path / "m"),
        "--n",
        "3",
        "--epochs",
        "1",
        "--max-length",
        "64",
        "--batch-size",
        "4",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "distilled 6" in result.output and (tmp_path / "m" / "head.pt").exists()
    labels = [json.loads(line) for line in (tmp_path / "m" / LABELS_FILE).read_text().splitlines()]
    assert len(labels) == 2 and all(len(row["pairs"]) == 3 for row in labels)
    # the distilled reranker stands in for the LM scorer in the cis graph (its own path, on every question)
    state = build_graph("cis", llm=FakeLLM(default=" Canberra"), store=store, n_candidates=4, k=2,
                        reranker="cis-distilled", distilled_path=str(tmp_path / "m")).invoke(
        {"question": "What is the capital of Australia?"})
    assert len(state["documents"]) == 2 and state["trace"][1]["reranker"] == "cis-distilled"
    assert all("logp_k" not in d.metadata and isinstance(d.metadata["cis"], float) for d in state["documents"])
