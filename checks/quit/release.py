"""Checks of QUIT's release (``assets.quit.release`` and Table 1): the benchmark's questions,
corpus and qrels, the release files and the statistics."""

import dagster as dg
import great_expectations.expectations as gxe
import polars as pl

from assets.quit.release import SEMANTIC_OVERLAP, SPLITS, TABLE_1_SCHEMA
from checks.factories import export_check, problems_result, rows_check, suite_check, table_problems
from checks.quit.shared import key, leaks
from resources.storage import exists


@dg.asset_check(
    asset=key("benchmark_questions"), blocking=True, description="Unique ids, known splits, non-empty answer pools."
)
def benchmark_questions_suite(benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = benchmark_questions.with_columns(pl.col("answers").list.len().alias("answer_count")).select(
        "question_id", "split", "answer_count", "question"
    )
    return suite_check(
        frame,
        [
            gxe.ExpectColumnValuesToBeUnique(column="question_id"),
            gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "dev", "test"]),
            gxe.ExpectColumnValuesToBeBetween(column="answer_count", min_value=1),
        ],
        "quit_benchmark_questions",
    )


@dg.asset_check(
    asset=key("benchmark_qrels"),
    blocking=True,
    additional_ins={"benchmark_corpus": dg.AssetIn(key=key("benchmark_corpus"))},
    description="Every qrel points into the corpus and every corpus passage has a qrel.",
)
def qrels_in_corpus(benchmark_qrels: pl.DataFrame, benchmark_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    dangling = benchmark_qrels.join(benchmark_corpus.select("passage_id"), on="passage_id", how="anti")
    unlabeled = benchmark_corpus.join(benchmark_qrels.select("passage_id"), on="passage_id", how="anti").select(
        pl.col("question_id"), pl.col("passage_id"), pl.lit(None, pl.Int8).alias("label")
    )
    bad = pl.concat([dangling.select("question_id", "passage_id", pl.col("label").cast(pl.Int8)), unlabeled])
    return rows_check(bad, "qrels and corpus cover the same passages", "passage_id")


@dg.asset_check(
    asset=key("benchmark_corpus"),
    blocking=True,
    additional_ins={"benchmark_questions": dg.AssetIn(key=key("benchmark_questions"))},
    description="No passage contains any valid answer of its question (the inferential invariant).",
)
def corpus_no_leakage(benchmark_corpus: pl.DataFrame, benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    joined = benchmark_corpus.join(benchmark_questions.select("question_id", "answers"), on="question_id")
    bad = leaks(joined, "text", "answers")
    return rows_check(bad.select("passage_id", "answers", "text"), "no passage names a valid answer", "passage_id")


RELEASE_SCHEMA = {"file": pl.String, "records": pl.Int64, "path": pl.String}


def release_records(questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, int]:
    """What each release file must hold: the corpus, each split's questions and its qrels."""
    split_qrels = qrels.join(questions.select("question_id", "split"), on="question_id")
    records = {"corpus.jsonl": corpus.height}
    for split in SPLITS:
        records[f"{split}.json"] = questions.filter(pl.col("split") == split).height
        records[f"qrels.{split}.txt"] = split_qrels.filter(pl.col("split") == split).height
    return records


@dg.asset_check(
    asset=key("release_files"),
    additional_ins={
        name: dg.AssetIn(key=key(name)) for name in ("benchmark_questions", "benchmark_corpus", "benchmark_qrels")
    },
    description="Every release file written, where the manifest says, with the benchmark's record counts.",
)
def release_files_written(
    release_files: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    benchmark_corpus: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
) -> dg.AssetCheckResult:
    problems = table_problems(release_files, RELEASE_SCHEMA, unique=("file",), not_null=tuple(RELEASE_SCHEMA))
    if not problems:
        written = {r["file"]: r for r in release_files.iter_rows(named=True)}
        for name, records in release_records(benchmark_questions, benchmark_corpus, benchmark_qrels).items():
            row = written.get(name)
            if row is None:
                problems.append(f"{name} is not in the manifest")
            elif row["records"] != records:
                problems.append(f"{name}: {row['records']} records, the benchmark has {records}")
            elif not exists(row["path"]):
                problems.append(f"{name}: nothing at {row['path']}")
    return problems_result(problems, release_files.height)


# Table 1's rows (release.table1) that the checks below read.
TOTAL_PASSAGES, LABEL_2, LABEL_1 = "Total Passages", "Label-2 Passages", "Label-1 Passages"
COUNT_ROWS = ("Total Questions", TOTAL_PASSAGES, LABEL_2, LABEL_1)
ANSWER_CONTAINMENT, WHOLE_WORDS = "Answer Containment", "Answer Containment (whole words)"
SHARE_ROWS = ("Query-Passage Lexical Overlap", ANSWER_CONTAINMENT, WHOLE_WORDS)


@dg.asset_check(
    asset=key("statistics"),
    description=(
        "Table 1: whole counts, shares in [0, 1], a mean cosine in [-1, 1] inside its interval (where "
        "sampled), no passage containing an answer on word boundaries, labels adding up to the passages."
    ),
)
def statistics_table_1(statistics: pl.DataFrame) -> dg.AssetCheckResult:
    """Answer containment on whole words is 0 by construction (the inferential invariant the
    corpus check enforces); a non-zero one means the table and the corpus disagree. The
    release's substring containment may be above 0 ("Paris" in "Parisian") and is only
    bounded. A row with an interval (the sampled semantic overlap) lies inside it."""
    problems = table_problems(statistics, TABLE_1_SCHEMA, unique=("metric",), not_null=("metric", "value"))
    if not problems:
        values = dict(statistics.select("metric", "value").iter_rows())
        problems += [f"row {m!r} is missing" for m in (*COUNT_ROWS, *SHARE_ROWS, SEMANTIC_OVERLAP) if m not in values]
        problems += outside_interval(statistics)
        if not problems:
            problems += [
                f"{m} is {values[m]}, not a count"
                for m in COUNT_ROWS
                if values[m] < 0 or not float(values[m]).is_integer()
            ]
            problems += [f"{m} is {values[m]}, outside [0, 1]" for m in SHARE_ROWS if not 0 <= values[m] <= 1]
            if not -1 <= values[SEMANTIC_OVERLAP] <= 1:
                problems.append(f"{SEMANTIC_OVERLAP} is {values[SEMANTIC_OVERLAP]}, not a cosine in [-1, 1]")
            if values[WHOLE_WORDS]:
                problems.append(f"{WHOLE_WORDS} is {values[WHOLE_WORDS]}: some passage names a valid answer")
            if values[LABEL_1] + values[LABEL_2] != values[TOTAL_PASSAGES]:
                problems.append(
                    f"{LABEL_1} + {LABEL_2} = {values[LABEL_1] + values[LABEL_2]}, {TOTAL_PASSAGES} = {values[TOTAL_PASSAGES]}"
                )
    return problems_result(problems, statistics.height)


def outside_interval(statistics: pl.DataFrame) -> list[str]:
    """The rows whose value is outside their interval (``ci_low``, ``ci_high``, where set)."""
    bounded = statistics.filter(pl.col("ci_low").is_not_null() | pl.col("ci_high").is_not_null())
    return [
        f"{m} is {v}, outside its interval [{low}, {high}]"
        for m, v, low, high in bounded.select("metric", "value", "ci_low", "ci_high").iter_rows()
        if low is None or high is None or not low <= v <= high
    ]


release_checks = [
    benchmark_questions_suite,
    qrels_in_corpus,
    corpus_no_leakage,
    release_files_written,
    statistics_table_1,
    export_check(key("export"), beir=True),
]
