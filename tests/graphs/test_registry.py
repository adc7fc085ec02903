"""The registry: every method's CPU-sized knobs are real parameters of that method."""

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
