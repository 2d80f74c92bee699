import dagster as dg
import polars as pl

from assets.common.rejects import Rejects
from checks import factories as f


def test_table_check_finds_a_missing_column_a_wrong_type_a_repeated_id_and_a_null():
    check = f.table_check("demo/things", {"id": pl.String, "n": pl.Int64}, unique=["id"], not_null=["n"])
    good = pl.DataFrame({"id": ["a", "b"], "n": [1, 2]})
    assert check(good).passed
    for broken, words in [
        (good.drop("n"), "'n' is missing"),
        (good.with_columns(pl.col("n").cast(pl.Float64)), "Float64"),
        (good.with_columns(pl.lit("a").alias("id")), "repeated id"),
        (good.with_columns(pl.Series("n", [1, None])), "nulls"),
    ]:
        result = check(broken)
        assert not result.passed and words in result.metadata["problems"].value


def test_rejects_check_names_an_unknown_reason():
    shape = Rejects(("question_id",))
    check = f.rejects_check("demo/rejects", {"too_short"}, shape.keys)
    good = shape.frame([shape.row("q1", "ingest", "too_short", "3 words")])
    assert check(good).passed
    bad = shape.frame([shape.row("q1", "ingest", "too_short"), shape.row("q2", "ingest", "cosmic_rays")])
    result = check(bad)
    assert not result.passed and result.metadata["offending_ids"].value == "q2"
    assert not check(good.drop("record")).passed  # not the common shape


def _accounted(errors: int, parse_failures: int, calls: int = 10):
    @dg.asset(key=["demo", "answers"])
    def answers() -> dg.Output:
        frame = pl.DataFrame({"item": ["a", "b"], "error": [None, "unparsable: ?"]})
        return dg.Output(
            frame, metadata={"llm/calls": calls, "llm/errors": errors, "llm/parse_failures": parse_failures}
        )

    return answers


def _run(asset, rate: float) -> dg.AssetCheckEvaluation:
    check = f.llm_accounting_check(
        "demo/answers", failed_items=lambda t: t.filter(pl.col("error").is_not_null()), item_column="item"
    )
    result = dg.materialize(
        [asset, check],
        raise_on_error=False,
        resources={"check_settings": f.CheckSettings(max_llm_failure_rate=rate), "io_manager": dg.mem_io_manager},
    )
    return result.get_asset_check_evaluations()[0]


def test_llm_accounting_fails_above_the_configured_rate_and_names_the_items():
    failing = _run(_accounted(errors=2, parse_failures=4), rate=0.5)
    assert not failing.passed and failing.metadata["failed"].value == 6
    assert failing.metadata["failed_items"].value == "b"
    assert _run(_accounted(errors=1, parse_failures=1), rate=0.5).passed


def test_the_failure_rate_counts_errors_and_parse_failures_over_calls():
    assert f.llm_failure_rate({"llm/calls": 8, "llm/errors": 1, "llm/parse_failures": 1}) == (8, 2, 0.25)
    assert f.llm_failure_rate({}) == (0, 0, 0.0)


def test_llm_accounting_reads_the_checked_partition():
    parts = dg.StaticPartitionsDefinition(["good", "bad"])

    @dg.asset(key=["demo", "answers"], partitions_def=parts)
    def answers(context) -> dg.Output:
        bad = context.partition_key == "bad"
        return dg.Output(
            pl.DataFrame({"item": ["a"], "error": [None]}),
            metadata={"llm/calls": 4, "llm/errors": 4 if bad else 0, "llm/parse_failures": 0},
        )

    check = f.llm_accounting_check("demo/answers", partitions_def=parts)
    instance = dg.DagsterInstance.ephemeral()
    resources = {"check_settings": f.CheckSettings(), "io_manager": dg.mem_io_manager}
    outcomes = {}
    for key in ("bad", "good"):
        result = dg.materialize(
            [answers, check], partition_key=key, instance=instance, resources=resources, raise_on_error=False
        )
        outcomes[key] = result.get_asset_check_evaluations()[0].passed
    assert outcomes == {"bad": False, "good": True}


def test_a_step_whose_calls_failed_blocks_what_is_built_on_it():
    """A step whose server failed materializes what it has (its items keep their errors), but
    its check is an error that stops the assets downstream; unparsable replies only warn."""

    def build(errors: int, parse_failures: int):
        @dg.asset(key=["demo", "answers"])
        def answers() -> dg.Output:
            return dg.Output(
                pl.DataFrame({"item": ["a"]}),
                metadata={
                    "llm/calls": 10,
                    "llm/errors": errors,
                    "llm/parse_failures": parse_failures,
                    "llm/failed_items": dg.MetadataValue.text("q1 passage 3, q2 passage 9"),
                },
            )

        @dg.asset(key=["demo", "report"], deps=[answers])
        def report() -> None:
            return None

        check = f.llm_accounting_check("demo/answers")
        return dg.materialize(
            [answers, report, check],
            raise_on_error=False,
            resources={"check_settings": f.CheckSettings(), "io_manager": dg.mem_io_manager},
        )

    dead = build(errors=10, parse_failures=0)
    [evaluation] = dead.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["error_rate"].value == 1.0
    assert evaluation.metadata["failed_items"].value == "q1 passage 3, q2 passage 9"
    assert [m.asset_key for m in dead.get_asset_materialization_events()] == [dg.AssetKey(["demo", "answers"])]

    unparsable = build(errors=0, parse_failures=8)
    [evaluation] = unparsable.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert len(unparsable.get_asset_materialization_events()) == 2


def test_the_steps_accounting_names_its_failed_calls():
    from resources.llm import CallStats, LLMResult

    stats = CallStats()
    for i in range(25):
        stats.add(LLMResult(f"item {i}", None, error="gave up after 5 tries: ServerFault: HTTP 500"))
    stats.add(LLMResult("fine", "yes"))
    named = stats.as_metadata()["llm/failed_items"].value
    assert named.startswith("item 0, item 1") and named.endswith("item 19 (and 5 more)")
    assert "llm/failed_items" not in CallStats().as_metadata()
