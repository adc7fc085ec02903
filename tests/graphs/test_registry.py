"""The registry: every method's CPU-sized knobs are real parameters of that method, and its nodes are named
after their functions."""

import pytest

import causalrag
from causalrag.errors import UnknownParameterError
from causalrag.graphs.registry import make_context


@pytest.mark.parametrize("name", list(causalrag.METHODS))
def test_cpu_params_are_parameters_of_the_method(name):
    params = causalrag.METHODS[name].cpu_params
    ctx = make_context(name, **params)
    assert all(getattr(ctx, key) == value for key, value in params.items())


def test_a_misspelled_parameter_is_refused():
    with pytest.raises(UnknownParameterError):
        make_context("cis", n_candidate=3)


@pytest.mark.parametrize("name", list(causalrag.METHODS))
def test_every_node_is_named_after_its_function(name):
    """A trace, a stream and Studio name a node as its graph does: the same name as the function a reader looks for."""
    nodes = causalrag.METHODS[name].build().nodes
    functions = {node: getattr(spec.runnable, "func", None) for node, spec in nodes.items()}
    assert all(functions.values())
    assert {node: f.__name__ for node, f in functions.items() if f.__name__ != node} == {}
