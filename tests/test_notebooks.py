"""Notebooks are committed without outputs (pytest --nbmake executes them separately)."""

from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebooks

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(p.name == "quickstart.ipynb" for p in NOTEBOOKS)


def test_notebook_outputs_are_stripped():
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        dirty = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not dirty, (
            f"{path.name}: cells {dirty} have outputs; strip them (e.g. `jupyter nbconvert --clear-output --inplace`)"
        )
