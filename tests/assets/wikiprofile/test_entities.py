from assets.wikiprofile import rules as entities

TEXT = (
    "Love and Money were a Scottish band, formed in Glasgow in 1985. Three former members of Friends Again "
    "formed it with the bassist Bobby Paterson. Their second album, Strange Kind of Love, was produced by Gary Katz."
)


def test_markup_is_read_against_the_original_text():
    rewrite = (
        "Love and Money were a Scottish band, formed in {{Glasgow; LOCATION}} in {{1985; DATE}}. Three former members of "
        "{{Friends Again; GROUP}} formed it with the bassist {{Bobby Paterson; person}}. Their second album, "
        "{{Strange Kind of Love; WORK OF ART}}, was produced by {{Gary Katz; PRODUCER}} and {{Steely Dan; GROUP}}."
    )
    found, problems = entities.parse_markup(rewrite, TEXT)
    assert [(e["name"], e["type"]) for e in found] == [
        ("Glasgow", "LOCATION"),
        ("1985", "DATE"),
        ("Friends Again", "GROUP"),
        ("Bobby Paterson", "PERSON"),
        ("Strange Kind of Love", "WORK_OF_ART"),
    ]
    assert TEXT[found[3]["start"] : found[3]["end"]] == "Bobby Paterson"
    assert problems == ["'Gary Katz': unknown type 'PRODUCER'", "'Steely Dan': not in the text"]


def test_too_many_and_too_long_entities_are_dropped_with_a_reason():
    text = " ".join(f"Name{i}" for i in range(10)) + " and the very long named thing here ok."
    rewrite = " ".join(f"{{{{Name{i}; PERSON}}}}" for i in range(10)) + " {{the very long named thing here; OTHER}}"
    found, problems = entities.parse_markup(rewrite, text)
    assert len(found) == 8 and len(problems) == 3
    assert "longer than 5 words" in problems[-1] and "beyond the first 8" in problems[0]


def test_object_position_rules():
    find = lambda name: (TEXT.index(name), TEXT.index(name) + len(name))  # noqa: E731
    assert entities.position_problem(TEXT, *find("Scottish")) == "in the first clause of the first sentence"
    assert entities.position_problem(TEXT, *find("Glasgow")) is None
    assert entities.position_problem(TEXT, *find("Three")) == "at the start of a sentence"
    assert entities.position_problem(TEXT, *find("Bobby Paterson")) is None
    text = "Paris is the capital of France. The Louvre in Paris opened in 1793."
    second = text.index("Paris", 5)
    assert entities.position_problem(text, second, second + 5) == "named in its own left context"
    assert entities.ends_clause(TEXT, find("Bobby Paterson")[1]) and not entities.ends_clause(TEXT, find("Glasgow")[1])
    assert entities.left_context(TEXT, find("Bobby Paterson")[0]).endswith("formed it with the bassist")
    assert entities.type_group("WORK_OF_ART") == "ARTIFACT" and entities.type_group("PERSON") == "PERSON"


def test_rules_spot_dates_numbers_and_names():
    text = (
        "After the Nazis came to power in 1933, Einstein moved to the United States and joined the Institute for "
        "Advanced Study in Princeton. The river is 6,400 kilometres long. It was first climbed on 6 October 1889 by "
        "Hans Meyer. The book by Zamenhof's pupil appeared in July 1887."
    )
    found = {e["name"]: e["type"] for e in entities.spot_entities(text, limit=20)}
    assert found["1933"] == "DATE" and found["6 October 1889"] == "DATE" and found["July 1887"] == "DATE"
    assert found["6,400 kilometres"] == "NUMERIC_VALUE"
    # a sentence's capitalised first word is not part of a name; joiners inside a name are
    assert "Nazis" in found and "After the Nazis" not in found and "Institute for Advanced Study" in found
    assert "Zamenhof" in found and "The" not in found and "It" not in found
    for name in found:
        assert name in text
    # more than the limit: the last ones are kept, in text order
    last = entities.spot_entities(text, limit=3)
    assert [e["name"] for e in last] == ["Hans Meyer", "Zamenhof", "July 1887"]
    assert all(text[e["start"] : e["end"]] == e["name"] for e in last)
