"""Shared fixtures.

* ``fake_llm`` — deterministic :class:`tests.fakes.FakeLLM` (unit tests of graph logic);
* ``memory_store`` — a real in-memory Chroma store with the bundled demo passages;
* ``real_llm`` — the real default model, loaded once per session (tests using it are ``slow``);
* ``demo_store`` — the real persistent demo collection in a session temp ``CAUSALRAG_HOME``.

Every test runs with ``CAUSALRAG_HOME`` pointing at a temporary folder, so nothing touches
``~/.causalrag``; the model cache (``~/.cache/causalrag``) is shared so the model converts once.
"""

from __future__ import annotations

import os
import tempfile

import pytest

_HOME = tempfile.mkdtemp(prefix="causalrag-test-home-")
os.environ["CAUSALRAG_HOME"] = _HOME
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The real-model tests and notebooks assert on the transformers backend's answers; `auto` would pick
# llama.cpp where it is installed. tests/tools/test_backends.py covers the other backends explicitly.
os.environ.setdefault("CAUSALRAG_BACKEND", "transformers")

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
