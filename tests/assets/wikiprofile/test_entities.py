from assets.wikiprofile import entities

TEXT = ("Love and Money were a Scottish band, formed in Glasgow in 1985. Three former members of Friends Again "
        "formed it with the bassist Bobby Paterson. Their second album, Strange Kind of Love, was produced by Gary Katz.")


def test_markup_is_read_against_the_original_text():
    rewrite = ("Love and Money were a Scottish band, formed in {{Glasgow; LOCATION}} in {{1985; DATE}}. Three former members of "
               "{{Friends Again; GROUP}} formed it with the bassist {{Bobby Paterson; person}}. Their second album, "
               "{{Strange Kind of Love; WORK OF ART}}, was produced by {{Gary Katz; PRODUCER}} and {{Steely Dan; GROUP}}.")
    found, problems = entities.parse_markup(rewrite, TEXT)
    assert [(e["name"], e["type"]) for e in found] == [("Glasgow", "LOCATION"), ("1985", "DATE"), ("Friends Again", "GROUP"),
                                                       ("Bobby Paterson", "PERSON"), ("Strange Kind of Love", "WORK_OF_ART")]
    assert TEXT[found[3]["start"]:found[3]["end"]] == "Bobby Paterson"
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
