"""A graph as a deployment binds it (collection, k, retrieval and its own LLM: a fixed-reply fake, so the
server loads no model), served next to the repo's graphs by tests/servers/test_langgraph_server.py."""

from causalrag import build_graph
from tests.fakes import FakeLLM

COLLECTION = "lg-zoo"
ANSWER = "Rottnest Island"

graph = build_graph("standard_rag", llm=FakeLLM(default=f" {ANSWER}"), collection=COLLECTION, k=1, retrieval="bm25")
