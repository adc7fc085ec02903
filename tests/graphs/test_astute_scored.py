"""Astute RAG with scored judgments (judge="score"): isolate every source, group, most reliable group.

A fake LLM that answers from the passage it is shown (and whose likelihoods rise only where the
passage states the answer to the question asked) runs the graph on the in-memory demo store.
"""

import math
import re

import pytest

from causalrag.graphs.registry import build_graph
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM

QUESTION = "In what year was the Eiffel Tower completed?"


def passage_of(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1].rsplit("Question:", 1)[0]


def reader(memory: str = "The Eiffel Tower was completed in 1889.") -> FakeLLM:
    """Writes the completion year its passage states; scores an option by whether the passage states it for this
    question."""

    def write(prompt: str) -> str:
        stated = re.search(r"completed in (?:\w+ )?(1[89]\d\d)", passage_of(prompt))
        return f" {stated.group(1)}" if stated else " unknown"

    def option(prompt: str, option: str) -> float:
        stated = option in passage_of(prompt) and "Question: N/A" not in prompt
        return 0.0 if stated else -2.0

    return FakeLLM({"From your own memory": f"Passage: {memory}", "Answer the question": write}, option=option)


def run(llm, store, question=QUESTION, **params):
    params.setdefault("k", 3)
    return build_graph("astute", llm=llm, store=store, judge="score", **params).invoke({"question": question})


def test_sources_are_read_alone_and_the_confirmed_answer_wins(memory_store):
    state = run(reader(), memory_store, iterations=1)
    groups = {g["answer"]: sorted(g["sources"]) for g in state["groups"]}
    assert groups == {"1889": ["ext 1", "ext 2", "int 1"], "1901": ["ext 3"]}  # memory is one source among them
    assert state["answer"] == "1889" and {r["how"] for r in state["readings"]} <= {"written", "spans", "regroup"}
    select = state["trace"][-1]
    # 2 confirmations + 1/2 against 0 + 1/2: the joint reading (all 4 passages state an answer) is split evenly
    assert select["node"] == "select" and select["reliability"] == [2.5, 0.5] and state["chosen"] == 0


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
    asked = [
        p
        for p in llm.prompts
        if "Consolidate the passages" in p or "rate from 0 to 10" in p or "Each group of sources" in p
    ]
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


SOURCES = [  # two sources confirm 1889; one (or two) say 1901
    Passage("Eiffel Tower", "The Eiffel Tower was completed in 1889."),
    Passage("World's Fair", "The tower was completed in 1889 for the World's Fair."),
    Passage("Travel blog", "A travel blog claims the tower was completed in 1901."),
    Passage("Old guide", "An old guide says the tower was completed in 1901."),
]
JOINT = {"1889": -1.0, "1901": 0.0}  # the scored choice given every passage together favours 1901


def joint_reader(sources: int) -> FakeLLM:
    """reader(), except that the prompt holding all ``sources`` together scores the answers by ``JOINT``."""
    llm = reader()
    alone = llm._option

    def option(prompt: str, option: str) -> float:
        together = len(re.findall(r"^\[\d+\]", passage_of(prompt), re.M)) == sources
        return JOINT[option] if together and option in JOINT else alone(prompt, option)

    llm._option = option
    return llm


def select_figures(sources: int) -> tuple[dict, dict]:
    store = Store.in_memory(SOURCES[:sources])
    state = run(joint_reader(sources), store, k=sources, max_internal=0, iterations=1)
    return state, next(e for e in state["trace"] if e["node"] == "select")


def joint_probability(answer: str) -> float:
    return math.exp(JOINT[answer]) / sum(math.exp(v) for v in JOINT.values())


@pytest.mark.parametrize("sources,winner", [(3, "1889"), (4, "1901")])
def test_reliability_is_confirmations_plus_the_joint_probability(sources, winner):
    """§3.5: each source beyond a group's first confirms its answer; the joint reading adds its probability.
    2 sources against 1 win although the joint reading favours the lone source; 2 against 2, it decides."""
    state, select = select_figures(sources)
    sizes = {c["answer"]: len(c["sources"]) for c in state["candidates"]}
    assert sizes == ({"1889": 2, "1901": 1} if sources == 3 else {"1889": 2, "1901": 2})
    assert max(select["joint_choice"]["probs"]) == pytest.approx(joint_probability("1901"), abs=1e-4)
    want = [len(c["sources"]) - 1 + joint_probability(c["answer"]) for c in state["candidates"]]
    assert select["reliability"] == pytest.approx(want, abs=1e-4)
    assert state["answer"] == winner and state["candidates"][state["chosen"]]["answer"] == winner
    assert len(state["documents"]) == sizes[winner] and all(winner in d.page_content for d in state["documents"])
