import numpy as np
import pytest

from resources.faiss_index import FaissIndexResource
from resources.retrieval import (
    RetrieverSpec,
    dense_search,
    encode_corpus,
    load_retrievers,
)

DOCS = ["The Eiffel Tower stands in Paris.", "Mount Everest is the highest mountain.",
        "The Pacific is the largest ocean.", "Jupiter is the largest planet."]


def test_registry_errors_name_the_retriever(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("retrievers:\n  x: {kind: sparse}\n")
    with pytest.raises(ValueError, match="'x' needs kind bm25 or dense"):
        load_retrievers(str(p))
    p.write_text("retrievers:\n  y: {kind: dense}\n")
    with pytest.raises(ValueError, match="'y' needs an encoder"):
        load_retrievers(str(p))
    assert set(load_retrievers()) == {"bm25", "minilm", "e5-small", "oracle"}


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_faiss_kinds_find_the_nearest_vector(tmp_path, kind):
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(200, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    res = FaissIndexResource(kind=kind, nlist=4, nprobe=4)
    uri = str(tmp_path / f"{kind}.faiss")
    res.save(res.build(vecs), uri)
    scores, ids = res.search(res.load(uri), vecs[[3, 150]], k=5)
    assert ids[:, 0].tolist() == [3, 150]
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["minilm", "e5-small"])
def test_dense_retrieval_with_bundled_encoders(encoder):
    spec = RetrieverSpec(alias=encoder, kind="dense", encoder=encoder)
    res = FaissIndexResource()
    index = res.build(encode_corpus(spec, DOCS))
    hits = dense_search(spec, res, index, ["d0", "d1", "d2", "d3"], ["Which is the biggest planet?", "Where is the Eiffel Tower?"], ["q1", "q2"], k=2)
    assert hits["q1"][0].docid == "d3" and hits["q2"][0].docid == "d0"
    assert [h.rank for h in hits["q1"]] == [1, 2]


@pytest.mark.slow
def test_bm25_on_lucene(tmp_path):
    from resources.lucene import LuceneResource

    lucene = LuceneResource()
    assert lucene.build(str(tmp_path / "t"), ({"id": f"d{i}", "contents": t} for i, t in enumerate(DOCS))) == 4
    hits = lucene.searcher(str(tmp_path / "t")).batch_search(["highest mountain", "largest ocean"], ["a", "b"], k=3)
    assert hits["a"][0].docid == "d1" and hits["b"][0].docid == "d2"
    assert hits["a"][0].score > 0
    # A whole conversation history before a question is more than Lucene's default 1,024
    # clauses (one per distinct term); the searcher lifts the cap rather than failing.
    filler = " ".join(f"term{i}x" for i in range(3000))
    assert lucene.searcher(str(tmp_path / "t")).search(f"{filler} highest mountain", 1)[0].docid == "d1"
    # Anserini skips empty documents; the build says so instead of losing one silently
    with pytest.raises(ValueError, match="2 documents written but 1 indexed"):
        lucene.build(str(tmp_path / "e"), [{"id": "x", "contents": "   "}, {"id": "y", "contents": "ocean"}])


@pytest.mark.parametrize("entry, error", [
    ("z: {kind: monot5}", "reranker 'z' needs kind pointwise or rankgpt or seq2seq or upr"),
    ("p: {kind: pointwise, model: nobody}", "reranker 'p' names unknown model alias 'nobody'"),
    ("s: {kind: seq2seq, model: /m, score: max}", "reranker 's': score must be softmax or logit"),
    ("u: {kind: upr}", "reranker 'u' needs a model"),
])
def test_reranker_registry_errors_name_the_reranker(tmp_path, entry, error):
    from resources.retrieval import load_rerankers

    p = tmp_path / "r.yaml"
    p.write_text(f"rerankers:\n  {entry}\n")
    with pytest.raises(ValueError, match=error):
        load_rerankers(str(p))


def test_default_rerankers():
    from resources.retrieval import load_rerankers

    specs = load_rerankers()
    assert {s.kind for s in specs.values()} == {"rankgpt", "pointwise", "upr"}
    assert specs["rankgpt"].model == "smollm2" and specs["rankgpt"].top_k == 10 and specs["rankgpt"].window == 10
