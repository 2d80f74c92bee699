import logging

import dagster as dg
import polars as pl
import pytest

from resources.storage import (
    MATERIALIZED_PARTITIONS,
    STREAMED,
    FrameTable,
    ParquetIOManager,
    StoredTable,
    read_parquet,
    write_parquet,
    write_parquet_batches,
)


def test_paths_follow_the_storage_contract(tmp_path):
    @dg.asset(key_prefix="quit")
    def table() -> pl.DataFrame:
        return pl.DataFrame({"a": [1, 2]})

    parts = dg.StaticPartitionsDefinition(["m1", "m2"])

    @dg.asset(key_prefix="quit", partitions_def=parts)
    def per_model(context: dg.AssetExecutionContext) -> pl.DataFrame:
        return pl.DataFrame({"model": [context.partition_key]})

    @dg.asset(key_prefix="quit", ins={"per_model": dg.AssetIn(key=["quit", "per_model"])})
    def combined(per_model: pl.DataFrame) -> pl.DataFrame:
        return per_model.sort("model")

    io = ParquetIOManager(root=str(tmp_path))
    dg.materialize([table], resources={"io_manager": io})
    for key in ("m1", "m2"):
        dg.materialize([per_model], partition_key=key, resources={"io_manager": io})
    dg.materialize([per_model, combined], selection=[combined], resources={"io_manager": io})
    assert (tmp_path / "quit" / "table.parquet").exists()
    assert (tmp_path / "quit" / "per_model" / "m1.parquet").exists()
    assert read_parquet(str(tmp_path / "quit" / "combined.parquet"))["model"].to_list() == ["m1", "m2"]


def test_non_frames_are_refused(tmp_path):
    @dg.asset
    def wrong() -> dict:
        return {"a": 1}

    with pytest.raises(Exception, match="returned dict"):
        dg.materialize([wrong], resources={"io_manager": ParquetIOManager(root=str(tmp_path))})


def test_missing_table_names_the_asset(tmp_path):
    with pytest.raises(FileNotFoundError, match="materialize its asset first"):
        read_parquet(str(tmp_path / "nothing.parquet"))


def test_a_report_over_materialized_partitions_reads_those_and_names_the_rest(tmp_path):
    parts = dg.StaticPartitionsDefinition(["law", "biology", "drones"])

    @dg.asset(key_prefix="recor", partitions_def=parts)
    def per_domain(context: dg.AssetExecutionContext) -> pl.DataFrame:
        return pl.DataFrame({"domain": [context.partition_key]})

    def report(metadata: dict) -> dg.AssetsDefinition:
        @dg.asset(key_prefix="recor", ins={"per_domain": dg.AssetIn(key=["recor", "per_domain"], metadata=metadata)})
        def report(per_domain: pl.DataFrame) -> pl.DataFrame:
            return per_domain.sort("domain")

        return report

    io = ParquetIOManager(root=str(tmp_path))
    partial = report(MATERIALIZED_PARTITIONS)
    with pytest.raises(FileNotFoundError, match="no partition of recor/per_domain is materialized"):
        dg.materialize([per_domain, partial], selection=[partial], resources={"io_manager": io})
    for key in ("law", "biology"):
        dg.materialize([per_domain], partition_key=key, resources={"io_manager": io})
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([per_domain, partial], selection=[partial], resources={"io_manager": io}, instance=instance)
    assert read_parquet(str(tmp_path / "recor" / "report.parquet"))["domain"].to_list() == ["biology", "law"]
    logged = [e.user_message for e in instance.all_logs(result.run_id) if e.level == logging.WARNING]
    assert logged == ["recor/per_domain: 1 of 3 partitions not materialized, read without them: drones"]
    # without the metadata a missing partition is an error, as for any other input
    with pytest.raises(FileNotFoundError, match="drones.parquet"):
        dg.materialize([per_domain, report({})], selection=["recor/report"], resources={"io_manager": io})


def test_an_input_with_columns_metadata_loads_only_those(tmp_path):
    parts = dg.StaticPartitionsDefinition(["m1", "m2"])

    @dg.asset(key_prefix="quit")
    def wide() -> pl.DataFrame:
        return pl.DataFrame({"id": ["a", "b"], "text": ["a long text", "another"], "n": [1, 2]})

    @dg.asset(key_prefix="quit", partitions_def=parts)
    def per_model(context: dg.AssetExecutionContext) -> pl.DataFrame:
        return pl.DataFrame({"model": [context.partition_key], "text": ["an answer"]})

    @dg.asset(
        key_prefix="quit",
        ins={
            "wide": dg.AssetIn(key=["quit", "wide"], metadata={"columns": ["n", "id"]}),
            "per_model": dg.AssetIn(key=["quit", "per_model"], metadata={"columns": ["model"]}),
        },
    )
    def narrow(wide: pl.DataFrame, per_model: pl.DataFrame) -> pl.DataFrame:
        return pl.DataFrame(
            {"loaded": [",".join(wide.columns), ",".join(per_model.columns)], "rows": [wide.height, per_model.height]}
        )

    io = ParquetIOManager(root=str(tmp_path))
    dg.materialize([wide], resources={"io_manager": io})
    for key in ("m1", "m2"):
        dg.materialize([per_model], partition_key=key, resources={"io_manager": io})
    dg.materialize([wide, per_model, narrow], selection=[narrow], resources={"io_manager": io})
    assert read_parquet(str(tmp_path / "quit" / "narrow.parquet")).rows() == [("n,id", 2), ("model", 2)]
    assert read_parquet(str(tmp_path / "quit" / "wide.parquet"), ["text"]).columns == ["text"]


def test_a_streamed_input_is_a_stored_table_read_in_batches_in_file_order(tmp_path):
    parts = dg.StaticPartitionsDefinition(["m1", "m2"])

    @dg.asset(key_prefix="quit", partitions_def=parts)
    def texts(context: dg.AssetExecutionContext) -> pl.DataFrame:
        k = context.partition_key
        return pl.DataFrame({"id": [f"{k}-{i}" for i in range(5)], "text": [f"text {i}" for i in range(5)]})

    @dg.asset(key_prefix="quit", ins={"texts": dg.AssetIn(key=["quit", "texts"], metadata=STREAMED)})
    def lengths(texts) -> pl.DataFrame:
        assert isinstance(texts, StoredTable) and texts.height == 10
        ids = texts.read("id")["id"].to_list()
        batches = list(texts.batches("id", "text", rows=2))
        # each partition's file in its own batches (2 + 2 + 1), in the order read() gives
        assert [b.height for b in batches] == [2, 2, 1, 2, 2, 1]
        assert [i for b in batches for i in b["id"]] == ids and batches[0].columns == ["id", "text"]
        return pl.DataFrame({"id": ids})

    io = ParquetIOManager(root=str(tmp_path))
    for key in ("m1", "m2"):
        dg.materialize([texts], partition_key=key, resources={"io_manager": io})
    assert dg.materialize([texts, lengths], selection=[lengths], resources={"io_manager": io}).success
    assert read_parquet(str(tmp_path / "quit" / "lengths.parquet"))["id"].to_list() == [
        f"m{m}-{i}" for m in (1, 2) for i in range(5)
    ]


def test_a_stored_table_reads_row_groups_a_batch_at_a_time_and_matches_a_frame(tmp_path):
    frame = pl.DataFrame({"id": [str(i) for i in range(250)], "text": ["x" * i for i in range(250)]})
    uri = str(tmp_path / "t.parquet")
    write_parquet_batches(uri, frame.iter_slices(100))  # three row groups
    stored, in_memory = StoredTable((uri,)), FrameTable(frame)
    for table in (stored, in_memory):
        assert table.height == 250 and table.read("id").equals(frame.select("id"))
        got = list(table.batches("text", "id", rows=60))
        assert max(b.height for b in got) <= 60 and pl.concat(got).equals(frame.select("text", "id"))
    empty = str(tmp_path / "empty.parquet")
    write_parquet(empty, frame.clear())
    assert StoredTable((empty,)).height == 0 and list(StoredTable((empty,)).batches("id")) == []


def test_a_streamed_input_of_a_missing_table_names_it(tmp_path):
    @dg.asset(key_prefix="quit", ins={"absent": dg.AssetIn(key=["quit", "absent"], metadata=STREAMED)})
    def reader(absent) -> pl.DataFrame:
        return pl.DataFrame()

    @dg.asset(key_prefix="quit")
    def absent() -> pl.DataFrame:
        return pl.DataFrame()

    with pytest.raises(FileNotFoundError, match="absent.parquet: materialize its asset first"):
        dg.materialize(
            [absent, reader], selection=[reader], resources={"io_manager": ParquetIOManager(root=str(tmp_path))}
        )
