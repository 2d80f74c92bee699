import math
import re

import polars as pl
import pytest

from assets.wikiprofile import rules, steps
from assets.wikiprofile.sources import PAGE_SCHEMA
from resources.llm import CallStats, LLMResult, Model, ModelSpec, ParseError

SUMMARY = (
    "Love and Money were a Scottish band, formed in Glasgow in 1985. Three former members of Friends Again "
    "formed it with the bassist Bobby Paterson. Their second album, Strange Kind of Love, was produced by Gary Katz."
)


def answered(key, reply, parse):
    """A reply as the LLM resource returns it: parsed, or failed when the parser refuses it."""
    try:
        return LLMResult(key, reply, value=parse(reply) if parse else reply)
    except Exception as e:
        return LLMResult(key, reply, error=f"unparsable: {e}")


def model(fake) -> Model:
    """The handle a step is given, its calls answered by a scripted fake of the resource."""
    return Model(fake, ModelSpec("m", "scripted/m"))


class Fake:
    """Canned replies by prompt; verdicts as first-token probabilities."""

    def __init__(self, objects='["Gary Katz", "Steely Dan", "Bobby Paterson"]', difficulty_yes=True):
        self.objects, self.difficulty_yes, self.prompts = objects, difficulty_yes, []

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        out = []
        for q in reqs:
            text = q.messages[-1]["content"]
            self.prompts.append(text)
            if "Which one of these categories" in text:
                reply = "Category: arts (music)"
            elif "wrapping each of its most important entities" in text:
                reply = (
                    SUMMARY.replace("Glasgow", "{{Glasgow; LOCATION}}")
                    .replace("Bobby Paterson", "{{Bobby Paterson; PERSON}}")
                    .replace("Gary Katz", "{{Gary Katz; PERSON}}")
                    .replace("Love and Money", "{{Love and Money; GROUP}}")
                )
            elif "Pick up to" in text:
                reply = self.objects
            else:
                yes = self.difficulty_yes or "good test of knowledge" not in text
                p = 0.9 if yes else 0.1
                out.append(
                    LLMResult(q.key, "yes" if yes else "no", top_logprobs={"yes": math.log(p), "no": math.log(1 - p)})
                )
                continue
            out.append(LLMResult(q.key, reply, value=parse(reply) if parse else reply))
        return out


def pages():
    return pl.DataFrame(
        [
            {
                "page_id": "love_and_money",
                "title": "Love and Money",
                "summary": SUMMARY,
                "words": 40,
                "months": 1,
                "mean_monthly_views": 900.0,
                "reference_category": "Arts",
            }
        ],
        schema=PAGE_SCHEMA,
    )


def test_categories_are_parsed_from_the_reply():
    assert rules.parse_category("Philosophy and Religion.") == "Philosophy & Religion"
    assert rules.parse_category("I think Science, maybe Technology") == "Science"
    assert rules.parse_category("no idea") is None
    cats = steps.categorize(pages(), model(Fake()), CallStats())
    assert cats.row(0, named=True) == {
        "page_id": "love_and_money",
        "category": "Arts",
        "parsed": True,
        "llm_category": "Arts",
        "origin": "model",
    }


class Copier(Fake):
    """A small model: names the wrong category and copies the paragraph back untagged."""

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        return [
            LLMResult(
                q.key, "Category: People" if "Which one of these categories" in q.messages[-1]["content"] else SUMMARY
            )
            for q in reqs
        ]


def test_advisory_builder_falls_back_to_the_source_category_and_rule_entities():
    binding = steps.categorize(pages(), model(Copier()), CallStats())
    assert binding.row(0, named=True)["category"] == "People"
    advisory = steps.categorize(pages(), model(Copier()), CallStats(), binding=False).row(0, named=True)
    assert (advisory["category"], advisory["llm_category"], advisory["origin"]) == ("Arts", "People", "reference")

    found, rejects = steps.tag_entities(pages(), model(Copier()), CallStats())
    assert found.height == 0 and [r["reason"] for r in rejects] == ["no_entities"]
    found, rejects = steps.tag_entities(pages(), model(Copier()), CallStats(), binding=False)
    assert not rejects and set(found["origin"]) == {"rules"}
    assert {"Glasgow", "1985", "Bobby Paterson", "Gary Katz", "Strange Kind of Love"} <= set(found["name"])


def test_entities_objects_and_verification_keep_every_reject():
    llm, stats = Fake(), CallStats()
    found, rejects = steps.tag_entities(pages(), model(llm), stats)
    assert found["name"].to_list() == ["Love and Money", "Glasgow", "Bobby Paterson", "Gary Katz"]
    objects, rejects = steps.select_objects(pages(), found, model(llm), 3, stats)
    reasons = {(r["item"], r["reason"]) for r in rejects}
    # the subject opens the paragraph; Steely Dan is no entity of it
    assert ("Love and Money", "bad_position") in reasons and ("Steely Dan", "not_a_candidate") in reasons
    assert objects["object"].to_list() == ["Gary Katz", "Bobby Paterson"] and set(objects["origin"]) == {"model"}
    assert objects["left_context"][1].endswith("with the bassist") and objects["ends_clause"].all()
    assert "Candidate entities (in order of appearance): Glasgow; Bobby Paterson; Gary Katz" in llm.prompts[-1]

    strict = Fake(difficulty_yes=False)
    verified, rejects = steps.verify(objects, model(strict), binding=True, stats=stats)
    assert not verified["verified"].any() and [r["reason"] for r in rejects] == ["unsuitable_object"] * 2
    assert "verify_difficulty said False" in rejects[0]["detail"]
    verified, rejects = steps.verify(objects, model(strict), binding=False, stats=stats)
    assert verified["verified"].all() and not rejects and verified["difficulty"].to_list() == [False, False]
    assert verified["left_context"].to_list() == objects["left_context"].to_list()
    assert verified["left_context_alone"].to_list() == [True, True]


def test_without_a_usable_ranking_the_rules_choose():
    found, _ = steps.tag_entities(pages(), model(Fake()), CallStats())
    objects, _ = steps.select_objects(pages(), found, model(Fake(objects="I cannot tell.")), 2, CallStats())
    # clause-closing entities first, later ones before earlier ones
    assert objects["object"].to_list() == ["Gary Katz", "Bobby Paterson"] and set(objects["origin"]) == {"rules"}


def test_downsampling_balances_categories_and_type_groups():
    rows = [
        {"page_id": f"p{i}", "fact_id": f"p{i}_o1", "type": t}
        for i, t in enumerate(["PERSON"] * 8 + ["DATE"] * 2 + ["WORK_OF_ART"] * 2)
    ]
    facts = pl.DataFrame(rows)
    cats = pl.DataFrame({"page_id": [f"p{i}" for i in range(12)], "category": ["People"] * 10 + ["Arts"] * 2})
    kept = steps.downsample(facts, cats, target=6, seed=1)
    cells = dict(
        kept.group_by("category", "type_group")
        .len()
        .select(pl.concat_str("category", "type_group", separator="/"), "len")
        .iter_rows()
    )
    assert cells == {"People/PERSON": 2, "People/DATE": 2, "Arts/ARTIFACT": 2}
    assert steps.downsample(facts, cats, target=None).height == 12
    assert steps.downsample(facts, cats, target=6, seed=1)["fact_id"].to_list() == kept["fact_id"].to_list()


def test_deletions_only_and_answer_leaks():
    q = "What is the name of the bassist who, along with three former members of Friends Again, formed the band Love and Money?"
    assert (
        rules.only_deletions(
            q, "Which bassist formed the band Love and Money with three former members of Friends Again?"
        )
        is False
    )
    # moving a clause is rewording, not deleting
    assert not rules.only_deletions(
        q, "What is the name of the bassist who formed Love and Money with three former members of Friends Again?"
    )
    assert rules.only_deletions(
        q, "What is the name of the bassist who, with three former members of Friends Again, formed Love and Money?"
    )
    assert rules.only_deletions(q, "Who is the bassist who formed the band Love and Money?")  # one word mended
    assert rules.answer_leaks("Which bassist, Bobby Paterson, formed the band?", "Bobby Paterson")
    assert not rules.answer_leaks("Which bassist formed the band?", "Bobby Paterson")


class Questions:
    """Replies for steps 7-9, chosen per fact id."""

    def __init__(self, script):
        self.script = script

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        out = []
        for q in reqs:
            text = q.messages[-1]["content"]
            stage = "gen" if "Write one question whose answer" in text else "spec" if "REJECT" in text else "min"
            reply = self.script[q.key.split()[0]][stage]
            out.append(answered(q.key, reply, parse))
        return out


def test_direct_questions_are_generated_refined_and_rejected_with_reasons():
    facts = pl.DataFrame(
        [
            {
                "page_id": "p",
                "fact_id": f"p_o{i}",
                "object": "Bobby Paterson",
                "type": "PERSON",
                "left_context": "Love and Money were formed by the bassist",
            }
            for i in range(1, 6)
        ]
    )
    good = "Which bassist formed the Scottish band Love and Money?"
    script = {
        "p_o1": {"gen": f"Question: {good}", "spec": good, "min": "Which bassist formed Love and Money?"},
        "p_o2": {"gen": "Was it Bobby Paterson who formed Love and Money?", "spec": "", "min": ""},
        "p_o3": {"gen": good, "spec": "REJECT", "min": good},
        "p_o4": {
            "gen": good,
            "spec": "Which bass player formed Love and Money?",
            "min": "Who played bass and started Love and Money?",
        },
        "p_o5": {"gen": "I do not know.", "spec": "", "min": ""},
    }
    frame, rejects = steps.direct_questions(facts, model(Questions(script)), binding=True, stats=CallStats())
    assert {(r["item"], r["reason"]) for r in rejects} == {
        ("p_o2", "answer_in_question"),
        ("p_o3", "rejected_by_model"),
        ("p_o5", "no_question"),
    }
    rows = {r["fact_id"]: r for r in frame.iter_rows(named=True)}
    assert (
        rows["p_o1"]["question"] == "Which bassist formed Love and Money?" and rows["p_o1"]["minimalism"] == "shortened"
    )
    assert (
        rows["p_o4"]["specification"] == "edited"
        and rows["p_o4"]["question"] == "Which bass player formed Love and Money?"
    )
    assert rows["p_o4"]["minimalism"] == "not deletions only, kept"
    advisory, rejects = steps.direct_questions(facts, model(Questions(script)), binding=False, stats=CallStats())
    assert "p_o3" in set(advisory["fact_id"]) and advisory.filter(pl.col("fact_id") == "p_o3")["specification"][
        0
    ].startswith("reject_ignored")


class Searcher:
    """Answers from the first hit; judges an answer with "or" in it as not definite."""

    def __init__(self):
        self.prompts = []

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        out = []
        for q in reqs:
            text = q.messages[-1]["content"]
            self.prompts.append(text)
            if "Answer the question from the search results" in text:
                first = text.split("[1] ")[1].split("\n")[0] if "[1] " in text else "Nothing found"
                out.append(LLMResult(q.key, first))
            else:
                definite = " or " not in text.split("Answer given after searching:")[1].split("\n")[0]
                p = 0.9 if definite else 0.1
                out.append(LLMResult(q.key, "yes", top_logprobs={"yes": math.log(p), "no": math.log(1 - p)}))
        return out


def test_the_search_grounded_filter_keeps_definite_answers():
    questions = pl.DataFrame(
        {
            "fact_id": ["p_o1", "p_o2", "p_o3"],
            "kind": ["direct"] * 3,
            "question": ["Who formed Love and Money?", "Which city?", "Which album?"],
        }
    )
    hits = {
        "Who formed Love and Money?": [
            ("d1", "Bobby Paterson formed it with three members of Friends Again."),
            ("d2", "x"),
        ],
        "Which city?": [("d3", "Glasgow or Edinburgh, depending on the source.")],
    }
    llm = Searcher()
    frame, rejects = steps.search_filter(questions, hits, model(llm), binding=True, stats=CallStats())
    assert frame["definite"].to_list() == [True, False, True] and frame["kept"].to_list() == [True, False, True]
    assert frame["search_hits"].to_list() == [["d1", "d2"], ["d3"], []]
    assert [(r["item"], r["reason"]) for r in rejects] == [("p_o2", "not_definite")]
    assert "(nothing found)" in llm.prompts[2]
    # advisory: the hits are recorded, the model is not asked, nothing is rejected
    advisory = Searcher()
    frame, rejects = steps.search_filter(questions, hits, model(advisory), binding=False, stats=CallStats())
    assert frame["kept"].all() and not rejects and frame["definite"].null_count() == 3 and not advisory.prompts
    assert frame["search_hits"].to_list() == [["d1", "d2"], ["d3"], []]


class Reverser:
    """Replies for steps 11-13, per fact id."""

    def __init__(self, reverse, pair_ok=True):
        self.reverse, self.pair_ok = reverse, pair_ok

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        out = []
        for q in reqs:
            fid, text = q.key.split()[0], q.messages[-1]["content"]
            if "First name the subject" in text:
                reply = self.reverse[fid]
            elif "Which type is the answer" in text:
                reply = "GROUP"
            elif "Is this a good pair" in text:
                p = 0.9 if self.pair_ok else 0.1
                out.append(LLMResult(q.key, "yes", top_logprobs={"yes": math.log(p), "no": math.log(1 - p)}))
                continue
            else:  # refinements keep the question
                reply = re.search(r"Question: (.*)", text).group(1)
            out.append(answered(q.key, reply, parse))
        return out


def test_reverse_questions_name_the_subject_and_contain_the_object():
    left = "Love and Money were a Scottish band formed by three former members of Friends Again and the bassist"
    facts = pl.DataFrame(
        [
            {"page_id": "p", "fact_id": f"p_o{i}", "object": "Bobby Paterson", "type": "PERSON", "left_context": left}
            for i in range(1, 6)
        ]
    )
    direct = pl.DataFrame(
        {"fact_id": [f"p_o{i}" for i in range(1, 6)], "question": ["Which bassist formed Love and Money?"] * 5}
    )
    reverse = {
        "p_o1": "Subject: Love and Money\nQuestion: Which band was formed by Bobby Paterson and three former members of Friends Again?",
        "p_o2": "REJECT",
        "p_o3": "Subject: Deacon Blue\nQuestion: Which band did Bobby Paterson join?",
        "p_o4": "Subject: Love and Money\nQuestion: Which band did three former members of Friends Again form?",
        "p_o5": "Subject: Love and Money\nQuestion: Was Love and Money formed by Bobby Paterson?",
    }
    frame, rejects = steps.reverse_questions(facts, direct, model(Reverser(reverse)), binding=True, stats=CallStats())
    assert {(r["item"], r["reason"]) for r in rejects} == {
        ("p_o2", "no_unique_reverse"),
        ("p_o3", "subject_not_in_text"),
        ("p_o4", "object_not_in_question"),
        ("p_o5", "answer_in_question"),
    }
    row = frame.row(0, named=True)
    assert row["fact_id"] == "p_o1" and row["kind"] == "reverse" and row["subject"] == "Love and Money"
    assert row["subject_type"] == "GROUP" and row["pair_ok"] is True
    frame, rejects = steps.reverse_questions(
        facts, direct, model(Reverser(reverse, pair_ok=False)), binding=True, stats=CallStats()
    )
    assert frame.height == 0 and ("p_o1", "invalid_pair") in {(r["item"], r["reason"]) for r in rejects}
    frame, _ = steps.reverse_questions(
        facts, direct, model(Reverser(reverse, pair_ok=False)), binding=False, stats=CallStats()
    )
    assert frame["pair_ok"].to_list() == [False]


def test_contextual_questions_length_filter_and_options():
    left = "Love and Money were a Scottish band. Three former members of Friends Again formed it with the bassist"
    assert (
        steps.contextual_question(left, "Which bassist formed Love and Money?")
        == "Love and Money were a Scottish band. Which bassist formed Love and Money?"
    )
    assert steps.contextual_question("The band formed with the bassist", "Who?") == "Who?"
    problems = steps.length_problems({"direct": "Who? " * 41, "contextual": "long " * 80}, "too short")
    assert problems == ["direct has 41 words (at most 40)", "left context has 2 words (at least 30)"]
    assert rules.parse_options(
        "Bobby Paterson\n2. James Grant\n- Neil Cunningham\nbobby paterson\nStuart Kerr.", "Bobby Paterson"
    ) == ["James Grant", "Neil Cunningham", "Stuart Kerr"]
    with pytest.raises(ParseError):
        rules.parse_options("Bobby Paterson\nJames Grant", "Bobby Paterson")
    # a line that gives the answer away is no distractor
    reply = "The correct answer is: Mona Lisa (OTHER)\nThe Last Supper\nSalvator Mundi\nLady with an Ermine"
    assert rules.parse_options(reply, "Mona Lisa") == ["The Last Supper", "Salvator Mundi", "Lady with an Ermine"]


class Rephraser:
    def run(self, alias, reqs, parse=None, stats=None, log=None):
        out = []
        for q in reqs:
            text = q.messages[-1]["content"]
            if "everyday words" in text:
                question = re.search(r"Question: (.*)", text).group(1)
                reply = (
                    "Who is Bobby Paterson?"
                    if "p_o2" in q.key
                    else "So who was the bass player in " + question.split(" formed ")[-1]
                )
            else:
                reply = (
                    "Bobby Paterson\nJames Grant\nNeil Cunningham\nStuart Kerr"
                    if "p_o1" in q.key
                    else "Bobby Paterson\nJames Grant"
                )
            out.append(answered(q.key, reply, parse))
        return out


def test_natural_questions_and_distractors_keep_their_rejects():
    facts = [{"page_id": "p", "fact_id": f"p_o{i}"} for i in (1, 2)]
    items = [(f, "direct", "Which bassist formed Love and Money?", "Bobby Paterson") for f in facts]
    frame, rejects = steps.natural_questions(items, model(Rephraser()), CallStats())
    assert frame.to_dicts() == [
        {
            "fact_id": "p_o1",
            "kind": "direct_natural",
            "question": "So who was the bass player in Love and Money?",
            "origin": "model",
        }
    ]
    assert [(r["item"], r["reason"]) for r in rejects] == [("p_o2", "answer_in_question")]
    options, rejects = steps.distractors(
        [(f, "direct", q, a, "PERSON") for f, _, q, a in items], model(Rephraser()), CallStats()
    )
    assert options["options"].to_list() == [["Bobby Paterson", "James Grant", "Neil Cunningham", "Stuart Kerr"]]
    assert rejects[0]["reason"] == "too_few_distractors" and rejects[0]["item"] == "p_o2"


class Junk:
    """The embedded model at its worst: the same generic question whatever it is asked."""

    def __init__(self):
        self.prompts = []

    def run(self, alias, reqs, parse=None, stats=None, log=None):
        self.prompts += [q.messages[-1]["content"] for q in reqs]
        return [answered(q.key, "What is the answer to this question?", parse) for q in reqs]


def test_advisory_builder_falls_back_to_questions_and_options_built_by_rule():
    from tests.assets.wikiprofile.test_cloze import SUMMARY, TITLE

    pages = {"shackleton": (TITLE, SUMMARY)}
    facts = pl.DataFrame(
        [
            {
                "page_id": "shackleton",
                "fact_id": f"shackleton_o{i}",
                "object": obj,
                "type": etype,
                "start": SUMMARY.index(obj),
                "left_context": SUMMARY[: SUMMARY.index(obj)].rstrip(),
                "category": "People",
            }
            for i, (obj, etype) in enumerate([("Grytviken", "LOCATION"), ("Cape Royds", "LOCATION")], start=1)
        ]
    )
    strict, _ = steps.direct_questions(facts, model(Junk()), True, CallStats(), pages=pages)
    assert set(strict["origin"]) == {"model"} and set(strict["question"]) == {"What is the answer to this question?"}

    direct, rejects = steps.direct_questions(facts, model(Junk()), False, CallStats(), pages=pages)
    assert not rejects and set(direct["origin"]) == {"rules"} and set(direct["specification"]) == {"rules"}
    assert (
        direct["question"][0]
        == 'What place fills the blank in "Ernest Shackleton died of a heart attack at ___ in January 1922."?'
    )

    reverse, rejects = steps.reverse_questions(facts, direct, model(Junk()), False, CallStats(), pages=pages)
    assert reverse.select("fact_id", "subject", "subject_type", "origin").rows() == [
        ("shackleton_o1", TITLE, "PERSON", "rules"),
        ("shackleton_o2", TITLE, "PERSON", "rules"),
    ]
    assert reverse["question"].to_list() == [
        'Which person is the blank in "___ died of a heart attack at Grytviken in January 1922."?',
        'Which person is the blank in "___: The hut at Cape Royds, built for his Nimrod Expedition, still stands."?',
    ]
    assert not rejects

    fact = facts.row(0, named=True)
    llm = Junk()
    natural, rejects = steps.natural_questions(
        [(fact, "direct", direct["question"][0], "Grytviken"), (fact, "reverse", reverse["question"][0], TITLE)],
        model(llm),
        CallStats(),
        binding=False,
        pages=pages,
        origins={("shackleton_o1", "direct"): "rules", ("shackleton_o1", "reverse"): "rules"},
    )
    # rule-made questions are rephrased by rule, without asking the model
    assert not rejects and not llm.prompts and set(natural["origin"]) == {"rules"}
    assert natural["question"].to_list() == [
        "In this statement about Ernest Shackleton, which place is missing: "
        '"Ernest Shackleton died of a heart attack at ___ in January 1922."?',
        'Who or what is described here, in place of the blank: "___ died of a heart attack at Grytviken in January 1922."?',
    ]

    pools = {
        "LOCATION": ["Grytviken", "Hobart", "Stromness", "Punta Arenas"],
        "subject": [TITLE, "Roald Amundsen", "Robert Falcon Scott", "Douglas Mawson"],
    }
    closed = [
        (fact, "direct", direct["question"][0], "Grytviken", "LOCATION"),
        (fact, "reverse", reverse["question"][0], TITLE, "PERSON"),
    ]
    options, rejects = steps.distractors(closed, model(Junk()), CallStats(), binding=False, pools=pools)
    assert not rejects and set(options["origin"]) == {"rules"}
    assert (
        sorted(options["options"][0][1:]) == ["Hobart", "Punta Arenas", "Stromness"]
        and options["options"][1][0] == TITLE
    )
    _, rejects = steps.distractors(closed, model(Junk()), CallStats())
    assert [r["reason"] for r in rejects] == ["too_few_distractors"] * 2
