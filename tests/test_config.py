"""Settings from CAUSALRAG_* variables: a bad value is one sentence, and the openai backend's window is configurable."""

import pytest

from causalrag.config import settings
from causalrag.errors import CausalRAGError


def test_openai_context_is_read_and_checked(monkeypatch):
    assert settings().openai_context == 8192
    monkeypatch.setenv("CAUSALRAG_OPENAI_CONTEXT", "32768")
    assert settings().openai_context == 32768
    for bad in ("lots", "0", "-5", "1.5"):
        monkeypatch.setenv("CAUSALRAG_OPENAI_CONTEXT", bad)
        with pytest.raises(CausalRAGError, match="CAUSALRAG_OPENAI_CONTEXT=.* is not a positive whole number"):
            settings()


def test_remote_backends_estimate_tokens_against_their_configured_window():
    from causalrag.tools.backends.base import estimate_tokens
    from causalrag.tools.backends.openai import OpenAILLM

    llm = OpenAILLM("http://127.0.0.1:9/v1", model="served", context_window=4096)  # a named model: no request is made
    assert llm.context_window == 4096
    short, long = llm.count_tokens(["Who?", "Who wrote Pride and Prejudice? " * 100])
    assert 0 < short < long == estimate_tokens(["Who wrote Pride and Prejudice? " * 100])[0]
    assert long >= len(("Who wrote Pride and Prejudice? " * 100).split())  # errs long: never fewer than the words
