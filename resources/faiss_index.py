"""FAISS vector indexes: flat inner product by default, IVF or HNSW for large corpora.

Indexes move to the GPU when faiss sees one (faiss-gpu, the ``[gpu]`` extra) and stay on
the CPU otherwise. They are persisted through the storage root as serialized bytes, so a
local path or an s3:// root both work.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import dagster as dg
import numpy as np

from resources.storage import exists, read_bytes, write_bytes


def gpu_count() -> int:
    import faiss

    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


class FaissIndexResource(dg.ConfigurableResource):
    """Builds, saves, loads and searches FAISS indexes over L2-normalised vectors."""

    kind: str = "flat"  # flat | ivf | hnsw
    nlist: int = 1024
    nprobe: int = 16
    hnsw_m: int = 32
    ef_search: int = 128
    use_gpu: bool = True  # used only when faiss sees a GPU

    def build(self, vectors: np.ndarray):
        return self.build_blocks([vectors])

    def build_blocks(self, blocks: Iterable[np.ndarray]):
        """An index of the vectors ``blocks`` yields (at least one block, all of one width),
        added as they come: a corpus streams from its encoder into a flat or HNSW index with
        one block held beside the index, never a second copy of every vector. IVF trains its
        lists on every vector, so its blocks are gathered first (the index holds them all
        anyway). A flat index is the same whatever the blocks; an HNSW graph depends on the
        order its points are linked in, as it already does on the thread count."""
        import faiss

        stream = iter(blocks)
        first = np.ascontiguousarray(next(stream), dtype=np.float32)
        dim = first.shape[1]
        if self.kind == "ivf":
            vectors = np.concatenate([first, *(np.asarray(b, dtype=np.float32) for b in stream)])
            # IVF needs enough points per list to train; small corpora get fewer lists.
            nlist = max(1, min(self.nlist, len(vectors) // 39))
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(vectors)
            index.nprobe = min(self.nprobe, nlist)
            index.add(vectors)
            return index
        if self.kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = self.ef_search
        else:
            raise ValueError(f"unknown FAISS index kind {self.kind!r} (flat, ivf or hnsw)")
        for block in itertools.chain([first], stream):
            index.add(np.ascontiguousarray(block, dtype=np.float32))
        return index

    def to_device(self, index):
        """The index on GPU 0 when there is one (HNSW has no GPU implementation)."""
        import faiss

        if self.use_gpu and self.kind != "hnsw" and gpu_count() > 0:
            return faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
        return index

    def save(self, index, uri: str) -> None:
        import faiss

        write_bytes(uri, faiss.serialize_index(index).tobytes())

    def load(self, uri: str):
        import faiss

        if not exists(uri):
            raise FileNotFoundError(f"no FAISS index at {uri}")
        return faiss.deserialize_index(np.frombuffer(read_bytes(uri), dtype=np.uint8))

    def search(self, index, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(k, index.ntotal)
        scores, ids = self.to_device(index).search(np.ascontiguousarray(queries, dtype=np.float32), k)
        return scores, ids
