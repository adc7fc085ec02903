"""RetroRAG with scored judgments (judge="score"), fake LLM, real in-memory demo store: the answer is a
choice among what the sources state, s_sc the choice's mass on it, the gates likelihood gains."""

import re

import pytest

from causalrag.graphs.registry import build_graph
from causalrag.nodes.retro import scored_gates
from causalrag.prompts.retro import claim_prompt
from causalrag.tools.store import Passage, Store
from tests.fakes import FakeLLM

BRIDGE = "Which river flows through the city where Ludwig van Beethoven was born?"
RIVERS = ("Rhine", "Danube")


def passages(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1].rsplit("Question:", 1)[0]


def reader(confidence: float = 3.0, facts: str = " Beethoven was born in Bonn.\n- Bonn lies on the Rhine.") -> FakeLLM:
    """Writes the river its passage names; scores Rhine above Danube by ``confidence`` in M_D; gates by content."""

    def write(prompt: str) -> str:
        named = [r for r in RIVERS if r in passages(prompt)]
        return f" {named[0]}" if named else " unknown"

    def option(prompt: str, option: str) -> float:
        if "A fact these passages state:" in prompt:  # s_ra: stated in the passage?
            words = set(re.findall(r"\w+", option.lower())) - {"the", "was", "in", "on", "lies"}
            if "N/A" in passages(prompt + "Question:"):
                return -1.0  # a claim is somewhat likely with no passage at all
            return 0.0 if words <= set(re.findall(r"\w+", prompt.lower())) else -2.0
        if "A question this fact helps answer:" in prompt:  # s_qr: does the fact help?
            return -1.0 if "Known fact: N/A" in prompt else 0.0
        if "Question: N/A" in prompt:
            return -2.0
        return {"Rhine": 0.0, "Danube": -confidence}.get(option, -4.0)

    return FakeLLM(
        {"Search query:": " Bonn river", "Write short facts": facts, "Answer the question": write}, option=option
    )


def run(llm, store, **params):
    return build_graph("retro", llm=llm, store=store, judge="score", **params).invoke({"question": BRIDGE})


def test_a_confident_choice_stops_at_once_without_chain_of_thought(memory_store):
    llm = reader()
    state = run(llm, memory_store)
    assert state["answer"] == "Rhine" and [r["stop"] for r in state["rounds"]] == ["consistent"]
    assert state["rounds"][0]["sc"]["score"] > 0.7 and state["rounds"][0]["sc"]["scored"]
    assert not any("Reason in one sentence" in p or "Do A and B give the same answer?" in p for p in llm.prompts)
    answer = next(e for e in state["trace"] if e["node"] == "answer_from_evidence")
    assert set(answer["choice"]["options"]) >= {"Rhine"} and answer["no_candidate_fallbacks"] == 0


def test_a_split_choice_goes_round_again_and_reads_each_passage_once():
    rivers = Store.in_memory([
        Passage("Bonn", "Bonn is a city on the banks of the Rhine. Ludwig van Beethoven was born in Bonn."),
        Passage("Vienna", "Vienna lies on the Danube. Beethoven lived and died in Vienna."),
        Passage("Ludwig van Beethoven", "Ludwig van Beethoven was a German composer born in Bonn who moved to Vienna."),
    ])
    llm = reader(confidence=0.0)  # Rhine and Danube equally likely: s_sc ≈ 0.5 < 0.7
    state = run(llm, rivers, max_iterations=2)
    assert [r["stop"] for r in state["rounds"]] == ["", "max_iterations"]
    assert all(r["sc"]["score"] < 0.7 for r in state["rounds"])
    assert [sorted(r["evidence"]) for r in state["rounds"]] == [["Bonn", "Ludwig van Beethoven", "Vienna"]] * 2
    reads = [passages(p).split(":")[0].strip() for p in llm.prompts
             if passages(p).count("\n[") == 1 and "Answer the question with a short phrase from the passages" in p]
    assert sorted(reads) == ["[1] Bonn", "[1] Ludwig van Beethoven", "[1] Vienna"]  # held over: not read again


def test_gates_keep_stated_relevant_inferences_and_drop_invented_ones():
    bonn = Passage("Bonn", "Bonn is a city on the banks of the Rhine.").to_document()
    judged = scored_gates(reader(), ["Bonn lies on the Rhine.", "Vienna hosts the Oscars."], [bonn], BRIDGE)
    stated, invented = judged
    assert stated["ra"]["score"] > 0.5 and stated["qr"]["score"] > 0.5
    assert invented["ra"]["score"] < 0.5
    assert claim_prompt([]).startswith("Passages:\nN/A")


def test_nothing_retrieved_the_written_answer_is_the_only_candidate_and_nothing_at_all_is_counted():
    empty = FakeLLM(
        {"Search query:": " x", "Write short facts": " nothing", "Answer the question": " Bonn"},
        option=lambda p, o: -1.0,
    )

    class Nothing:
        def retrieve(self, *args, **kwargs):
            return []

    state = build_graph("retro", llm=empty, store=Nothing(), judge="score", max_iterations=1).invoke(
        {"question": BRIDGE}
    )
    answer = next(e for e in state["trace"] if e["node"] == "answer_from_evidence")
    assert (
        answer["no_candidate_fallbacks"] == 0 and answer["choice"]["options"] == ["Bonn"] and state["answer"] == "Bonn"
    )
    silent = FakeLLM(
        {"Search query:": " x", "Write short facts": " nothing", "Answer the question": " "}, option=lambda p, o: -1.0
    )
    state = build_graph(
        "retro", llm=silent, store=Nothing(), judge="score", max_iterations=1
    ).invoke({"question": BRIDGE})
    assert (
        next(e for e in state["trace"] if e["node"] == "answer_from_evidence")["no_candidate_fallbacks"] == 1
        and state["answer"] == ""
    )


def test_the_answer_most_sources_state_wins_over_the_joint_readings_favourite():
    """Two sources say Rhine, a planted one says Danube, and M_D reading all three together prefers Danube (as
    the 270M model follows a conflicting set's blend): cross-source confirmation decides, M_D only among equals,
    and s_sc stays M_D's own mass on the answer."""
    store = Store.in_memory([
        Passage("Bonn", "Bonn is a city on the banks of the Rhine. Ludwig van Beethoven was born in Bonn."),
        Passage("Bonn travel notes", "Beethoven's birthplace, Bonn, looks over the Rhine."),
        Passage("Bonn river guide", "Bonn, where Beethoven was born, lies on the Danube."),
    ])

    def write(prompt: str) -> str:
        named = [r for r in RIVERS if r in passages(prompt)]
        return f" {named[0]}" if named else " unknown"

    def option(prompt: str, option: str) -> float:
        if "A fact these passages state:" in prompt or "A question this fact helps answer:" in prompt:
            return -1.0
        if "Question: N/A" in prompt:
            return -2.0
        block = passages(prompt)
        if sum(line.startswith("[") for line in block.splitlines()) == 1:  # a passage read alone: what it says
            return 0.0 if option in block else -4.0
        return {"Danube": 0.0, "Rhine": -3.0}.get(option, -4.0)  # read together: the planted passage wins

    llm = FakeLLM(
        {"Search query:": " Bonn river", "Write short facts": " Bonn lies on the Rhine.", "Answer the question": write},
        option=option,
    )
    state = run(llm, store, max_iterations=1)
    answer = next(e for e in state["trace"] if e["node"] == "answer_from_evidence")
    joint = dict(zip(answer["choice"]["options"], answer["choice"]["probs"], strict=True))
    assert joint["Danube"] > 0.9 and state["answer"] == "Rhine"
    assert answer["reliability"][answer["choice"]["options"].index("Rhine")] > 1
    sc = state["rounds"][0]["sc"]["score"]
    assert sc == pytest.approx(joint["Rhine"], abs=1e-3) and sc < 0.7


def test_an_inference_copied_from_the_worked_example_is_no_candidate():
    """M_IE's example is about Inception's director, born in London: a fact that names London about Bonn's river,
    where no passage names London, is a copy and never reaches the gates; the stated fact does."""
    llm = reader(facts=" Beethoven was born in London.\n- Bonn lies on the Rhine.")
    rivers = Store.in_memory([Passage("Bonn", "Bonn is a city on the banks of the Rhine. Beethoven was born in Bonn.")])
    state = run(llm, rivers, max_iterations=1)
    discover = next(e for e in state["trace"] if e["node"] == "discover")
    assert [g["fact"] for g in discover["gates"]] == ["Bonn lies on the Rhine."]
    assert discover["copied"] == 1 and discover["parse_fallbacks"] == 0
    assert not any("born in London" in fact for fact in state["inferential_evidence"])
