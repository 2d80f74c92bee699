"""The resources every job gets, configured from the environment."""

from __future__ import annotations

import os

from assets.quit.settings import QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from checks.factories import CheckSettings
from resources.encoders import EncoderResource
from resources.faiss_index import FaissIndexResource
from resources.llm import LLMResource
from resources.lucene import LuceneResource
from resources.search import DocumentSearchResource
from resources.storage import ParquetIOManager, storage_root


def default_resources() -> dict:
    cache = os.environ.get("BENCHFOUNDRY_CACHE", ".cache")
    return {
        "io_manager": ParquetIOManager(root=storage_root()),
        "llm": LLMResource(cache_dir=os.path.join(cache, "llm")),
        "lucene": LuceneResource(index_root=os.path.join(cache, "lucene")),
        "encoder": EncoderResource(),
        "faiss_index": FaissIndexResource(),
        "quit_settings": QuitSettings(),
        "recor_settings": RecorSettings(),
        "wikiprofile_settings": WikiProfileSettings(),
        "search": DocumentSearchResource(index_root=os.path.join(cache, "search")),
        "check_settings": CheckSettings(),
    }
