"""Answer candidates in the text leaf: the explicit options scored judgments choose among."""

import pytest

from causalrag.text import answer_spans, grounded, key_sentences, name_only, question_options

CAST = (
    "The Family Man is a 2000 American romantic comedy-drama film directed by Brett Ratner, written by David Diamond "
    "and David Weissman, and starring Nicolas Cage and Téa Leoni. "
    'It seats 3,677 seated fans from 1986 to 2013 in "When in Rome".'
)


def test_spans_are_names_numbers_ranges_and_titles_not_in_the_question():
    spans = answer_spans(CAST, exclude="Who co-wrote The Family Man with David Diamond?", limit=30)
    for expected in (
        "Brett Ratner",
        "David Weissman",
        "Nicolas Cage",
        "Téa Leoni",
        "3,677",
        "3,677 seated",
        "from 1986 to 2013",
        "When in Rome",
    ):
        assert expected in spans, expected
    assert "David Diamond" not in spans and "Family Man" not in spans  # the question names them
    assert answer_spans("Were Scott Derrickson and Ed Wood of the same nationality?") == ["Scott Derrickson", "Ed Wood"]
    assert answer_spans("it rained.") == []
    assert "Your" not in answer_spans("Your privacy choices. Share this story.")  # page boilerplate, no answer


def test_questions_that_name_their_own_options():
    assert question_options("Who is older, Annie Morton or Terry Richardson?") == ["Annie Morton", "Terry Richardson"]
    assert question_options("Are Local H and For Against both from the United States?") == ["yes", "no"]
    assert question_options("Who wrote Dracula?") == []


def test_key_sentences_keep_text_order():
    text = "Intro here. Bonn lies on the Rhine. It is Beethoven's birthplace. Vienna lies on the Danube."
    assert (
        key_sentences("Which river flows through Beethoven's birthplace Bonn?", text, 2)
        == "Bonn lies on the Rhine. It is Beethoven's birthplace."
    )


def test_grounded_trims_a_written_answer_to_what_the_passage_states():
    text = "Plants turn water and carbon dioxide from the air into sugars."
    assert grounded("carbon dioxide and sunlight", text) == "carbon dioxide"
    assert grounded("Christopher Nolan", text) is None
    assert grounded("the", "the the") is None  # no word of substance
    festival = "The Varnholm Lantern Festival is a midwinter celebration founded by Signe Aldervik."
    assert grounded("is a tradition", festival) is None  # "is a" is stated, but names nothing
    assert grounded("Signe Aldervik founded it", festival) == "Signe Aldervik"


@pytest.mark.parametrize(("answer", "expected"), [
    ("Michael Keaton as the", "Michael Keaton"),
    ("Tom Hardy played the", "Tom Hardy"),
    ("Heath Ledger as Joker", "Heath Ledger as Joker"),
    ("carbon dioxide and sunlight", "carbon dioxide and sunlight"),
    ("the Rhine", "the Rhine"),
    ("Paris", "Paris"),
    ("3 million people", "3 million people"),
    ("", ""),
])
def test_name_only_drops_a_lowercase_tail_after_a_name(answer, expected):
    assert name_only(answer) == expected


def test_grounded_answers_are_names_without_filler():
    passage = "Jack Nicholson played the Joker in Batman, opposite Michael Keaton as the Dark Knight."
    assert grounded("Michael Keaton as the Joker", passage) == "Michael Keaton"
