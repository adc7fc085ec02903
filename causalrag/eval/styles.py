"""Passage styles of the robustness suite: the same items, their passages dressed as real retrieval returns them.

The suite's own passages are short, clean, handwritten sentences (style ``clean``). Real retrieval returns news
snippets with datelines, bylines and boilerplate, web text with navigation crumbs, tables and cookie notices,
and long passages that cover several topics. :func:`styled` rewrites every passage of an item in one style,
deterministically (seeded by the item and passage), keeping each passage's role and what it states:

* ``news`` — a dateline (city, agency, date), a byline, the passage, then "Advertisement", related headlines
  and a share line;
* ``web`` — navigation crumbs, the page title and an update date, the passage, a small facts table in text
  (source, section, views) and a cookie notice;
* ``long`` — the passage set among sentences of other items' noise passages (other topics, stating none of the
  item's answers or planted answers) until it has 150–400 words: a multi-topic page.

Boilerplate never names an answer (:func:`style_problems` checks it with the suite's own rules).
``robust?split=dev&style=news`` loads a style; ``style=all`` loads every style, each item once per style.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from causalrag.text import mentions

STYLES = ("clean", "news", "web", "long")
STYLED_WORDS = {"clean": (12, 70), "news": (25, 130), "web": (30, 140), "long": (150, 400)}
"""Words per passage in each style."""

CITIES = ("LONDON", "NAIROBI", "SYDNEY", "TORONTO", "MUMBAI", "BERLIN", "LIMA", "OSLO", "SEOUL", "DAKAR")
AGENCIES = ("Wire Service", "Staff Reporter", "News Desk", "Press Agency", "Metro Bureau")
BYLINES = ("Ana Ruiz", "Tom Becker", "Priya Nair", "Kofi Mensah", "Lena Holm", "Jun Park", "Sara Cohen")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
HEADLINES = ("Markets close mixed after a quiet week", "Weather service warns of heavy rain",
             "Local council approves new cycle lanes", "Museum reopens after two-year renovation",
             "School sports day draws record crowd", "Transport strike called off at the last minute")
SITES = ("reference-hub.org", "wikiwise.net", "learnfacts.com", "openencyclo.info", "quickanswers.site")
SECTIONS = ("Reference", "Knowledge base", "Encyclopedia", "Study guides", "Trivia")


def _date(rng: random.Random, avoid: Sequence[str]) -> str:
    """A date naming none of ``avoid`` (a day or year can be a number the question asks for)."""
    while True:
        date = f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(2009, 2024)}"
        if safe([date], avoid):
            return date


def _views(rng: random.Random, avoid: Sequence[str]) -> str:
    """A page-view count naming none of ``avoid``."""
    while True:
        views = str(rng.randint(120, 98000))
        if safe([views], avoid):
            return views


def names(passage: dict[str, Any], answers: Sequence[str]) -> bool:
    """The passage (title or text) names one of ``answers`` as whole words (the suite's rule, uncached)."""
    text = f"{passage.get('title', '')}. {passage.get('text', '')}"
    return any(mentions(a, text) for a in answers)


def safe(words: Sequence[str], avoid: Sequence[str]) -> list[str]:
    """The boilerplate words that name none of ``avoid`` (an item's answers and planted answers)."""
    return [w for w in words if not names({"title": "", "text": w}, avoid)]


def news(title: str, text: str, rng: random.Random, avoid: Sequence[str]) -> str:
    """A news snippet around ``text``."""
    related = " · ".join(rng.sample(safe(HEADLINES, avoid), 2))
    return (f"{rng.choice(safe(CITIES, avoid))} ({rng.choice(AGENCIES)}) — {_date(rng, avoid)}. By "
            f"{rng.choice(safe(BYLINES, avoid))}. {text} Advertisement. Related coverage: {related}. Share this "
            "story: email, print, copy link.")


def web(title: str, text: str, rng: random.Random, avoid: Sequence[str]) -> str:
    """A web page's text around ``text``."""
    section = rng.choice(safe(SECTIONS, avoid))
    return (f"Home › {section} › {title} | Last updated {_date(rng, avoid)} | {text} | Quick facts | Source: "
            f"{rng.choice(safe(SITES, avoid))} | Section: {section} | Page views: {_views(rng, avoid)} | We "
            "use cookies to improve your experience. Accept · Privacy policy · Terms of use · Contact us")


def long(text: str, filler: Sequence[str], rng: random.Random) -> str:
    """``text`` set among ``filler`` sentences (other topics) until it has at least 150 words."""
    sentences = list(filler)
    rng.shuffle(sentences)
    before: list[str] = []
    after: list[str] = []
    words = len(text.split())
    for i, sentence in enumerate(sentences):
        if words >= 150 + rng.randint(0, 80):
            break
        (before if i % 2 else after).append(sentence)
        words += len(sentence.split())
    return " ".join([*before, text, *after])


def filler_of(item: dict[str, Any], donors: Sequence[dict[str, Any]]) -> list[str]:
    """Sentences of other items' noise passages that state none of ``item``'s answers or planted answers."""
    avoid = [*item["answers"], *item.get("wrong_answers", [])]
    seen, sentences = set(), []
    for p in donors:
        if p["title"] in seen or names(p, avoid) or p["title"] in {q["title"] for q in item["passages"]}:
            continue
        seen.add(p["title"])
        sentences += [s.strip() + ("" if s.strip().endswith(".") else ".") for s in p["text"].split(". ") if s.strip()]
    return sentences


def styled(item: dict[str, Any], style: str, donors: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """``item`` with every passage in ``style`` (``donors``: noise passages for ``long``), id ``ID@style``."""
    if style == "clean":
        return {**item, "style": "clean"}
    rng = random.Random(f"robust-style:{item['id']}:{style}")
    avoid = [*item["answers"], *item.get("wrong_answers", [])]
    filler = filler_of(item, donors) if style == "long" else []
    passages = []
    for p in item["passages"]:
        if style == "news":
            text = news(p["title"], p["text"], rng, avoid)
        elif style == "web":
            text = web(p["title"], p["text"], rng, avoid)
        else:
            text = long(p["text"], filler, rng)
        passages.append({**p, "text": text})
    return {**item, "id": f"{item['id']}@{style}", "style": style, "passages": passages}


def noise_donors(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every noise passage of the suite, in a fixed order: the filler of the ``long`` style."""
    return [p for it in items for p in it["passages"] if p.get("role") == "noise"]


def style_problems(item: dict[str, Any]) -> list[str]:
    """Word counts of a styled item's passages out of their style's range."""
    low, high = STYLED_WORDS[item.get("style", "clean")]
    return [f"passage {i} ({p.get('title')!r}): {n} words, not {low}-{high}"
            for i, p in enumerate(item["passages"]) if not low <= (n := len(p["text"].split())) <= high]
