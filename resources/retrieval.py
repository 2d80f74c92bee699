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
    specs = _load(path, "retrievers", RetrieverSpec, {"bm25", "dense", "oracle"})
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


LLM_RERANKERS = {"rankgpt", "pointwise", "upr"}


@dataclasses.dataclass(frozen=True)
class RerankerSpec:
    alias: str
    kind: str
    # An alias of the model registry for LLM rerankers; a local path (or a cached model
    # name) for seq2seq ones.
    model: str | None = None
    top_k: int = 100
    window: int = 20
    step: int = 10
    top_logprobs: int = 20
    true_token: str = "true"
    false_token: str = "false"
    score: str = "softmax"
    batch_size: int = 16


def load_rerankers(path: str = RERANKERS_PATH, models_path: str | None = None) -> dict[str, RerankerSpec]:
    from resources.llm import REGISTRY_PATH, load_registry

    specs = _load(path, "rerankers", RerankerSpec, LLM_RERANKERS | {"seq2seq"})
    registry = load_registry(models_path or REGISTRY_PATH)
    for spec in specs.values():
        if not spec.model:
            raise ValueError(f"{path}: reranker {spec.alias!r} needs a model")
        if spec.kind in LLM_RERANKERS and spec.model not in registry:
            raise ValueError(f"{path}: reranker {spec.alias!r} names unknown model alias {spec.model!r}")
        if spec.kind == "seq2seq" and spec.score not in {"softmax", "logit"}:
            raise ValueError(f"{path}: reranker {spec.alias!r}: score must be softmax or logit")
        if spec.top_k < 1:
            raise ValueError(f"{path}: reranker {spec.alias!r}: top_k must be positive")
    return specs
