import json

import pytest

from assets.common import records
from assets.quit import sources


def trivia(qid="t1", question="Which mountain is the highest on Earth?", hints=None, answer="Mount Everest"):
    return {
        "Q_ID": qid,
        "Question": question,
        "ExactAnswer": [answer, "Everest"],
        "Hints": hints if hints is not None else [f"Clue number {i} about the peak." for i in range(6)],
        "MajorType": "LOCATION",
        "MinorType": "MOUNT",
        "Exact_Answer_Popularity": 1000,
    }


def wiki(qid="w1", question="Which planet has the Great Red Spot?", hints=None):
    hints = (
        hints
        if hints is not None
        else [{"hint": f"Wiki clue {i}.", "metrics": {"convergence": 0.1 * i}} for i in range(5)]
    )
    return {
        "id": qid,
        "question": {
            "question": question,
            "question_type": {"major": "LOC:LOCATION", "minor": "other:Other"},
            "difficulty": "Hard",
            "candidate_answers": ["Saturn", "Jupiter"],
        },
        "answer": {"answer": "Jupiter"},
        "hints": hints,
    }


def test_malformed_json_names_the_file_and_position():
    with pytest.raises(records.SourceFormatError, match=r"triviahg.json: not valid JSON at line 1 column"):
        records.parse_json_list('[{"Q_ID": ', "triviahg.json")


def test_not_a_list_is_an_error():
    with pytest.raises(records.SourceFormatError, match="expected a JSON list"):
        records.parse_json_list('{"a": 1}', "x.json")


@pytest.mark.parametrize(
    "record, detail",
    [
        ({k: v for k, v in trivia().items() if k != "Question"}, "missing field 'Question'"),
        (trivia(hints=[]), "empty hint list"),
        (trivia(hints=["a fine clue", 7, "x", "y", "z"]), "hint 2 is int, not a string"),
        ({**trivia(), "Question": 12}, "field 'Question' is int"),
        ("just a string", "record is str"),
    ],
)
def test_malformed_records_are_rejected_naming_the_record(record, detail):
    out = sources.ingest([("triviahg", [trivia("ok"), record])])
    assert [r["question_id"] for r in out.rows] == ["triviahg:ok"]
    [reject] = out.rejects
    assert reject["reason"] == "malformed"
    assert detail in reject["detail"]
    assert "record #1" in reject["detail"]
    assert reject["record"]  # the raw record is kept


def test_duplicates_and_too_few_hints_are_rejected_with_reasons():
    records = [
        trivia("a"),
        trivia("a", question="Another question entirely?"),  # duplicate id
        trivia("b", question="which  MOUNTAIN is the highest on earth"),  # duplicate question text
        trivia("c", question="Short?", hints=["one.", "two.", "two.", " ", "three.", "four."]),  # 4 usable
    ]
    out = sources.ingest([("triviahg", records), ("wikihint", [wiki()])])
    reasons = {r["question_id"]: r["reason"] for r in out.rejects}
    assert reasons == {"triviahg:a": "duplicate_id", "triviahg:b": "duplicate_question", "triviahg:c": "too_few_hints"}
    assert [r["question_id"] for r in out.rows] == ["triviahg:a", "wikihint:w1"]
    # nothing dropped silently: every input record is either a row or a reject
    assert len(out.rows) + len(out.rejects) == len(records) + 1


def test_wikihint_keeps_convergence_and_candidates():
    [row] = sources.ingest([("wikihint", [wiki()])]).rows
    assert row["hint_convergence"] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4])
    assert row["candidate_answers"] == ["Saturn", "Jupiter"]
    assert row["difficulty"] == "Hard"
    frame = sources.questions_frame([row])
    assert frame.height == 1 and frame["hints"].list.len().item() == 5


def test_wikihint_hint_without_text_is_malformed():
    bad = wiki(hints=[{"hint": "ok"}, {"metrics": {}}])
    [reject] = sources.ingest([("wikihint", [bad])]).rejects
    assert "hint 2 has no string 'hint' field" in reject["detail"]


def test_bundled_samples_load():
    from assets.quit.settings import QuitSettings

    s = QuitSettings()
    loaded = [
        (n, records.parse_json_list(open(p).read(), p))
        for n, p in (("triviahg", s.triviahg_path), ("wikihint", s.wikihint_path))
    ]
    out = sources.ingest(loaded)
    assert len(out.rows) >= 30
    reasons = {r["reason"] for r in out.rejects}
    assert {"duplicate_id", "duplicate_question", "too_few_hints"} <= reasons
    assert json.loads(out.rejects[0]["record"]) is not None
