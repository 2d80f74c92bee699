import dagster as dg
import polars as pl

from checks import quit as qc


def run(check, **inputs) -> dg.AssetCheckResult:
    return check(**inputs)


def test_passages_check_names_questions_with_wrong_counts():
    from assets.quit.rules import passages_frame

    good = passages_frame(pl.DataFrame({"question_id": ["a", "b"], "hints": [[f"{q}{i}." for i in range(5)] for q in "ab"]}))
    assert run(qc.passages_per_question, passages=good).passed
    bad = good.filter(~((pl.col("question_id") == "b") & (pl.col("num_hints") == 5)))
    result = run(qc.passages_per_question, passages=bad)
    assert not result.passed
    assert result.metadata["offending_ids"].value == "b"
    assert result.metadata["offending_rows"].value == 1


def test_passages_check_fails_on_a_repeated_passage_id():
    from assets.quit.rules import passages_frame

    good = passages_frame(pl.DataFrame({"question_id": ["a"], "hints": [[f"a{i}." for i in range(5)]]}))
    # 325 rows still, but two share an id: a passage lost behind a duplicate
    repeated = good.with_columns(pl.when(pl.col("passage_id") == good["passage_id"][1]).then(pl.lit(good["passage_id"][0]))
                                 .otherwise(pl.col("passage_id")).alias("passage_id"))
    assert repeated.height == 325
    result = run(qc.passages_per_question, passages=repeated)
    assert not result.passed and result.metadata["offending_ids"].value == "a"


def test_corpus_leakage_check_finds_the_passage():
    corpus = pl.DataFrame({"passage_id": ["p1", "p2"], "question_id": ["q", "q"],
                           "text": ["A tall peak.", "Climbers love Chomolungma."]})
    questions = pl.DataFrame({"question_id": ["q"], "answers": [["Mount Everest", "Chomolungma"]]})
    result = run(qc.corpus_no_leakage, benchmark_corpus=corpus, benchmark_questions=questions)
    assert not result.passed and result.metadata["offending_ids"].value == "p2"


def test_qrels_must_point_into_the_corpus():
    corpus = pl.DataFrame({"passage_id": ["p1"], "question_id": ["q"]})
    qrels = pl.DataFrame({"question_id": ["q", "q"], "passage_id": ["p1", "ghost"], "label": pl.Series([2, 1], dtype=pl.Int8)})
    result = run(qc.qrels_in_corpus, benchmark_qrels=qrels, benchmark_corpus=corpus)
    assert not result.passed and "ghost" in result.metadata["offending_ids"].value
    ok = run(qc.qrels_in_corpus, benchmark_qrels=qrels.head(1), benchmark_corpus=corpus)
    assert ok.passed


def test_great_expectations_suite_reports_failed_expectations():
    frame = pl.DataFrame({"question_id": ["a", "a"], "split": ["train", "holiday"], "answers": [["x"], []], "question": ["?", "?"]})
    result = run(qc.benchmark_questions_suite, benchmark_questions=frame)
    assert not result.passed
    failures = result.metadata["failures"].value
    assert "expect_column_values_to_be_unique(question_id)" in failures
    assert "holiday" in failures
    assert "answer_count" in failures


def test_labels_suite_passes_good_labels():
    labels = pl.DataFrame({"passage_id": ["p1", "p2"], "question_id": ["q", "q"], "num_hints": [1, 2],
                           "labelers": [3, 3], "label": pl.Series([1, 2], dtype=pl.Int8)})
    assert run(qc.labels_suite, passage_labels=labels).passed
    partial = labels.with_columns(pl.Series("labelers", [3, 2]))
    assert not run(qc.labels_suite, passage_labels=partial).passed
