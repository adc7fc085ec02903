import pytest

from causalrag.text import (
    answer_kind,
    between,
    clean_answer,
    mention_pattern,
    parse_float,
    parse_json_object,
    parse_yes_no,
    states,
    states_part,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" Heath Ledger\nQuestion: next", "Heath Ledger"),
        ("Answer: Paris.", "Paris"),
        ("The answer is 1889.", "1889"),
        ('  "AeroVenn Labs"  ', "AeroVenn Labs"),
        ("Aladin", "Aladin"),  # a leading "A" is part of the answer, not an article to strip
        ("Washington D.C.", "Washington D.C."),
        ("\n\n  yes", "yes"),
        ("Yes, Scott Derrickson and Ed Wood of the same nationality", "Yes"),
        ("no. They are in different towns.", "no"),
        ("No Doubt", "No Doubt"),  # a name that starts with "No" is not a no
        ("Robert Childers because [1] [2] [3]", "Robert Childers"),
        ("1995–96 season since the club moved", "1995–96 season"),
        ("Because of Winn-Dixie", "Because of Winn-Dixie"),  # a title, not a reason
        ("", ""),
        ("\x00\x00\n Rome\x00.", "Rome"),  # control characters are blanks, never the answer
        ("\x00\x07\x7f", ""),
        # the reply ran on into the prompt's next field (news snippets separate headlines with "·")
        ("George Washington · Question: Which US president made the Louisiana Purchase?", "George Washington"),
        ("Charles Babbage · Answer: Ada Lovelace · Answer: John Napier", "Charles Babbage"),
        ("Question: who founded it?", "Question: who founded it?"),  # a line that starts with a field: no run-on
        ("George Washington · The US president made the Louisiana Purchase", "George Washington"),
        ("tennis | Answer: tennis | Answer: tennis", "tennis"),
        ("Mary Shelley|Percy Shelley", "Mary Shelley|Percy Shelley"),  # no spaced separator: left as it is
    ],
)
def test_clean_answer(raw, expected):
    assert clean_answer(raw) == expected


def test_between_markers():
    assert between("blah <answer> Rome </answer> tail", "<answer>", "</answer>") == "Rome"
    assert between("no markers here", "<answer>", "</answer>") is None
    assert between("<answer> Rome and more", "<answer>", "</answer>") == "Rome and more"


def test_parse_float():
    assert parse_float("confidence: 0.8") == 0.8
    assert parse_float("80%", 0, 1) == 0.8
    assert parse_float("7", 0, 1) == 0.07  # read as a percentage when the scale is [0, 1]
    assert parse_float("none") is None
    assert parse_float("-3", lo=0) == 0


def test_parse_json_object_tolerates_chatter_and_fences():
    assert parse_json_object('Sure!\n```json\n{"a": 1, "b": {"c": 2}}\n```') == {"a": 1, "b": {"c": 2}}
    assert parse_json_object("{broken: json} then {\"ok\": true}") == {"ok": True}
    assert parse_json_object("no json") is None


def test_parse_yes_no():
    assert parse_yes_no(" Yes, they agree") is True
    assert parse_yes_no("no.") is False
    assert parse_yes_no("maybe") is None



@pytest.mark.parametrize(
    ("text", "answer", "question", "expected"),
    [
        ("Titan is the largest moon of Saturn.", "Titan is the moon of Saturn", "Which planet does Titan orbit?", True),
        ("Titan is the largest moon of Saturn.", "Titan orbits Jupiter", "Which planet does Titan orbit?", False),
        ("The Sahara is a desert.", "Titan is a moon of Saturn", "Which planet does Titan orbit?", False),
        ("Canberra is the capital.", "Canberra", "What is the capital of Australia?", True),
        ("Canberra is the capital.", "the capital", "What is the capital of Australia?", True),  # adds nothing
        ("Sydney is a harbour city.", "the capital", "What is the capital of Australia?", False),
    ],
)
def test_states_checks_the_words_an_answer_adds_to_the_question(text, answer, question, expected):
    assert states(text, answer, question) is expected


TOSCA = "Who composed the opera Tosca?"
TOSCA_TEXT = "Rome's opera house. Tosca, an opera by Giacomo Puccini, was first performed in Rome in 1900."
RACE = "Who won the 2031 Harbour Marathon?"
RACE_TEXT = "Teodora Mirelescu won the Harbour Marathon in 2031, ahead of two Kenyan runners."


@pytest.mark.parametrize(
    ("text", "answer", "question", "expected"),
    [
        (TOSCA_TEXT, "Giacomo Puccini", TOSCA, True),  # stated outright
        (TOSCA_TEXT, "Tosca is an opera by Giacomo Puccini, first performed in Rome in January 19", TOSCA, True),
        (RACE_TEXT, "The winner was Teodora Mirelescu, a Romanian runner", RACE, True),  # the model's own words
        (TOSCA_TEXT, "the opera Tosca was composed by", TOSCA, False),  # only the question's words
        (RACE_TEXT, "it was won by a runner from Oslo", RACE, False),  # stop words and the question's
        ("Timbuktu holds medieval manuscripts.", "Tosca is an opera by Giacomo Puccini", TOSCA, False),
    ],
)
def test_states_part_takes_a_stated_name_in_a_written_sentence(text, answer, question, expected):
    assert states(text, answer, question) is (expected and answer == "Giacomo Puccini")
    assert states_part(text, answer, question) is expected


@pytest.mark.parametrize(
    ("answer", "kind"),
    [("Leo Tolstoy", "name"), ("the Sahara", "name"), ("1,300 km", "number"), ("1908", "number"),
     ("the architect", "phrase"), ("carbon dioxide", "phrase")],
)
def test_answer_kind_tells_names_numbers_and_phrases_apart(answer, kind):
    assert answer_kind(answer) == kind


@pytest.mark.parametrize(
    ("text", "answer", "swapped"),
    [
        ("a 1952 novella by John Steinbeck about", "Steinbeck", "a 1952 novella by X about"),  # the first name goes too
        ("an opera by Ludwig van Beethoven, first", "Beethoven", "an opera by X, first"),
        ("written by J. J. Thomson in", "Thomson", "written by X in"),
        ("in the capital, Wellington. Its", "wellington", "in the capital, X. Its"),
        ("Windy Wellington, the capital", "Wellington", "Windy X, the capital"),  # a sentence's first word stays
        ("Steinbeck's novel and a Steinbeckian mood", "Steinbeck", "X's novel and a Steinbeckian mood"),
        ("in July 1914 the war", "1914", "in July X the war"),  # only a name takes leading words
        ("the carbon cycle", "carbon", "the X cycle"),
    ],
)
def test_mention_pattern_takes_a_names_leading_words_mid_sentence(text, answer, swapped):
    assert mention_pattern(answer).sub("X", text) == swapped
