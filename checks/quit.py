"""Checks on the QUIT assets. Blocking where a bad table must not flow downstream."""

import dagster as dg
import great_expectations.expectations as gxe
import polars as pl

from assets.common.text import contains_phrase, normalize
from assets.partitions import quit_labeler_partitions, quit_model_partitions
from assets.quit.assets import wiring
from assets.quit.release import SPLITS, TABLE_1_SCHEMA
from assets.quit.rules import (
    CANDIDATE_SCHEMA,
    PASSAGES_PER_QUESTION,
    TOP_HINTS,
    UNDETERMINED,
)
from assets.quit.settings import QuitSettings
from assets.quit.sources import MIN_HINTS, REFERENCE_SCHEMA, REJECTS, SOURCE_REASONS
from assets.quit.steps import LEAKAGE_REASONS
from checks.factories import (
    WARN,
    errored,
    llm_accounting_check,
    problems_result,
    rejects_check,
    rows_check,
    suite_check,
    table_check,
    table_problems,
)
from resources.storage import exists

LABELS = (1, 2)


key = wiring.key


def leaks(frame: pl.DataFrame, text_col: str, answers_col: str) -> pl.DataFrame:
    """Rows whose text (a string or a list of strings) names any of the answers."""
    def leaking(row) -> bool:
        texts = row[text_col] if isinstance(row[text_col], list) else [row[text_col]]
        return any(contains_phrase(t, a) for t in texts for a in (row[answers_col] or []))

    mask = [leaking(r) for r in frame.select(text_col, answers_col).iter_rows(named=True)]
    return frame.filter(pl.Series(mask, dtype=pl.Boolean))


@dg.asset_check(asset=key("source_questions"), blocking=True, description="Schema, unique ids, at least 5 usable hints.")
def source_questions_suite(source_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = source_questions.with_columns(pl.col("hints").list.len().alias("hint_count")).drop(
        "hints", "aliases", "hint_convergence", "candidate_answers")
    return suite_check(frame, [
        gxe.ExpectColumnValuesToBeUnique(column="question_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="question"),
        gxe.ExpectColumnValuesToNotBeNull(column="answer"),
        gxe.ExpectColumnValuesToBeInSet(column="source", value_set=["triviahg", "wikihint"]),
        gxe.ExpectColumnValuesToBeBetween(column="hint_count", min_value=MIN_HINTS),
    ], "quit_source_questions")


source_rejects_reasons = rejects_check(key("source_rejects"), SOURCE_REASONS, REJECTS.keys)
leakage_rejects_reasons = rejects_check(key("leakage_rejects"), LEAKAGE_REASONS, REJECTS.keys)


@dg.asset_check(asset=key("screened_questions"), blocking=True, description="No hint names the answer or an alias.")
def screened_no_leakage(screened_questions: pl.DataFrame) -> dg.AssetCheckResult:
    bad = leaks(screened_questions, "hints", "aliases")
    return rows_check(bad.select("question_id", "answer", "hints"), "no hint names the answer or an alias", "question_id")


@dg.asset_check(asset=key("hint_convergence"), blocking=True, description="Convergence in [0, 1] for every hint.")
def convergence_suite(hint_convergence: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(hint_convergence.drop("candidates"), [
        gxe.ExpectColumnValuesToNotBeNull(column="convergence"),
        gxe.ExpectColumnValuesToBeBetween(column="convergence", min_value=0.0, max_value=1.0),
        gxe.ExpectColumnValuesToBeInSet(column="origin", value_set=["source", "computed"]),
    ], "quit_hint_convergence")


@dg.asset_check(asset=key("selected_questions"), blocking=True, description="Exactly 5 hints per question, ranked by convergence.")
def five_hints(selected_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = selected_questions.with_columns(pl.col("hints").list.len().alias("hint_count"))
    unsorted = frame.filter(pl.col("hint_convergence").list.eval(pl.element().fill_nan(-1.0).diff().max()).list.first() > 0)
    bad = pl.concat([frame.filter(pl.col("hint_count") != TOP_HINTS), unsorted]).unique("question_id")
    return rows_check(bad.select("question_id", "hint_count", "hint_convergence"), f"{TOP_HINTS} hints, best convergence first", "question_id")


@dg.asset_check(asset=key("question_metadata"), description="Every question has a type in the taxonomy and a difficulty.")
def metadata_suite(question_metadata: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(question_metadata, [
        gxe.ExpectColumnValuesToBeUnique(column="question_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="question_type"),
        gxe.ExpectColumnValuesToMatchRegex(column="question_type", regex=r"^[A-Z]+:[a-z]+$"),
        gxe.ExpectColumnValuesToBeInSet(column="difficulty", value_set=["easy", "medium", "hard"]),
        gxe.ExpectColumnValuesToBeBetween(column="reference_complexity", min_value=0.0, max_value=1.0),
    ], "quit_question_metadata", severity=WARN)


@dg.asset_check(asset=key("parametric_answers"), partitions_def=quit_model_partitions, description="Model output that did not parse, by item (kept with its raw text).")
def parametric_parse_failures(parametric_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = parametric_answers.filter(pl.col("error").is_not_null())
    return rows_check(bad.select("question_id", "model", "item", "raw", "error"), "closed-book answers parse", "item", WARN)


@dg.asset_check(asset=key("splits"), blocking=True,
                description="train only from answerable, dev/test only from non-answerable questions, undetermined ones in no split.")
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
    counts = passages.group_by("question_id").agg(pl.len().alias("passages"), pl.col("passage_id").n_unique().alias("unique_ids"))
    bad = counts.filter((pl.col("passages") != PASSAGES_PER_QUESTION) | (pl.col("unique_ids") != PASSAGES_PER_QUESTION))
    return rows_check(bad, f"{PASSAGES_PER_QUESTION} passages with distinct ids per question", "question_id")


@dg.asset_check(asset=key("passage_answers"), partitions_def=quit_labeler_partitions, description="Labeler output that did not parse, by passage (kept with its raw text).")
def passage_answer_parse_failures(passage_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = passage_answers.filter(pl.col("error").is_not_null())
    return rows_check(bad.select("passage_id", "model", "raw", "error"), "labeler answers parse", "passage_id", WARN)


@dg.asset_check(asset=key("passage_labels"), blocking=True, description="Labels are 1 or 2 (or none, see label_errors) and every labeler answered every passage.")
def labels_suite(passage_labels: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(passage_labels, [
        gxe.ExpectColumnValuesToBeUnique(column="passage_id"),
        gxe.ExpectColumnValuesToBeInSet(column="label", value_set=[1, 2]),
        gxe.ExpectColumnValuesToNotBeNull(column="labelers"),
        gxe.ExpectColumnDistinctValuesToBeInSet(column="labelers", value_set=[int(passage_labels["labelers"].max() or 0)]),
    ], "quit_passage_labels")


@dg.asset_check(asset=key("passage_labels"), blocking=True,
                description="Passages left without a label by a failed call stay under QuitSettings.max_label_error_rate, "
                            "named; a label is missing exactly where an error is.")
def label_errors(passage_labels: pl.DataFrame, quit_settings: QuitSettings) -> dg.AssetCheckResult:
    """A labeler or judge call that failed after its retries leaves its passage without a
    label, never with a guessed one. Above the configured rate the labels must not flow on;
    rerunning the labeler partitions asks only the failed calls again (they are not cached).
    The table's ``error`` column names every failed call; the metadata names the first."""
    unlabeled = passage_labels.filter(pl.col("label").is_null())
    silent = passage_labels.filter(pl.col("label").is_null() != pl.col("error").is_not_null())
    rate = unlabeled.height / passage_labels.height if passage_labels.height else 0.0
    named = rows_check(unlabeled.select("passage_id", "question_id", "error"), "passages without a label, by failed call", "passage_id")
    return dg.AssetCheckResult(passed=rate <= quit_settings.max_label_error_rate and not silent.height, metadata={
        **named.metadata, "error_rate": round(rate, 4), "max_error_rate": quit_settings.max_label_error_rate,
        "labels_and_errors_disagree": dg.MetadataValue.text(", ".join(silent["passage_id"].head(20))),
    })


@dg.asset_check(asset=key("benchmark_questions"), blocking=True, description="Unique ids, known splits, non-empty answer pools.")
def benchmark_questions_suite(benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    frame = benchmark_questions.with_columns(pl.col("answers").list.len().alias("answer_count")).select(
        "question_id", "split", "answer_count", "question")
    return suite_check(frame, [
        gxe.ExpectColumnValuesToBeUnique(column="question_id"),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "dev", "test"]),
        gxe.ExpectColumnValuesToBeBetween(column="answer_count", min_value=1),
    ], "quit_benchmark_questions")


@dg.asset_check(asset=key("benchmark_qrels"), blocking=True, additional_ins={"benchmark_corpus": dg.AssetIn(key=key("benchmark_corpus"))},
                description="Every qrel points into the corpus and every corpus passage has a qrel.")
def qrels_in_corpus(benchmark_qrels: pl.DataFrame, benchmark_corpus: pl.DataFrame) -> dg.AssetCheckResult:
    dangling = benchmark_qrels.join(benchmark_corpus.select("passage_id"), on="passage_id", how="anti")
    unlabeled = benchmark_corpus.join(benchmark_qrels.select("passage_id"), on="passage_id", how="anti").select(
        pl.col("question_id"), pl.col("passage_id"), pl.lit(None, pl.Int8).alias("label"))
    bad = pl.concat([dangling.select("question_id", "passage_id", pl.col("label").cast(pl.Int8)), unlabeled])
    return rows_check(bad, "qrels and corpus cover the same passages", "passage_id")


@dg.asset_check(asset=key("benchmark_corpus"), blocking=True, additional_ins={"benchmark_questions": dg.AssetIn(key=key("benchmark_questions"))},
                description="No passage contains any valid answer of its question (the inferential invariant).")
def corpus_no_leakage(benchmark_corpus: pl.DataFrame, benchmark_questions: pl.DataFrame) -> dg.AssetCheckResult:
    joined = benchmark_corpus.join(benchmark_questions.select("question_id", "answers"), on="question_id")
    bad = leaks(joined, "text", "answers")
    return rows_check(bad.select("passage_id", "answers", "text"), "no passage names a valid answer", "passage_id")


POOL_SCHEMA = {"question_id": pl.String, "answer": pl.String, "aliases": pl.List(pl.String),
               "generated_correct": pl.List(pl.String), "answer_pool": pl.List(pl.String)}


def pool_problems(pools: pl.DataFrame) -> list[str]:
    """An answer pool per question, holding the gold answer, no answer twice (after
    normalization): the readers' EM is measured against it."""
    problems = table_problems(pools, POOL_SCHEMA, unique=("question_id",), not_null=("question_id", "answer", "answer_pool"))
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


@dg.asset_check(asset=key("answer_pools"), blocking=True,
                description="One pool per question with the gold answer and every generated answer judged correct, none twice.")
def answer_pools_complete(answer_pools: pl.DataFrame) -> dg.AssetCheckResult:
    problems = pool_problems(answer_pools)
    if not problems:
        for row in answer_pools.iter_rows(named=True):
            missing = {normalize(a) for a in row["generated_correct"]} - {normalize(a) for a in row["answer_pool"]}
            if missing:
                problems.append(f"{row['question_id']}: judged correct but not pooled: {sorted(missing)}")
    return problems_result(problems, answer_pools.height)


@dg.asset_check(asset=key("verification_candidates"), blocking=True,
                description="One row per question and distinct candidate, seen at least once; an exact match is judged correct.")
def candidates_distinct(verification_candidates: pl.DataFrame) -> dg.AssetCheckResult:
    """The annotators decide on these rows: a repeated candidate or an exact match shown as
    wrong would be decided twice or against the gold."""
    frame, ids = verification_candidates, ["question_id", "candidate"]
    problems = table_problems(frame, CANDIDATE_SCHEMA, unique=ids, not_null=("question_id", "candidate", "occurrences"))
    if not problems:
        bad = frame.filter((pl.col("occurrences") < 1) | (pl.col("exact_match") & ~pl.col("judged_correct")))
        problems += [f"{r['question_id']}/{r['candidate']}: {r['occurrences']} occurrences, exact match {r['exact_match']}, "
                     f"judged correct {r['judged_correct']}" for r in bad.iter_rows(named=True)]
    return problems_result(problems, frame.height)


@dg.asset_check(asset=key("verified_labels"), blocking=True, additional_ins={"passage_labels": dg.AssetIn(key=key("passage_labels"))},
                description="Labels 1 or 2 for exactly the labeled passages (none only beside an error), every labeler counted on every passage.")
def verified_labels_kept(verified_labels: pl.DataFrame, passage_labels: pl.DataFrame) -> dg.AssetCheckResult:
    columns = {"passage_id": pl.String, "question_id": pl.String, "label": pl.Int8, "labelers": None, "error": pl.String}
    problems = table_problems(verified_labels, columns, unique=("passage_id",), not_null=("passage_id", "question_id", "labelers"))
    if not problems:
        bad = verified_labels.filter(~pl.col("label").is_in(LABELS) | (pl.col("label").is_null() & pl.col("error").is_null()))
        problems += [f"{bad.height} labels not in {list(LABELS)} (e.g. {', '.join(bad['passage_id'].head(5))})"] if bad.height else []
        if verified_labels["labelers"].n_unique() > 1:
            problems.append(f"labeler counts differ across passages: {sorted(verified_labels['labelers'].unique().to_list())}")
        problems += id_mismatch(verified_labels, passage_labels, "passage_id", "passages verified but never labeled",
                                "passages labeled but lost in verification")
    return problems_result(problems, verified_labels.height)


@dg.asset_check(asset=key("verified_pools"), blocking=True, additional_ins={"answer_pools": dg.AssetIn(key=key("answer_pools"))},
                description="One pool per question of the answer pools, holding the gold answer, none twice.")
def verified_pools_complete(verified_pools: pl.DataFrame, answer_pools: pl.DataFrame) -> dg.AssetCheckResult:
    problems = pool_problems(verified_pools)
    if not problems:
        problems += id_mismatch(verified_pools, answer_pools, "question_id", "questions verified but never pooled",
                                "questions pooled but lost in verification")
    return problems_result(problems, verified_pools.height)


verification_rejects_reasons = rejects_check(key("verification_rejects"), LEAKAGE_REASONS, REJECTS.keys)

RELEASE_SCHEMA = {"file": pl.String, "records": pl.Int64, "path": pl.String}


def release_records(questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame) -> dict[str, int]:
    """What each release file must hold: the corpus, each split's questions and its qrels."""
    split_qrels = qrels.join(questions.select("question_id", "split"), on="question_id")
    records = {"corpus.jsonl": corpus.height}
    for split in SPLITS:
        records[f"{split}.json"] = questions.filter(pl.col("split") == split).height
        records[f"qrels.{split}.txt"] = split_qrels.filter(pl.col("split") == split).height
    return records


@dg.asset_check(asset=key("release_files"), additional_ins={name: dg.AssetIn(key=key(name)) for name in
                                                            ("benchmark_questions", "benchmark_corpus", "benchmark_qrels")},
                description="Every release file written, where the manifest says, with the benchmark's record counts.")
def release_files_written(release_files: pl.DataFrame, benchmark_questions: pl.DataFrame, benchmark_corpus: pl.DataFrame,
                          benchmark_qrels: pl.DataFrame) -> dg.AssetCheckResult:
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


@dg.asset_check(asset=key("statistics"),
                description="Table 1: whole counts, shares in [0, 1], no passage containing an answer on word boundaries, labels adding up to the passages.")
def statistics_table_1(statistics: pl.DataFrame) -> dg.AssetCheckResult:
    """Answer containment on whole words is 0 by construction (the inferential invariant the
    corpus check enforces); a non-zero one means the table and the corpus disagree. The
    release's substring containment may be above 0 ("Paris" in "Parisian") and is only
    bounded."""
    problems = table_problems(statistics, TABLE_1_SCHEMA, unique=("metric",), not_null=("metric", "value"))
    if not problems:
        values = dict(statistics.select("metric", "value").iter_rows())
        problems += [f"row {m!r} is missing" for m in (*COUNT_ROWS, *SHARE_ROWS) if m not in values]
        if not problems:
            problems += [f"{m} is {values[m]}, not a count" for m in COUNT_ROWS if values[m] < 0 or not float(values[m]).is_integer()]
            problems += [f"{m} is {values[m]}, outside [0, 1]" for m in SHARE_ROWS if not 0 <= values[m] <= 1]
            if values[WHOLE_WORDS]:
                problems.append(f"{WHOLE_WORDS} is {values[WHOLE_WORDS]}: some passage names a valid answer")
            if values[LABEL_1] + values[LABEL_2] != values[TOTAL_PASSAGES]:
                problems.append(f"{LABEL_1} + {LABEL_2} = {values[LABEL_1] + values[LABEL_2]}, {TOTAL_PASSAGES} = {values[TOTAL_PASSAGES]}")
    return problems_result(problems, statistics.height)


def failed_calls(answers: pl.DataFrame) -> pl.DataFrame:
    """Answers whose own call or judge call failed or did not parse (both kept with the row);
    tables stored before the judge's error was kept have only ``error``."""
    return errored(answers, *(c for c in ("error", "judge_error") if c in answers.columns))


llm_accounting = [
    llm_accounting_check(key("screened_questions")),
    llm_accounting_check(key("hint_convergence")),
    llm_accounting_check(key("question_metadata")),
    llm_accounting_check(key("parametric_answers"), partitions_def=quit_model_partitions, failed_items=failed_calls, item_column="item"),
    llm_accounting_check(key("passage_answers"), partitions_def=quit_labeler_partitions, failed_items=failed_calls, item_column="passage_id"),
    llm_accounting_check(key("verified_labels")),
]


reference_index_schema = table_check(key("reference_index"), REFERENCE_SCHEMA, unique=["id"], not_null=["id", "contents"])


@dg.asset_check(asset=key("reference_index"), blocking=True,
                description="The reference passages have a text and are all in the BM25 index difficulty searches.")
def reference_index_complete(context, reference_index: pl.DataFrame) -> dg.AssetCheckResult:
    empty = reference_index.filter(pl.col("contents").str.strip_chars() == "")
    event = context.instance.get_latest_materialization_event(key("reference_index"))
    where = event.asset_materialization.metadata.get("index") if event and event.asset_materialization else None
    problems = [f"{empty.height} passages without text (e.g. {', '.join(empty['id'].head(5).to_list())})"] if empty.height else []
    if where is not None and not exists(where.value):
        problems.append(f"no index at {where.value}")
    return problems_result(problems, reference_index.height)


quit_checks = [source_questions_suite, reference_index_schema, reference_index_complete, source_rejects_reasons, leakage_rejects_reasons, screened_no_leakage, convergence_suite,
               five_hints, metadata_suite, parametric_parse_failures, splits_rule, passages_per_question,
               passage_answer_parse_failures, labels_suite, label_errors, answer_pools_complete, candidates_distinct,
               verified_labels_kept, verified_pools_complete, verification_rejects_reasons, benchmark_questions_suite,
               qrels_in_corpus, corpus_no_leakage, release_files_written, statistics_table_1, *llm_accounting]
