"""Every LLM backend passes one interface suite; bad backend configuration is one clear sentence.

The suite runs over each installed backend with the bundled Gemma 3 270M GGUF: ``transformers``
(always), ``llamacpp`` (when ``llama-cpp-python`` is installed) and ``openai`` against a real
``llama_cpp.server`` that this module starts on 127.0.0.1 and stops at the end (no mock).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import sys
from pathlib import Path

import httpx
import pytest

from causalrag.errors import (
    BackendUnavailableError,
    ModelNotFoundError,
    ScoringUnavailableError,
    ServerRequestError,
    ServerUnreachableError,
    UnknownBackendError,
)
from causalrag.tools.backends.chat_model import LLMChatModel
from causalrag.tools.backends.openai import OpenAILLM
from causalrag.tools.llm import choose_backend, load_llm
from causalrag.tools.servers import llama_server_command
from causalrag.tools.usage import metered
from tests.servers.conftest import answers, free_port, server

HAS_LLAMACPP = importlib.util.find_spec("llama_cpp") is not None
HAS_SERVER = (
    HAS_LLAMACPP
    and importlib.util.find_spec("fastapi") is not None
    and importlib.util.find_spec("sse_starlette") is not None
)
needs_llamacpp = pytest.mark.skipif(
    not HAS_LLAMACPP, reason="llama-cpp-python is not installed (pip install 'causalrag[llamacpp]')"
)

PASSAGE = (
    "Passage: The Eiffel Tower was completed in 1889 for the World's Fair.\n"
    "Question: When was the Eiffel Tower completed?\nAnswer:"
)
PREFIX = "Question: When was the Eiffel Tower completed?\nAnswer:"
CONTINUATIONS = [" The Eiffel Tower was completed in 1889.", " Bananas are a yellow fruit.", " 1889"]


# --------------------------------------------------------------------------- backends
@pytest.fixture(scope="session")
def transformers_llm(real_llm):
    from causalrag.tools.backends.transformers import TransformersLLM

    return real_llm if isinstance(real_llm, TransformersLLM) else load_llm(backend="transformers")


@pytest.fixture(scope="session")
def llamacpp_llm():
    if not HAS_LLAMACPP:
        pytest.skip("llama-cpp-python is not installed")
    return load_llm(backend="llamacpp")  # a second instance beside an auto-selected one costs ~1 s and ~300 MB


@pytest.fixture(scope="session")
def llama_server():
    """llama.cpp's OpenAI-compatible server on the bundled GGUF, on a free local port, stopped at the end."""
    if not HAS_SERVER:
        pytest.skip("llama-cpp-python[server] is not installed")
    url = f"http://127.0.0.1:{(port := free_port())}/v1"
    command = llama_server_command(port=port, n_ctx=2048, n_threads=2, verbose=False, logits_all=True)  # echo scoring
    with server(command, lambda: answers(f"{url}/models"), name="llama_cpp.server"):
        yield url


@pytest.fixture(scope="session")
def openai_llm(llama_server):
    # plain completions (a base model) and no repeat penalty (llama.cpp's server defaults to 1.1)
    return OpenAILLM(llama_server, api="completions", sampling={"repeat_penalty": 1.0}, max_concurrency=2)


@pytest.fixture(params=["transformers", "llamacpp", "openai"])
def backend(request):
    return request.getfixturevalue(f"{request.param}_llm")


# --------------------------------------------------------------------------- the conformance suite
def batch_invariant(llm) -> bool:
    """Whether ``llm`` promises the same greedy text for a prompt alone or in a batch. transformers does (padding
    and its head cache move a log-prob by less than 1e-5, measured); llama.cpp's kernels are not batch-invariant
    (``tools/backends/llamacpp.py``), nor is its server, so those promise the answer, not every word."""
    from causalrag.tools.backends.transformers import TransformersLLM

    return isinstance(llm, TransformersLLM)


def per_token_tolerance(llm) -> float:
    """How far one token's log-prob may move between batch shapes: float noise on transformers; on llama.cpp
    up to ~0.5 nats (the bound ``tools/backends/llamacpp.py`` documents: 0.25 measured on this module's prompts)."""
    return 1e-3 if batch_invariant(llm) else 0.5


def same_start(llm, prompt: str) -> None:
    """Bring ``llm`` to one cache state before each of two runs of ``prompt`` whose outputs are compared bit for
    bit: llama.cpp's logits depend on what its cache holds. Our backends empty their caches (the same rows from
    an empty cache give the same logits); a server's prompt cache cannot be emptied, so one call fills it with
    ``prompt`` and every later run re-decodes only the prompt's last token."""
    if isinstance(llm, OpenAILLM):
        llm.generate([prompt], max_new_tokens=1)
    else:
        llm.clear_cache()


@pytest.mark.slow
def test_generation_is_batched_greedy_and_stops(backend):
    prompts = [PASSAGE, "Question: What is the capital of France?\nAnswer:"]
    with metered() as usage:
        batched = backend.generate(prompts, max_new_tokens=12, stop=["\n"], n=2)
    with metered() as alone:
        single = [backend.generate([p], max_new_tokens=12, stop=["\n"])[0] for p in prompts]
    assert all(out[0] == out[1] for out in batched)  # greedy: n identical copies
    for outputs in (batched, single):  # batched or alone: the same answers, each stopped before the newline
        assert "1889" in outputs[0][0] and "Paris" in outputs[1][0], outputs
        assert all("\n" not in o for out in outputs for o in out)
    assert usage.calls == 4 and usage.prompt_tokens > 0 and 0 < usage.new_tokens <= 2 * 12
    assert alone.calls == 2 and 0 < alone.new_tokens <= 2 * 12  # at most max_new_tokens per prompt
    if batch_invariant(backend):
        assert [b[:1] for b in batched] == single


@pytest.mark.slow
def test_sampling_is_seeded(backend):
    same_start(backend, PASSAGE)
    out = backend.generate([PASSAGE], max_new_tokens=6, temperature=1.0, n=3, seed=7)
    assert len(out[0]) == 3
    same_start(backend, PASSAGE)
    assert backend.generate([PASSAGE], max_new_tokens=6, temperature=1.0, n=3, seed=7) == out


@pytest.mark.slow
def test_stream_yields_the_greedy_completion(backend):
    same_start(backend, PASSAGE)
    pieces = list(backend.stream(PASSAGE, max_new_tokens=12, stop=["\n"]))
    assert len(pieces) >= 1 and "1889" in "".join(pieces)
    same_start(backend, PASSAGE)
    assert "".join(pieces) == backend.generate([PASSAGE], max_new_tokens=12, stop=["\n"])[0][0]


@pytest.mark.slow
def test_logprob_shared_prefix_matches_single_calls_and_ranks(backend):
    # short texts: llama.cpp's server sorts the whole 262k vocabulary in Python for every echoed token
    prefix, conts = "The capital of France is", [" Paris", " a yellow banana"]
    shared = backend.token_logprobs([prefix] * 2, conts)
    assert sum(shared[0]) > sum(shared[1]) and all(v < 0 for t in shared for v in t)
    if not isinstance(backend, OpenAILLM):  # a server has no shared-prefix path of ours to compare
        single = [backend.token_logprobs([prefix], [c])[0] for c in conts]
        assert all(
            math.isclose(a, b, abs_tol=per_token_tolerance(backend))
            for s, t in zip(shared, single, strict=True)
            for a, b in zip(s, t, strict=True)
        )
    mean = backend.logprob([prefix], [conts[1]], reduce="mean")[0]
    assert mean == pytest.approx(sum(shared[1]) / len(shared[1]), abs=per_token_tolerance(backend))
    assert backend.logprob([prefix], [""]) == [0.0]


@pytest.mark.slow
def test_choose_scores_options_as_the_reply_in_one_call(backend):
    """A scored choice: the option the passage states wins, calibration keeps it, one call per prompt."""
    options = ["1889", "1925", "a yellow banana"]
    with metered() as usage:
        plain = backend.choose([PASSAGE], [options])[0]
        calibrated = backend.choose([PASSAGE], [options], neutral=["Passage: N/A\nQuestion: N/A\nAnswer:"])[0]
    assert plain.answer == "1889" and calibrated.answer == "1889"
    assert math.isclose(sum(plain.probs), 1.0) and all(0 < p < 1 for p in plain.probs)
    assert usage.calls == 3  # one per prompt: the plain one, then the calibrated one with its neutral twin
    reference = backend.logprob([PASSAGE] * 3, [" 1889", " 1925", " a yellow banana"], reduce="mean")
    assert all(
        math.isclose(a, b, abs_tol=per_token_tolerance(backend)) for a, b in zip(plain.scores, reference, strict=True)
    )


@pytest.mark.slow
def test_yes_probability_is_a_probability(backend):
    probs = backend.yes_probability(
        ["Is Paris in France? Answer yes or no.\nAnswer:", "Is the sky green? Answer yes or no.\nAnswer:"]
    )
    assert all(0.0 < p < 1.0 for p in probs)


@pytest.mark.slow
def test_langchain_chat_model_view(backend):
    chat = LLMChatModel(llm=backend, max_new_tokens=12, stop=["\n"])
    same_start(backend, PASSAGE)
    said = chat.invoke(PASSAGE).content
    same_start(backend, PASSAGE)
    assert said == backend.generate([PASSAGE], max_new_tokens=12, stop=["\n"])[0][0]


# --------------------------------------------------------------------------- agreement between backends
@pytest.mark.slow
def test_tokens_are_counted_against_a_context_window(backend):
    """What causalrag.budget fits prompts to: a count per text, growing with the text, and the window."""
    short, long = backend.count_tokens([PREFIX, PASSAGE * 20])
    assert 0 < short < long and backend.context_window >= 2048
    assert backend.count_tokens([]) == []


@pytest.mark.slow
@needs_llamacpp
def test_logprobs_agree_between_transformers_and_llamacpp(transformers_llm, llamacpp_llm):
    """Q4_K_M weights de-quantized to fp32 (transformers) vs run quantized (llama.cpp): measured
    per-token differences stay below ~0.1 nats; we allow 0.15 per token on the sums."""
    prefixes = [PREFIX] * 3 + ["", PASSAGE]
    conts = [*CONTINUATIONS, "The Eiffel Tower is in Paris.", " 1889"]
    reference = transformers_llm.token_logprobs(prefixes, conts)
    llamacpp_llm.clear_cache()  # the same batches whatever ran before (llama.cpp is not batch-invariant)
    fast = llamacpp_llm.token_logprobs(prefixes, conts)
    assert [len(t) for t in reference] == [len(t) for t in fast]  # same tokenizer
    for ref, got in zip(reference, fast, strict=True):
        assert abs(sum(ref) - sum(got)) <= 0.15 * len(ref), (ref, got)
    assert sorted(range(3), key=lambda i: sum(reference[i])) == sorted(range(3), key=lambda i: sum(fast[i]))


@pytest.mark.slow
@needs_llamacpp
def test_both_backends_answer_the_clear_demo_questions(transformers_llm, llamacpp_llm, demo_store):
    """Greedy answers are not identical on every demo question: quantized arithmetic flips near-ties
    (``benchmarks/backends.py`` prints how many agree); on the clear-cut ones both are right."""
    from causalrag.corpus import demo_questions
    from causalrag.graphs.registry import build_graph

    clear = [q for q in demo_questions() if q["id"] in ("simple-pride", "bridge-beethoven-river")]
    for llm in (transformers_llm, llamacpp_llm):
        graph = build_graph("standard_rag", llm=llm, store=demo_store)
        for q in clear:
            answer = graph.invoke({"question": q["question"]})["answer"]
            assert any(a.lower() in answer.lower() for a in q["answers"]), (llm.name, q["id"], answer)


@pytest.mark.slow
def test_openai_backend_matches_local_llamacpp(openai_llm, llamacpp_llm):
    """The server runs the same GGUF with llama.cpp, one request at a time and with its own prompt cache, so it
    states the same answers and log-probs within llama.cpp's batch-to-batch tolerance (not the same words)."""
    prompts = [PASSAGE, "Question: Who wrote Pride and Prejudice?\nAnswer:"]
    for llm in (openai_llm, llamacpp_llm):
        outputs = llm.generate(prompts, max_new_tokens=12, stop=["\n"])  # "1889" is four tokens
        assert "1889" in outputs[0][0] and "Austen" in outputs[1][0], outputs
    remote = openai_llm.token_logprobs(["The capital of France is"], [" Paris"])[0]
    local = llamacpp_llm.token_logprobs(["The capital of France is"], [" Paris"])[0]
    assert len(remote) == len(local), (remote, local)
    tolerance = per_token_tolerance(llamacpp_llm)
    assert all(math.isclose(a, b, abs_tol=tolerance) for a, b in zip(remote, local, strict=True)), (remote, local)


# --------------------------------------------------------------------------- configuration errors (fast)
def test_unknown_backend_is_one_sentence(monkeypatch):
    with pytest.raises(UnknownBackendError, match="choose one of auto, transformers, llamacpp, openai"):
        load_llm(backend="tensorflow")
    monkeypatch.setenv("CAUSALRAG_BACKEND", "vllm")
    with pytest.raises(UnknownBackendError, match="CAUSALRAG_BACKEND"):
        choose_backend()


def test_backend_names_are_explicit_overrides(monkeypatch):
    monkeypatch.setenv("CAUSALRAG_BACKEND", "transformers")
    assert choose_backend() == "transformers"
    assert choose_backend("openai") == "openai"  # --backend wins over the environment


@pytest.mark.parametrize(
    ("installed", "device", "model", "expected"),
    [
        (True, "cpu", None, "llamacpp"),  # the bundled model is a GGUF file
        (True, "cpu", "/models/qwen.gguf", "llamacpp"),
        (True, "cpu", "Qwen/Qwen2.5-0.5B-Instruct", "transformers"),  # not a GGUF: transformers loads it
        (True, "cuda", None, "transformers"),  # GPUs keep transformers (bf16)
        (False, "cpu", None, "transformers"),  # causalrag[llamacpp] not installed
    ],
)
def test_auto_picks_llamacpp_for_a_gguf_on_cpu_when_installed(monkeypatch, installed, device, model, expected):
    import causalrag.tools.llm as llm_module

    real_find_spec = llm_module.importlib.util.find_spec
    monkeypatch.setattr(
        llm_module.importlib.util,
        "find_spec",
        lambda name: (object() if installed else None) if name == "llama_cpp" else real_find_spec(name),
    )
    monkeypatch.setenv("CAUSALRAG_BACKEND", "auto")
    assert choose_backend(None, model, device) == expected


def test_unreachable_server_is_one_sentence(monkeypatch):
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerUnreachableError, match=f"No OpenAI-compatible server answers at {url}"):
        OpenAILLM(url)
    monkeypatch.delenv("CAUSALRAG_OPENAI_URL", raising=False)
    with pytest.raises(ServerUnreachableError, match="set CAUSALRAG_OPENAI_URL"):
        OpenAILLM.from_settings()


def fake_server(handler) -> httpx.MockTransport:
    """An in-process stand-in for servers we cannot start here (e.g. one without echo)."""

    def route(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "tiny"}]})
        return handler(request)

    return httpx.MockTransport(route)


def test_missing_scoring_capability_is_named():
    no_echo = fake_server(lambda r: httpx.Response(400, json={"error": "echo is not supported"}))
    llm = OpenAILLM("http://server/v1", transport=no_echo)
    with pytest.raises(ScoringUnavailableError, match="prompt log-probabilities"):
        llm.logprob(["Q:"], [" A"])
    with pytest.raises(ScoringUnavailableError, match="next-token log-probabilities"):
        llm.yes_probability(["Q?"])
    with pytest.raises(ServerRequestError, match="HTTP 400"):
        llm.generate(["Q?"])


def test_transient_errors_are_retried_then_succeed():
    answers = iter(
        [
            httpx.Response(503),
            httpx.Response(
                200,
                json={
                    "choices": [{"message": {"content": "Paris\nmore"}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2},
                },
            ),
        ]
    )
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return next(answers)

    llm = OpenAILLM("http://server/v1", transport=fake_server(handler))
    llm._post.retry.wait = lambda retry_state: 0  # no back-off sleep in the test
    with metered() as usage:
        assert llm.generate(["Where?"], stop=["\n"]) == [["Paris"]]
    assert len(seen) == 2 and seen[0]["model"] == "tiny" and seen[0]["messages"][0]["content"] == "Where?"
    assert (usage.calls, usage.prompt_tokens, usage.new_tokens) == (1, 5, 2)


@needs_llamacpp
def test_llamacpp_model_file_errors(tmp_path):
    from causalrag.tools.backends.llamacpp import LlamaCppLLM

    with pytest.raises(ModelNotFoundError, match="no such file"):
        LlamaCppLLM(str(tmp_path / "nothing.gguf"))
    with pytest.raises(ModelNotFoundError, match=r"\.gguf files"):
        LlamaCppLLM(str(tmp_path))


def test_llamacpp_not_installed_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now raises ImportError
    from causalrag.tools.backends.llamacpp import LlamaCppLLM

    with pytest.raises(BackendUnavailableError, match=r"pip install 'causalrag\[llamacpp\]'"):
        LlamaCppLLM()


def test_ggml_log_levels_route_to_python_logging(caplog):
    from causalrag.tools.backends.llamacpp import route_ggml_log

    caplog.set_level(logging.DEBUG, logger="causalrag.tools.backends.llamacpp")
    for level, text in [
        (4, b"failed to read tensor\n"),
        (5, b" (continued)\n"),
        (3, b"using full-size SWA cache\n"),
        (2, b"loaded\n"),
        (5, b"\n"),
    ]:
        route_ggml_log(level, text)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.ERROR, "llama.cpp: failed to read tensor"),
        (logging.ERROR, "llama.cpp:  (continued)"),
        (logging.INFO, "llama.cpp: using full-size SWA cache"),
        (logging.DEBUG, "llama.cpp: loaded"),
    ]


@needs_llamacpp
def test_llamacpp_load_prints_nothing_and_logs_below_warning(capfd, caplog):
    from causalrag.tools.backends.llamacpp import LlamaCppLLM

    caplog.set_level(logging.DEBUG, logger="causalrag.tools.backends.llamacpp")
    LlamaCppLLM(n_ctx=512, n_seq=2)
    assert capfd.readouterr().err == ""
    swa = [r for r in caplog.records if "full-size SWA cache" in r.getMessage()]  # our swa_full=True, on purpose
    assert swa and all(r.levelno < logging.WARNING for r in swa)


# --------------------------------------------------------------------------- the chat-template path
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{{ m['content'] }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
"""Gemma's turn format (the instruct checkpoints' template, in short): what a chat model sees."""


@pytest.fixture(scope="module")
def chat_model_dir(tmp_path_factory):
    """The bundled model as a chat checkpoint: its plain copy's files linked, plus a chat template."""
    from causalrag.tools.backends.transformers import model_location

    plain = Path(model_location(None))
    target = tmp_path_factory.mktemp("gemma-chat")
    for f in plain.iterdir():
        (target / f.name).symlink_to(f)
    (target / "chat_template.jinja").write_text(GEMMA_CHAT_TEMPLATE, encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def chat_llm(chat_model_dir):
    from causalrag.tools.backends.transformers import TransformersLLM

    return TransformersLLM(str(chat_model_dir))


@pytest.mark.slow
def test_a_chat_model_scores_options_as_its_reply_turn(chat_llm, transformers_llm):
    """A model with a chat template: prompts become a user turn and options the model's reply, so a
    scored choice means "which reply would the assistant give" (not the raw completion text)."""
    assert chat_llm.has_chat_template and chat_llm.can_choose
    assert chat_llm.format("Hi").endswith("<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n")
    choice = chat_llm.choose([PASSAGE], [["1889", "1925", "a yellow banana"]])[0]
    assert choice.answer == "1889" and math.isclose(sum(choice.probs), 1.0)
    raw = transformers_llm.choose([PASSAGE], [["1889", "1925", "a yellow banana"]])[0]
    assert not all(
        math.isclose(a, b, abs_tol=1e-3) for a, b in zip(choice.scores, raw.scores, strict=True)
    )  # the turn markup is really there


@pytest.mark.slow
def test_a_chat_model_runs_every_judgment_scored(chat_llm, demo_store):
    """judge="auto" resolves to scored choices for a chat model too: Astute reads each source by score."""
    from causalrag import METHODS
    from causalrag.corpus import demo_questions
    from causalrag.graphs.registry import build_graph

    q = next(q for q in demo_questions() if q["id"] == "simple-pride")
    graph = build_graph("astute", llm=chat_llm, store=demo_store, **METHODS["astute"].cpu_params)
    state = graph.invoke({"question": q["question"]})
    assert state["answer"].strip()
    assert state["readings"] and all(r["how"] for r in state["readings"]), state["readings"]
    assert any(e.get("node") == "select" for e in state["trace"])


@pytest.mark.slow
def test_openai_chat_api_scores_with_the_models_template(llama_server):
    """On the chat API, scored choices render the model's template (CAUSALRAG_OPENAI_CHAT_TEMPLATE) and
    score the options as the reply; without the template, scoring is refused in one sentence."""
    chat = OpenAILLM(llama_server, api="chat", chat_template=GEMMA_CHAT_TEMPLATE, max_concurrency=2)
    completions = OpenAILLM(llama_server, api="completions", max_concurrency=2)
    assert chat.can_choose
    options = ["1889", "1925", "a yellow banana"]
    via_chat = chat.choose([PASSAGE], [options])[0]
    via_text = completions.choose([chat.format(PASSAGE)], [options])[0]
    assert via_chat.answer == "1889"
    assert all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(via_chat.scores, via_text.scores, strict=True))
    with pytest.raises(ScoringUnavailableError):
        OpenAILLM(llama_server, api="chat", max_concurrency=2).choose([PASSAGE], [options])
