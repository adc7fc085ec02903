"""Astute RAG graph, generate judgment (the paper's text prompts), with a fake LLM and the in-memory demo store:
loop count, t = 1 path, labels, parse fallbacks. The scored judgment: tests/graphs/test_astute_scored.py."""

import pytest

import causalrag
from causalrag.errors import EmptyQuestionError
from causalrag.graphs.registry import build_graph
from tests.fakes import FakeLLM

QUESTION = "In what year was the Eiffel Tower completed?"
MEMORY = "Passage: The Eiffel Tower was finished in 1889 for the World's Fair."
GROUPS = "Group 1 [ext 1, ext 2, int 1]: completed in 1889\nGroup 2 [ext 3]: a blog says 1901"
COMBINED = (
    "Group 1 [ext 1, ext 2, int 1]: completed in 1889 | answer: 1889 | confidence: 9\n"
    "Group 2 [ext 3]: a blog says 1901 | answer: 1901 | confidence: 3\nFinal: <answer>1889</answer>"
)


def last_passages(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1]


def propose_reply(prompt: str) -> str:
    return " 1901\nConfidence: 3" if "1901" in last_passages(prompt) else " 1889\nConfidence: 9"


def fake(**overrides) -> FakeLLM:
    rules = {
        "From your own memory": MEMORY,
        "after each group's claim": COMBINED,  # the combined prompt (checked before the plain consolidation prompt)
        "Consolidate the passages": GROUPS,
        "rate from 0 to 10": propose_reply,
        "Each group of sources": " <answer>1889</answer>",
    }
    rules.update(overrides)
    return FakeLLM(rules)


def run(llm, store, question=QUESTION, **params):
    params.setdefault("judge", "generate")
    return build_graph("astute", llm=llm, store=store, k=3, **params).invoke({"question": question})


def nodes(state) -> list[str]:
    return [e["node"] for e in state["trace"]]


@pytest.mark.parametrize("t", [1, 2, 3])
def test_consolidation_loop_runs_exactly_t_times(memory_store, t):
    llm = fake()
    state = run(llm, memory_store, iterations=t)
    assert nodes(state).count("consolidate") == t
    assert [e["iteration"] for e in state["trace"] if e["node"] == "consolidate"] == list(range(1, t + 1))
    assert sum("Consolidate the passages" in p for p in llm.prompts) == t
    assert nodes(state)[-2:] == ["propose", "select"]
    assert state["answer"] == "1889" and state["chosen"] == 0


def test_later_rounds_see_the_initial_passages_and_the_last_groups(memory_store):
    llm = fake()
    run(llm, memory_store, iterations=2)
    first, second = [p for p in llm.prompts if "Consolidate the passages" in p]
    assert "Earlier groups" not in first
    assert (
        "Earlier groups:\nGroup 1 [ext 1, ext 2, int 1]: completed in 1889\nGroup 2 [ext 3]: a blog says 1901" in second
    )
    assert "[int 1] memory: The Eiffel Tower was finished in 1889" in second


def test_source_labels_survive_consolidation_into_the_answer(memory_store):
    state = run(fake(), memory_store, iterations=2)
    assert [g["sources"] for g in state["groups"]] == [["ext 1", "ext 2", "int 1"], ["ext 3"]]
    assert [(c["answer"], c["confidence"], c["sources"]) for c in state["candidates"]] == [
        ("1889", 0.9, ["ext 1", "ext 2", "int 1"]),
        ("1901", 0.3, ["ext 3"]),
    ]
    assert [d.metadata["label"] for d in state["documents"]] == ["ext 1", "ext 2", "int 1"]
    assert state["documents"][2].metadata["source"] == "internal"
    select = state["trace"][-1]
    assert select["chosen_group"] == 0 and select["group_confidences"] == [0.9, 0.3] and select["select_fallback"] == 0


def test_retrieved_passages_are_presented_reversed_then_memory(memory_store):
    llm = fake()
    state = run(llm, memory_store, iterations=1)
    prompt = next(p for p in llm.prompts if "Consolidate the passages" in p)
    labels = [line.split("]")[0] + "]" for line in last_passages(prompt).splitlines() if line.startswith("[")]
    assert labels == ["[ext 3]", "[ext 2]", "[ext 1]", "[int 1]"]
    assert state["trace"][2]["external"] == 3 and state["trace"][2]["internal"] == 1
    unreversed = fake()
    run(unreversed, memory_store, iterations=1, reverse=False)
    prompt = next(p for p in unreversed.prompts if "Consolidate the passages" in p)
    assert last_passages(prompt).index("[ext 1]") < last_passages(prompt).index("[ext 3]")


def test_combined_t1_is_one_call_on_the_initial_passages(memory_store):
    llm = fake()
    state = run(llm, memory_store, iterations=1, combined=True)
    assert nodes(state)[-1] == "answer_combined" and "consolidate" not in nodes(state)
    assert len(llm.prompts) == 2  # memory passage + the combined call
    assert "Earlier groups" not in llm.prompts[-1]
    assert state["answer"] == "1889" and state["chosen"] == 0
    assert [(c["answer"], c["confidence"]) for c in state["candidates"]] == [("1889", 0.9), ("1901", 0.3)]


def test_combined_merges_only_the_last_round(memory_store):
    llm = fake()
    state = run(llm, memory_store, iterations=3, combined=True)
    assert nodes(state).count("consolidate") == 2 and nodes(state)[-1] == "answer_combined"
    assert "Earlier groups:" in llm.prompts[-1] and state["trace"][-1]["iteration"] == 3
    # the combined step reads D₀ and the last groups as the last round did: that round's prompt up to its question
    last_round = [p for p in llm.prompts if "Consolidate the passages" in p][-2]
    assert llm.prompts[-1].startswith(last_round.rsplit("Question:", 1)[0])


def test_unparseable_consolidation_falls_back_and_is_counted(memory_store):
    state = run(fake(**{"Consolidate the passages": "I think the tower is old."}), memory_store, iterations=2)
    rounds = [e for e in state["trace"] if e["node"] == "consolidate"]
    assert [e["consolidation_fallback"] for e in rounds] == [1, 1]
    assert [g["sources"] for g in state["groups"]] == [["ext 3"], ["ext 2"], ["ext 1"], ["int 1"]]
    assert state["answer"] == "1889" and state["chosen"] == 1  # the first group whose answer the marker names


def test_second_round_garbage_keeps_the_last_groups(memory_store):
    llm = fake(**{"Consolidate the passages": [GROUPS, "Group 1 []: nothing\nGroup 2 [ext 7]: x"]})
    state = run(llm, memory_store, iterations=2)
    second = [e for e in state["trace"] if e["node"] == "consolidate"][1]
    assert second["consolidation_fallback"] == 1 and second["unknown_labels"] == 1
    assert [g["sources"] for g in state["groups"]] == [["ext 1", "ext 2", "int 1"], ["ext 3"]]


def test_missing_marker_or_foreign_answer_picks_the_most_reliable_group(memory_store):
    for reply in (" 1889 is my pick", " <answer>Oslo</answer>"):
        state = run(fake(**{"Each group of sources": reply}), memory_store, iterations=1)
        select = state["trace"][-1]
        assert select["select_fallback"] == 1 and state["chosen"] == 0 and state["answer"] == "1889"
        assert select["marker_missing"] == int("<answer>" not in reply)


def test_shortcut_without_group_answers_uses_the_marked_answer(memory_store):
    # the 270M model often writes group lines with no answer field but a correct marked answer (§4.1)
    llm = fake(**{"after each group's claim": f"{GROUPS}\nFinal: <answer>1889</answer>"})
    state = run(llm, memory_store, iterations=1, combined=True)
    last = state["trace"][-1]
    assert state["answer"] == "1889" and state["candidates"] == [] and state["chosen"] == -1
    assert (last["marked_answer"], last["plain_answer_fallback"], last["llm_calls"]) == (1, 0, 1)
    assert {d.metadata["label"] for d in state["documents"]} == {"ext 1", "ext 2", "ext 3", "int 1"}


def test_missing_confidence_falls_back_to_source_support(memory_store):
    state = run(
        fake(**{"rate from 0 to 10": lambda p: " 1901" if "1901" in last_passages(p) else " 1889"}),
        memory_store,
        iterations=1,
    )
    propose = next(e for e in state["trace"] if e["node"] == "propose")
    assert propose["confidence_fallbacks"] == 2 and propose["confidences"] == [0.75, 0.25]
    assert state["answer"] == "1889"


def test_abstaining_and_no_memory(memory_store):
    llm = fake(**{"From your own memory": "I don't know."})
    state = run(llm, memory_store, iterations=1)
    assert state["internal"] == [] and state["trace"][1]["abstained"] is True
    off = fake()
    state = run(off, memory_store, iterations=1, max_internal=0)
    assert not any("From your own memory" in p for p in off.prompts) and state["internal"] == []


class EmptyStore:
    def retrieve(self, *args, **kwargs):
        return []


def test_nothing_to_consolidate_degrades_to_a_plain_answer():
    llm = fake(**{"From your own memory": "I don't know.", "Consolidate the passages": ""}, )
    llm.default = " 1889"
    state = run(llm, EmptyStore(), iterations=1)
    assert state["answer"] == "1889" and state["candidates"] == [] and state["chosen"] == -1
    assert state["trace"][-1]["plain_answer_fallback"] == 1


def test_injected_instructions_do_not_change_control_flow(memory_store):
    clean = run(fake(), memory_store, iterations=2)
    llm = fake()
    question = "In which city is the Colosseum located?"  # its pool holds an injected instruction
    injected = run(llm, memory_store, question=question, iterations=2)
    assert nodes(injected) == nodes(clean)
    prompt = next(p for p in llm.prompts if "Consolidate the passages" in p)
    for line in last_passages(prompt).splitlines()[1:-2]:
        assert line.startswith(("[ext ", "[int ")), line


def test_stream_shows_groups_per_round_candidates_and_answer(memory_store):
    graph = build_graph(
        "astute", llm=fake(), store=memory_store, k=3, iterations=2, judge="generate"
    )
    events = [
        e for mode, e in graph.stream({"question": QUESTION}, stream_mode=["updates", "custom"]) if mode == "custom"
    ]
    groups = [e for e in events if e["type"] == "groups"]
    assert [e["iteration"] for e in groups] == [1, 2] and groups[0]["groups"][0]["sources"] == [
        "ext 1",
        "ext 2",
        "int 1",
    ]
    assert any(e["type"] == "candidates" for e in events) and events[-1] == {
        "type": "answer",
        "stage": "select",
        "answer": "1889",
        "chosen": 0,
    }
    pool = next(e for e in events if e["stage"] == "pool")
    assert pool["labels"] == ["ext 3", "ext 2", "ext 1", "int 1"]


def test_registered_with_paper_defaults_and_empty_question_is_an_error(memory_store):
    params = causalrag.METHODS["astute"].parameters()
    assert params["iterations"] == 2 and params["max_internal"] == 1 and params["combined"] is False
    with pytest.raises(EmptyQuestionError):
        run(fake(), memory_store, question="  ")


def test_echoes_of_the_prompt_example_are_dropped(memory_store):
    echo = (
        "Group 1 [ext 1, ext 2, int 1]: Oslo is the capital | answer: Oslo | confidence: 9\n"
        "Final: <answer>Oslo</answer>"
    )
    state = run(fake(**{"after each group's claim": echo}), memory_store, iterations=1, combined=True)
    last = state["trace"][-1]
    assert last["example_echoes"] == 1 and last["consolidation_fallback"] == 1
    assert state["answer"] != "Oslo" and (last["marked_answer"], last["plain_answer_fallback"]) == (0, 1)
    state = run(fake(**{"rate from 0 to 10": " Oslo\nConfidence: 9"}), memory_store, iterations=1)
    assert state["candidates"] == [] and state["trace"][-2]["dropped_answers"] == 2
