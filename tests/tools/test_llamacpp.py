"""llama.cpp internals the conformance suite (``test_backends.py``) cannot see: cache reuse and errors."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"),
]

HEADER = "Answer the question with a short phrase.\n\nQuestion: Where is the Eiffel Tower?\nAnswer: Paris\n\n"


@pytest.fixture(scope="module")
def llm():
    from causalrag.tools.backends.llamacpp import LlamaCppLLM

    return LlamaCppLLM(n_ctx=2048)


def decoded_tokens(llm, monkeypatch) -> list[int]:
    """Counts the tokens each ``llama_decode`` round receives."""
    counts: list[int] = []
    decode = llm._decode

    def counting(entries, *args, **kwargs):
        counts.append(len(entries))
        return decode(entries, *args, **kwargs)

    monkeypatch.setattr(llm, "_decode", counting)
    return counts


def test_a_shared_header_is_decoded_once_within_and_across_calls(llm, monkeypatch):
    prompts = [f"{HEADER}Question: {q}\nAnswer:" for q in ("Who wrote Hamlet?", "What is 2 + 2?", "Where is Rome?")]
    header = len(llm._prompt_tokens(HEADER))
    lengths = [len(llm._prompt_tokens(p)) for p in prompts]
    counts = decoded_tokens(llm, monkeypatch)
    llm.generate(prompts, max_new_tokens=1)
    assert counts[0] <= sum(lengths) - 2 * (header - 2)  # the header's cells serve all three rows
    counts.clear()
    llm.generate([f"{HEADER}Question: Who painted the Mona Lisa?\nAnswer:"], max_new_tokens=1)
    assert counts[0] < 20  # only the new question: the header comes from the cache


def test_a_full_cache_drops_the_least_recently_used_prompts_first(llm, monkeypatch):
    """Three calls of two ~400-token rows with nothing in common but the start token, in a 2,048-cell cache:
    the third call makes room by dropping the oldest rows, and the rows of the call just before it stay
    cached (as the evidence prefix a method's next module reads again does)."""
    llm.clear_cache()
    topics = ("rivers of Europe", "the planets", "Roman emperors", "Renaissance painters", "bridges", "glaciers")
    prompts = [f"Notes on {t}: " + " ".join(f"{t} fact {i}." for i in range(55)) + "\nAnswer:" for t in topics]
    assert all(300 < len(llm._prompt_tokens(p)) < 480 for p in prompts)
    assert sum(len(llm._prompt_tokens(p)) for p in prompts) > llm.n_ctx  # the third call cannot fit beside all
    for pair in (prompts[0:2], prompts[2:4], prompts[4:6]):
        llm.generate(pair, max_new_tokens=1)
    counts = decoded_tokens(llm, monkeypatch)
    llm.generate([prompts[3]], max_new_tokens=1)
    assert counts[0] < 20


def test_scoring_decodes_a_head_once_for_all_its_continuations(llm, monkeypatch):
    head = f"{HEADER}Question: Where is the Louvre?\nAnswer:"
    options = [" Paris", " Rome", " in Paris, France", " London"]
    alone = [llm.token_logprobs([head], [o])[0] for o in options]
    llm.clear_cache()
    counts = decoded_tokens(llm, monkeypatch)
    together = llm.token_logprobs([head] * len(options), options)
    assert sum(counts) <= len(llm._tokens(head, start=True)) + sum(len(llm._tokens(o, start=False)) for o in options)
    assert all(abs(a - b) < 0.5 for x, y in zip(alone, together, strict=True) for a, b in zip(x, y, strict=True))


def test_usage_counts_computed_prompt_tokens_and_relevance_scoring_feeds_the_readings(llm):
    """query_relevance scores q after each passage's reading prefix, so reading those passages next
    computes little more than the question: the counted prompt tokens are the tokens decoded."""
    from langchain_core.documents import Document

    from causalrag.nodes.evidence import query_relevance
    from causalrag.prompts.common import answer_prompt
    from causalrag.tools.usage import metered

    docs = [
        Document(
            page_content="The Dark Knight (2008) stars Christian Bale as Batman and Heath Ledger as the Joker.",
            metadata={"title": "The Dark Knight"},
        ),
        Document(
            page_content="Batman (1989) stars Michael Keaton as Batman and Jack Nicholson as the Joker.",
            metadata={"title": "Batman (1989 film)"},
        ),
    ]
    question = "Who played the Joker in The Dark Knight?"
    readings = [answer_prompt(question, [d]) for d in docs]

    def read() -> int:
        with metered() as usage:
            llm.generate(readings, max_new_tokens=1)
        return usage.prompt_tokens

    llm.clear_cache()
    cold = read()
    assert 0 < cold < sum(len(llm._prompt_tokens(p)) for p in readings)  # the few-shot header counted once
    llm.clear_cache()
    with metered() as scoring:
        rel = query_relevance(llm, docs, [question])
    assert rel[0, 0] > rel[1, 0]
    assert scoring.prompt_tokens > 0
    warm = read()
    assert warm < cold / 10  # the passages (and here the question, scored as q) come from the cache: "Answer:" is left


def test_a_full_context_is_the_error_you_see_and_the_model_recovers(llm):
    """llama.cpp's own error surfaces (it once hid behind an UnboundLocalError), and the next call works."""
    real = llm.n_ctx
    llm.n_ctx = 100_000  # the planner now believes a huge prompt fits; llama.cpp's decode refuses it
    try:
        with pytest.raises(RuntimeError, match="context is full"):
            llm.generate(["word " * 3000], max_new_tokens=2)
    finally:
        llm.n_ctx = real
    assert llm.generate(["Question: What is the capital of France?\nAnswer:"], max_new_tokens=3, stop=["\n"])[0][
        0
    ].strip()


def test_an_exact_stream_gets_the_same_logits_whatever_ran_before(llm, monkeypatch):
    """``exact=True`` (the answer node's standard reading) must not depend on the cache: after other
    prompts that cached the same header, and after an exact prompt whose blocks it reuses, the prompt's
    logits are bit-identical to a cold start."""
    import numpy as np

    from causalrag.tools.backends.llamacpp import EXACT_BLOCK

    # a long passage: short prompts happened to match even when decoded after a cached header
    facts = " ".join(f"The river number {i} flows through town {i}." for i in range(40))
    passage = f"{HEADER}Passage: {facts} The Rhine flows through Cologne.\n"
    prompt = f"{passage}Question: Which river flows through Cologne?\nAnswer:"

    def other_prompts():
        llm.generate([f"{HEADER}Question: Who wrote Hamlet?\nAnswer:", f"{passage}Question: Name a town.\nAnswer:"],
                     max_new_tokens=2)

    def exact_then_others():
        "".join(llm.stream(f"{passage}Question: Which river is named?\nAnswer:", max_new_tokens=2, exact=True))
        other_prompts()

    def exact_then_every_sequence():
        """A method's later calls: one row that shares only the header (it must copy the exact cells, not
        take their sequence over and cut it), then more rows than sequences (the exact one is given up last)."""
        "".join(llm.stream(f"{passage}Question: Which river is named?\nAnswer:", max_new_tokens=2, exact=True))
        llm.generate([f"{HEADER}Question: Who wrote Hamlet?\nAnswer:"], max_new_tokens=2)
        for call in range(5):
            llm.generate([f"Question: What is {call} + {k}?\nAnswer:" for k in range(8)], max_new_tokens=1)

    pick, seen = llm._pick, []
    monkeypatch.setattr(llm, "_pick", lambda logits, *args: seen.append(np.array(logits)) or pick(logits, *args))
    runs = []
    for history in (lambda: None, other_prompts, exact_then_others, exact_then_every_sequence):
        llm.clear_cache()
        history()
        seen.clear()
        computed = llm.usage.prompt_tokens
        text = "".join(llm.stream(prompt, max_new_tokens=4, stop=["\n"], exact=True))
        runs.append((text, seen[0], llm.usage.prompt_tokens - computed))
    (cold_text, cold_logits, cold_cells), *warm = runs
    for text, logits, _ in warm:
        assert np.array_equal(logits, cold_logits)
        assert text == cold_text
    shared = len(llm._prompt_tokens(passage)) // EXACT_BLOCK * EXACT_BLOCK
    assert warm[1][2] == warm[2][2] == cold_cells - shared  # the earlier exact prompt's whole blocks served again


def test_an_exact_prompt_of_another_kind_in_between_costs_no_header(llm, monkeypatch):
    """Triage's order: the closed-book answer (an exact prompt of another kind) comes between two exact
    readings. The reading's whole blocks come back from their saved copy, bit-identical to a cold start."""
    import numpy as np

    from causalrag.tools.backends.llamacpp import EXACT_BLOCK

    facts = " ".join(f"The river number {i} flows through town {i}." for i in range(25))
    passage = f"{HEADER}Passage: {facts} The Rhine flows through Cologne.\n"  # within Gemma 3's 512-token window
    prompt = f"{passage}Question: Which river flows through Cologne?\nAnswer:"
    other = " ".join(f"Town {i} lies on river {i}." for i in range(20))
    pick, seen = llm._pick, []
    monkeypatch.setattr(llm, "_pick", lambda logits, *args: seen.append(np.array(logits)) or pick(logits, *args))

    def reading(history) -> tuple[str, np.ndarray, int]:
        llm.clear_cache()
        history()
        seen.clear()
        computed = llm.usage.prompt_tokens
        text = "".join(llm.stream(prompt, max_new_tokens=4, stop=["\n"], exact=True))
        return text, seen[0], llm.usage.prompt_tokens - computed

    def another_kind_between():
        "".join(llm.stream(f"{passage}Question: Which river is named?\nAnswer:", max_new_tokens=2, exact=True))
        "".join(llm.stream(f"Answer briefly. {other}\nQuestion: Which town?\nAnswer:", max_new_tokens=2, exact=True))

    cold_text, cold_logits, cold_cells = reading(lambda: None)
    text, logits, cells = reading(another_kind_between)
    assert text == cold_text
    assert np.array_equal(logits, cold_logits)
    assert cells == cold_cells - len(llm._prompt_tokens(passage)) // EXACT_BLOCK * EXACT_BLOCK


def test_scoring_a_streamed_reply_reads_its_log_probs_instead_of_decoding_it(llm, monkeypatch):
    """Triage scores its closed-book answer right after streaming it: the tokens the stream picked already carry
    their log-probabilities (full softmax), so nothing is decoded. A reply the stream did not give is decoded."""
    import math

    prompt = f"{HEADER}Question: Which river flows through Cologne?\nAnswer:"
    text = "".join(llm.stream(prompt, max_new_tokens=6, stop=["\n"], exact=True)).strip()
    assert text
    counts = decoded_tokens(llm, monkeypatch)
    streamed = llm.choose([prompt], [[text]])[0].scores[0]
    assert counts == [] and math.isfinite(streamed) and streamed < 0
    other = llm.choose([prompt], [["the Danube"]])[0].scores[0]
    assert counts and math.isfinite(other)  # not what the stream replied: decoded as before
    counts.clear()
    beside = llm.choose([prompt], [[text, "the Danube"]])[0]
    assert sum(counts) > len(llm._tokens(" the Danube", start=False))  # beside another option: both decoded
    assert math.isfinite(beside.scores[0])
    llm._streamed = None
    counts.clear()
    decoded = llm.choose([prompt], [[text]])[0].scores[0]
    assert counts and abs(decoded - streamed) < 0.25  # the same quantity; llama.cpp's batch shapes move it a little
