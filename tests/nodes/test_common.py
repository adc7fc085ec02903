"""Helpers every node uses (``causalrag.nodes.common``)."""

from causalrag.nodes.common import generate_parsed
from causalrag.text import parse_float
from tests.fakes import FakeLLM


def test_generate_parsed_retries_only_failures_then_falls_back():
    llm = FakeLLM({"good": "42", "bad": ["nope", "still nope"]})
    result = generate_parsed(llm, ["good prompt", "bad prompt"], lambda t: parse_float(t), fallback=-1.0, retries=1)
    assert result.values == [42.0, -1.0]
    assert result.fallbacks == 1
    assert llm.prompts == ["good prompt", "bad prompt", "bad prompt"]  # only the failure was re-asked


def test_generate_parsed_recovers_on_retry():
    llm = FakeLLM({"flaky": ["garbage", "0.5"]})
    result = generate_parsed(llm, ["flaky"], parse_float, fallback=None, retries=2)
    assert result.values == [0.5] and result.fallbacks == 0
