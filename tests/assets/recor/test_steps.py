import json
import zlib

import numpy as np
import polars as pl
import pytest

from assets.common.text import tokens
from assets.common.verdicts import RATING, VERDICT, verdict
from assets.recor import rules, steps
from assets.recor.settings import Thresholds
from assets.recor.sources import DOCUMENT_SCHEMA, QUESTION_SCHEMA
from resources.llm import CallStats, LLMResult, ParseError


def bag_of_words(texts):
    """Hashed word counts, normalised: cosine similarity is word overlap."""
    out = np.zeros((len(texts), 256), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in tokens(t):
            out[i, zlib.crc32(w.encode()) % 256] += 1
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


ANSWER = (
    "Natural selection weakens after reproduction because late traits barely affect offspring numbers. "
    "Harmful mutations that act late in life therefore accumulate across generations. "
    "Huntington disease is an example because carriers usually have children before symptoms appear. "
    "You should consult a doctor about your own genes"
)
DOCS = {
    "d1": "Natural selection weakens after reproduction. Late traits barely affect offspring numbers in most species.",
    "d2": (
        "Harmful mutations that act late in life accumulate across generations. "
        "Huntington disease carriers usually have children before symptoms appear."
    ),
    "d3": "UNRELATED: the history of the microscope and lens grinding in the Netherlands.",
}


def frames():
    questions = pl.DataFrame(
        [
            {
                "domain": "biology",
                "source": "bright",
                "question_id": "biology_0",
                "query": "Why does evolution not make us live longer?",
                "answer": ANSWER,
                "reasoning": None,
                "gold_ids": ["d1", "d2", "d3"],
                "excluded_ids": [],
            }
        ],
        schema=QUESTION_SCHEMA,
    )
    documents = pl.DataFrame(
        [
            {"domain": "biology", "doc_id": d, "content": c, "role": "positive", "question_id": None}
            for d, c in DOCS.items()
        ],
        schema=DOCUMENT_SCHEMA,
    )
    return questions, documents


def test_decomposition_and_verification_end_to_end(scripted_llm):
    questions, documents = frames()
    sim, t, stats = steps.Similarity(bag_of_words), Thresholds(min_new_words=2, aspect_min_coverage=0.3), CallStats()
    aligned, rejects = steps.alignment(questions, documents, scripted_llm.named("smollm2"), sim, t, stats)
    assert aligned.filter(pl.col("kept"))["doc_id"].to_list() == ["d1", "d2"]
    assert [r["reason"] for r in rejects] == ["weak_document"] and rejects[0]["item"] == "d3"

    aspects, rejects = steps.aspects(questions, aligned, documents, scripted_llm.named("smollm2"), sim, t, stats)
    reasons = [r["reason"] for r in rejects]
    # round 2 proposes the same points again: all overlapping; the advice point is unsuitable
    # (or, with little document coverage, rejected for coverage first)
    assert "overlapping_aspect" in reasons
    assert any(r in reasons for r in ("unsuitable_aspect", "low_coverage"))
    # the scripted model reverses the order it is given
    assert aspects.sort("position")["text"].to_list()[0].startswith("Huntington disease")
    assert aspects["aspect_id"].to_list() == [f"biology_0_a{i}" for i in range(1, aspects.height + 1)]

    facts, rejects = steps.facts(questions, aspects, aligned, documents, scripted_llm.named("smollm2"), sim, t, stats)
    assert facts["verified"].all() and facts.height == aspects.height

    turns, rejects = steps.turns(questions, aspects, facts, aligned, documents, scripted_llm.named("smollm2"), t, stats)
    assert turns["turn_id"].to_list() == list(range(1, turns.height + 1)) and turns.height == 3
    first = turns.row(0, named=True)
    assert first["conversation_history"] == "No previous conversation."
    assert first["query"].startswith("What should I know about Huntington")
    assert first["gold_doc_ids"] == ["d2"] and json.loads(first["doc_scores"])["d2"]["score"] == pytest.approx(7.15)
    assert first["target"] and first["relevance_signals"] == ["mechanism", "evidence", "example"]
    assert turns.row(1, named=True)["conversation_history"].startswith("Turn 1 - User: What should I know")

    convs, rejects = steps.conversations(turns, scripted_llm.named("smollm2"), t, stats)
    assert convs["valid"].to_list() == [True] and not rejects
    assert stats.errors == 0


def test_too_short_a_conversation_is_rejected_with_its_problems(scripted_llm):
    questions, documents = frames()
    turns = pl.DataFrame(
        [
            {
                "domain": "biology",
                "conversation_id": "c",
                "turn_id": i,
                "aspect_id": f"a{i}",
                "query": "q",
                "answer": "a",
                "gold_doc_ids": ["d1"],
                "doc_scores": "{}",
                "conversation_history": "",
                "target": "",
                "relevance_signals": [],
                "irrelevance_signals": [],
                "facts": [],
            }
            for i in (1, 2)
        ],
        schema=steps.TURN_SCHEMA,
    )
    convs, rejects = steps.conversations(turns, scripted_llm.named("smollm2"), Thresholds(), CallStats())
    assert convs["valid"].to_list() == [False]
    assert rejects[0]["detail"] == "2 turns (needs 3-12); every turn uses the same documents"


def test_parsers():
    assert rules.parse_reasoning("Target: ageing genes\nRelevant signals: a; b\nIrrelevant signals: c") == {
        "target": "ageing genes",
        "relevance_signals": ["a", "b"],
        "irrelevance_signals": ["c"],
    }
    assert (
        rules.parse_question('Question: "Why do genes that harm us late persist?"')
        == "Why do genes that harm us late persist?"
    )
    assert rules.parse_aspects("1. Mutation: Harmful late mutations pile up.\n2. short", 5) == [
        ("Mutation", "Harmful late mutations pile up")
    ]


def test_verdicts_come_from_first_token_probabilities():
    import math

    top = {"No": math.log(0.6), "Yes": math.log(0.3), "The": math.log(0.1)}
    assert verdict(LLMResult("k", "The", top_logprobs=top)) is False
    assert verdict(LLMResult("k", "Yes, it does", top_logprobs=None)) is True
    assert verdict(LLMResult("k", "Maybe", top_logprobs={"Maybe": -0.1})) is None


class SplitDigits:
    """A judge whose tokenizer writes each digit apart: every rating is a 10, its first
    token "1" (with a 9 beside it at 0.2)."""

    def __init__(self):
        self.requests = []

    def run(self, reqs, parse=None, stats=None, log=None, **kw):
        import math

        self.requests += reqs
        return [LLMResult(r.key, "10", top_logprobs={"1": math.log(0.8), "9": math.log(0.2)}) for r in reqs]


def test_document_criteria_read_a_split_ten_as_ten():
    model = SplitDigits()
    turns_ = [("q1", {"aspect_id": "a1"}, "Why?")]
    out = steps.score_documents(
        turns_, {"a1": ["d1"]}, {"d1": "A document."}, {"a1": ["A fact."]}, model, CallStats(), None
    )
    # 0.8 on 10 and 0.2 on 9 for each criterion; read from the first token alone, 10 was 1
    crit = out["a1"]["d1"]
    assert {c: crit[c] for c in steps.CRITERIA} == pytest.approx({c: 9.8 for c in steps.CRITERIA})
    assert all(r.params is RATING for r in model.requests)


def test_release_records_follow_the_public_format(scripted_llm):
    from assets.recor import release

    questions, documents = frames()
    sim, t, stats = steps.Similarity(bag_of_words), Thresholds(min_new_words=2, aspect_min_coverage=0.3), CallStats()
    aligned, _ = steps.alignment(questions, documents, scripted_llm.named("smollm2"), sim, t, stats)
    aspects, _ = steps.aspects(questions, aligned, documents, scripted_llm.named("smollm2"), sim, t, stats)
    facts, _ = steps.facts(questions, aspects, aligned, documents, scripted_llm.named("smollm2"), sim, t, stats)
    turns, _ = steps.turns(questions, aspects, facts, aligned, documents, scripted_llm.named("smollm2"), t, stats)
    [record] = release.conversation_records(turns, questions, {}, created_at="2026-01-01T00:00:00+00:00")
    assert set(record) == {"id", "task", "original_query", "original_answer", "turns", "metadata"}
    assert record["task"] == "biology" and record["metadata"]["num_turns"] == 3
    turn = record["turns"][1]
    assert set(turn) == {
        "turn_id",
        "query",
        "answer",
        "gold_doc_ids",
        "conversation_history",
        "subquestion_reasoning",
        "subquestion_reasoning_metadata",
    }
    assert set(turn["subquestion_reasoning_metadata"]) == {
        "target_information",
        "relevance_signals",
        "irrelevance_signals",
    }
    qrels = release.qrels_lines(turns).splitlines()
    assert qrels[0].startswith("biology_0_turn_1 0 ") and qrels[0].endswith(" 1")
    assert json.loads(release.jsonl([record]))["id"] == "biology_0"
    assert release.release_name("medical_sciences") == "medicalsciences"


class NaySayer:
    """The scripted model, except that every yes/no verdict is a confident no."""

    def __init__(self, model):
        self.model = model

    def run(self, reqs, parse=None, stats=None, log=None, **kw):
        import math

        answered = self.model.run(reqs, parse=parse, stats=stats, log=log, **kw)
        return [
            LLMResult(r.key, "No", top_logprobs={"No": math.log(0.9), "Yes": math.log(0.1)})
            if q.params is VERDICT and "yes or no" in q.messages[-1]["content"].lower()
            else r
            for q, r in zip(reqs, answered)
        ]


def test_advisory_verdicts_are_recorded_and_the_encoder_decides(scripted_llm):
    questions, documents = frames()
    sim, stats = steps.Similarity(bag_of_words), CallStats()
    model = NaySayer(scripted_llm.named("smollm2"))
    binding = Thresholds(min_new_words=2, aspect_min_coverage=0.3)
    aligned, _ = steps.alignment(questions, documents, model, sim, binding, stats)
    aspects, rejects = steps.aspects(questions, aligned, documents, model, sim, binding, stats)
    assert aspects.height == 0 and "unsuitable_aspect" in {r["reason"] for r in rejects}

    advisory = Thresholds(
        min_new_words=2,
        aspect_min_coverage=0.3,
        alignment_min_coverage=0.2,
        binding_verdicts=False,
        fact_similarity=0.3,
    )
    aligned, rejects = steps.alignment(questions, documents, model, sim, advisory, stats)
    # coverage alone decides, and the judge is not asked for a verdict that would not decide
    assert aligned["kept"].to_list() == (aligned["coverage"] >= 0.2).to_list()
    assert (
        aligned.filter(pl.col("kept"))["doc_id"].to_list() == ["d1", "d2"] and aligned["llm_supports"].is_null().all()
    )
    aspects, rejects = steps.aspects(questions, aligned, documents, model, sim, advisory, stats)
    assert aspects.height == 3 and aspects["llm_suitable"].to_list() == [False] * 3
    assert "unsuitable_aspect" not in {r["reason"] for r in rejects}
    facts, _ = steps.facts(questions, aspects, aligned, documents, model, sim, advisory, stats)
    middle = facts.filter(pl.col("similarity") < advisory.fact_accept)
    assert middle.height and (middle["verified"] == (middle["similarity"] >= 0.3)).all()
    assert facts["llm_supports"].is_null().all()
    turns, _ = steps.turns(questions, aspects, facts, aligned, documents, model, advisory, stats)
    assert turns.height == 3 and turns["llm_on_aspect"].to_list() == [False] * 3
    # every turn's gold documents hold one of its verified facts
    doc_of = facts.filter(pl.col("verified")).group_by("aspect_id").agg("doc_id")
    held = {a: set(ds) for a, ds in doc_of.iter_rows()}
    assert all(set(t["gold_doc_ids"]) <= held[t["aspect_id"]] for t in turns.iter_rows(named=True))
    convs, _ = steps.conversations(turns, model, advisory, stats)
    assert convs["coherent"].to_list() == [False] and convs["valid"].to_list() == [True]


def test_question_and_answer_parsing_of_small_model_output():
    assert (
        rules.parse_question("The person's first question is: \"Why does my skin bump up in the cold?")
        == "Why does my skin bump up in the cold?"
    )
    assert (
        rules.parse_question('What is the answer to the question: "What is the only nerve supply of the muscles?"')
        == "What is the only nerve supply of the muscles?"
    )
    with pytest.raises(ParseError, match="repeats itself"):
        rules.parse_answer("The muscles are " + "the parasympathetic nervous system's " * 12)
    assert not rules.usable_answer("Why does my skin bump up in the cold?", "Why does my skin bump up in the cold?")
    assert rules.usable_answer(
        "Tiny muscles at each hair pull it upright when it is cold.", "Why does my skin bump up in the cold?"
    )


class Parrot:
    """The scripted model, except that it asks one question over and over and answers by
    repeating the question."""

    def __init__(self, model):
        self.model = model

    def run(self, reqs, parse=None, stats=None, log=None, **kw):
        answered = self.model.run(reqs, parse=parse, stats=stats, log=log, **kw)
        out = []
        for q, r in zip(reqs, answered):
            system = q.messages[0]["content"]
            if "opening question" in system or "next question" in system:
                text = 'The person\'s question is: "Why does evolution let late harmful mutations survive?"'
            elif "answering one question" in system:
                text = q.messages[-1]["content"].splitlines()[0].removeprefix("Question: ")
            else:
                out.append(r)
                continue
            out.append(LLMResult(r.key, text, value=parse(text) if parse else text))
        return out


def test_unusable_questions_get_a_second_try_and_echoed_answers_give_way_to_the_facts(scripted_llm):
    questions, documents = frames()
    sim, t, stats = steps.Similarity(bag_of_words), Thresholds(min_new_words=2, aspect_min_coverage=0.3), CallStats()
    model = Parrot(scripted_llm.named("smollm2"))
    aligned, _ = steps.alignment(questions, documents, model, sim, t, stats)
    aspects, _ = steps.aspects(questions, aligned, documents, model, sim, t, stats)
    facts, _ = steps.facts(questions, aspects, aligned, documents, model, sim, t, stats)
    turns, _ = steps.turns(questions, aspects, facts, aligned, documents, model, t, stats)
    assert turns["query"][0] == "Why does evolution let late harmful mutations survive?"
    assert turns["question_origin"].to_list() == ["first_turn"] + ["question_for_point"] * (turns.height - 1)
    assert turns.height >= 2 and len(set(turns["query"])) == turns.height
    assert set(turns["answer_origin"]) == {"facts"}
    first = turns.row(0, named=True)
    assert first["answer"] == " ".join(f.rstrip(".") + "." for f in first["facts"])


def test_a_reply_without_a_question_mark_has_no_question():
    with pytest.raises(ParseError):
        rules.parse_question(
            'The answer to the question is: "The hypothalamus regulates the sympathetic nervous system.'
        )
    assert (
        rules.parse_question("Question 2: Why do genes that harm us late persist? Because...")
        == "Why do genes that harm us late persist?"
    )
