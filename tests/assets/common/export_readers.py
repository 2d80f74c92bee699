"""What the community's readers make of an export folder (``assets.common.sharing``): the
row counts ``datasets.load_dataset`` gives per configuration and split, those ``mlcroissant``
reads per record set (after validating the JSON-LD), and BEIR's ``GenericDataLoader`` load."""

from __future__ import annotations

from pathlib import Path


def hf_rows(folder: Path, configs: list[str], cache: Path) -> dict[str, dict[str, int]]:
    import datasets

    return {
        config: {
            split: data.num_rows
            for split, data in datasets.load_dataset(str(folder / "hf"), config, cache_dir=str(cache)).items()
        }
        for config in configs
    }


def croissant_rows(folder: Path) -> dict[str, int]:
    import mlcroissant

    dataset = mlcroissant.Dataset(jsonld=str(folder / "hf" / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors, dataset.metadata.ctx.issues.errors
    return {rs.name: sum(1 for _ in dataset.records(record_set=rs.name)) for rs in dataset.metadata.record_sets}


def beir_load(folder: Path, split: str) -> tuple[dict, dict, dict]:
    from beir.datasets.data_loader import GenericDataLoader

    return GenericDataLoader(data_folder=str(folder)).load(split=split)


def materialize_export(
    asset,
    checks,
    stored: dict,
    root: Path,
    settings: dict,
    partition: str | None = None,
    upstream_partitions=None,
    metadata: dict | None = None,
):
    """``asset`` (an export) materialized over ``stored`` tables (key path -> frame, written
    where the IO manager reads them under ``root``, as ``partition``), with its
    ``export_written`` check from ``checks``; returns the check's evaluation (and fills
    ``metadata`` with the materialization's). Its upstream tables are partitioned as it is, or
    by ``upstream_partitions`` (an asset reading them all)."""
    import dagster as dg

    from resources.storage import ParquetIOManager, StorageResource, table_uri, write_parquet

    for path, frame in stored.items():
        write_parquet(table_uri(str(root), path, partition), frame)
    [check] = [c for c in checks if asset.key in {k.asset_key for k in c.check_keys}]
    partitions = asset.partitions_def or upstream_partitions
    specs = [dg.AssetSpec(key, partitions_def=partitions) for key in asset.dependency_keys]
    result = dg.materialize(
        [asset, check, *specs],
        selection=[asset],
        partition_key=partition if asset.partitions_def else None,
        resources={
            "io_manager": ParquetIOManager(root=str(root)),
            "storage": StorageResource(root=str(root)),
            **settings,
        },
    )
    assert result.success
    [evaluation] = result.get_asset_check_evaluations()
    if metadata is not None:
        [materialization] = result.get_asset_materialization_events()
        metadata.update(materialization.materialization.metadata)
    return evaluation
