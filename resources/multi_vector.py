"""Late-interaction (ColBERT-style) retrievers through sentence-transformers'
``MultiVectorEncoder``, from a local folder: a model ``eval/quit_colbert_model`` trains, or
any PyLate or Stanford ColBERT checkpoint saved to a folder. Nothing is downloaded.

A text becomes one unit vector per token; a question's score for a passage is MaxSim: each
question token's best similarity to any passage token, summed. A model that says so in its
folder pads every question to a fixed length with [MASK] tokens, which get vectors and count
in MaxSim too (ColBERT's query augmentation): a model ``eval/quit_colbert_model`` trains, as
its settings say; a Stanford ColBERT checkpoint always, to its ``artifact.metadata``'s
``query_maxlen``; a PyLate one unless it turns ``do_query_expansion`` off. The passages' vectors
are computed once and kept in one file beside the other indexes (the vectors of every passage
end to end, the offset where each passage starts, and the passage ids); a search scores every
passage of it. The file holds one float32 vector per passage token (0.5 KiB at ColBERT's 128
dimensions) and is read whole into memory. Exhaustive MaxSim suits the bundled samples and a
dev-sized corpus; the 2.4M passages of the published QUIT corpus need a PLAID-style index
(centroids and compressed residuals), which is not built here.
"""

from __future__ import annotations

import io

import numpy as np

from resources.encoders import folder_model
from resources.lucene import Hit
from resources.retrieval import trec_order
from resources.storage import exists, read_bytes, write_bytes

# Queries scored against the whole corpus at once: the scores of one batch are held in memory.
QUERY_BATCH = 64


def encode(path: str, texts: list[str], kind: str, batch_size: int = 32) -> list[np.ndarray]:
    """Token vectors per text, ``(tokens, dim)`` float32, as a question (``kind`` query) or a
    passage (``document``): the model's own markers, length limit and skipped tokens apply."""
    if kind not in ("query", "document"):
        raise ValueError(f"kind {kind!r}: expected query or document")
    model = folder_model("MultiVectorEncoder", path)
    fn = model.encode_query if kind == "query" else model.encode_document
    return fn(texts, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False) if texts else []


def query_limit(model) -> int:
    """The tokens a question is cut at under ``model``: its [MASK]-padded length when it pads
    questions to a fixed one, else its question limit, else its one limit for every text."""
    encoder = model[0]
    expansion = getattr(encoder, "query_expansion", None)
    if expansion and expansion["strategy"] == "fixed":
        return expansion["length"]
    return getattr(encoder, "query_length", None) or model.max_seq_length


def truncated(path: str, questions: list[str]) -> int:
    """How many of ``questions`` the model in ``path`` cuts at its question limit (``query_limit``):
    counted in the tokens it reads, its query marker and special tokens included (it keeps a
    question's start)."""
    model = folder_model("MultiVectorEncoder", path)
    marker = (model.prompts or {}).get("query", "")
    counts = model.tokenizer([marker + q for q in questions])["input_ids"] if questions else []
    return sum(len(ids) > query_limit(model) for ids in counts)


def maxsim(queries: list[np.ndarray], documents: list[np.ndarray]) -> np.ndarray:
    """MaxSim of every query against every document, ``(queries, documents)``."""
    from sentence_transformers.multi_vector_encoder import maxsim as late_interaction

    return late_interaction(queries, documents).numpy()


def score(path: str, questions: list[str], passages: list[str]) -> np.ndarray:
    """MaxSim of every question against every passage under the model in ``path``."""
    return maxsim(encode(path, questions, "query"), encode(path, passages, "document"))


class TokenIndex:
    """Every passage's token vectors end to end (``vectors``), where each passage starts and
    ends in them (``offsets``, one more than there are passages) and the passage ids."""

    def __init__(self, ids: list[str], vectors: np.ndarray, offsets: np.ndarray):
        if len(offsets) != len(ids) + 1 or offsets[-1] != len(vectors):
            raise ValueError(f"{len(ids)} passages, {len(offsets)} offsets and {len(vectors)} vectors do not match")
        self.ids, self.vectors, self.offsets = ids, vectors, offsets

    @classmethod
    def build(cls, path: str, ids: list[str], texts: list[str]) -> TokenIndex:
        """Encode every passage once with the model in ``path``."""
        per_text = encode(path, texts, "document")
        offsets = np.cumsum([0, *(len(v) for v in per_text)], dtype=np.int64)
        vectors = np.concatenate(per_text).astype(np.float32) if per_text else np.zeros((0, 0), np.float32)
        return cls(list(ids), vectors, offsets)

    def documents(self) -> list[np.ndarray]:
        """Each passage's vectors, as views of ``vectors``."""
        return np.split(self.vectors, self.offsets[1:-1]) if self.ids else []

    def save(self, uri: str) -> None:
        buffer = io.BytesIO()
        np.savez(buffer, vectors=self.vectors, offsets=self.offsets, ids=np.array(self.ids, dtype=str))
        write_bytes(uri, buffer.getvalue())

    @classmethod
    def load(cls, uri: str) -> TokenIndex:
        if not exists(uri):
            raise FileNotFoundError(f"no multi-vector index at {uri}")
        with np.load(io.BytesIO(read_bytes(uri)), allow_pickle=False) as saved:
            return cls(saved["ids"].tolist(), saved["vectors"], saved["offsets"])


def top_hits(scores: np.ndarray, ids: list[str], k: int) -> list[Hit]:
    """The ``k`` best of one query's scores, best first, equal scores by passage id as
    trec_eval orders them (``trec_order``), so a TREC file of the run reads back unchanged."""
    if len(scores) > k:
        # Every passage scoring at least the k-th best: ties at the cut are ordered by id too.
        keep = np.flatnonzero(scores >= np.partition(scores, -k)[-k])
    else:
        keep = np.arange(len(scores))
    ranked = trec_order({ids[i]: float(scores[i]) for i in keep})[:k]
    return [Hit(doc, value, rank) for rank, (doc, value) in enumerate(ranked, start=1)]


def search(path: str, index: TokenIndex, queries: list[str], qids: list[str], k: int) -> dict[str, list[Hit]]:
    """Top-k passages of ``index`` per query id by exhaustive MaxSim, queries encoded with the
    model in ``path`` (the one that encoded the passages), in batches of ``QUERY_BATCH``."""
    documents = index.documents()
    out: dict[str, list[Hit]] = {}
    for start in range(0, len(queries), QUERY_BATCH):
        batch = encode(path, queries[start : start + QUERY_BATCH], "query")
        for qid, row in zip(qids[start : start + QUERY_BATCH], maxsim(batch, documents)):
            out[qid] = top_hits(row, index.ids, k)
    return out
