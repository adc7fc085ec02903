"""LangChain interop: our LLM as a chat model, and any chat model as our LLM (with retries)."""

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from causalrag.errors import ScoringUnavailableError
from causalrag.tools.backends.chat_model import ChatModelLLM, LLMChatModel, is_transient
from tests.fakes import FakeLLM


def test_chat_model_view_invokes_and_streams():
    chat = LLMChatModel(llm=FakeLLM(default="Rome is the answer"))
    assert chat.invoke([HumanMessage("Where is the Colosseum?")]).content == "Rome is the answer"
    chunks = [c.content for c in chat.stream("Where is the Colosseum?")]
    assert len(chunks) > 1 and "".join(chunks) == "Rome is the answer"


def test_exact_reaches_a_backend_that_takes_it_and_spares_one_written_without_it():
    asked = []

    class Exacting(FakeLLM):
        def stream(self, prompt, *, max_new_tokens=64, stop=None, exact=False):
            asked.append(exact)
            yield from super().stream(prompt, max_new_tokens=max_new_tokens, stop=stop)

    class Older(FakeLLM):  # a user's backend from before ``exact``
        def stream(self, prompt, *, max_new_tokens=64, stop=None):
            yield from super().stream(prompt, max_new_tokens=max_new_tokens, stop=stop)

    assert "".join(c.content for c in LLMChatModel(llm=Exacting(default="Rome")).stream("q", exact=True)) == "Rome"
    assert asked == [True]
    assert "".join(c.content for c in LLMChatModel(llm=Older(default="Rome")).stream("q", exact=True)) == "Rome"


def test_chat_model_as_llm_generates_and_refuses_scoring():
    llm = ChatModelLLM(GenericFakeChatModel(messages=iter([AIMessage("Paris\nmore"), AIMessage("Rome")])))
    assert llm.generate(["a", "b"], stop=["\n"]) == [["Paris"], ["Rome"]]
    assert llm.usage.calls == 2
    with pytest.raises(ScoringUnavailableError, match="log-probabilities"):
        llm.logprob(["q"], ["a"])


class Flaky(GenericFakeChatModel):
    failures: int = 1

    def _generate(self, *args, **kwargs):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("reset by peer")
        return super()._generate(*args, **kwargs)


def test_transient_errors_are_retried():
    llm = ChatModelLLM(Flaky(messages=iter([AIMessage("ok")])))
    llm._batch.retry.wait = lambda retry_state: 0  # no back-off sleep in the test
    assert llm.generate(["q"]) == [["ok"]]
    assert is_transient(TimeoutError()) and not is_transient(ValueError())
