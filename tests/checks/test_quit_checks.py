import dagster as dg
import polars as pl
import pytest

from assets.quit.rules import CANDIDATE_SCHEMA
from assets.quit.sources import REJECTS
from checks.quit import quit_checks
from checks.quit import release as qrelease
from checks.quit import sources as qsources
from checks.quit import steps as qsteps


def run(check, **inputs) -> dg.AssetCheckResult:
    return check(**inputs)


def test_passages_check_names_questions_with_wrong_counts():
    from assets.quit.rules import passages_frame

    good = passages_frame(
        pl.DataFrame({"question_id": ["a", "b"], "hints": [[f"{q}{i}." for i in range(5)] for q in "ab"]})
    )
    assert run(qsteps.passages_per_question, passages=good).passed
    bad = good.filter(~((pl.col("question_id") == "b") & (pl.col("num_hints") == 5)))
    result = run(qsteps.passages_per_question, passages=bad)
    assert not result.passed
    assert result.metadata["offending_ids"].value == "b"
    assert result.metadata["offending_rows"].value == 1


def test_passages_check_fails_on_a_repeated_passage_id():
    from assets.quit.rules import passages_frame

    good = passages_frame(pl.DataFrame({"question_id": ["a"], "hints": [[f"a{i}." for i in range(5)]]}))
    # 325 rows still, but two share an id: a passage lost behind a duplicate
    repeated = good.with_columns(
        pl.when(pl.col("passage_id") == good["passage_id"][1])
        .then(pl.lit(good["passage_id"][0]))
        .otherwise(pl.col("passage_id"))
        .alias("passage_id")
    )
    assert repeated.height == 325
    result = run(qsteps.passages_per_question, passages=repeated)
    assert not result.passed and result.metadata["offending_ids"].value == "a"


def test_corpus_leakage_check_finds_the_passage():
    corpus = pl.DataFrame(
        {"passage_id": ["p1", "p2"], "question_id": ["q", "q"], "text": ["A tall peak.", "Climbers love Chomolungma."]}
    )
    questions = pl.DataFrame({"question_id": ["q"], "answers": [["Mount Everest", "Chomolungma"]]})
    result = run(qrelease.corpus_no_leakage, benchmark_corpus=corpus, benchmark_questions=questions)
    assert not result.passed and result.metadata["offending_ids"].value == "p2"


def test_qrels_must_point_into_the_corpus():
    corpus = pl.DataFrame({"passage_id": ["p1"], "question_id": ["q"]})
    qrels = pl.DataFrame(
        {"question_id": ["q", "q"], "passage_id": ["p1", "ghost"], "label": pl.Series([2, 1], dtype=pl.Int8)}
    )
    result = run(qrelease.qrels_in_corpus, benchmark_qrels=qrels, benchmark_corpus=corpus)
    assert not result.passed and "ghost" in result.metadata["offending_ids"].value
    ok = run(qrelease.qrels_in_corpus, benchmark_qrels=qrels.head(1), benchmark_corpus=corpus)
    assert ok.passed


def test_great_expectations_suite_reports_failed_expectations():
    frame = pl.DataFrame(
        {"question_id": ["a", "a"], "split": ["train", "holiday"], "answers": [["x"], []], "question": ["?", "?"]}
    )
    result = run(qrelease.benchmark_questions_suite, benchmark_questions=frame)
    assert not result.passed
    failures = result.metadata["failures"].value
    assert "expect_column_values_to_be_unique(question_id)" in failures
    assert "holiday" in failures
    assert "answer_count" in failures


def test_labels_suite_passes_good_labels():
    labels = pl.DataFrame(
        {
            "passage_id": ["p1", "p2"],
            "question_id": ["q", "q"],
            "num_hints": [1, 2],
            "labelers": [3, 3],
            "label": pl.Series([1, 2], dtype=pl.Int8),
        }
    )
    assert run(qsteps.labels_suite, passage_labels=labels).passed
    partial = labels.with_columns(pl.Series("labelers", [3, 2]))
    assert not run(qsteps.labels_suite, passage_labels=partial).passed
    # no label beside a failed call is label_errors' business, not a bad label
    unlabeled = labels.with_columns(
        pl.Series("label", [1, None], dtype=pl.Int8), pl.Series("error", [None, "m: gave up"])
    )
    assert run(qsteps.labels_suite, passage_labels=unlabeled).passed


# --- rejects, pools, verification, release ---------------------------------------------------


@pytest.mark.parametrize(
    "check, reason",
    [
        (qsources.source_rejects_reasons, "too_few_hints"),
        (qsteps.leakage_rejects_reasons, "answer_leakage"),
        (qsteps.verification_rejects_reasons, "answer_leakage"),
    ],
)
def test_rejects_carry_a_reason_their_step_gives(check, reason):
    good = REJECTS.frame([REJECTS.row("triviahg:1", "triviahg", "ingest", reason, "why", {"q": 1})])
    assert run(check, frame=good).passed
    bad = REJECTS.frame(
        [
            REJECTS.row("triviahg:1", "triviahg", "ingest", reason, "why"),
            REJECTS.row("triviahg:2", "triviahg", "ingest", "cosmic_rays", "why"),
        ]
    )
    result = run(check, frame=bad)
    assert not result.passed and result.metadata["offending_ids"].value == "triviahg"
    assert not run(check, frame=good.drop("source")).passed  # a key of the common shape is gone


def pools(*rows: tuple) -> pl.DataFrame:
    """Answer pools from (question, gold, generated judged correct, pool)."""
    return pl.DataFrame(
        [
            {"question_id": q, "answer": a, "aliases": [a], "generated_correct": g, "answer_pool": p}
            for q, a, g, p in rows
        ],
        schema=qsteps.POOL_SCHEMA,
    )


POOLS = pools(("q1", "Canberra", ["canberra city"], ["Canberra", "Canberra City"]), ("q2", "Paris", [], ["Paris"]))


@pytest.mark.parametrize(
    "broken, words",
    [
        (pools(("q1", "Canberra", [], ["Sydney"])), "the gold answer 'Canberra' is not in the pool"),
        (pools(("q1", "Canberra", [], ["Canberra", "canberra!"])), "an answer is in the pool twice"),
        (pools(("q1", "Canberra", ["Canberra City"], ["Canberra"])), "judged correct but not pooled"),
        (pl.concat([POOLS, POOLS.head(1)]), "repeated question_id"),
    ],
)
def test_an_answer_pool_holds_the_gold_and_every_answer_judged_correct_once(broken, words):
    assert run(qsteps.answer_pools_complete, answer_pools=POOLS).passed
    result = run(qsteps.answer_pools_complete, answer_pools=broken)
    assert not result.passed and words in result.metadata["problems"].value


def test_verified_pools_keep_every_question_and_its_gold():
    # a deselected generated answer leaves the pool but stays in generated_correct: that is sound here
    verified = POOLS.with_columns(pl.Series("answer_pool", [["Canberra"], ["Paris"]]))
    assert run(qsteps.verified_pools_complete, verified_pools=verified, answer_pools=POOLS).passed
    lost = run(qsteps.verified_pools_complete, verified_pools=verified.head(1), answer_pools=POOLS)
    assert (
        not lost.passed and "1 questions pooled but lost in verification (e.g. q2)" in lost.metadata["problems"].value
    )
    goldless = run(
        qsteps.verified_pools_complete,
        verified_pools=verified.with_columns(pl.Series("answer_pool", [["Sydney"], ["Paris"]])),
        answer_pools=POOLS,
    )
    assert not goldless.passed and "not in the pool" in goldless.metadata["problems"].value


CANDIDATES = pl.DataFrame(
    {
        "question_id": ["q1", "q1"],
        "question": ["Capital?"] * 2,
        "gold": ["Canberra"] * 2,
        "candidate": ["Canberra", "Sydney"],
        "occurrences": [3, 1],
        "judged_correct": [True, False],
        "exact_match": [True, False],
    },
    schema=CANDIDATE_SCHEMA,
)


def test_verification_candidates_are_distinct_and_an_exact_match_is_preselected():
    assert run(qsteps.candidates_distinct, verification_candidates=CANDIDATES).passed
    for broken, words in [
        (CANDIDATES.with_columns(pl.Series("judged_correct", [False, False])), "q1/Canberra"),
        (CANDIDATES.with_columns(pl.Series("occurrences", [3, 0])), "q1/Sydney: 0 occurrences"),
        (CANDIDATES.with_columns(pl.Series("candidate", ["Sydney", "Sydney"])), "repeated question_id+candidate"),
    ]:
        result = run(qsteps.candidates_distinct, verification_candidates=broken)
        assert not result.passed and words in result.metadata["problems"].value


LABELS = pl.DataFrame(
    {
        "passage_id": ["p1", "p2"],
        "question_id": ["q", "q"],
        "num_hints": pl.Series([1, 2], dtype=pl.Int8),
        "labelers": pl.Series([2, 2], dtype=pl.UInt32),
        "label": pl.Series([2, 1], dtype=pl.Int8),
        "error": pl.Series([None, None], dtype=pl.String),
    }
)
FAILED = "m: gave up after 5 tries: refused"


def test_verified_labels_are_one_or_two_for_exactly_the_labeled_passages():
    demoted = LABELS.with_columns(pl.Series("label", [1, 1], dtype=pl.Int8))
    assert run(qsteps.verified_labels_kept, verified_labels=demoted, passage_labels=LABELS).passed
    for broken, words in [
        (LABELS.with_columns(pl.Series("label", [2, 0], dtype=pl.Int8)), "labels not in [1, 2]"),
        (LABELS.with_columns(pl.Series("labelers", [2, 1], dtype=pl.UInt32)), "labeler counts differ"),
        (LABELS.head(1), "labeled but lost in verification (e.g. p2)"),
        (LABELS.with_columns(pl.Series("passage_id", ["p1", "p9"])), "verified but never labeled (e.g. p9)"),
        (LABELS.with_columns(pl.Series("label", [2, None], dtype=pl.Int8)), "labels not in [1, 2] (e.g. p2)"),
    ]:
        result = run(qsteps.verified_labels_kept, verified_labels=broken, passage_labels=LABELS)
        assert not result.passed and words in result.metadata["problems"].value
    # no label, where a call failed, is kept as it is
    failed = LABELS.with_columns(pl.Series("label", [2, None], dtype=pl.Int8), pl.Series("error", [None, FAILED]))
    assert run(qsteps.verified_labels_kept, verified_labels=failed, passage_labels=failed).passed


def labels_with_failures(failed: int, total: int = 200) -> pl.DataFrame:
    ids = [f"p{i}" for i in range(total)]
    return pl.DataFrame(
        {
            "passage_id": ids,
            "question_id": ["q"] * total,
            "num_hints": pl.Series([1] * total, dtype=pl.Int8),
            "labelers": pl.Series([1] * total, dtype=pl.UInt32),
            "label": pl.Series([None] * failed + [1] * (total - failed), dtype=pl.Int8),
            "error": pl.Series([FAILED] * failed + [None] * (total - failed), dtype=pl.String),
        }
    )


def test_labels_left_by_failed_calls_fail_the_check_above_the_configured_rate():
    from assets.quit.settings import QuitSettings

    paper = QuitSettings()
    assert paper.max_label_error_rate == 0.01
    assert run(qsteps.label_errors, passage_labels=labels_with_failures(0), quit_settings=paper).passed
    assert run(qsteps.label_errors, passage_labels=labels_with_failures(2), quit_settings=paper).passed  # 1%
    result = run(qsteps.label_errors, passage_labels=labels_with_failures(3), quit_settings=paper)
    assert not result.passed and result.metadata["error_rate"].value == 0.015
    assert result.metadata["offending_ids"].value == "p0, p1, p2"
    assert FAILED in result.metadata["examples"].value
    assert run(
        qsteps.label_errors,
        passage_labels=labels_with_failures(3),
        quit_settings=QuitSettings(max_label_error_rate=0.02),
    ).passed
    # a missing label without its error, or an error beside a label, is silent: it fails at any rate
    for silent in (
        labels_with_failures(0).with_columns(pl.Series("label", [None] + [1] * 199, dtype=pl.Int8)),
        labels_with_failures(1).with_columns(pl.lit(1, pl.Int8).alias("label")),
    ):
        result = run(qsteps.label_errors, passage_labels=silent, quit_settings=QuitSettings(max_label_error_rate=0.5))
        assert not result.passed and result.metadata["labels_and_errors_disagree"].value == "p0"


def test_splits_put_undetermined_questions_in_no_split():
    splits = pl.DataFrame(
        {
            "question_id": ["a", "b", "c"],
            "parametric_answerable": [True, False, None],
            "split": ["train", "test", "undetermined"],
        }
    )
    assert run(qsteps.splits_rule, splits=splits).passed
    for q, split in (("c", "dev"), ("c", "train"), ("b", "undetermined")):
        broken = splits.with_columns(
            pl.when(pl.col("question_id") == q).then(pl.lit(split)).otherwise(pl.col("split")).alias("split")
        )
        result = run(qsteps.splits_rule, splits=broken)
        assert not result.passed and result.metadata["offending_ids"].value == q


def test_release_files_are_written_with_the_benchmark_counts(tmp_path):
    from assets.quit.release import export

    questions = pl.DataFrame(
        {
            "question_id": ["a", "b"],
            "split": ["test", "dev"],
            "question": ["?", "?"],
            "answers": [["x"], ["y"]],
            "hints": [["h"], ["h"]],
            "hint_convergence": [[0.5], [0.5]],
            "question_type": ["LOC:city"] * 2,
            "difficulty": ["easy"] * 2,
            "source": ["triviahg"] * 2,
        }
    )
    corpus = pl.DataFrame({"passage_id": ["a_1", "b_1", "b_2"], "question_id": ["a", "b", "b"], "text": ["t"] * 3})
    qrels = pl.DataFrame({"question_id": ["a", "b", "b"], "passage_id": ["a_1", "b_1", "b_2"], "label": [2, 1, 1]})
    manifest = export(questions, corpus, qrels, str(tmp_path))
    inputs = dict(benchmark_questions=questions, benchmark_corpus=corpus, benchmark_qrels=qrels)
    assert run(qrelease.release_files_written, release_files=manifest, **inputs).passed
    (tmp_path / "test.json").unlink()
    gone = run(qrelease.release_files_written, release_files=manifest, **inputs)
    assert not gone.passed and "test.json: nothing at" in gone.metadata["problems"].value
    short = run(
        qrelease.release_files_written, release_files=manifest.filter(pl.col("file") != "qrels.dev.txt"), **inputs
    )
    assert not short.passed and "qrels.dev.txt is not in the manifest" in short.metadata["problems"].value
    stale = run(
        qrelease.release_files_written, release_files=manifest, **{**inputs, "benchmark_corpus": corpus.head(2)}
    )
    assert not stale.passed and "corpus.jsonl: 3 records, the benchmark has 2" in stale.metadata["problems"].value


TABLE_1 = pl.DataFrame(
    {
        "metric": [
            "Total Questions",
            "Total Passages",
            "Query-Passage Lexical Overlap",
            "Answer Containment",
            "Answer Containment (whole words)",
            "Query-Passage Semantic Overlap",
            "Label-2 Passages",
            "Label-1 Passages",
        ],
        "value": [1.0, 325.0, 0.06, 0.02, 0.0, 0.47, 25.0, 300.0],
    }
).with_columns(
    definition=pl.lit("rule"),
    # the semantic overlap estimated from a sample, with its interval; the other rows have none
    ci_low=pl.when(pl.col("metric") == "Query-Passage Semantic Overlap").then(0.46),
    ci_high=pl.when(pl.col("metric") == "Query-Passage Semantic Overlap").then(0.48),
)


@pytest.mark.parametrize(
    "metric, value, words",
    [
        ("Answer Containment (whole words)", 0.01, "some passage names a valid answer"),
        ("Answer Containment", 1.5, "outside [0, 1]"),
        ("Label-1 Passages", 299.0, "Label-1 Passages + Label-2 Passages = 324.0"),
        ("Total Questions", 1.5, "not a count"),
        ("Query-Passage Lexical Overlap", 1.2, "outside [0, 1]"),
        ("Query-Passage Semantic Overlap", 0.45, "outside its interval [0.46, 0.48]"),
    ],
)
def test_table_1_counts_whole_shares_in_range_and_no_answer_contained(metric, value, words):
    assert run(qrelease.statistics_table_1, statistics=TABLE_1).passed
    broken = TABLE_1.with_columns(
        pl.when(pl.col("metric") == metric).then(value).otherwise(pl.col("value")).alias("value")
    )
    result = run(qrelease.statistics_table_1, statistics=broken)
    assert not result.passed and words in result.metadata["problems"].value
    missing = run(qrelease.statistics_table_1, statistics=TABLE_1.filter(pl.col("metric") != "Answer Containment"))
    assert not missing.passed and "row 'Answer Containment' is missing" in missing.metadata["problems"].value


def test_table_1_semantic_overlap_is_a_cosine_and_its_interval_optional():
    exact = TABLE_1.with_columns(pl.lit(None, pl.Float64).alias("ci_low"), pl.lit(None, pl.Float64).alias("ci_high"))
    assert run(qrelease.statistics_table_1, statistics=exact).passed
    broken = exact.with_columns(
        pl.when(pl.col("metric") == "Query-Passage Semantic Overlap")
        .then(1.2)
        .otherwise(pl.col("value"))
        .alias("value")
    )
    result = run(qrelease.statistics_table_1, statistics=broken)
    assert not result.passed and "not a cosine in [-1, 1]" in result.metadata["problems"].value


@pytest.mark.parametrize(
    "check", qsteps.llm_accounting, ids=lambda c: next(iter(c.check_specs)).asset_key.to_user_string()
)
def test_every_llm_step_of_quit_warns_above_the_failure_rate(check):
    from tests.checks.test_eval_checks import accounting_evaluation

    frame = pl.DataFrame(
        {"question_id": ["q"], "item": ["q#1"], "passage_id": ["p"], "error": [None], "judge_error": [None]},
        schema_overrides={"error": pl.String, "judge_error": pl.String},
    )
    assert accounting_evaluation(check, frame, errors=1).passed
    assert not accounting_evaluation(check, frame, errors=6).passed


def test_failed_calls_name_answers_whose_own_or_judge_call_failed():
    answers = pl.DataFrame(
        {"item": ["ok", "own", "judge"], "error": [None, "gave up", None], "judge_error": [None, None, "gave up"]}
    )
    assert qsteps.failed_calls(answers)["item"].to_list() == ["own", "judge"]
    assert qsteps.failed_calls(answers.drop("judge_error"))["item"].to_list() == ["own"]


def test_checks_of_partitioned_assets_run_per_partition():
    from assets.quit.assets import quit_assets

    partitions = {k: a.partitions_def for a in quit_assets for k in a.keys}
    for check in quit_checks:
        for spec in check.check_specs:
            assert spec.partitions_def == partitions[spec.asset_key], spec.key


def test_check_names_are_unique_per_asset():
    names = [spec.key for c in quit_checks for spec in c.check_specs]
    assert len(names) == len(set(names))


def _reference_index(tmp_path, contents: list[str], indexed: bool):
    index = tmp_path / "indexes" / "lucene" / "quit_references"
    if indexed:
        index.mkdir(parents=True)

    @dg.asset(key=["quit", "reference_index"])
    def reference_index() -> dg.Output:
        frame = pl.DataFrame({"id": [f"r{i}" for i in range(len(contents))], "contents": contents})
        return dg.Output(frame, metadata={"index": dg.MetadataValue.path(str(index))})

    result = dg.materialize(
        [reference_index, qsources.reference_index_schema, qsources.reference_index_complete],
        resources={"io_manager": dg.mem_io_manager},
        raise_on_error=False,
    )
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_reference_passages_need_a_text_and_their_index(tmp_path):
    assert _reference_index(tmp_path / "a", ["Everest is the highest.", "K2 is second."], indexed=True) == {
        "schema": True,
        "reference_index_complete": True,
    }
    assert not _reference_index(tmp_path / "b", ["Everest is the highest.", "  "], indexed=True)[
        "reference_index_complete"
    ]
    assert not _reference_index(tmp_path / "c", ["Everest is the highest."], indexed=False)["reference_index_complete"]
    assert not qsources.reference_index_schema(pl.DataFrame({"id": ["r1", "r1"], "contents": ["a", "b"]})).passed
