"""Checks of QUIT's construction steps (``assets.quit.steps`` and the rules they apply): the
leakage screening, hint convergence and selection, question metadata, closed-book answers and
splits, the passages, their labels and answer pools, and the human verification."""

import dagster as dg
import great_expectations.expectations as gxe
import polars as pl

from assets.common.text import normalize
from assets.partitions import quit_labeler_partitions, quit_model_partitions
from assets.quit.rules import CANDIDATE_SCHEMA, PASSAGES_PER_QUESTION, TOP_HINTS, UNDETERMINED
from assets.quit.settings import QuitSettings
from assets.quit.sources import REJECTS
from assets.quit.steps import LEAKAGE_REASONS
from checks.factories import (
    WARN,
    errored,
    llm_accounting_check,
    problems_result,
    rejects_check,
    rows_check,
    suite_check,
    table_problems,
)
from checks.quit.shared import key, leaks

LABELS = (1, 2)

leakage_rejects_reasons = rejects_check(key("leakage_rejects"), LEAKAGE_REASONS, REJECTS.keys)


@dg.asset_check(asset=key("screened_questions"), blocking=True, description="No hint names the answer or an alias.")
def screened_no_leakage(screened_questions: pl.DataFrame) -> dg.AssetCheckResult:
    bad = leaks(screened_questions, "hints", "aliases")
    return rows_check(
        bad.select("question_id", "answer", "hints"), "no hint names the answer or an alias", "question_id"
    )


@dg.asset_check(asset=key("hint_convergence"), blocking=True, description="Convergence in [0, 1] for every hint.")
def convergence_suite(hint_convergence: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(
        hint_convergence.drop("candidates"),
        [
            gxe.ExpectColumnValuesToNotBeNull(column="convergence"),
            gxe.ExpectColumnValuesToBeBetween(column="convergence", min_value=0.0, max_value=1.0),
            gxe.ExpectColumnValuesToBeInSet(column="origin", value_set=["source", "computed"]),
        ],
        "quit_hint_convergence",
    )


@dg.asset_check(
    asset=key("selected_questions"), blocking=True, description="Exactly 5 hints per question, ranked by convergence."
)
def five_hints(selected_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = selected_questions.with_columns(pl.col("hints").list.len().alias("hint_count"))
    unsorted = frame.filter(
        pl.col("hint_convergence").list.eval(pl.element().fill_nan(-1.0).diff().max()).list.first() > 0
    )
    bad = pl.concat([frame.filter(pl.col("hint_count") != TOP_HINTS), unsorted]).unique("question_id")
    return rows_check(
        bad.select("question_id", "hint_count", "hint_convergence"),
        f"{TOP_HINTS} hints, best convergence first",
        "question_id",
    )


@dg.asset_check(
    asset=key("question_metadata"), description="Every question has a type in the taxonomy and a difficulty."
)
def metadata_suite(question_metadata: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(
        question_metadata,
        [
            gxe.ExpectColumnValuesToBeUnique(column="question_id"),
            gxe.ExpectColumnValuesToNotBeNull(column="question_type"),
            gxe.ExpectColumnValuesToMatchRegex(column="question_type", regex=r"^[A-Z]+:[a-z]+$"),
            gxe.ExpectColumnValuesToBeInSet(column="difficulty", value_set=["easy", "medium", "hard"]),
            gxe.ExpectColumnValuesToBeBetween(column="reference_complexity", min_value=0.0, max_value=1.0),
        ],
        "quit_question_metadata",
        severity=WARN,
    )


@dg.asset_check(
    asset=key("parametric_answers"),
    partitions_def=quit_model_partitions,
    description="Model output that did not parse, by item (kept with its raw text).",
)
def parametric_parse_failures(parametric_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = parametric_answers.filter(pl.col("error").is_not_null())
    return rows_check(
        bad.select("question_id", "model", "item", "raw", "error"), "closed-book answers parse", "item", WARN
    )


@dg.asset_check(
    asset=key("splits"),
    blocking=True,
    description="train only from answerable, dev/test only from non-answerable questions, undetermined ones in no split.",
)
def splits_rule(splits: pl.DataFrame) -> dg.AssetCheckResult:
    answerable = pl.col("parametric_answerable")
    bad = splits.filter(
        ((pl.col("split") == "train") & answerable.ne_missing(True))
        | (pl.col("split").is_in(["dev", "test"]) & answerable.ne_missing(False))
        | ((pl.col("split") == UNDETERMINED) != answerable.is_null())
    )
    return rows_check(bad, "split follows parametric answerability", "question_id")


@dg.asset_check(asset=key("passages"), blocking=True, description="325 passages per question, unique ids.")
def passages_per_question(passages: pl.DataFrame) -> dg.AssetCheckResult:
    counts = passages.group_by("question_id").agg(
        pl.len().alias("passages"), pl.col("passage_id").n_unique().alias("unique_ids")
    )
    bad = counts.filter((pl.col("passages") != PASSAGES_PER_QUESTION) | (pl.col("unique_ids") != PASSAGES_PER_QUESTION))
    return rows_check(bad, f"{PASSAGES_PER_QUESTION} passages with distinct ids per question", "question_id")


@dg.asset_check(
    asset=key("passage_answers"),
    partitions_def=quit_labeler_partitions,
    description="Labeler output that did not parse, by passage (kept with its raw text).",
)
def passage_answer_parse_failures(passage_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = passage_answers.filter(pl.col("error").is_not_null())
    return rows_check(bad.select("passage_id", "model", "raw", "error"), "labeler answers parse", "passage_id", WARN)


@dg.asset_check(
    asset=key("passage_labels"),
    blocking=True,
    description="Labels are 1 or 2 (or none, see label_errors) and every labeler answered every passage.",
)
def labels_suite(passage_labels: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(
        passage_labels,
        [
            gxe.ExpectColumnValuesToBeUnique(column="passage_id"),
            gxe.ExpectColumnValuesToBeInSet(column="label", value_set=[1, 2]),
            gxe.ExpectColumnValuesToNotBeNull(column="labelers"),
            gxe.ExpectColumnDistinctValuesToBeInSet(
                column="labelers", value_set=[int(passage_labels["labelers"].max() or 0)]
            ),
        ],
        "quit_passage_labels",
    )


@dg.asset_check(
    asset=key("passage_labels"),
    blocking=True,
    description="Passages left without a label by a failed call stay under QuitSettings.max_label_error_rate, "
    "named; a label is missing exactly where an error is.",
)
def label_errors(passage_labels: pl.DataFrame, quit_settings: QuitSettings) -> dg.AssetCheckResult:
    """A labeler or judge call that failed after its retries leaves its passage without a
    label, never with a guessed one. Above the configured rate the labels must not flow on;
    rerunning the labeler partitions asks only the failed calls again (they are not cached).
    The table's ``error`` column names every failed call; the metadata names the first."""
    unlabeled = passage_labels.filter(pl.col("label").is_null())
    silent = passage_labels.filter(pl.col("label").is_null() != pl.col("error").is_not_null())
    rate = unlabeled.height / passage_labels.height if passage_labels.height else 0.0
    named = rows_check(
        unlabeled.select("passage_id", "question_id", "error"), "passages without a label, by failed call", "passage_id"
    )
    return dg.AssetCheckResult(
        passed=rate <= quit_settings.max_label_error_rate and not silent.height,
        metadata={
            **named.metadata,
            "error_rate": round(rate, 4),
            "max_error_rate": quit_settings.max_label_error_rate,
            "labels_and_errors_disagree": dg.MetadataValue.text(", ".join(silent["passage_id"].head(20))),
        },
    )


POOL_SCHEMA = {
    "question_id": pl.String,
    "answer": pl.String,
    "aliases": pl.List(pl.String),
    "generated_correct": pl.List(pl.String),
    "answer_pool": pl.List(pl.String),
}


def pool_problems(pools: pl.DataFrame) -> list[str]:
    """An answer pool per question, holding the gold answer, no answer twice (after
    normalization): the readers' EM is measured against it."""
    problems = table_problems(
        pools, POOL_SCHEMA, unique=("question_id",), not_null=("question_id", "answer", "answer_pool")
    )
    if problems:
        return problems
    for row in pools.iter_rows(named=True):
        pool = [normalize(a) for a in row["answer_pool"]]
        if normalize(row["answer"]) not in pool:
            problems.append(f"{row['question_id']}: the gold answer {row['answer']!r} is not in the pool")
        if len(set(pool)) < len(pool):
            problems.append(f"{row['question_id']}: an answer is in the pool twice")
    return problems


def id_mismatch(checked: pl.DataFrame, reference: pl.DataFrame, column: str, extra: str, lost: str) -> list[str]:
    """Ids of ``checked`` that ``reference`` lacks (``extra``), and the other way (``lost``)."""
    problems = []
    for what, a, b in ((extra, checked, reference), (lost, reference, checked)):
        bad = a.select(column).join(b.select(column), on=column, how="anti")
        problems += [f"{bad.height} {what} (e.g. {', '.join(bad[column].head(5))})"] if bad.height else []
    return problems


@dg.asset_check(
    asset=key("answer_pools"),
    blocking=True,
    description="One pool per question with the gold answer and every generated answer judged correct, none twice.",
)
def answer_pools_complete(answer_pools: pl.DataFrame) -> dg.AssetCheckResult:
    problems = pool_problems(answer_pools)
    if not problems:
        for row in answer_pools.iter_rows(named=True):
            missing = {normalize(a) for a in row["generated_correct"]} - {normalize(a) for a in row["answer_pool"]}
            if missing:
                problems.append(f"{row['question_id']}: judged correct but not pooled: {sorted(missing)}")
    return problems_result(problems, answer_pools.height)


@dg.asset_check(
    asset=key("verification_candidates"),
    blocking=True,
    description="One row per question and distinct candidate, seen at least once; an exact match is judged correct.",
)
def candidates_distinct(verification_candidates: pl.DataFrame) -> dg.AssetCheckResult:
    """The annotators decide on these rows: a repeated candidate or an exact match shown as
    wrong would be decided twice or against the gold."""
    frame, ids = verification_candidates, ["question_id", "candidate"]
    problems = table_problems(frame, CANDIDATE_SCHEMA, unique=ids, not_null=("question_id", "candidate", "occurrences"))
    if not problems:
        bad = frame.filter((pl.col("occurrences") < 1) | (pl.col("exact_match") & ~pl.col("judged_correct")))
        problems += [
            f"{r['question_id']}/{r['candidate']}: {r['occurrences']} occurrences, exact match {r['exact_match']}, "
            f"judged correct {r['judged_correct']}"
            for r in bad.iter_rows(named=True)
        ]
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=key("verified_labels"),
    blocking=True,
    additional_ins={"passage_labels": dg.AssetIn(key=key("passage_labels"))},
    description="Labels 1 or 2 for exactly the labeled passages (none only beside an error), every labeler counted on every passage.",
)
def verified_labels_kept(verified_labels: pl.DataFrame, passage_labels: pl.DataFrame) -> dg.AssetCheckResult:
    columns = {
        "passage_id": pl.String,
        "question_id": pl.String,
        "label": pl.Int8,
        "labelers": None,
        "error": pl.String,
    }
    problems = table_problems(
        verified_labels, columns, unique=("passage_id",), not_null=("passage_id", "question_id", "labelers")
    )
    if not problems:
        bad = verified_labels.filter(
            ~pl.col("label").is_in(LABELS) | (pl.col("label").is_null() & pl.col("error").is_null())
        )
        problems += (
            [f"{bad.height} labels not in {list(LABELS)} (e.g. {', '.join(bad['passage_id'].head(5))})"]
            if bad.height
            else []
        )
        if verified_labels["labelers"].n_unique() > 1:
            problems.append(
                f"labeler counts differ across passages: {sorted(verified_labels['labelers'].unique().to_list())}"
            )
        problems += id_mismatch(
            verified_labels,
            passage_labels,
            "passage_id",
            "passages verified but never labeled",
            "passages labeled but lost in verification",
        )
    return problems_result(problems, verified_labels.height)


@dg.asset_check(
    asset=key("verified_pools"),
    blocking=True,
    additional_ins={"answer_pools": dg.AssetIn(key=key("answer_pools"))},
    description="One pool per question of the answer pools, holding the gold answer, none twice.",
)
def verified_pools_complete(verified_pools: pl.DataFrame, answer_pools: pl.DataFrame) -> dg.AssetCheckResult:
    problems = pool_problems(verified_pools)
    if not problems:
        problems += id_mismatch(
            verified_pools,
            answer_pools,
            "question_id",
            "questions verified but never pooled",
            "questions pooled but lost in verification",
        )
    return problems_result(problems, verified_pools.height)


verification_rejects_reasons = rejects_check(key("verification_rejects"), LEAKAGE_REASONS, REJECTS.keys)


def failed_calls(answers: pl.DataFrame) -> pl.DataFrame:
    """Answers whose own call or judge call failed or did not parse (both kept with the row);
    tables stored before the judge's error was kept have only ``error``."""
    return errored(answers, *(c for c in ("error", "judge_error") if c in answers.columns))


llm_accounting = [
    llm_accounting_check(key("screened_questions")),
    llm_accounting_check(key("hint_convergence")),
    llm_accounting_check(key("question_metadata")),
    llm_accounting_check(
        key("parametric_answers"), partitions_def=quit_model_partitions, failed_items=failed_calls, item_column="item"
    ),
    llm_accounting_check(
        key("passage_answers"),
        partitions_def=quit_labeler_partitions,
        failed_items=failed_calls,
        item_column="passage_id",
    ),
    llm_accounting_check(key("verified_labels")),
]


step_checks = [
    leakage_rejects_reasons,
    screened_no_leakage,
    convergence_suite,
    five_hints,
    metadata_suite,
    parametric_parse_failures,
    splits_rule,
    passages_per_question,
    passage_answer_parse_failures,
    labels_suite,
    label_errors,
    answer_pools_complete,
    candidates_distinct,
    verified_labels_kept,
    verified_pools_complete,
    verification_rejects_reasons,
    *llm_accounting,
]
