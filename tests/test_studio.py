"""langgraph.json lists every registered graph, and each entry loads as a compiled graph."""

import importlib
import json
from pathlib import Path

from langgraph.graph.state import CompiledStateGraph

import causalrag

ROOT = Path(__file__).resolve().parents[1]


def test_langgraph_json_lists_every_method_and_each_loads():
    spec = json.loads((ROOT / "langgraph.json").read_text())
    assert set(spec["graphs"]) == set(causalrag.METHODS)
    for name, target in spec["graphs"].items():
        path, attr = target.split(":")
        module = importlib.import_module(path.removeprefix("./").removesuffix(".py").replace("/", "."))
        assert isinstance(getattr(module, attr), CompiledStateGraph), name
