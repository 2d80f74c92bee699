"""Checks on the QUIT assets. Blocking where a bad table must not flow downstream."""

import dagster as dg
import great_expectations.expectations as gxe
import polars as pl

from assets.common.text import contains_phrase
from assets.quit.rules import PASSAGES_PER_QUESTION, TOP_HINTS
from assets.quit.sources import MIN_HINTS
from checks.factories import rows_check, suite_check

WARN = dg.AssetCheckSeverity.WARN


def key(name: str) -> dg.AssetKey:
    return dg.AssetKey(["quit", name])


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


@dg.asset_check(asset=key("source_rejects"), description="Every rejected record carries a known reason and a detail.")
def source_rejects_suite(source_rejects: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(source_rejects.drop("record"), [
        gxe.ExpectColumnValuesToBeInSet(column="reason", value_set=["malformed", "duplicate_id", "duplicate_question", "too_few_hints"]),
        gxe.ExpectColumnValuesToNotBeNull(column="detail"),
    ], "quit_source_rejects")


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


@dg.asset_check(asset=key("parametric_answers"), description="Model output that did not parse, by item (kept with its raw text).")
def parametric_parse_failures(parametric_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = parametric_answers.filter(pl.col("error").is_not_null())
    return rows_check(bad.select("question_id", "model", "item", "raw", "error"), "closed-book answers parse", "item", WARN)


@dg.asset_check(asset=key("splits"), blocking=True, description="train only from answerable, dev/test only from non-answerable questions.")
def splits_rule(splits: pl.DataFrame) -> dg.AssetCheckResult:
    bad = splits.filter(
        ((pl.col("split") == "train") & ~pl.col("parametric_answerable"))
        | (pl.col("split").is_in(["dev", "test"]) & pl.col("parametric_answerable"))
    )
    return rows_check(bad, "split follows parametric answerability", "question_id")


@dg.asset_check(asset=key("passages"), blocking=True, description="325 passages per question, unique ids.")
def passages_per_question(passages: pl.DataFrame) -> dg.AssetCheckResult:
    counts = passages.group_by("question_id").agg(pl.len().alias("passages"), pl.col("passage_id").n_unique().alias("unique_ids"))
    bad = counts.filter((pl.col("passages") != PASSAGES_PER_QUESTION) | (pl.col("unique_ids") != PASSAGES_PER_QUESTION))
    return rows_check(bad, f"{PASSAGES_PER_QUESTION} passages with distinct ids per question", "question_id")


@dg.asset_check(asset=key("passage_answers"), description="Labeler output that did not parse, by passage (kept with its raw text).")
def passage_answer_parse_failures(passage_answers: pl.DataFrame) -> dg.AssetCheckResult:
    bad = passage_answers.filter(pl.col("error").is_not_null())
    return rows_check(bad.select("passage_id", "model", "raw", "error"), "labeler answers parse", "passage_id", WARN)


@dg.asset_check(asset=key("passage_labels"), blocking=True, description="Labels are 1 or 2 and every labeler answered every passage.")
def labels_suite(passage_labels: pl.DataFrame) -> dg.AssetCheckResult:
    return suite_check(passage_labels, [
        gxe.ExpectColumnValuesToBeUnique(column="passage_id"),
        gxe.ExpectColumnValuesToBeInSet(column="label", value_set=[1, 2]),
        gxe.ExpectColumnValuesToNotBeNull(column="labelers"),
        gxe.ExpectColumnDistinctValuesToBeInSet(column="labelers", value_set=[int(passage_labels["labelers"].max() or 0)]),
    ], "quit_passage_labels")


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


quit_checks = [source_questions_suite, source_rejects_suite, screened_no_leakage, convergence_suite, five_hints,
               metadata_suite, parametric_parse_failures, splits_rule, passages_per_question,
               passage_answer_parse_failures, labels_suite, benchmark_questions_suite, qrels_in_corpus, corpus_no_leakage]
