import dagster as dg
import polars as pl
import pytest

from assets.recor import rules
from assets.recor import steps as quality
from assets.recor.steps import TURN_SCHEMA
from resources.llm import CallStats, ParseError


def conversation():
    rows = [
        ("Why do onions make me cry?", "No previous conversation."),
        ("How does that gas reach the eyes?", "Turn 1 - User: Why do onions make me cry?\nAssistant: A gas forms."),
        ("Does chilling it help?", "Turn 1 ..."),
    ]
    return pl.DataFrame(
        [
            {
                "domain": "biology",
                "conversation_id": "c1",
                "turn_id": i + 1,
                "aspect_id": f"a{i}",
                "query": q,
                "answer": "An answer of enough words.",
                "gold_doc_ids": ["d1"],
                "doc_scores": "{}",
                "conversation_history": h,
                "target": "",
                "relevance_signals": [],
                "irrelevance_signals": [],
                "facts": [],
            }
            for i, (q, h) in enumerate(rows)
        ],
        schema=TURN_SCHEMA,
    )


def test_quality_scores_and_labels_with_the_scripted_judge(scripted_llm):
    corpus = pl.DataFrame({"doc_id": ["d1"], "content": ["Onions release a volatile irritant."]})
    stats = CallStats()
    scores = quality.conversation_scores(conversation(), corpus, scripted_llm.named("smollm2"), stats)
    # the scripted judge answers 4 (5 for groundedness) at probability 0.8, a word otherwise
    assert scores.row(0, named=True) == {
        "domain": "biology",
        "conversation_id": "c1",
        "turns": 3,
        "naturalness": 4.0,
        "coherence": 4.0,
        "question_quality": 4.0,
        "groundedness": 5.0,
    }
    labels = quality.turn_labels(conversation(), scripted_llm.named("smollm2"), stats)
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
    assert rules.parse_label("Topic shift.", ["continuation", "topic_shift"]) == "topic_shift"
    assert rules.parse_label("what-if, or maybe why", ["why", "what_if"]) == "what_if"
    # a label that starts another is not the longer one's match (what_if is not what)
    assert rules.parse_label("what_if", ["what", "what_if"]) == "what_if"
    assert rules.parse_label("What if", ["what", "what_if"]) == "what_if"
    assert rules.parse_label("what is asked", ["what", "what_if"]) == "what"
    with pytest.raises(ParseError):
        rules.parse_label("no idea", ["why", "how"])


# --- the quality report on tiny tables (issue 31) ------------------------------------------------

LABEL_COLUMNS = {
    "domain": pl.String,
    "conversation_id": pl.String,
    "turn_id": pl.Int32,
    "dependency": pl.String,
    "pattern": pl.String,
}


def labels(*rows) -> pl.DataFrame:
    """Turn labels of law's conversation c1: one (dependency, pattern) pair per turn."""
    return pl.DataFrame(
        [
            {"domain": "law", "conversation_id": "c1", "turn_id": i, "dependency": d, "pattern": p}
            for i, (d, p) in enumerate(rows, start=1)
        ],
        schema=LABEL_COLUMNS,
    )


def scores(turns: int = 3) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "domain": "law",
                "conversation_id": "c1",
                "turns": turns,
                "naturalness": 4.0,
                "coherence": 3.0,
                "question_quality": 4.0,
                "groundedness": 5.0,
            }
        ],
        schema={
            "domain": pl.String,
            "conversation_id": pl.String,
            "turns": pl.Int64,
            **{d: pl.Float64 for d in quality.DIMENSIONS},
        },
    )


def report(turn_labels: pl.DataFrame, quality_scores: pl.DataFrame | None = None, **settings) -> dict:
    from assets.recor.assets import quality_report
    from assets.recor.settings import RecorSettings

    out = quality_report(
        dg.build_asset_context(),
        quality_scores=scores() if quality_scores is None else quality_scores,
        turn_labels=turn_labels,
        recor_settings=RecorSettings(**settings),
    )
    return {"table": out.value, **{k: getattr(v, "value", v) for k, v in out.metadata.items()}}


def test_unlabeled_turns_count_each_turn_once():
    # turn 1 has neither label, turn 2 no pattern, turn 3 both
    mixed = labels((None, None), ("coreference", None), ("ellipsis", "how"))
    assert rules.unlabeled_turns(mixed) == {
        "turns_without_dependency": 1,
        "turns_without_pattern": 2,
        "turns_missing_a_label": 2,
    }
    # the demo domain: 3 turns, no label at all, was reported as 6 unlabeled turns
    meta = report(labels((None, None), (None, None), (None, None)))
    assert (meta["turns_missing_a_label"], meta["turns_without_dependency"], meta["turns_without_pattern"]) == (3, 3, 3)


def test_entropies_are_na_without_a_labelled_turn_and_0_for_one_class():
    import math

    assert rules.normalized_entropy({}, 6) is None
    assert rules.normalized_entropy({"why": 0}, 9) is None
    # no dependency type named; every pattern "how": one class, a real 0
    row = quality.domain_table(scores(), labels((None, "how"), (None, "how"), (None, "how"))).row(0, named=True)
    assert row["DE"] is None and row["QE"] == 0.0
    meta = report(labels((None, "how"), (None, "how"), (None, "how")))
    assert meta["dependency_entropy"] is None and meta["pattern_entropy"] == 0.0
    assert meta["why_na"] == (
        "law: DE n/a, no turn has a dependency type (3 turns, the judge's replies named none); "
        "dependency_entropy n/a, no turn has a dependency type (3 turns, the judge's replies named none)"
    )
    # shown as n/a in Table 31 (inline), with 2 of 6 dependency types equally often beside it
    assert [r.data for r in meta["table_31"].records] == [
        {"domain": "law", "#C": 1, "#T": 3, "Nat": "4", "Coh": "3", "QQ": "4", "Grd": "5", "DE": "n/a", "QE": "0"}
    ]
    assert (
        "n/a where no turn has one (why_na)" in {c.name: c.description for c in meta["table_31"].schema.columns}["DE"]
    )
    two = report(labels(("ellipsis", "how"), ("coreference", "how"), ("ellipsis", None), ("coreference", "why")))
    assert two["dependency_entropy"] == pytest.approx(math.log(2) / math.log(6))
    assert two["why_na"] == "none"


def test_tables_29_and_30_say_why_they_are_empty():
    meta = report(labels((None, None), (None, "why"), (None, None)))
    assert meta["table_29_dependency"].records == [] and [r.data for r in meta["table_30_pattern"].records] == [
        {"question pattern": "why", "turns": 1}
    ]
    assert (
        meta["why_empty"]
        == "table_29_dependency: no turn labelled: the judge's replies named no dependency type (3 of 3 turns unparsable)"
    )
    empty = report(labels(), scores().clear())
    assert empty["table_30_pattern"].records == [] and empty["why_empty"] == (
        "table_29_dependency: no turn labelled: no domain has a conversation in the benchmark; "
        "table_30_pattern: no turn labelled: no domain has a conversation in the benchmark"
    )
    assert empty["dependency_entropy"] is None and empty["turns_missing_a_label"] == 0


def test_the_report_states_its_slice():
    meta = report(labels(("ellipsis", "how"), ("coreference", "how"), ("ellipsis", None)), max_questions=1)
    # invoked directly there is no run, so no profile tag to state
    assert meta["slice"] == (
        "1 domain (law), 1 conversation, 3 turns, 1 source question per domain (recor_settings of this run); "
        "profile not stated: the run has no benchfoundry/profile tag (launched outside the profile jobs "
        "and make run)"
    )
    two = pl.concat([scores(), scores(4).with_columns(domain=pl.lit("biology"), conversation_id=pl.lit("c2"))])
    assert rules.quality_slice(quality.domain_table(two, labels(("ellipsis", "how"))), "paper", None) == (
        "2 domains (biology, law), 2 conversations, 7 turns, every source question per domain (recor_settings of this run); "
        "profile paper (the run's benchfoundry/profile tag)"
    )
