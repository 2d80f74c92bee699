"""The retriever registry and the retrievers behind it (BM25 on Lucene, dense on FAISS).

Every retriever shares one verb: ``search(queries, qids, k) -> {qid: [Hit, ...]}``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from resources.encoders import encode_texts
from resources.lucene import Hit

RETRIEVERS_PATH = str(Path(__file__).with_name("retrievers.yaml"))


@dataclasses.dataclass(frozen=True)
class RetrieverSpec:
    alias: str
    kind: str
    k1: float = 0.9
    b: float = 0.4
    encoder: str | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None


def _load(path: str, section: str, spec_type: type, kinds: set[str]) -> dict:
    """Parse one registry section into specs; errors name the file and the alias."""
    with open(path, encoding="utf-8") as f:
        raw = (yaml.safe_load(f) or {}).get(section)
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{path}: expected a non-empty {section!r} mapping")
    specs = {}
    for alias, entry in raw.items():
        if not isinstance(entry, dict) or entry.get("kind") not in kinds:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} needs kind {' or '.join(sorted(kinds))}")
        unknown = set(entry) - {f.name for f in dataclasses.fields(spec_type)}
        if unknown:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} has unknown keys {sorted(unknown)}")
        specs[alias] = spec_type(alias=alias, **entry)
    return specs


def load_retrievers(path: str = RETRIEVERS_PATH) -> dict[str, RetrieverSpec]:
    specs = _load(path, "retrievers", RetrieverSpec, {"bm25", "dense"})
    for spec in specs.values():
        if spec.kind == "dense" and not spec.encoder:
            raise ValueError(f"{path}: dense retriever {spec.alias!r} needs an encoder")
    return specs


def dense_search(spec: RetrieverSpec, faiss_resource, index, doc_ids: list[str], queries: list[str],
                 qids: list[str], k: int) -> dict[str, list[Hit]]:
    """Encode the queries with the retriever's encoder and search its FAISS index."""
    vecs = encode_texts(spec.encoder, queries, "query", query_prefix=spec.query_prefix)
    scores, ids = faiss_resource.search(index, vecs, k)
    out = {}
    for qid, row_scores, row_ids in zip(qids, scores, ids):
        hits = [(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i >= 0]
        out[qid] = [Hit(doc_ids[i], s, r + 1) for r, (i, s) in enumerate(hits)]
    return out


def encode_corpus(spec: RetrieverSpec, texts: list[str]):
    return encode_texts(spec.encoder, texts, "passage", passage_prefix=spec.passage_prefix)


RERANKERS_PATH = str(Path(__file__).with_name("rerankers.yaml"))


@dataclasses.dataclass(frozen=True)
class RerankerSpec:
    alias: str
    kind: str
    model: str | None = None
    window: int = 20
    step: int = 10
    top_k: int = 100


def load_rerankers(path: str = RERANKERS_PATH) -> dict[str, RerankerSpec]:
    return _load(path, "rerankers", RerankerSpec, {"rankgpt"})
