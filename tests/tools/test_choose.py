"""The scored-choice primitive shared by every backend (:class:`causalrag.tools.backends.base.Judge`)."""

from __future__ import annotations

import math

import pytest

from causalrag.tools.backends.base import Choice, softmax
from tests.fakes import FakeLLM


def test_choice_picks_the_highest_mean_log_prob_and_normalizes():
    llm = FakeLLM(option=lambda prompt, option: {"Heath Ledger": -2.0, "Jack Nicholson": -2.0, "Leto": -1.5}[option])
    choice = llm.choose(["Who played the Joker? Answer:"], [["Heath Ledger", "Jack Nicholson", "Leto"]])[0]
    # per-token mean: -1.0, -1.0, -1.5 (one word): the two-word options tie, the first wins
    assert choice.scores == (-1.0, -1.0, -1.5)
    assert choice.best == 0 and choice.answer == "Heath Ledger"
    assert math.isclose(sum(choice.probs), 1.0) and choice.probs[0] == choice.probs[1] > choice.probs[2]
    assert llm.choices == [("Who played the Joker? Answer:", ("Heath Ledger", "Jack Nicholson", "Leto"))]


def test_calibration_subtracts_the_content_free_prompt():
    # the model likes "Paris" whatever the question: calibration removes that prior
    prior = {"Paris": -1.0, "Rome": -3.0}

    def score(prompt: str, option: str) -> float:
        return prior[option] + (1.5 if "Colosseum" in prompt and option == "Rome" else 0.0)

    llm = FakeLLM(option=score)
    raw = llm.choose(["Where is the Colosseum? Answer:"], [["Paris", "Rome"]])[0]
    calibrated = llm.choose(["Where is the Colosseum? Answer:"], [["Paris", "Rome"]], neutral=["N/A Answer:"])[0]
    assert raw.answer == "Paris"
    assert calibrated.answer == "Rome" and calibrated.scores == (0.0, 1.5)
    assert [p for p, _ in llm.choices[1:]] == [
        "Where is the Colosseum? Answer:",
        "N/A Answer:",
    ]  # one call: prompt and neutral twin


def test_empty_options_never_win_and_bad_shapes_are_refused():
    llm = FakeLLM(option=lambda p, o: -50.0)
    choice = llm.choose(["Q? Answer:"], [["", "Paris"]])[0]
    assert choice.answer == "Paris" and choice.scores[0] == -math.inf and choice.probs[0] == 0.0
    assert llm.choose(["Q?"], [[]])[0].best == -1
    with pytest.raises(ValueError, match="one option list"):
        llm.choose(["Q?", "R?"], [["a"]])


def test_reply_text_spaces_after_a_base_prompt_only():
    llm = FakeLLM()
    assert llm.reply_text("Answer:", " Heath  Ledger ") == " Heath Ledger"
    assert llm.reply_text("Groups:\n", "Group 1") == "Group 1"
    llm.has_chat_template = True
    assert llm.reply_text("Answer:", "Heath Ledger") == "Heath Ledger"


def test_softmax_handles_minus_infinity_and_all_empty():
    assert softmax([0.0, -math.inf]) == (1.0, 0.0)
    assert softmax([-math.inf, -math.inf]) == (0.5, 0.5)
    assert Choice(("a",), (0.0,), (1.0,)).as_dict() == {"options": ["a"], "scores": [0.0], "probs": [1.0]}
