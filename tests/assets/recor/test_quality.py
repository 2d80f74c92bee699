import polars as pl
import pytest

from assets.recor import steps as quality
from assets.recor.steps import TURN_SCHEMA
from resources.llm import CallStats, ParseError


def conversation():
    rows = [("Why do onions make me cry?", "No previous conversation."),
            ("How does that gas reach the eyes?", "Turn 1 - User: Why do onions make me cry?\nAssistant: A gas forms."),
            ("Does chilling it help?", "Turn 1 ...")]
    return pl.DataFrame([{"domain": "biology", "conversation_id": "c1", "turn_id": i + 1, "aspect_id": f"a{i}", "query": q,
                          "answer": "An answer of enough words.", "gold_doc_ids": ["d1"], "doc_scores": "{}",
                          "conversation_history": h, "target": "", "relevance_signals": [], "irrelevance_signals": [],
                          "facts": []} for i, (q, h) in enumerate(rows)], schema=TURN_SCHEMA)


def test_quality_scores_and_labels_with_the_scripted_judge(scripted_llm):
    corpus = pl.DataFrame({"doc_id": ["d1"], "content": ["Onions release a volatile irritant."]})
    stats = CallStats()
    scores = quality.conversation_scores(conversation(), corpus, scripted_llm, "smollm2", stats)
    # the scripted judge answers 4 (5 for groundedness) at probability 0.8, a word otherwise
    assert scores.row(0, named=True) == {"domain": "biology", "conversation_id": "c1", "turns": 3, "naturalness": 4.0,
                                         "coherence": 4.0, "question_quality": 4.0, "groundedness": 5.0}
    labels = quality.turn_labels(conversation(), scripted_llm, "smollm2", stats)
    assert labels["dependency"].to_list() == ["self_contained", "coreference", "coreference"]
    assert labels["pattern"].to_list() == ["why", "how", "how"]
    table = quality.domain_table(scores, labels)
    row = table.row(0, named=True)
    assert row["#C"] == 1 and row["#T"] == 3 and row["Grd"] == 5.0
    # 1 self-contained + 2 coreference over 6 dependency types
    import math
    h = -(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3))
    assert row["DE"] == pytest.approx(h / math.log(6))


def test_parse_label():
    assert quality.parse_label("Topic shift.", ["continuation", "topic_shift"]) == "topic_shift"
    assert quality.parse_label("what-if, or maybe why", ["why", "what_if"]) == "what_if"
    # a label that starts another is not the longer one's match (what_if is not what)
    assert quality.parse_label("what_if", ["what", "what_if"]) == "what_if"
    assert quality.parse_label("What if", ["what", "what_if"]) == "what_if"
    assert quality.parse_label("what is asked", ["what", "what_if"]) == "what"
    with pytest.raises(ParseError):
        quality.parse_label("no idea", ["why", "how"])
