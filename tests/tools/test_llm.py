"""The transformers LLM tool with the real bundled model (loaded once per session)."""

import contextvars
import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from causalrag.errors import ModelNotFoundError
from causalrag.tools.backends.base import truncate_at_stop
from causalrag.tools.backends.transformers import TransformersLLM
from causalrag.tools.usage import Usage, metered

PASSAGE = (
    "Passage: The Eiffel Tower was completed in 1889 for the World's Fair.\n"
    "Question: When was the Eiffel Tower completed?\nAnswer:"
)


def test_truncate_at_stop():
    assert truncate_at_stop("Paris\nQuestion: x", ["\n"]) == "Paris"
    assert truncate_at_stop("a STOP b END", ["END", "STOP"]) == "a "
    assert truncate_at_stop("abc", None) == "abc"


def test_metered_nests_and_counts_only_inside():
    from causalrag.tools.usage import record

    total = Usage()
    with metered() as outer:
        record(total, Usage(calls=1))
        with metered() as inner:
            record(total, Usage(calls=2, new_tokens=5))
    record(total, Usage(calls=4))
    assert (outer.calls, inner.calls, inner.new_tokens, total.calls) == (3, 2, 5, 7)


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFoundError, match="--model"):
        TransformersLLM(str(tmp_path / "nothing.gguf"))
    with pytest.raises(ModelNotFoundError, match="CAUSALRAG_MODEL"):
        TransformersLLM("./no/such/folder")


@pytest.mark.slow
def test_batched_generation_equals_single_calls(real_llm):
    prompts = [PASSAGE, "Question: What is the capital of France?\nAnswer:", "Question: 2 + 2 =\nAnswer:"]
    batched = real_llm.generate(prompts, max_new_tokens=14, stop=["\n"])
    single = [real_llm.generate([p], max_new_tokens=14, stop=["\n"])[0] for p in prompts]
    assert batched == single
    assert "1889" in batched[0][0]
    assert all("\n" not in out[0] for out in batched)


@pytest.mark.slow
def test_parallel_branches_decode_together_and_get_their_own_answers(real_llm):
    """Three threads (like three ``Send`` branches) each ask for one greedy answer: same text as alone, fewer passes."""
    prompts = [PASSAGE, "Question: What is the capital of France?\nAnswer:", "Question: 2 + 2 =\nAnswer:"]
    with metered() as alone:
        solo = [real_llm.generate([p], max_new_tokens=6)[0] for p in prompts]
    with metered() as together, ThreadPoolExecutor(len(prompts)) as pool:
        contexts = [contextvars.copy_context() for _ in prompts]  # as LangGraph runs branches: with the caller's meters
        parallel = list(pool.map(lambda c, p: c.run(real_llm.generate, [p], max_new_tokens=6)[0], contexts, prompts))
    assert parallel == solo
    assert together.calls == alone.calls == 3
    assert together.forward_passes < alone.forward_passes


@pytest.mark.slow
def test_samples_and_counters(real_llm):
    with metered() as usage:
        out = real_llm.generate([PASSAGE, PASSAGE], max_new_tokens=6, temperature=1.0, n=3, seed=7)
    assert [len(o) for o in out] == [3, 3]
    assert usage.calls == 6 and usage.prompt_tokens > 0 and 0 < usage.new_tokens <= 36
    again = real_llm.generate([PASSAGE, PASSAGE], max_new_tokens=6, temperature=1.0, n=3, seed=7)
    assert again == out  # seeded sampling is reproducible
    greedy = real_llm.generate([PASSAGE], max_new_tokens=6, n=2)
    assert greedy[0][0] == greedy[0][1]


@pytest.mark.slow
def test_stream_yields_the_greedy_completion(real_llm):
    pieces = list(real_llm.stream(PASSAGE, max_new_tokens=12, stop=["\n"]))
    assert len(pieces) > 1
    assert "".join(pieces) == real_llm.generate([PASSAGE], max_new_tokens=12, stop=["\n"])[0][0]


@pytest.mark.slow
def test_logprob_shared_prefix_matches_full_pass_and_ranks_sensibly(real_llm):
    prefix = "Question: When was the Eiffel Tower completed?\nAnswer:"
    conts = [" The Eiffel Tower was completed in 1889.", " Bananas are a yellow fruit.", " 1889"]
    shared = real_llm.logprob([prefix] * 3, conts)  # one prefix, three continuations: KV-cache path
    full = [real_llm.logprob([prefix], [c])[0] for c in conts]  # one at a time: full path
    assert all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(shared, full, strict=True))
    assert shared[0] > shared[1]
    mean = real_llm.logprob([prefix] * 3, conts, reduce="mean")
    assert mean[2] == pytest.approx(shared[2] / len(real_llm.token_logprobs([prefix], [conts[2]])[0]))
    assert real_llm.logprob([prefix], [""]) == [0.0]
    unconditional = real_llm.logprob(["", ""], conts[:2])
    assert all(u < 0 for u in unconditional)


@pytest.mark.slow
def test_yes_probability_is_a_probability(real_llm):
    probs = real_llm.yes_probability(["Is Paris in France? Answer yes or no.\nAnswer:", "Is the sky green?\nAnswer:"])
    assert all(0.0 < p < 1.0 for p in probs)


def test_dtype_setting_is_checked_and_auto_keeps_fp32_on_a_cpu(monkeypatch):
    import torch

    from causalrag.errors import CausalRAGError
    from causalrag.tools.backends.transformers import pick_dtype

    assert pick_dtype("auto", "cpu") is torch.float32
    assert pick_dtype("auto", "cuda") is torch.bfloat16
    assert pick_dtype("bfloat16", "cpu") is torch.bfloat16
    with pytest.raises(CausalRAGError, match="CAUSALRAG_DTYPE='fp8' is not one of auto, float32, bfloat16, float16"):
        pick_dtype("fp8", "cpu")
    monkeypatch.setenv("CAUSALRAG_DTYPE", "fp8")
    with pytest.raises(CausalRAGError, match="CAUSALRAG_DTYPE"):
        TransformersLLM()


@pytest.mark.slow
def test_bf16_weights_answer_and_rank_as_fp32_does_on_a_clear_case(real_llm):
    """CAUSALRAG_DTYPE=bfloat16 (the demo's choice on a CPU with native bf16) on a passage that states the
    answer: the greedy reply may be worded differently (it is here: "The Eiffel Tower was completed in
    1889" vs "It was completed in 1889") but states the same answer, and the scored choice agrees."""
    import torch

    half = TransformersLLM(dtype="bfloat16")
    assert half.model.dtype is torch.bfloat16
    replies = [llm.generate([PASSAGE], max_new_tokens=14, stop=["\n"])[0][0] for llm in (half, real_llm)]
    assert all("1889" in r for r in replies), replies
    options = [["1889", "1925", "Paris"]]
    ours, theirs = half.choose([PASSAGE], options)[0], real_llm.choose([PASSAGE], options)[0]
    assert ours.answer == theirs.answer == "1889"
    assert all(abs(a - b) < 0.25 for a, b in zip(ours.scores, theirs.scores, strict=True))


def test_shared_head_and_head_cache_keep_the_longest_stored_prefix():
    from causalrag.tools.backends.transformers import HeadCache, shared_head

    assert shared_head([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert shared_head([[1, 2, 3], [1, 2, 3]], limit=2) == 2
    assert shared_head([[7, 8], [9]]) == 0
    heads = HeadCache(tokens=5)
    heads.put([1, 2], "short")
    heads.put([1, 2, 3], "long")
    assert heads.longest([1, 2, 3, 4]) == (3, "long")
    assert heads.longest([1, 2, 9]) == (2, "short")
    assert heads.longest([5]) == (0, None)
    heads.put([4], "new")  # 6 tokens held: drops the least recently used, [1, 2, 3] (the last hit was [1, 2])
    assert heads.longest([1, 2, 3]) == (2, "short")


@pytest.mark.slow
def test_cached_heads_give_what_full_passes_give(real_llm, monkeypatch):
    """Prompts sharing a few-shot header: generation, options, yes-probabilities and raw scores with the
    header (and each prompt) served from the head cache equal those of passes that reuse nothing."""
    import causalrag.tools.backends.transformers as backend

    header = "Answer with a short phrase.\n\nQuestion: What is the capital of Italy?\nAnswer: Rome\n\n"
    prompts = [header + PASSAGE, header + "Question: What is the capital of France?\nAnswer:"]
    options = [["1889", "1900"], ["Paris", "Lyon"]]

    def run():
        real_llm.clear_cache()
        return (real_llm.generate(prompts, max_new_tokens=8, stop=["\n"]), real_llm.choose(prompts, options),
                real_llm.yes_probability(prompts), real_llm.logprob([header] * 2, [" Paris is in France.", " 1889"]))

    with metered() as usage:
        cached = run()
    monkeypatch.setattr(backend, "HEAD_MIN", 10**9)  # no head is ever long enough: every row runs whole
    with metered() as full_usage:
        full = run()
    assert cached[0] == full[0] and "1889" in cached[0][0][0]
    assert [c.answer for c in cached[1]] == [c.answer for c in full[1]] == ["1889", "Paris"]
    for a, b in zip(cached[1], full[1], strict=True):
        assert a.scores == pytest.approx(b.scores, abs=1e-3)
    assert cached[2] == pytest.approx(full[2], abs=1e-3)
    assert cached[3] == pytest.approx(full[3], abs=1e-3)
    assert usage.prompt_tokens < full_usage.prompt_tokens  # the header ran once, not once per row
