"""CF-RAG with scored judgments (judge="score"), fake LLM, real in-memory demo store.

Counterfactual queries are edits chosen by score (never generated), hypotheses and the synthesis are
choices among answers the passages give, and Mention(a, e) is a scored support.
"""


from causalrag.graphs.registry import build_graph
from causalrag.nodes.cf_rag_edits import edits_by_type, scope_edits, temporal_edits
from tests.fakes import FakeLLM

QUESTION = "Who played the Joker in The Dark Knight?"
ACTORS = ("Heath Ledger", "Jack Nicholson", "Joaquin Phoenix", "Jared Leto", "Tom Hardy", "Christian Bale")


def passages(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1].rsplit("Question:", 1)[0]


def asked(prompt: str) -> str:
    return [ln for ln in prompt.splitlines() if ln.startswith("Question: ")][-1].removeprefix("Question: ")


def reader() -> FakeLLM:
    """Answers with the actor of the film asked about (else the first its passages name); prefers edits that
    keep "Joker"; supports what a passage names."""

    def write(prompt: str) -> str:
        named = [a for a in ACTORS if a in passages(prompt)]
        for film, actor in (
            ("The Dark Knight", "Heath Ledger"),
            ("Batman", "Jack Nicholson"),
            ("Suicide Squad", "Jared Leto"),
        ):
            if film in asked(prompt) and actor in named:
                return f" {actor}"
        return f" {named[0]}" if named else " unknown"

    def option(prompt: str, option: str) -> float:
        if prompt.endswith("Rewrite:"):
            return 0.0 if "Joker" in option else -1.0
        stated = option in passages(prompt) and "Question: N/A" not in prompt
        return (0.0 if stated else -3.0) + (
            0.5 if option == "Heath Ledger" and "The Dark Knight" in asked(prompt) else 0.0
        )

    return FakeLLM(default=write, option=option)


def run(llm, store, **params):
    return build_graph("cf_rag", llm=llm, store=store, judge="score", **params).invoke({"question": QUESTION})


def test_edits_change_one_thing_each_and_only_where_a_type_applies():
    edits = edits_by_type(QUESTION, {"The Dark Knight": ["Batman Begins"], "Joker": ["Bane"]})
    assert edits["entity"] == ["Who played the Joker in Batman Begins?", "Who played the Bane in The Dark Knight?"]
    assert edits["role"][0] == "Who voiced the Joker in The Dark Knight?"
    assert edits["categorical"] == [
        "Which company played the Joker in The Dark Knight?",
        "Which country played the Joker in The Dark Knight?",
    ]
    assert scope_edits(QUESTION) == ["Who played the Joker?"]
    assert "temporal" not in edits and temporal_edits("Who won the Tour in 1998?")[0] == "Who won the Tour in 1988?"


def test_counterfactuals_are_scored_edits_that_pass_eq2(memory_store):
    llm = reader()
    state = run(llm, memory_store)
    assert not any(p.endswith("Rewrite:") for p in llm.prompts)  # no rewrite was generated
    rows = state["counterfactuals"]
    assert {r["type"] for r in rows} <= {"entity", "role", "categorical", "temporal", "scope"}
    chosen = [c for c in llm.choices if c[0].endswith("Rewrite:")]
    assert chosen and all(len(options) >= 1 for _, options in chosen)
    passed = [r for r in rows if r["verdict"] is None]
    assert passed and all(r["query"] != QUESTION and r["similarity"] > 0.7 for r in passed)
    explore = state["trace"][1]
    assert (
        explore["node"] == "explore_counterfactuals"
        and explore["selected"] == sum(bool(r.get("selected")) for r in rows) >= 1
    )


def test_hypotheses_and_synthesis_choose_among_the_pools_answers(memory_store):
    llm = reader()
    state = run(llm, memory_store)
    cluster = next(e for e in state["trace"] if e["node"] == "cluster_and_sample")
    assert "Heath Ledger" in cluster["candidates"] and len(state["arbitration"]) == 3
    for h in state["arbitration"]:
        assert h["answer"] in cluster["candidates"] and 0 < h["probability"] <= 1
        assert not h["rationale"] or h["answer"] in h["rationale"]  # the rationale is the passage stating it
    assert not any("Give a short answer, then the reason" in p for p in llm.prompts)  # no hypothesis text
    arbitrate = next(e for e in state["trace"] if e["node"] == "arbitrate")
    distinct = {h["answer"] for h in state["arbitration"]}
    assert arbitrate["mention"] == ("scored support" if len(distinct) > 1 else "string")
    assert state["answer"] == "Heath Ledger"


def test_synthesis_is_a_choice_not_new_text(memory_store):
    llm = reader()
    state = run(llm, memory_store, consensus_share=1.0)  # never accept: always synthesize
    last = state["trace"][-1]
    assert last["node"] == "synthesize" and last["synthesis_choice"]["options"]
    assert state["answer"] in last["synthesis_choice"]["options"]
    assert not any("Several readers" in p for p in llm.prompts)  # asked only as a scored choice
    synthesis = next(p for p, _ in llm.choices if "Several readers" in p)
    # it starts with the passage block the best path's hypothesis read (its KV is in the cache): the same text
    best = [
        p.rsplit("Question:", 1)[0]
        for p, _ in llm.choices
        if p.endswith(f"Question: {QUESTION}\nAnswer:")
        and "Several readers" not in p
        and all(t in passages(p) for t in state["arbitration"][0]["evidence"])
    ]
    assert best and any(synthesis.startswith(b) and b.count("\n[") > 6 for b in best)  # past the worked examples
