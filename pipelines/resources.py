"""The resources every job gets, configured from the environment: ``BENCHFOUNDRY_STORAGE``
(the one storage root: tables, exports, run files, indexes), ``BENCHFOUNDRY_CACHE`` (the
LLM response cache, and the local disk of Lucene indexes when the root is remote) and
``BENCHFOUNDRY_CACHE_TYPE`` (``disk`` by default; ``postgres``: the answers in the table at
``BENCHFOUNDRY_CACHE_URL``, shared by every worker of a deployment)."""

from __future__ import annotations

import os

from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from checks.factories import CheckSettings
from resources.encoders import EncoderResource
from resources.faiss_index import FaissIndexResource
from resources.llm import REGISTRY_PATH, LLMResource
from resources.lucene import LuceneResource
from resources.search import DocumentSearchResource
from resources.storage import StorageResource, parquet_io_manager, storage_root


def default_resources() -> dict:
    cache = os.environ.get("BENCHFOUNDRY_CACHE", ".cache")
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
    }
