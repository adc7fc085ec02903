"""The executed notebooks carry the ``notebooks`` marker, so ``-m "not notebooks"`` leaves them out wherever
they are collected (``make test-fast`` also passes only ``tests``)."""

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.fspath).endswith(".ipynb"):
            item.add_marker(pytest.mark.notebooks)
