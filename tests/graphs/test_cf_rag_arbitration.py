"""CF-RAG's causal arbitration pinned on hand-set numbers, both judge modes.

The graph runs from hand-set evidence samples (as if ``cluster_and_sample`` had drawn them):
hypothesize → arbitrate → accept | synthesize. A fake LLM gives every passage a hand-set relevance
s(q, e) and s(q', e) through its log-probabilities, and every path the answer its first passage
names, so each hypothesis' Ψ = (1 − λ)·φ_coh + λ·φ_causal is known in advance. λ₁ = 0 drops the
embedding term of φ_coh (Eq. 10), leaving φ_coh = mean over E_j of s(q, e)·Mention(a, e).
"""

import math

import pytest
from langchain_core.documents import Document
from langgraph.checkpoint.memory import InMemorySaver

from causalrag.graphs.registry import build_graph
from tests.fakes import FakeLLM

QUESTION = "Who played the Joker in The Dark Knight?"
LOOK_ALIKE = "Who played the Joker in Batman (1989)?"  # the one counterfactual query q'
LAM = 0.4  # λ, the paper's default
PASSAGES = {  # title: (text, s(q, e), s(q', e))
    "Batman (1989 film)": ("Jack Nicholson played the Joker in Batman (1989).", 0.6, 0.9),
    "The Dark Knight (cast)": ("Heath Ledger played the Joker in The Dark Knight.", 0.95, 0.15),
    "The Dark Knight (production)": ("The Dark Knight was filmed in Chicago.", 0.5, 0.5),
    "Academy Awards 2009": ("Ledger won a posthumous Oscar for the Joker.", 0.6, 0.5),
    "Joker (2019 film)": ("Joaquin Phoenix played the Joker in Joker (2019).", 0.5, 0.6),
}
WRITES = {  # the hypothesis a path writes (judge="generate"), by its first passage
    "Batman (1989 film)": "Jack Nicholson",
    "The Dark Knight (cast)": "Heath Ledger",
    "Academy Awards 2009": "Ledger",
    "Joker (2019 film)": "Joaquin Phoenix",
}
CANDIDATES = ["Jack Nicholson", "Heath Ledger", "Ledger", "Joaquin Phoenix"]  # judge="score" chooses among these
UNSTATED = -3.0  # a scored option's log-prob per token where the passages do not state it (0 where they do)
# Ψ = 0.24, 0.40, 0.445 (generate): "Heath Ledger" and "Ledger" agree, 2 of 3 paths: HighConsensus
AGREEING = [["Batman (1989 film)"], ["Academy Awards 2009"], ["The Dark Knight (cast)", "The Dark Knight (production)"]]
# Ψ = 0.24, 0.445, 0.26: three different actors, no consensus
DIVERGENT = [["Batman (1989 film)"], ["The Dark Knight (cast)", "The Dark Knight (production)"], ["Joker (2019 film)"]]


def last_passages(prompt: str) -> str:
    return prompt.rsplit("Passages:", 1)[-1].rsplit("Question:", 1)[0]


def titles_in(prompt: str) -> list[str]:
    block = last_passages(prompt)
    return sorted((t for t in PASSAGES if f"] {t}:" in block), key=block.index)


def fake(synthesis: str = " Heath Ledger", blend: str | None = None) -> FakeLLM:
    """Relevance by log-prob, hypotheses by first passage, scored options by whether the passages state them
    (a scored synthesis prefers ``blend`` when one is given, as the 270M model follows a conflicting blend)."""

    def logprob(prefix: str, continuation: str) -> float:
        # s(q, e) = σ(mean log p(q | e) − mean log p(q | no passage)): the passage-free prior is 0, and
        # the fake divides a rule's value by the continuation's words for reduce="mean"
        titles = titles_in(prefix)
        if not titles:
            return 0.0
        _, s_q, s_cf = PASSAGES[titles[0]]
        s = s_q if continuation.strip() == QUESTION else s_cf
        return math.log(s / (1 - s)) * len(continuation.split())

    def write(prompt: str) -> str:
        if "Several readers" in prompt:
            return synthesis
        return f" {WRITES[titles_in(prompt)[0]]}\nReason: [1] names the actor."

    def option(prompt: str, option: str) -> float:  # the fake spreads it over the option's words
        if blend is not None and "Several readers" in prompt:
            return 0.0 if option == blend else UNSTATED
        return 0.0 if option in last_passages(prompt) else UNSTATED * len(option.split())

    return FakeLLM(default=write, logprob=logprob, option=option)


def document(title: str) -> Document:
    return Document(id=title, page_content=PASSAGES[title][0], metadata={"title": title})


def run_from_samples(llm: FakeLLM, samples: list[list[str]], judge: str, read: dict | None = None, **params) -> dict:
    """The graph from ``cluster_and_sample`` on, with these evidence samples E_j (one per path) and these
    readings of passages alone on record; φ_coh over E_j as Eq. 9 writes it unless ``coherence="pool"``."""
    params.setdefault("coherence", "sample")
    graph = build_graph("cf_rag", llm=llm, checkpointer=InMemorySaver(), judge=judge, hypotheses=len(samples),
                        lam=LAM, lambda1=0.0, lambda2=1.0, **params)
    config = {"configurable": {"thread_id": "arbitration"}}
    values = {"question": QUESTION, "cf_queries": [LOOK_ALIKE], "samples": [[document(t) for t in s] for s in samples],
              "candidates": CANDIDATES if judge == "score" else [], "read": read or {}}
    graph.update_state(config, values, as_node="cluster_and_sample")
    return graph.invoke(None, config)


def stated(answer: str, title: str) -> bool:
    return answer in f"{title}: {PASSAGES[title][0]}"


def mention(answer: str, title: str, answers: list[str], judge: str) -> float:
    """Mention(a, e): the string test (generate), or P(a | e alone) among the hypotheses' answers (score)."""
    if judge == "generate":
        return float(stated(answer, title))
    weights = {a: math.exp(0.0 if stated(a, title) else UNSTATED) for a in dict.fromkeys(answers)}
    return weights[answer] / sum(weights.values())


def expected(samples: list[list[str]], judge: str, coherence: str = "sample") -> list[dict]:
    """φ_coh, φ_causal and Ψ of every path, from the hand-set numbers (Eq. 10-11, Algorithm 1 line 12); φ_coh
    over the path's own sample, or over every path's evidence (``coherence="pool"``, no other pool here)."""
    answers = [WRITES[s[0]] for s in samples]
    everything = list(dict.fromkeys(t for titles in samples for t in titles))
    rows = []
    for answer, titles in zip(answers, samples, strict=True):
        judged = everything if coherence == "pool" else titles
        coh = sum(PASSAGES[t][1] * mention(answer, t, answers, judge) for t in judged) / len(judged)
        causal = sum(PASSAGES[t][1] - PASSAGES[t][2] for t in titles) / len(titles)
        rows.append({"answer": answer, "phi_coh": coh, "phi_causal": causal, "psi": (1 - LAM) * coh + LAM * causal})
    return rows


@pytest.mark.parametrize("coherence", ["sample", "pool"])
@pytest.mark.parametrize("judge", ["generate", "score"])
def test_arbitration_ranks_the_hypotheses_by_psi(judge, coherence):
    state = run_from_samples(fake(), AGREEING, judge, coherence=coherence)
    want = expected(AGREEING, judge, coherence)
    order = sorted(range(len(want)), key=lambda j: -want[j]["psi"])
    assert [h["index"] for h in state["arbitration"]] == order and order[0] != 0
    for h in state["arbitration"]:
        assert h["answer"] == want[h["index"]]["answer"]
        for key in ("phi_coh", "phi_causal", "psi"):
            assert h[key] == pytest.approx(want[h["index"]][key], abs=1e-4), key
    arbitrate = next(e for e in state["trace"] if e["node"] == "arbitrate")
    assert arbitrate["mention"] == ("scored support" if judge == "score" else "string")


@pytest.mark.parametrize("judge", ["generate", "score"])
def test_consensus_edge_accepts_the_best_hypothesis(judge):
    state = run_from_samples(fake(), AGREEING, judge)
    want = expected(AGREEING, judge)
    best = max(range(len(want)), key=lambda j: want[j]["psi"])
    assert best != 0
    assert state["consensus"] is True and [e["node"] for e in state["trace"]][-2:] == ["arbitrate", "accept"]
    assert state["arbitration"][0]["agreement"] == pytest.approx(2 / 3, abs=1e-4)
    assert state["answer"] == want[best]["answer"]
    assert [d.metadata["title"] for d in state["documents"]] == AGREEING[best]  # the accepted path's own sample


def test_empty_synthesis_falls_back_to_the_best_hypothesis():
    state = run_from_samples(fake(synthesis="\n"), DIVERGENT, "generate")
    want = expected(DIVERGENT, "generate")
    best = max(range(len(want)), key=lambda j: want[j]["psi"])
    assert best != 0 and state["consensus"] is False
    synthesize = state["trace"][-1]
    assert synthesize["node"] == "synthesize" and synthesize["fallback_empty_synthesis"] == 1
    assert state["answer"] == want[best]["answer"] == "Heath Ledger"


def test_synthesis_lists_the_top_candidates_best_first():
    llm = fake(synthesis=" Heath Ledger")
    state = run_from_samples(llm, DIVERGENT, "generate")
    prompt = next(p for p in llm.prompts if "Several readers" in p)
    lines = [line for line in prompt.splitlines() if line.startswith("Candidate ")]
    listed = [line.split(": ", 1)[1].split(" because")[0] for line in lines]
    want = sorted(expected(DIVERGENT, "generate"), key=lambda h: -h["psi"])
    assert listed == [h["answer"] for h in want] and state["answer"] == "Heath Ledger"


def test_scored_synthesis_counts_the_sources_that_confirm_an_answer_first():
    """The synthesis reads every top path's passages; where its joint reading prefers an answer one source
    gives (the fake's blend: Jack Nicholson) over one two sources give when read alone (Ledger), the two
    sources decide. Without readings of those passages on record, the joint reading decides."""
    samples = [["Batman (1989 film)"], ["The Dark Knight (cast)", "Academy Awards 2009"], ["Joker (2019 film)"]]
    alone = {"Batman (1989 film)": "Jack Nicholson", "The Dark Knight (cast)": "Heath Ledger",
             "Academy Awards 2009": "Ledger", "Joker (2019 film)": "Joaquin Phoenix"}
    read = {t: {"answer": a, "probability": 1.0, "relevance": 1.0, "how": "written"} for t, a in alone.items()}
    answers = {}
    for record in (read, {}):
        state = run_from_samples(fake(blend="Jack Nicholson"), samples, "score", read=record)
        synthesize = state["trace"][-1]
        assert synthesize["node"] == "synthesize" and state["consensus"] is False
        answers[bool(record)] = (state["answer"], synthesize["reliability"], synthesize["synthesis_choice"])
    (confirmed, scores, choice), (joint, _, _) = answers[True], answers[False]
    assert joint == "Jack Nicholson" == choice["options"][max(range(3), key=choice["probs"].__getitem__)]
    assert confirmed in ("Heath Ledger", "Ledger") and max(scores) > 1  # one source beyond the first confirms it
