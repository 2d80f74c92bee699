"""The release records against the published construction code (RECOR-Benchmark/RECOR,
``pipeline/generate_bright.py``: ``create_benchmark_entry``, ``summarize_conversation_history``)."""

import json

import polars as pl

from assets.recor import release, steps


def questions() -> pl.DataFrame:
    # the source question has four gold documents; the turns use two of them
    return pl.DataFrame(
        [
            {
                "domain": "law",
                "source": "stackexchange",
                "question_id": "law_1",
                "query": "Can police search my car?",
                "answer": "Only with cause.",
                "reasoning": "",
                "gold_ids": ["d1", "d2", "d3", "d4"],
                "excluded_ids": [],
            }
        ]
    )


def turns() -> pl.DataFrame:
    rows = [
        {
            "domain": "law",
            "conversation_id": "law_1",
            "turn_id": i,
            "aspect_id": f"law_1_a{i}",
            "query": q,
            "answer": a,
            "gold_doc_ids": g,
            "doc_scores": "{}",
            "conversation_history": "",
            "target": t,
            "relevance_signals": r,
            "irrelevance_signals": x,
            "facts": [],
            "llm_on_aspect": True,
            "llm_natural": True,
            "question_origin": "follow_up",
            "answer_origin": "model",
        }
        for i, (q, a, g, t, r, x) in enumerate(
            [
                (
                    "When may police search a car?",
                    "With probable cause.",
                    ["d1"],
                    "the automobile exception",
                    ["probable cause"],
                    [],
                ),
                (
                    "What if I refuse?",
                    "Refusal is not cause.",
                    ["d2", "d1"],
                    "consent searches.",
                    ["consent", "refusal"],
                    ["arrest"],
                ),
                ("Can they use a dog?", "A sniff is not a search.", ["d2"], "", [], []),
            ],
            1,
        )
    ]
    # rows out of order: the records follow turn order
    return pl.DataFrame(rows[::-1], schema=steps.TURN_SCHEMA)


def test_records_carry_the_guidance_the_history_and_the_source_gold_count():
    [record] = release.conversation_records(turns(), questions(), {})
    first, second, third = record["turns"]
    # the retrieval guidance composed from the stored target and signals, not the target alone
    assert second["subquestion_reasoning"] == (
        "Find documents that contain consent searches. Relevant signals: consent, refusal. Irrelevant signals: arrest."
    )
    assert second["subquestion_reasoning_metadata"]["target_information"] == "consent searches."
    assert (
        first["subquestion_reasoning"]
        == "Find documents that contain the automobile exception. Relevant signals: probable cause."
    )
    assert third["subquestion_reasoning"] == ""
    # summarize_conversation_history: "Q: ...\nA: ..." per earlier turn, a fixed line before the first
    assert first["conversation_history"] == "No previous conversation."
    assert third["conversation_history"] == (
        "Q: When may police search a car?\nA: With probable cause.\nQ: What if I refuse?\nA: Refusal is not cause."
    )
    # len(example["gold_ids"]) = 4, where the turns' union would be 2
    assert record["metadata"]["gold_doc_count"] == 4 and record["metadata"]["created_at"] == ""


def test_a_long_history_names_the_early_questions_and_keeps_the_last_two_turns():
    earlier = [{"query": f"q{i}", "answer": f"a{i}"} for i in range(1, 7)]
    assert release.history_text(earlier[:5]) == "\n".join(f"Q: q{i}\nA: a{i}" for i in range(1, 6))
    assert release.history_text(earlier) == (
        "Earlier discussion covered: Turn 1: q1; Turn 2: q2; Turn 3: q3; Turn 4: q4\n\n"
        "Recent conversation:\nQ: q5\nA: a5\nQ: q6\nA: a6"
    )


def test_qrels_ids_are_the_published_ones():
    assert release.qrels_lines(turns()).splitlines() == [
        "law_1_turn_1 0 d1 1",
        "law_1_turn_2 0 d2 1",
        "law_1_turn_2 0 d1 1",
        "law_1_turn_3 0 d2 1",
    ]
    assert release.turn_qid("law_1", 12) == "law_1_turn_12"


def test_two_exports_of_the_same_data_are_byte_identical():
    one = release.jsonl(release.conversation_records(turns(), questions(), {})).encode()
    two = release.jsonl(
        release.conversation_records(turns().sample(fraction=1.0, shuffle=True, seed=3), questions(), {})
    ).encode()
    assert one == two
    assert json.loads(one)["metadata"]["source"] == "stackexchange"
