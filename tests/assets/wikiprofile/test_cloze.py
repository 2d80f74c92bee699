"""Questions and options built by rule from the fact's sentence (advisory builders)."""

from assets.wikiprofile import rules as cloze

TITLE = "Ernest Shackleton"
SUMMARY = (
    "Ernest Shackleton (1874–1922) was an Anglo-Irish polar explorer who led three British expeditions to the "
    "Antarctic. He died of a heart attack at Grytviken in January 1922. Shackleton was buried on South Georgia at "
    "his wife's request. The hut at Cape Royds, built for his Nimrod Expedition, still stands."
)


def at(name: str) -> int:
    return SUMMARY.index(name)


def test_direct_cloze_blanks_the_object_and_names_the_topic():
    blanked = cloze.direct_cloze(TITLE, SUMMARY, at("Grytviken"), "Grytviken", person=True)
    assert blanked == "Ernest Shackleton died of a heart attack at ___ in January 1922."
    assert (
        cloze.direct_question(blanked, "LOCATION")
        == 'What place fills the blank in "Ernest Shackleton died of a heart attack at ___ in January 1922."?'
    )
    # a sentence that does not name the topic gets it in front
    assert cloze.direct_cloze(TITLE, SUMMARY, at("Cape Royds"), "Cape Royds", person=True).startswith(
        "Ernest Shackleton: The hut at ___,"
    )
    # a personal pronoun does not stand for a thing: the founder's son is not the dynasty's
    ming = (
        "The Ming dynasty ruled China from 1368. Its founder was Zhu Yuanzhang. His son moved the capital to Beijing."
    )
    assert (
        cloze.direct_cloze("Ming dynasty", ming, ming.index("Beijing"), "Beijing")
        == "Ming dynasty: His son moved the capital to ___."
    )
    assert (
        cloze.direct_cloze("Ming dynasty", ming, ming.index("Zhu"), "Zhu Yuanzhang")
        == "Ming dynasty's founder was ___."
    )
    assert (
        cloze.reverse_cloze("Ming dynasty", ming, ming.index("Beijing"), "Beijing")
        == "___: His son moved the capital to Beijing."
    )


def test_reverse_cloze_blanks_the_topic_and_keeps_the_object():
    assert (
        cloze.reverse_cloze(TITLE, SUMMARY, at("Grytviken"), "Grytviken", person=True)
        == "___ died of a heart attack at Grytviken in January 1922."
    )
    # the surname stands for a person
    assert (
        cloze.reverse_cloze(TITLE, SUMMARY, at("South Georgia"), "South Georgia", person=True)
        == "___ was buried on South Georgia at his wife's request."
    )
    # nothing in the sentence stands for the topic: the blank goes in front, as what the statement is about
    assert (
        cloze.reverse_cloze(TITLE, SUMMARY, at("South Georgia"), "South Georgia", person=False)
        == "___: Shackleton was buried on South Georgia at his wife's request."
    )
    assert (
        cloze.reverse_cloze(TITLE, SUMMARY, at("Cape Royds"), "Cape Royds", person=True)
        == "___: The hut at Cape Royds, built for his Nimrod Expedition, still stands."
    )


def test_long_sentences_are_cut_to_the_clauses_around_the_blank():
    long = (
        "The treaty, which was negotiated over several years by envoys of many states, including the Holy Roman "
        "Emperor, the kings of France and Sweden, and the Dutch Republic, was signed at Münster in October 1648, "
        "ending decades of war in central Europe."
    )
    blanked = cloze.direct_cloze("Peace of Westphalia", long, long.index("Münster"), "Münster")
    assert blanked.startswith("Peace of Westphalia: ... ") and "signed at ___ in October 1648" in blanked
    assert 8 <= len(blanked.split()) <= cloze.MAX_CLOZE_WORDS + 6
    endless = "In " + ", ".join(["a"] * 3) + " " + " ".join(["word"] * 40) + " Münster stood."
    assert cloze.direct_cloze("X", endless, endless.index("Münster"), "Münster") is None


def test_a_model_question_must_be_about_the_fact():
    sentence = "He died of a heart attack at Grytviken in January 1922."
    assert not cloze.on_topic("What is the answer to this question?", sentence, TITLE)
    assert not cloze.on_topic("Which city is the capital of India?", sentence, TITLE)
    assert cloze.on_topic("Where did Shackleton die of a heart attack?", sentence, TITLE)
    # the topic's name alone does not make a question about this fact
    assert not cloze.on_topic("What year was Ernest Shackleton born?", sentence, TITLE)


def test_pool_options_are_of_the_pool_seeded_and_never_the_gold():
    pool = ["Grytviken", "Stromness", "Port Stanley", "Hobart", "grytviken harbour", "Cape Town"]
    options = cloze.pool_options("Grytviken", pool, "fact_1 direct")
    assert len(options) == 3 and not {"Grytviken", "grytviken harbour"} & set(options) and set(options) <= set(pool)
    assert options == cloze.pool_options("Grytviken", list(reversed(pool)), "fact_1 direct")
    assert cloze.pool_options("Grytviken", ["Grytviken", "Hobart", "Hobart"], "x") is None
