"""Compiled graphs for LangGraph Studio (``langgraph dev``): one module attribute per method.

``langgraph.json`` names them as ``./causalrag/studio.py:<method>``; in Studio, the
"context" panel takes the method's parameters (e.g. ``{"k": 3, "collection": "demo"}``), merged over the
defaults bound here: the fields a run names win, the rest keep the paper's defaults.
"""

from causalrag.graphs.registry import build_graph, methods

globals().update({name: build_graph(name) for name in methods()})
