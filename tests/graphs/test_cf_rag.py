"""CF-RAG graph logic with a fake LLM and the real in-memory demo store, generate judgment (the paper's
text prompts): counterfactual validation, both branches of the consensus edge, streamed evidence,
the Ψ-based choice driven by the relevance log-probs, and bad input. Scored: tests/graphs/test_cf_rag_scored.py;
Ψ and the final choice on hand-set numbers (both judgments): tests/graphs/test_cf_rag_arbitration.py.
"""

import itertools

import pytest

import causalrag
from causalrag.errors import EmptyQuestionError
from causalrag.graphs.registry import build_graph
from tests.fakes import FakeLLM

QUESTION = "Who played the Joker in The Dark Knight?"
REWRITES = {
    "Change the main entity": " Who played the Joker in the 1989 Batman film?",
    "Change the role": " Who played Batman in The Dark Knight?",
    "Change the category": " Who directed The Dark Knight?",
    "Change the time": " Who played the Joker in The Dark Knight?",  # a repeat of the question
    "Change the breadth": " Which actors have played the Joker?",
}
QUICK = {  # quick baseline-RAG answers, keyed by the question on the prompt's last line
    QUESTION: "Heath Ledger",
    "Who played the Joker in the 1989 Batman film?": "Jack Nicholson",
    "Who played Batman in The Dark Knight?": "Christian Bale",
    "Who directed The Dark Knight?": "Christopher Nolan",
    "Which actors have played the Joker?": "Heath Ledger",  # same answer as the question: not a counterfactual
}


def last_question(prompt: str) -> str:
    return [ln for ln in prompt.splitlines() if ln.startswith("Question: ")][-1].removeprefix("Question: ")


def fake(hypotheses, synthesis=" Heath Ledger", logprob=None):
    """Replies by prompt kind; ``hypotheses`` cycle over the parallel branches."""
    answers = itertools.cycle(hypotheses)

    def reply(prompt: str) -> str:
        if prompt.endswith("Rewrite:"):
            return next(v for k, v in REWRITES.items() if k in prompt)
        if "Several readers" in prompt:
            return synthesis
        if "Give a short answer, then the reason" in prompt:
            return f" {next(answers)}\nReason: [1] names the actor."
        return " " + QUICK.get(last_question(prompt), "unknown")

    return FakeLLM(default=reply, logprob=logprob)


def run(llm, store, question=QUESTION, **params):
    params.setdefault("judge", "generate")
    graph = build_graph("cf_rag", llm=llm, store=store, **params)
    events = list(graph.stream({"question": question}, stream_mode=["updates", "custom", "values"]))
    final = [e for mode, e in events if mode == "values"][-1]
    return (
        final,
        [e for mode, e in events if mode == "custom"],
        [next(iter(u)) for mode, u in events if mode == "updates"],
    )


def test_validation_drops_repeats_and_same_answer_rewrites(memory_store):
    state, _, _ = run(fake(["Heath Ledger"]), memory_store, regenerate=False)
    verdicts = {c["type"]: c["verdict"] for c in state["counterfactuals"]}
    assert verdicts["temporal"] == "repeats the question"
    assert verdicts["scope"] == "same answer"
    assert {k for k, v in verdicts.items() if v is None} == {"entity", "role", "categorical"}
    explore = next(e for e in state["trace"] if e["node"] == "explore_counterfactuals")
    assert explore["rejected_repeat"] == 1 and explore["rejected_same_answer"] == 1 and explore["selected"] == 3
    assert explore["question_quick_answer"] == "Heath Ledger"


def test_failed_types_are_regenerated_once_and_the_top_n_kept(memory_store):
    llm = fake(["Heath Ledger"])
    state, _, _ = run(llm, memory_store, n_counterfactuals=2)
    explore = next(e for e in state["trace"] if e["node"] == "explore_counterfactuals")
    # the two failed types are re-asked with 4 samples each; the fake repeats itself, so they stay dropped
    assert explore["first_attempt_failed"] == 2 and explore["generated"] == 5 + 2 * 4
    assert explore["regenerated_valid"] == 0
    assert explore["valid"] == 3 and explore["selected"] == 2 and len(state["counterfactuals"]) == 5
    chosen = [c for c in state["counterfactuals"] if c.get("selected")]
    others = [c for c in state["counterfactuals"] if c["verdict"] is None and not c["selected"]]
    assert min(c["info"] for c in chosen) >= max(c["info"] for c in others)


def test_no_valid_counterfactual_falls_back_to_the_question_alone(memory_store):
    llm = FakeLLM(default=lambda p: f" {QUESTION}" if p.endswith("Rewrite:") else " Heath Ledger\nReason: [1].")
    state, _, nodes = run(llm, memory_store)
    explore = state["trace"][1]
    assert explore["fallback_no_counterfactual"] == 1 and explore["valid"] == 0
    assert all(h["phi_causal"] == 0.0 for h in state["arbitration"])  # no q' to discriminate against
    assert state["answer"] == "Heath Ledger" and nodes[-1] == "accept"


def test_divergent_hypotheses_are_synthesized(memory_store):
    llm = fake(["Heath Ledger", "Jack Nicholson", "Jared Leto"], synthesis=" Heath Ledger\nmore")
    state, events, nodes = run(llm, memory_store)
    assert state["consensus"] is False and nodes[-1] == "synthesize"
    assert state["answer"] == "Heath Ledger"
    prompt = next(p for p in llm.prompts if "Several readers" in p)
    assert prompt.count("Candidate ") == 3 and "Jack Nicholson" in prompt and "Jared Leto" in prompt
    # the best path's hypothesis prompt, up to its question, is the synthesis's first part
    best = set(state["arbitration"][0]["evidence"])
    hypotheses = [p.rsplit("Question:", 1)[0] for p in llm.prompts if "then the reason" in p]
    assert any(prompt.startswith(h) and all(t in h.rsplit("Passages:", 1)[1] for t in best) for h in hypotheses)
    assert any(e["type"] == "token" and e["stage"] == "synthesize" for e in events)


def test_causal_score_prefers_evidence_specific_to_the_question(memory_store):
    """A passage the LLM finds likelier for q than for any q' raises φ_causal of the paths that hold it."""

    def logprob(prefix: str, cont: str) -> float:
        specific = "Heath Ledger played the Joker in The Dark Knight" in prefix
        return -0.2 if specific and QUESTION in cont else -2.0

    state, _, _ = run(fake(["Heath Ledger", "Jack Nicholson", "Jared Leto"], logprob=logprob), memory_store, seed=3)
    scores = {h["index"]: h for h in state["arbitration"]}
    samples = [e for e in state["trace"] if e["node"] == "cluster_and_sample"][0]["sample_sizes"]
    assert len(samples) == 3
    holds = [h for h in scores.values() if "The Dark Knight (cast)" in h["evidence"]]
    lacks = [h for h in scores.values() if "The Dark Knight (cast)" not in h["evidence"]]
    assert holds and all(h["phi_causal"] > 0 for h in holds)
    assert lacks and all(h["phi_causal"] == pytest.approx(0.0) for h in lacks)
    for h in scores.values():
        assert h["psi"] == pytest.approx(0.6 * h["phi_coh"] + 0.4 * h["phi_causal"], abs=1e-3)


def test_extended_criteria_add_confidence_and_specificity(memory_store):
    state, _, _ = run(fake(["Heath Ledger"]), memory_store, extended=True)
    assert len(state["arbitration"]) == 3
    for h in state["arbitration"]:
        assert 0 < h["confidence"] <= 1 and 0 <= h["specificity"] <= 1
        base = 0.6 * h["phi_coh"] + 0.4 * h["phi_causal"]
        assert h["psi"] == pytest.approx(0.75 * base + 0.15 * h["confidence"] + 0.10 * h["specificity"], abs=1e-3)


def test_stream_shows_every_stage_and_trace_has_per_stage_figures(memory_store):
    state, events, nodes = run(fake(["Heath Ledger"]), memory_store, hypotheses=2)
    kinds = [e["type"] for e in events]
    for kind in ("counterfactuals", "evidence", "clusters", "hypothesis", "score", "route", "answer"):
        assert kind in kinds, kind
    assert kinds.count("hypothesis") == 2 and kinds.count("score") == 2
    samples = [e for e in events if e["type"] == "evidence" and e["stage"] == "sample"]
    assert [e["path"] for e in samples] == [0, 1]
    score = next(e for e in events if e["type"] == "score")
    assert {"phi_coh", "phi_causal", "psi", "agreement"} <= set(score)
    assert nodes[:4] == ["retrieve", "explore_counterfactuals", "dialectical_retrieve", "cluster_and_sample"]
    by_node = {e["node"]: e for e in state["trace"]}
    assert by_node["dialectical_retrieve"]["pool"] > 0 and by_node["cluster_and_sample"]["clusters"] >= 1
    assert by_node["arbitrate"]["relevance_source"] == "llm-query-likelihood"
    assert all({"seconds", "llm_calls"} <= set(e) for e in state["trace"])


def test_dedup_threshold_controls_the_pool(memory_store):
    loose, _, _ = run(fake(["Heath Ledger"]), memory_store, theta_dedup=0.3, regenerate=False)
    strict, _, _ = run(fake(["Heath Ledger"]), memory_store, theta_dedup=0.999, regenerate=False)
    by = lambda s: next(e for e in s["trace"] if e["node"] == "dialectical_retrieve")  # noqa: E731
    assert by(loose)["duplicates"] > by(strict)["duplicates"] == 0
    assert by(loose)["pool"] < by(strict)["pool"]


def test_malformed_output_and_empty_question(memory_store):
    state, _, _ = run(FakeLLM(default="\n\n"), memory_store)
    assert state["answer"] == "" and state["trace"][1]["fallback_no_counterfactual"] == 1
    assert any(e.get("fallback_empty_answer") for e in state["trace"])
    with pytest.raises(EmptyQuestionError):
        build_graph("cf_rag", llm=FakeLLM(), store=memory_store).invoke({"question": "  "})


def test_registered_with_the_papers_defaults():
    params = causalrag.METHODS["cf_rag"].parameters()
    assert (params["n_counterfactuals"], params["clusters"], params["hypotheses"], params["lam"]) == (3, 4, 3, 0.4)
    assert (params["theta_sim"], params["theta_dedup"], params["rho"]) == (0.7, 0.95, 0.5)
