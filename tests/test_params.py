"""Method parameters are checked against each context dataclass, in the API and the CLI alike."""

import math

import pytest

import causalrag
from causalrag.errors import (
    CausalRAGError,
    InvalidAssignmentError,
    InvalidParameterError,
    UnknownMethodError,
    UnknownParameterError,
)
from causalrag.graphs.registry import build_graph, make_context, parse_params
from causalrag.params import check_context
from tests.fakes import FakeLLM


@pytest.mark.parametrize(
    ("method", "params", "says"),
    [
        ("standard_rag", {"k": 0}, "at least 1"),
        ("standard_rag", {"k": -1}, "at least 1"),
        ("standard_rag", {"k": "abc"}, "a whole number"),
        ("standard_rag", {"k": 1.5}, "a whole number"),
        ("standard_rag", {"k": True}, "a whole number"),
        ("standard_rag", {"retrieval": "nosuch"}, "one of dense, bm25, hybrid"),
        ("standard_rag", {"store": "foo"}, r"an object with a \.retrieve\(\) method"),
        ("standard_rag", {"llm": "foo"}, r"an object with a \.generate\(\) method"),
        ("standard_rag", {"collection": "a..b"}, "letters, digits"),
        ("standard_rag", {"ids": "abc"}, "a comma-separated list"),
        ("retro", {"discovery": "maybe"}, "true or false"),
        ("retro", {"threshold": math.nan}, "a finite number"),
        ("retro", {"seed": -3}, "0 or more"),
        ("cf_rag", {"theta_sim": 1.5}, "between 0 and 1"),
        ("cf_rag", {"tau": 0.0}, "above 0"),
        ("cis", {"form": "QA"}, "one of qa, plain"),
    ],
)
def test_wrong_values_are_one_sentence_before_any_graph_runs(method, params, says):
    with pytest.raises(InvalidParameterError, match=says) as caught:
        build_graph(method, **params)
    message = str(caught.value)
    assert message.count(": ") >= 1 and message.endswith(".") and "\n" not in message


def test_right_values_pass_and_ints_become_floats_where_floats_are_expected():
    ctx = make_context("retro", threshold=1, seed=None, discovery=False, retrieval="dense", k=2)
    assert ctx.threshold == 1.0 and isinstance(ctx.threshold, float)
    assert ctx.seed is None and ctx.discovery is False and ctx.k == 2
    assert make_context("standard_rag", llm=FakeLLM(), ids=["a", "b"]).ids == ["a", "b"]


@pytest.mark.parametrize(
    ("method", "text", "value"),
    [
        ("standard_rag", "k=3", 3),
        ("standard_rag", "retrieval= bm25", "bm25"),
        ("retro", "discovery=off", False),
        ("retro", "discovery=Yes", True),
        ("retro", "seed=none", None),
        ("retro", "threshold=0.5", 0.5),
        ("standard_rag", "ids=a,b", ["a", "b"]),
    ],
)
def test_command_line_values_are_parsed_by_the_field_type(method, text, value):
    name = text.partition("=")[0]
    assert parse_params(method, [text]) == {name: value}


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("k=abc", InvalidParameterError, "a whole number"),
        ("k=1.5", InvalidParameterError, "a whole number"),
        ("k=0", InvalidParameterError, "at least 1"),
        ("retrieval=nosuch", InvalidParameterError, "one of dense"),
        ("store=foo", InvalidParameterError, "the command line cannot pass"),
        ("k", InvalidAssignmentError, "NAME=VALUE"),
        ("=3", InvalidAssignmentError, "NAME=VALUE"),
        ("kk=3", UnknownParameterError, "no parameter 'kk'"),
    ],
)
def test_command_line_values_that_do_not_parse(text, error, says):
    with pytest.raises(error, match=says):
        parse_params("standard_rag", [text])


def test_a_bool_is_not_guessed():
    with pytest.raises(InvalidParameterError, match="true or false"):
        parse_params("retro", ["discovery=maybe"])


def test_unknown_method_is_one_sentence_from_methods_too():
    with pytest.raises(UnknownMethodError, match="Unknown method 'nosuch': choose one of") as caught:
        causalrag.METHODS["nosuch"]
    assert isinstance(caught.value, CausalRAGError) and str(caught.value).count("\n") == 0
    assert "nosuch" not in causalrag.METHODS and causalrag.METHODS.get("nosuch") is None


def test_a_context_set_directly_is_checked_in_place():
    ctx = causalrag.METHODS["standard_rag"].context(k=0)
    with pytest.raises(InvalidParameterError, match="at least 1"):
        check_context(ctx)
    ok = causalrag.METHODS["cf_rag"].context(lam=1)
    assert check_context(ok).lam == 1.0 and isinstance(ok.lam, float)


@pytest.mark.parametrize("name", list(causalrag.METHODS))
def test_every_default_passes_its_own_check(name):
    """The paper defaults and the CPU-sized knobs of every method are valid values."""
    method = causalrag.METHODS[name]
    assert check_context(method.context()) == method.context()
    assert make_context(name, **method.cpu_params) == method.context(**method.cpu_params)
