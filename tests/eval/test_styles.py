"""Passage styles of the robustness suite (causalrag.eval.styles): every styled item keeps the suite's rules."""

import pytest

from causalrag.errors import CausalRAGError
from causalrag.eval.robust import SUITE, load_robust, read_items, validate, with_styles
from causalrag.eval.styles import STYLED_WORDS, STYLES


@pytest.fixture(scope="module")
def items():
    return read_items(SUITE)


@pytest.fixture(scope="module")
def styled(items):
    return with_styles(items, "all", items)


def test_every_item_in_every_style_passes_the_validator(styled, items):
    assert len(styled) == len(STYLES) * len(items)
    assert validate(styled) == []


def test_a_style_keeps_each_passages_role_title_and_words(styled, items):
    by_id = {it["id"]: it for it in items}
    for item in styled:
        source = by_id[item["id"].split("@")[0]]
        assert [p["role"] for p in item["passages"]] == [p["role"] for p in source["passages"]]
        assert [p["title"] for p in item["passages"]] == [p["title"] for p in source["passages"]]
        assert all(p["text"] in q["text"] for p, q in zip(source["passages"], item["passages"], strict=True))
        low, high = STYLED_WORDS[item["style"]]
        assert all(low <= len(p["text"].split()) <= high for p in item["passages"])


def test_styles_are_deterministic_and_differ(items):
    first, again = with_styles(items[:20], "news,web,long", items), with_styles(items[:20], "news,web,long", items)
    assert first == again
    texts = {it["style"]: it["passages"][0]["text"] for it in first if it["id"].startswith(items[0]["id"] + "@")}
    assert len(set(texts.values())) == 3 and "Advertisement" in texts["news"] and "Home ›" in texts["web"]


def test_the_dataset_spec_takes_a_style():
    examples = load_robust(split="dev", condition="all_wrong", style="web")
    assert examples and all(e.style == "web" and e.id.endswith("@web") for e in examples)
    assert all(e.style == "clean" for e in load_robust(split="dev", condition="all_wrong"))
    with pytest.raises(CausalRAGError, match="Unknown passage style 'tabloid'"):
        load_robust(split="dev", style="tabloid")
