"""Shared fixtures.

* ``fake_llm`` — deterministic :class:`tests.fakes.FakeLLM` (unit tests of graph logic);
* ``memory_store`` — a real in-memory Chroma store with the bundled demo passages;
* ``real_llm`` — the real default model, loaded once per session (tests using it are ``slow``);
* ``demo_store`` — the real persistent demo collection in a session temp ``CAUSALRAG_HOME``.

Every test runs with ``CAUSALRAG_HOME`` pointing at a temporary folder, so nothing touches
``~/.causalrag``; the model cache (``~/.cache/causalrag``) is shared so the model converts once (a cold
cache converts it in the first test that loads it: no test assumes a warm one).
"""

from __future__ import annotations

import os
import tempfile

import pytest

# The suite computes the same on every machine, whatever the shell sets: a user's CAUSALRAG_* settings (a
# Chroma server, another model, backend or dtype, a PostgreSQL checkpointer) are dropped, except where the
# converted model is cached.
for _name in [n for n in os.environ if n.startswith("CAUSALRAG_") and n != "CAUSALRAG_CACHE"]:
    del os.environ[_name]
_HOME = tempfile.mkdtemp(prefix="causalrag-test-home-")
os.environ["CAUSALRAG_HOME"] = _HOME
os.environ["HF_HUB_OFFLINE"] = "1"  # never the network
# The real-model tests and notebooks assert on the transformers backend's fp32 answers: `auto` would pick
# llama.cpp where it is installed, and a GPU would run bf16. tests/tools/test_backends.py covers the other
# backends explicitly.
os.environ["CAUSALRAG_BACKEND"] = "transformers"
os.environ["CAUSALRAG_DEVICE"] = "cpu"

from tests.fakes import FakeLLM  # noqa: E402


@pytest.fixture
def fake_llm() -> FakeLLM:
    return FakeLLM()


@pytest.fixture(scope="session")
def demo_passages():
    from causalrag.corpus import demo_passages

    return demo_passages()


@pytest.fixture(scope="session")
def memory_store(demo_passages):
    from causalrag.tools.store import Store

    return Store.in_memory(demo_passages)


@pytest.fixture(scope="session")
def demo_store():
    from causalrag.corpus import open_store

    return open_store("demo")


@pytest.fixture(scope="session")
def real_llm():
    from causalrag.tools.llm import default_llm

    return default_llm()
