"""The resources every job gets, configured from the environment: ``BENCHFOUNDRY_STORAGE``
(the one storage root: tables, exports, run files, indexes), ``BENCHFOUNDRY_CACHE`` (the
LLM response cache, the local disk of Lucene indexes when the root is remote, ``make run``'s
logs) and ``BENCHFOUNDRY_CACHE_TYPE`` (``disk`` by default; ``postgres``: the answers in the
table at ``BENCHFOUNDRY_CACHE_URL``, shared by every worker of a deployment).

What a run may set of them is :data:`RUN_FIELDS`, and nothing else (``resources.run_config``):
the fields that change what is computed. Where the parts are (the storage and index roots,
the model registry, the answer cache, the managed vLLM servers and their logs, the web
search's endpoint and key, the input files) is the deployment's: the environment above and
the definitions' code (``build_defs(**resources)``, as ``make run``'s options and a
deployment's own module do)."""

from __future__ import annotations

import os

import dagster as dg

from assets.eval.uncertainty import UncertaintySettings
from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from checks.factories import CheckSettings
from resources.encoders import EncoderResource
from resources.faiss_index import FaissIndexResource
from resources.llm import REGISTRY_PATH, LLMResource
from resources.lucene import LuceneResource
from resources.run_config import deployed
from resources.search import DocumentSearchResource
from resources.storage import StorageResource, parquet_io_manager, storage_root

# The allowlist: per resource, the fields a run may set. A field left out is the deployment's.
RUN_FIELDS: dict[str, tuple[str, ...]] = {
    "storage": (),
    # retries, timeouts and the breaker change how long a step insists, not whom it asks
    "llm": (
        "max_concurrency",
        "max_retries",
        "backoff_seconds",
        "request_timeout",
        "timeout_floor",
        "min_tokens_per_second",
        "breaker_failures",
        "breaker_seconds",
        "breaker_window",
        "breaker_rate",
        "replica_retry_seconds",
        "progress_every_seconds",
        "chunk_size",
    ),
    "lucene": ("b", "threads"),
    # the encoder's model is a name or a folder to load: the deployment's
    "encoder": ("query_prefix", "passage_prefix", "batch_size", "block_size", "precision"),
    "faiss_index": ("kind", "nlist", "nprobe", "hnsw_m", "ef_search", "use_gpu"),
    "search": ("threads", "timeout"),
    "quit_settings": (
        "profile",
        "reference_top_k",
        "distractors",
        "parametric_repeats",
        "parametric_temperature",
        "train_size",
        "test_size",
        "seed",
        "max_questions_per_source",
        "max_labeled_questions",
        "labeled_passages_per_question",
        "max_label_error_rate",
        "rerank_depth",
        "semantic_overlap_sample",
    ),
    "finetune_settings": (
        "profile",
        "positives",
        "negatives",
        "epochs",
        "max_steps",
        "batch_size",
        "learning_rate",
        "passage_max_length",
        "colbert_query_length",
        "colbert_query_augmentation",
        "seed",
        "device",
    ),
    "recor_settings": (
        "profile",
        "max_questions",
        "max_aspects",
        "max_facts",
        "min_new_words",
        "doc_threshold",
        "max_docs_per_turn",
        "mining_queries",
        "mining_hits",
        "negative_overlap",
    ),
    "wikiprofile_settings": (
        "profile",
        "pages_source",
        "wikipedia_project",
        "draw_strata",
        "max_pages",
        "min_words",
        "objects_per_page",
        "downsample_to",
        "seed",
        "n_samples",
        "temperature",
        "tau",
        "nan_strategy",
        "bootstrap_resamples",
    ),
    "check_settings": ("max_llm_failure_rate", "max_llm_error_rate"),
    # the reports' intervals and tests: what is computed, never where
    "uncertainty": ("resamples", "permutations", "seed", "level", "test", "alpha"),
}


def cache_folder() -> str:
    """The deployment's local cache folder (``BENCHFOUNDRY_CACHE``): the LLM answers on disk,
    the local indexes, ``make run``'s logs."""
    return os.environ.get("BENCHFOUNDRY_CACHE", ".cache")


def default_resources() -> dict:
    """The deployment's resources as the environment wires them (plain resources: the
    definitions make them :func:`deployment_resources`)."""
    cache = cache_folder()
    return {
        "storage": StorageResource(root=storage_root(), local_index_root=os.path.join(cache, "indexes")),
        # The IO manager reads its root from ``storage``: one setting moves every file.
        "io_manager": parquet_io_manager,
        # One registry for the partitions, the pools and the calls: the one the code location loaded.
        "llm": LLMResource(
            registry_path=REGISTRY_PATH,
            definitions_registry=REGISTRY_PATH,
            cache_dir=os.path.join(cache, "llm"),
            cache_type=os.environ.get("BENCHFOUNDRY_CACHE_TYPE", "disk"),
        ),
        "lucene": LuceneResource(),
        "encoder": EncoderResource(),
        "faiss_index": FaissIndexResource(),
        "quit_settings": QuitSettings(),
        "finetune_settings": FinetuneSettings(),
        "recor_settings": RecorSettings(),
        "wikiprofile_settings": WikiProfileSettings(),
        "search": DocumentSearchResource(),
        "check_settings": CheckSettings(),
        "uncertainty": UncertaintySettings(),
    }


def deployment_resources(resources: dict) -> dict:
    """Each configurable resource as :func:`resources.run_config.deployed` makes it: a run
    sets its :data:`RUN_FIELDS` and nothing else (a resource the allowlist does not name,
    none). Other resource definitions (the IO manager, which takes no config) pass as they are."""
    return {
        key: deployed(value, RUN_FIELDS.get(key, ())) if isinstance(value, dg.ConfigurableResource) else value
        for key, value in resources.items()
    }
