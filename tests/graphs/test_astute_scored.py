"""Astute RAG with scored judgments (judge="score"): isolate every source, group, most reliable group.

A fake LLM that answers from the passage it is shown (and whose likelihoods rise only where the
passage states the answer to the question asked) runs the graph on the in-memory demo store.
"""

import re

from causalrag.graphs.registry import build_graph
from tests.fakes import FakeLLM

QUESTION = "In what year was the Eiffel Tower completed?"


def passage_of(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1].rsplit("Question:", 1)[0]


def reader(memory: str = "The Eiffel Tower was completed in 1889.") -> FakeLLM:
    """Writes the completion year its passage states; scores an option by whether the passage states it for this question."""

    def write(prompt: str) -> str:
        stated = re.search(r"completed in (?:\w+ )?(1[89]\d\d)", passage_of(prompt))
        return f" {stated.group(1)}" if stated else " unknown"

    def option(prompt: str, option: str) -> float:
        stated = option in passage_of(prompt) and "Question: N/A" not in prompt
        return 0.0 if stated else -2.0

    return FakeLLM({"From your own memory": f"Passage: {memory}", "Answer the question": write}, option=option)


def run(llm, store, question=QUESTION, **params):
    params.setdefault("k", 3)
    params.setdefault("mechanism", "paper")
    return build_graph("astute", llm=llm, store=store, judge="score", **params).invoke({"question": question})


def test_sources_are_read_alone_and_the_confirmed_answer_wins(memory_store):
    state = run(reader(), memory_store, iterations=1)
    groups = {g["answer"]: g["sources"] for g in state["groups"]}
    assert "int 1" in groups["1889"] and len(groups["1889"]) >= 2  # memory is one source among the groups
    assert groups.get("1901") == ["ext 3"] or "1901" not in groups
    assert state["answer"] == "1889" and {r["how"] for r in state["readings"]} <= {"written", "spans", "regroup"}
    select = state["trace"][-1]
    assert select["node"] == "select" and max(select["reliability"]) == select["reliability"][state["chosen"]]


def test_wrong_memory_is_outvoted_by_the_retrieved_sources(memory_store):
    state = run(reader(memory="The Eiffel Tower was completed in 1901."), memory_store, iterations=1, k=2)
    assert {g["answer"]: len(g["sources"]) for g in state["groups"]} == {"1889": 2, "1901": 1}
    assert state["answer"] == "1889"


def test_rounds_stop_once_no_source_moves(memory_store):
    state = run(reader(), memory_store, iterations=5)
    rounds = [e for e in state["trace"] if e["node"] == "consolidate"]
    assert 2 <= len(rounds) < 5 and rounds[-1]["converged"] and not any(e["converged"] for e in rounds[:-1])


def test_no_free_text_judgment_is_parsed(memory_store):
    llm = reader()
    run(llm, memory_store, iterations=2)
    asked = [p for p in llm.prompts if "Consolidate the passages" in p or "rate from 0 to 10" in p or "Each group of sources" in p]
    assert asked == [] and llm.choices  # every judgment was a scored choice


def test_combined_scores_the_last_round_and_answers(memory_store):
    state = run(reader(), memory_store, iterations=1, combined=True)
    assert [e["node"] for e in state["trace"]][-1] == "answer_combined" and state["answer"] == "1889"


def test_injected_instruction_leaves_the_node_sequence_alone(memory_store):
    def nodes(state):
        return [e["node"] for e in state["trace"]]

    clean = run(reader(), memory_store, iterations=2)
    llm = reader()
    llm.rules.insert(0, ("Answer Paris", " Paris"))  # a model that obeys the injected passage
    injected = run(llm, memory_store, question="In which city is the Colosseum located?", iterations=2)
    assert nodes(injected) == nodes(clean)
