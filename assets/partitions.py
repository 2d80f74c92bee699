"""Every partition definition, named once.

The systems under evaluation are dynamic partitions: QUIT's labelers and readers (the model
registry's roles), the retrievers and rerankers (their registries, trained models' aliases
included), WikiProfile's subject models, the base models QUIT's fine-tuning starts from and the
datasets in BEIR's layout a deployment registers.
Their keys live in the Dagster instance, not in the code, so an alias put in a
registry while the web UI runs becomes a partition without a reload: the registry sensor
(``pipelines.sensors``) adds it, and whatever runs partitioned assets in process calls
``sync_partitions`` first. The sensor also removes a partition that no registry lists and
nothing has materialized (one added by hand in the UI's partition picker). RECOR's eleven domains stay static: they are the paper's, named
in code, and a domain the code does not know could not be built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import dagster as dg

from resources.datasets import load_datasets
from resources.finetuning import BASES_PATH, load_bases
from resources.llm import REGISTRY_PATH, role_aliases
from resources.names import check_name
from resources.retrieval import RERANKERS_PATH, RETRIEVERS_PATH, load_rerankers, load_retrievers

# Each set of partitions has one name: its ``NAMED`` key, its variable here (the name in the
# singular, then ``_partitions``), the partitions of a stage (``pipelines.jobs``, which
# ``make run`` runs) and the suffix of its checks-only job (``pipelines.jobs.recheck_jobs``,
# where one job keeps an older name). A dynamic set's Dagster name is what the instance
# stores its keys under, so it stays as it was (``wikiprofile_subjects`` is the set named
# ``subjects``); a product of two dimensions is named after both.

# QUIT: labelers label passages, readers answer from them; the parametric (closed-book)
# answers are asked of both.
quit_labeler_partitions = dg.DynamicPartitionsDefinition(name="quit_labelers")
quit_reader_partitions = dg.DynamicPartitionsDefinition(name="quit_readers")
quit_model_partitions = dg.DynamicPartitionsDefinition(name="quit_models")

# RECOR's eleven domains: six from BRIGHT, five from StackExchange.
BRIGHT_DOMAINS = ["biology", "earth_science", "economics", "psychology", "robotics", "sustainable_living"]
STACKEXCHANGE_DOMAINS = ["drones", "hardware", "law", "medical_sciences", "politics"]
DOMAINS = BRIGHT_DOMAINS + STACKEXCHANGE_DOMAINS

domain_partitions = dg.StaticPartitionsDefinition(DOMAINS)

# Retrieval evaluation: one partition per retriever (QUIT) and per retriever x reranker.
retriever_partitions = dg.DynamicPartitionsDefinition(name="retrievers")
reranker_partitions = dg.DynamicPartitionsDefinition(name="rerankers")
retriever_reranker_partitions = dg.MultiPartitionsDefinition(
    {"retriever": retriever_partitions, "reranker": reranker_partitions}
)

# RECOR's evaluation: domain x retriever; the oracle is not a retriever of conversations, and
# a retriever trained on QUIT's train split is QUIT's experiment, not RECOR's.
recor_retriever_partitions = dg.DynamicPartitionsDefinition(name="recor_retrievers")
domain_retriever_partitions = dg.MultiPartitionsDefinition(
    {"domain": domain_partitions, "retriever": recor_retriever_partitions}
)

# Datasets in BEIR's layout the deployment registers (resources/datasets.yaml), and each
# evaluated by every retriever (the Oracle and trained models included: a model trained on
# QUIT meets a dataset it never saw, which is what such a dataset is for).
beir_dataset_partitions = dg.DynamicPartitionsDefinition(name="beir_datasets")
dataset_retriever_partitions = dg.MultiPartitionsDefinition(
    {"dataset": beir_dataset_partitions, "retriever": retriever_partitions}
)

# WikiProfile's subject models, from the registry's ``wikiprofile.subjects``.
subject_partitions = dg.DynamicPartitionsDefinition(name="wikiprofile_subjects")

# WikiProfile from Wikimedia's data: one partition per summary file of the deployment's
# Wikipedia folder (a dump shard: its keys are file names, added by whoever reads the folder,
# never by the registry sensor), and the page views by month over the paper's window
# (2023-02 to 2025-06), so a backfill reads a month at a time.
wikipedia_shard_partitions = dg.DynamicPartitionsDefinition(name="wikipedia_shards")
wikipedia_month_partitions = dg.MonthlyPartitionsDefinition(start_date="2023-02-01", end_date="2025-07-01")

# QUIT's fine-tuned models, one per base model of ``resources/finetuning.yaml``.
finetune_base_partitions = dg.DynamicPartitionsDefinition(name="finetune_bases")

# Every set of partitions that an asset is partitioned by, by its name (job names, the UI,
# ``make run``). ``rerankers`` and ``recor_retrievers`` are dimensions of a product alone.
NAMED = {
    "quit_readers": quit_reader_partitions,
    "quit_labelers": quit_labeler_partitions,
    "quit_models": quit_model_partitions,
    "domains": domain_partitions,
    "retrievers": retriever_partitions,
    "retriever_rerankers": retriever_reranker_partitions,
    "domain_retrievers": domain_retriever_partitions,
    "beir_datasets": beir_dataset_partitions,
    "beir_dataset_retrievers": dataset_retriever_partitions,
    "subjects": subject_partitions,
    "finetune_bases": finetune_base_partitions,
    "wikipedia_shards": wikipedia_shard_partitions,
    "wikipedia_months": wikipedia_month_partitions,
}
DYNAMIC = [
    quit_labeler_partitions,
    quit_reader_partitions,
    quit_model_partitions,
    retriever_partitions,
    recor_retriever_partitions,
    reranker_partitions,
    subject_partitions,
    finetune_base_partitions,
    beir_dataset_partitions,
]


def registered_keys(
    models: str = REGISTRY_PATH,
    retrievers: str = RETRIEVERS_PATH,
    rerankers: str = RERANKERS_PATH,
    bases: str = BASES_PATH,
    datasets: str | None = None,
) -> dict[str, list[str]]:
    """The keys each dynamic partitions definition (by name) should have: what the
    registries list now. Retrievers and rerankers in alias order, models in role order, base
    models and datasets in name order (``datasets``: the deployment's registry when None,
    :data:`resources.datasets.DATASETS_PATH`)."""
    labelers, readers = role_aliases("quit.labelers", models), role_aliases("quit.readers", models)
    specs = load_retrievers(retrievers)
    return {
        quit_labeler_partitions.name: labelers,
        quit_reader_partitions.name: readers,
        quit_model_partitions.name: sorted(set(labelers) | set(readers)),
        retriever_partitions.name: sorted(specs),
        recor_retriever_partitions.name: sorted(
            a for a, s in specs.items() if s.kind != "oracle" and s.trained_on in (None, "recor")
        ),
        reranker_partitions.name: sorted(load_rerankers(rerankers, models)),
        subject_partitions.name: role_aliases("wikiprofile.subjects", models),
        finetune_base_partitions.name: sorted(load_bases(bases)),
        beir_dataset_partitions.name: sorted(load_datasets(datasets)),
    }


@dataclasses.dataclass(frozen=True)
class PartitionChanges:
    """By dynamic partitions name: registry keys that are no partition yet (``new``),
    partitions no registry lists that are kept (``gone``): their materializations are a past
    evaluation the leaderboard and the UI still show, and partitions no registry lists that
    nothing has materialized (``stray``), to remove: a key added by hand in the partition
    picker, or an alias dropped before it was evaluated."""

    new: dict[str, list[str]]
    gone: dict[str, list[str]]
    stray: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def describe(self, which: str) -> str:
        changes = getattr(self, which)
        return "; ".join(f"{name}: {', '.join(keys)}" for name, keys in changes.items())


def partition_changes(registered: dict[str, list[str]], existing: dict[str, list[str]]) -> PartitionChanges:
    """What adding the registries' keys to the existing partitions would change, each list
    in its own order (registry order for new keys, partition order for gone ones). A new key
    outside the names' allowed set (``resources.names``) is an error naming it: a partition
    key becomes a file name under the storage root."""
    new, gone = {}, {}
    for name, keys in registered.items():
        known = set(existing.get(name, []))
        if added := [check_name(k, f"new partition of {name}") for k in dict.fromkeys(keys) if k not in known]:
            new[name] = added
        if dropped := [k for k in existing.get(name, []) if k not in set(keys)]:
            gone[name] = dropped
    return PartitionChanges(new, gone)


def without_materializations(changes: PartitionChanges, materialized: dict[str, set[str]]) -> PartitionChanges:
    """``changes`` with each gone key that is not in ``materialized`` (by partitions name)
    moved to ``stray``."""
    gone, stray = {}, {}
    for name, keys in changes.gone.items():
        if kept := [k for k in keys if k in materialized.get(name, set())]:
            gone[name] = kept
        if dropped := [k for k in keys if k not in materialized.get(name, set())]:
            stray[name] = dropped
    return PartitionChanges(changes.new, gone, stray)


def materialized_keys(
    instance: dg.DagsterInstance, assets: Iterable[dg.AssetsDefinition], candidates: dict[str, list[str]]
) -> dict[str, set[str]]:
    """Of ``candidates`` (keys by dynamic partitions name), those that some asset of
    ``assets`` has materialized, as its partition or as one dimension of its multi-partition
    key."""
    assets = list(assets)

    def materialized(name: str, key: str) -> bool:
        return any(
            instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=partitions), limit=1
            ).records
            for assets_def in assets
            if (partitions := _partitions_with(assets_def.partitions_def, name, key, instance))
            for asset_key in assets_def.keys
        )

    return {name: {key for key in keys if materialized(name, key)} for name, keys in candidates.items()}


def _partitions_with(
    pdef: dg.PartitionsDefinition | None, name: str, key: str, instance: dg.DagsterInstance
) -> list[str]:
    """The partition keys of ``pdef`` that hold ``key`` of the dynamic partitions ``name``."""
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return [key] if pdef.name == name else []
    if not isinstance(pdef, dg.MultiPartitionsDefinition):
        return []
    dimensions = [
        d.name
        for d in pdef.partitions_defs
        if isinstance(d.partitions_def, dg.DynamicPartitionsDefinition) and d.partitions_def.name == name
    ]
    return [
        str(k)
        for k in pdef.get_partition_keys(dynamic_partitions_store=instance)
        if any(k.keys_by_dimension[d] == key for d in dimensions)
    ]


def pending_changes(
    instance: dg.DagsterInstance, assets: Iterable[dg.AssetsDefinition] | None = None, **paths: str
) -> PartitionChanges:
    """The registries (``registered_keys``'s paths) against the instance's partitions. Given
    the ``assets`` that use the partitions, a gone partition none of them has materialized
    is ``stray``; without them every gone partition counts as kept."""
    changes = partition_changes(
        registered_keys(**paths), {pdef.name: list(instance.get_dynamic_partitions(pdef.name)) for pdef in DYNAMIC}
    )
    if assets is None:
        return changes
    return without_materializations(changes, materialized_keys(instance, list(assets), changes.gone))


def sync_partitions(instance: dg.DagsterInstance, **paths: str) -> PartitionChanges:
    """Adds every registry key that is no partition yet to ``instance`` (never removes one),
    as the registry sensor does on a running deployment: what runs partitioned assets in
    process calls this first. Returns what it added and what it kept though gone."""
    changes = pending_changes(instance, **paths)
    for name, keys in changes.new.items():
        instance.add_dynamic_partitions(name, keys)
    return changes
