"""The retriever registry and the retrievers behind it (BM25 on Lucene, dense on FAISS,
late interaction in ``resources.multi_vector``), and the two ways to bring one's own system: a
TREC run file and a Python entry point.

Every retriever shares one verb: ``search(queries, qids, k) -> {qid: [Hit, ...]}``.

The package by role: :mod:`.registry` (the registry files and the trained models' written
registry), :mod:`.dense` (dense search), :mod:`.runs` (TREC run files) and
:mod:`.entrypoints` (a team's Python function); what importers use is importable from here.
"""

from resources.retrieval.dense import dense_search, encode_corpus
from resources.retrieval.entrypoints import EntryPointError, checked_ranking, entrypoint_search, load_function
from resources.retrieval.registry import (
    ENTRYPOINT,
    EXTERNAL_KINDS,
    MULTI_VECTOR,
    RERANKERS_PATH,
    RETRIEVERS_PATH,
    RUN,
    TRAINED_DIR,
    RerankerSpec,
    RetrieverSpec,
    load_rerankers,
    load_retrievers,
    register_trained,
    trained_path,
    trained_specs,
)
from resources.retrieval.runs import RunFiles, parse_trec_run, read_run_files, run_file_uri, trec_order

__all__ = [
    "ENTRYPOINT",
    "EXTERNAL_KINDS",
    "MULTI_VECTOR",
    "RERANKERS_PATH",
    "RETRIEVERS_PATH",
    "RUN",
    "TRAINED_DIR",
    "EntryPointError",
    "RerankerSpec",
    "RetrieverSpec",
    "RunFiles",
    "checked_ranking",
    "dense_search",
    "encode_corpus",
    "entrypoint_search",
    "load_function",
    "load_rerankers",
    "load_retrievers",
    "parse_trec_run",
    "read_run_files",
    "register_trained",
    "run_file_uri",
    "trained_path",
    "trained_specs",
    "trec_order",
]
