import json

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.datasets import load_dataset
from causalrag.eval.inject import asserted_answers, with_distractors
from causalrag.eval.runner import RESULTS, EvalConfig, read_results, result_key, run_eval
from tests.fakes import FakeLLM


def config(**kw):
    base = {"dataset": "hotpotqa", "methods": ["no_rag", "standard_rag"], "inject": [0, 4], "limit": 3}
    return EvalConfig(**{**base, **kw})


def keys(rows):
    return sorted(r["key"] for r in rows)


def test_every_key_once_with_metrics_and_cost(tmp_path, fake_embeddings):
    rows = run_eval(config(), tmp_path, llm=FakeLLM(default="yes"), embeddings=fake_embeddings, progress=False)
    hotpot = load_dataset("hotpotqa")[:3]
    assert keys(rows) == sorted(
        result_key(m, e.id, k) for m in ("no_rag", "standard_rag") for e in hotpot for k in (0, 4)
    )
    first = next(r for r in rows if r["key"] == result_key("standard_rag", hotpot[0].id, 0))
    assert first["prediction"] == "yes" and first["em"] == first["acc"] == 1.0  # hotpot[0]'s answer is "yes"
    assert first["llm_calls"] == 1 and len(first["documents"]) == 5 and 0 <= first["recall"] <= 1
    closed = next(r for r in rows if r["key"] == result_key("no_rag", hotpot[0].id, 0))
    assert closed["documents"] == [] and closed["recall"] is None
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".jsonl"] == [RESULTS]


def test_distractor_setting_retrieves_only_the_questions_pool(tmp_path, fake_embeddings):
    rows = run_eval(
        config(methods=["standard_rag"], inject=[8]),
        tmp_path,
        llm=FakeLLM(),
        embeddings=fake_embeddings,
        progress=False,
    )
    dataset = load_dataset("hotpotqa")
    for row in rows:
        ex = with_distractors(next(e for e in dataset if e.id == row["question_id"]), 8, donors=dataset)
        assert row["leaked"] == 0 and {d["id"] for d in row["documents"]} <= {p.id for p in ex.passages}
        assert row["injected_in_evidence"] == sum(d["injected"] for d in row["documents"])
    # the pool holds 10 + 8 passages: with 5 evidence slots some misleading ones are used overall
    assert sum(r["injected_in_evidence"] for r in rows) > 0


def test_open_setting_searches_every_paragraph(tmp_path, fake_embeddings):
    rows = run_eval(config(methods=["standard_rag"], inject=[0], setting="open"), tmp_path, llm=FakeLLM(),
                    embeddings=fake_embeddings, progress=False)
    dataset = load_dataset("hotpotqa")
    own = {e.id: {p.title for p in e.passages} for e in dataset}
    # random embeddings over 200 paragraphs: some evidence comes from other questions' paragraphs
    assert any(d["title"] not in own[r["question_id"]] for r in rows for d in r["documents"])


def test_misled_when_the_answer_is_an_injected_one(tmp_path, fake_embeddings):
    dataset = load_dataset("hotpotqa")
    wrong = {e.question: asserted_answers(e, 4, donors=dataset)[0] for e in dataset[:3]}
    llm = FakeLLM(replies={q: a for q, a in wrong.items()})
    rows = run_eval(config(methods=["standard_rag"]), tmp_path, llm=llm, embeddings=fake_embeddings, progress=False)
    injected = [r for r in rows if r["inject"] == 4]
    assert all(r["misled"] == 1.0 and r["acc"] == 0.0 for r in injected)
    assert all(r["misled"] is None for r in rows if r["inject"] == 0)


def test_resume_after_interrupt_gives_exactly_one_result_per_key(tmp_path, fake_embeddings):
    calls = {"n": 0}

    def interrupt_on_fifth(prompt):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return "Paris"

    with pytest.raises(KeyboardInterrupt):
        run_eval(
            config(), tmp_path, llm=FakeLLM(default=interrupt_on_fifth), embeddings=fake_embeddings, progress=False
        )
    before = read_results(tmp_path)
    assert len(before) == 4
    # an interrupt in the middle of a write leaves half a line: it is dropped, not doubled
    with (tmp_path / RESULTS).open("a") as fh:
        fh.write('{"key": "standard_rag|K=0|half')
    rows = run_eval(config(), tmp_path, llm=FakeLLM(default="Paris"), embeddings=fake_embeddings, progress=False)
    assert len(rows) == len(set(keys(rows))) == 12
    lines = (tmp_path / RESULTS).read_text().splitlines()
    assert len(lines) == 12 and len({json.loads(line)["key"] for line in lines}) == 12
    assert {r["key"]: r["finished_at"] for r in before}.items() <= {r["key"]: r["finished_at"] for r in rows}.items()
    again = run_eval(
        config(), tmp_path, llm=FakeLLM(default=interrupt_on_fifth), embeddings=fake_embeddings, progress=False
    )
    assert keys(again) == keys(rows)  # nothing left to run: the model is never called


def test_a_failing_question_is_recorded_and_the_run_goes_on(tmp_path, fake_embeddings):
    def broken(prompt):
        raise RuntimeError("model fell over")

    rows = run_eval(
        config(methods=["no_rag"], inject=[0]),
        tmp_path,
        llm=FakeLLM(default=broken),
        embeddings=fake_embeddings,
        progress=False,
    )
    assert len(rows) == 3 and all("model fell over" in r["error"] and r["acc"] == 0.0 for r in rows)


def test_settings_must_match_to_resume_but_methods_may_grow(tmp_path, fake_embeddings):
    run_eval(
        config(methods=["no_rag"], inject=[0]), tmp_path, llm=FakeLLM(), embeddings=fake_embeddings, progress=False
    )
    with pytest.raises(CausalRAGError, match="other settings"):
        run_eval(
            config(methods=["no_rag"], seed=1), tmp_path, llm=FakeLLM(), embeddings=fake_embeddings, progress=False
        )
    rows = run_eval(
        config(methods=["no_rag", "standard_rag"], inject=[0], params={"standard_rag": {"k": 2}}),
        tmp_path / "b",
        llm=FakeLLM(),
        embeddings=fake_embeddings,
        progress=False,
    )
    assert all(len(r["documents"]) == 2 for r in rows if r["method"] == "standard_rag")
    grown = run_eval(
        config(methods=["no_rag", "standard_rag"], inject=[0]),
        tmp_path,
        llm=FakeLLM(),
        embeddings=fake_embeddings,
        progress=False,
    )
    assert len(grown) == 6
    assert json.loads((tmp_path / "config.json").read_text())["methods"] == ["no_rag", "standard_rag"]


def test_bad_runs_fail_with_one_sentence(tmp_path, fake_embeddings, monkeypatch):
    with pytest.raises(CausalRAGError, match="Unknown method"):
        run_eval(config(methods=["nope"]), tmp_path, llm=FakeLLM(), embeddings=fake_embeddings)
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "1", "question": "Q?", "golden_answers": ["A"]}) + "\n")
    with pytest.raises(CausalRAGError, match="no per-question passages"):
        run_eval(
            config(dataset=f"jsonl:{tmp_path / 'q.jsonl'}", inject=[0]),
            tmp_path / "j",
            llm=FakeLLM(),
            embeddings=fake_embeddings,
        )


def test_open_setting_corpus_is_the_whole_dataset_even_with_a_limit(fake_embeddings):
    from causalrag.eval.settings import Pools

    dataset = load_dataset("hotpotqa")
    pools = Pools("open", dataset[:2], fake_embeddings, background=dataset[2:])
    assert pools.store.count() == len({p.id for e in dataset for p in e.passages}) and pools.ids_for(dataset[0]) is None
    pools.close()
    pools = Pools("distractor", dataset[:2], fake_embeddings, background=dataset[2:])
    assert pools.store.count() == 20 and pools.ids_for(dataset[0]) == [p.id for p in dataset[0].passages]
    pools.close()


def test_injection_without_pools_is_refused(tmp_path, fake_embeddings):
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "1", "question": "Q?", "golden_answers": ["A"]}) + "\n")
    with pytest.raises(CausalRAGError, match="use --inject 0"):
        run_eval(
            config(dataset=f"jsonl:{tmp_path / 'q.jsonl'}", setting="open"),
            tmp_path / "j",
            llm=FakeLLM(),
            embeddings=fake_embeddings,
        )


def test_a_result_records_the_node_path_and_the_decision(tmp_path, fake_embeddings):
    """Each result holds the nodes its question went through in order; a method without a decision has no route."""
    rows = run_eval(config(inject=[0], limit=2), tmp_path, llm=FakeLLM(default="Paris"), embeddings=fake_embeddings,
                    progress=False)
    by_method = {r["method"]: r for r in rows}
    assert by_method["standard_rag"]["path"][-1] == "answer" and "retrieve" in by_method["standard_rag"]["path"]
    assert all(r["path"] and r["route"] is None and r["decision"] is None and "assessment" not in r for r in rows)
    stored = read_results(tmp_path)
    assert {r["key"]: r["path"] for r in stored} == {r["key"]: r["path"] for r in rows}


def test_a_routed_result_records_its_route_decision_and_evidence():
    """A final state with a decision gives its route, the decision and the evidence; a failed run gives none."""
    from causalrag.eval.datasets import Example
    from causalrag.eval.runner import score_result

    decision = {"route": "vote", "shape": "conflict", "believed": "Canberra", "why": "two sources disagree"}
    state = {"answer": "Canberra", "decision": decision, "evidence": {"groups": 2},
             "trace": [{"node": "retrieve"}, {"node": "assess"}, {"node": "vote"}]}
    example = Example("q1", "What is the capital of Australia?", ["Canberra"])
    row = score_result(state, example, gold=[], pool=None, asserted=[], k=5)
    assert row["path"] == ["retrieve", "assess", "vote"] and row["route"] == "vote"
    assert row["decision"] == decision and row["evidence"] == {"groups": 2} and "assessment" not in row
    failed = score_result({}, example, gold=[], pool=None, asserted=[], k=5)
    assert (failed["path"], failed["route"], failed["decision"], failed["evidence"]) == ([], None, None, None)


def test_open_setting_asks_each_distinct_question_once(tmp_path, fake_embeddings):
    """The suite asks a card's question under several pool conditions; one collection makes them one question."""
    from causalrag.eval.conditions import load_examples

    spec = "robust?split=holdout&condition=clean_single,conflict_majority_wrong"
    suite = load_examples(spec)
    twice = {e.question for e in suite if sum(f.question == e.question for f in suite) == 2}
    assert twice and len(suite) > len({e.question for e in suite})
    rows = run_eval(config(dataset=spec, methods=["standard_rag"], inject=[0], limit=None, setting="open"), tmp_path,
                    llm=FakeLLM(default="1066"), embeddings=fake_embeddings, progress=False)
    assert sorted(r["question"] for r in rows) == sorted({e.question for e in suite})
    merged = [r for r in rows if r["question"] in twice]
    assert all(r["condition"] == "all_conditions" and "-" not in r["question_id"] for r in merged)
    # every condition's planted answer counts: the clean pool alone plants none
    assert all(r["misled"] is not None for r in merged)
    distractor = run_eval(config(dataset=spec, methods=["standard_rag"], inject=[0], limit=None), tmp_path / "d",
                          llm=FakeLLM(default="1066"), embeddings=fake_embeddings, progress=False)
    assert len(distractor) == len(suite)  # each pool is its own question there


def test_distinct_questions_merge_twins_and_keep_the_rest():
    from causalrag.eval.datasets import Example
    from causalrag.eval.settings import ALL_CONDITIONS, distinct_questions
    from causalrag.tools.store import Passage

    right, swapped = Passage("A", "Canberra is the capital."), Passage("B", "Sydney is the capital.")
    clean = Example("c1-clean_single", "Capital?", ["Canberra"], gold_titles=["A"], passages=[right],
                    condition="clean_single")
    conflict = Example("c1-conflict_majority_wrong", "Capital?", ["Canberra"], gold_titles=["A"],
                       passages=[right, swapped], wrong_answers=["Sydney"], condition="conflict_majority_wrong")
    trap = Example("t1", "Capital?", ["Wellington"], condition="correlation_trap")  # other answers: not a twin
    merged, other = distinct_questions([clean, conflict, trap])
    assert (merged.id, merged.condition, merged.wrong_answers, merged.gold_titles) == (
        "c1", ALL_CONDITIONS, ["Sydney"], ["A"])
    assert [p.id for p in merged.passages] == [right.id, swapped.id] and other is trap
    # a stem that is another question's id, or twins with no common stem, keep the first id
    assert distinct_questions([clean, conflict, Example("c1", "Other?", ["x"])])[0].id == "c1-clean_single"
    same = distinct_questions([clean, Example("z9", "Capital?", ["Canberra"], condition="clean_single")])
    assert [(e.id, e.condition) for e in same] == [("c1-clean_single", "clean_single")]
