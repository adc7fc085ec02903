"""causalrag — robust retrieval-augmented generation as LangGraph state machines.

>>> import causalrag
>>> causalrag.answer("Who played the Joker in The Dark Knight?", method="standard_rag")["answer"]
>>> graph = causalrag.build_graph("standard_rag", k=3)
>>> for mode, event in graph.stream({"question": "..."}, stream_mode=["updates", "custom"]): ...
"""

import os

# Models and data ship in pip packages: never wait on a model hub unless the user asks for one.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from causalrag.api import METHODS, answer, build_graph  # noqa: E402

__all__ = ["METHODS", "answer", "build_graph"]
__version__ = "0.1.0"
