"""The checks of QUIT's fine-tuning data: each passes the table the rule draws and fails a
broken copy, saying why."""

import dagster as dg
import polars as pl
import pytest

from assets.eval.quit.finetune import rules
from assets.quit.settings import FinetuneSettings
from checks.eval import finetune as ef

QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2", "q3", "q4"],
        "split": ["train", "train", "train", "test"],
        "question": ["Which metal is Fe?", "Capital of Australia?", "What rusts?", "Capital of France?"],
        "answer": ["Iron", "Canberra", "the iron", "Paris"],
    }
)
PASSAGES = {"q1": ["a1", "a2", "a3"], "q2": ["b1", "b2", "b3"], "q3": ["c1"], "q4": ["d1", "d2"]}
CORPUS = pl.DataFrame(
    [(p, q, f"text of {p}") for q, ps in PASSAGES.items() for p in ps],
    schema=["passage_id", "question_id", "text"],
    orient="row",
)
# q1 also labels q2's b3 as not relevant: it may be neither its positive nor its negative.
LABELS = {
    "q1": {"a1": 2, "a2": 2, "a3": 1, "b3": 0},
    "q2": {"b1": 2, "b2": 1, "b3": 1},
    "q3": {"c1": 0},
    "q4": {"d1": 2, "d2": 1},
}
QRELS = pl.DataFrame(
    [(q, p, label) for q, ls in LABELS.items() for p, label in ls.items()],
    schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int8},
    orient="row",
)
HITS = {"q1": ["a1", "b3", "b1", "b2"], "q2": ["a3", "c1", "a1"]}
SETTINGS = FinetuneSettings()
PAIRS, REJECT_ROWS = rules.training_pairs(
    QUESTIONS, CORPUS, QRELS, HITS, positives=max(SETTINGS.positives), negatives=SETTINGS.negatives, seed=SETTINGS.seed
)
REJECTS = rules.REJECTS.frame(REJECT_ROWS)
SOURCE = {"quit_questions": QUESTIONS, "quit_corpus": CORPUS, "quit_qrels": QRELS}


def fails(result: dg.AssetCheckResult, words: str) -> bool:
    return not result.passed and words in result.metadata["problems"].value


def swap(frame: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    """``frame`` with one cell changed."""
    values = frame[column].to_list()
    values[row] = value
    return frame.with_columns(pl.Series(column, values, dtype=frame.schema[column]))


def row_of(question_id: str, pair: int) -> int:
    return (
        PAIRS.with_row_index().filter((pl.col("question_id") == question_id) & (pl.col("pair") == pair))["index"].item()
    )


def test_the_sound_table_is_the_rule_on_these_frames():
    assert PAIRS.filter(pl.col("question_id") == "q1")["negative_id"].to_list() == ["b1", "b2", "b1"]
    assert [(r["question_id"], r["reason"]) for r in REJECT_ROWS] == [("q3", rules.NO_POSITIVE)]


@pytest.mark.parametrize(
    "broken, words",
    [
        (PAIRS.drop("negative"), "'negative' is missing"),
        (swap(PAIRS, "pair", row_of("q1", 1), 0), "repeated question_id+pair"),
        (swap(PAIRS, "pair", row_of("q1", 2), 5), "not numbered 0..n-1"),
        (swap(PAIRS, "negative_source", 0, "hard"), "negative_source not in"),
        (swap(PAIRS, "negative_rank", 0, None), "BM25 negatives without a rank"),
        (swap(PAIRS, "negative_source", 0, rules.RANDOM), "random negatives with a BM25 rank"),
    ],
)
def test_a_pair_table_has_its_columns_and_numbered_pairs(broken, words):
    assert ef.quit_finetune_data_schema(PAIRS).passed
    assert fails(ef.quit_finetune_data_schema(broken), words)


def reversed_pairs(frame: pl.DataFrame, question_id: str) -> pl.DataFrame:
    """The question's pairs numbered the other way round: its label-1 positive first."""
    n = frame.filter(pl.col("question_id") == question_id).height
    return frame.with_columns(
        pl.when(pl.col("question_id") == question_id)
        .then(n - 1 - pl.col("pair"))
        .otherwise(pl.col("pair"))
        .cast(pl.Int32)
        .alias("pair")
    )


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(PAIRS, "positive_id", row_of("q1", 0), "b1"), "qrels do not label 1 or 2"),
        (swap(PAIRS, "positive_id", row_of("q1", 0), "b3"), "qrels do not label 1 or 2"),
        (swap(PAIRS, "positive_label", row_of("q1", 2), 2), "positive_label is not the qrels' label"),
        (reversed_pairs(PAIRS, "q1"), "a label-2 positive after a label-1 one"),
    ],
)
def test_every_positive_is_relevant_and_label_2_comes_first(broken, words):
    assert ef.quit_finetune_data_positives(PAIRS, quit_qrels=QRELS).passed
    assert fails(ef.quit_finetune_data_positives(broken, quit_qrels=QRELS), words)


def negative(row: int, passage: str, question: str) -> pl.DataFrame:
    return swap(swap(PAIRS, "negative_id", row, passage), "negative_question_id", row, question)


@pytest.mark.parametrize(
    "broken, words",
    [
        (negative(row_of("q1", 0), "a3", "q1"), "a negative of the question itself"),
        (negative(row_of("q1", 0), "b3", "q2"), "a negative in its question's qrels"),
        (negative(row_of("q1", 0), "c1", "q3"), "a negative of a question with the same answer"),
        (negative(row_of("q1", 0), "d1", "q4"), "a negative of a question outside the train split"),
        (negative(row_of("q1", 0), "ghost", "q2"), "a negative not in eval/quit_corpus"),
        (
            swap(PAIRS, "negative_question_id", row_of("q1", 0), "q3"),
            "negative_question_id is not the negative's question",
        ),
    ],
)
def test_every_negative_is_of_another_train_question_and_not_relevant(broken, words):
    assert ef.quit_finetune_data_negatives(PAIRS, **SOURCE).passed
    assert fails(ef.quit_finetune_data_negatives(broken, **SOURCE), words)


def pairs_check(
    frame: pl.DataFrame, rejects: pl.DataFrame = REJECTS, positives: int = max(SETTINGS.positives)
) -> dg.AssetCheckResult:
    return ef.quit_finetune_data_pairs(
        frame, **SOURCE, quit_finetune_rejects=rejects, finetune_settings=FinetuneSettings(positives=[positives])
    )


def test_each_train_question_has_min_positives_and_relevant_pairs_or_a_reject():
    assert pairs_check(PAIRS).passed
    capped = PAIRS.filter(pl.col("pair") < 2)
    assert pairs_check(capped, positives=2).passed
    words = "train questions whose pairs are not min"
    assert fails(pairs_check(capped), words) and fails(pairs_check(PAIRS, positives=2), words)

    # a sweep's table is drawn for its largest count, and judged by it
    def swept(counts: list[int]) -> dg.AssetCheckResult:
        return ef.quit_finetune_data_pairs(
            capped, **SOURCE, quit_finetune_rejects=REJECTS, finetune_settings=FinetuneSettings(positives=counts)
        )

    assert swept([1, 2]).passed and fails(swept([3, 1]), words)
    silently_dropped = PAIRS.filter(pl.col("question_id") != "q2")
    assert fails(pairs_check(silently_dropped), "(e.g. q2)")
    rejected = rules.REJECTS.frame(REJECT_ROWS + [rules.REJECTS.row("q2", "negatives", rules.NO_NEGATIVE, "")])
    assert pairs_check(silently_dropped, rejects=rejected).passed and fails(
        pairs_check(PAIRS, rejects=rejected), "(e.g. q2)"
    )


@pytest.mark.parametrize(
    "column, value, what",
    [("question_id", "q4", "questions"), ("positive_id", "d1", "positives"), ("negative_id", "d2", "negatives")],
)
def test_no_dev_or_test_id_is_trained_on(column, value, what):
    ins = {"quit_questions": QUESTIONS, "quit_corpus": CORPUS}
    assert ef.quit_finetune_data_train_only(PAIRS, **ins).passed
    assert fails(
        ef.quit_finetune_data_train_only(swap(PAIRS, column, 0, value), **ins), f"with {what} not of a train question"
    )


def test_a_random_negative_under_bm25_is_a_warning():
    fallback = swap(swap(PAIRS, "negative_source", 0, rules.RANDOM), "negative_rank", 0, None)
    assert ef.quit_finetune_data_random_fallback(PAIRS, finetune_settings=SETTINGS).passed
    result = ef.quit_finetune_data_random_fallback(fallback, finetune_settings=SETTINGS)
    assert (
        fails(result, "with a random negative under negatives: bm25") and result.severity == dg.AssetCheckSeverity.WARN
    )
    assert ef.quit_finetune_data_random_fallback(
        fallback, finetune_settings=FinetuneSettings(negatives="random")
    ).passed


def test_the_rejects_give_a_known_reason():
    assert ef.quit_finetune_rejects_reasons(REJECTS).passed
    assert not ef.quit_finetune_rejects_reasons(swap(REJECTS, "reason", 0, "bored")).passed
