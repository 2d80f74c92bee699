import re

import numpy as np
import pytest

from resources.faiss_index import FaissIndexResource
from resources.retrieval import RetrieverSpec, dense_search, encode_corpus, load_retrievers

DOCS = [
    "The Eiffel Tower stands in Paris.",
    "Mount Everest is the highest mountain.",
    "The Pacific is the largest ocean.",
    "Jupiter is the largest planet.",
]


def test_registry_errors_name_the_retriever(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("retrievers:\n  x: {kind: sparse}\n")
    with pytest.raises(ValueError, match="'x' needs kind bm25 or dense or entrypoint or multi_vector or oracle or run"):
        load_retrievers(str(p))
    p.write_text("retrievers:\n  y: {kind: dense}\n")
    with pytest.raises(ValueError, match="'y' needs an encoder"):
        load_retrievers(str(p))
    assert set(load_retrievers()) == {"bm25", "minilm", "e5-small", "oracle"}
    # the registry's commented example entry point parses as written
    p.write_text('retrievers:\n  tfidf: {kind: entrypoint, function: "examples.retrievers:tfidf"}\n')
    tfidf = load_retrievers(str(p))["tfidf"]
    assert tfidf.kind == "entrypoint" and tfidf.function == "examples.retrievers:tfidf"


@pytest.mark.parametrize(
    "section, entry, error",
    [
        ("retrievers", "r: {kind: run}", "run retriever 'r' needs a path"),
        (
            "retrievers",
            "r: {kind: run, path: 'runs/{split}.trec'}",
            r"run retriever 'r': path names unknown fields \['split'\]",
        ),
        (
            "retrievers",
            "r: {kind: run, path: 'runs/{part.trec'}",
            "run retriever 'r': path 'runs/{part.trec' is not a template",
        ),
        (
            "retrievers",
            "e: {kind: entrypoint}",
            r"entrypoint retriever 'e' needs a function \(package.module:function\)",
        ),
        (
            "retrievers",
            "e: {kind: entrypoint, function: examples.retrievers}",
            "function 'examples.retrievers' is not package.module:function",
        ),
        (
            "retrievers",
            "e: {kind: entrypoint, function: 'm:f', encoder: x, file: y}",
            r"retriever 'e' has unknown keys \['file'\]",
        ),
        ("retrievers", "c: {kind: multi_vector}", "multi_vector retriever 'c' needs an encoder"),
        (
            "retrievers",
            "c: {kind: multi_vector, encoder: /m/colbert, query_prefix: 'q: '}",
            "multi_vector retriever 'c': the model's own query and document markers apply",
        ),
        ("rerankers", "r: {kind: run, top_k: 5}", "run reranker 'r' needs a path"),
        ("rerankers", "e: {kind: entrypoint}", "entrypoint reranker 'e' needs a function"),
        ("rerankers", "e: {kind: entrypoint, function: 'm:f', top_k: 0}", "reranker 'e': top_k must be positive"),
    ],
)
def test_byo_registry_errors_name_the_alias_and_the_key(tmp_path, section, entry, error):
    from resources.retrieval import load_rerankers

    p = tmp_path / "r.yaml"
    p.write_text(f"{section}:\n  {entry}\n")
    with pytest.raises(ValueError, match=error):
        (load_retrievers if section == "retrievers" else load_rerankers)(str(p))


def test_byo_kinds_load_without_a_model(tmp_path):
    from resources.retrieval import load_rerankers

    p = tmp_path / "r.yaml"
    p.write_text(
        "retrievers:\n  mine: {kind: run, path: 'runs/{benchmark}/{part}.trec', strategy: history}\n"
        "rerankers:\n  r: {kind: run, path: 'runs/{retriever}.{part}.trec'}\n  e: {kind: entrypoint, function: 'm:f', top_k: 5}\n"
    )
    mine = load_retrievers(str(p))["mine"]
    assert (mine.kind, mine.path, mine.strategy) == ("run", "runs/{benchmark}/{part}.trec", "history")
    rerankers = load_rerankers(str(p))
    assert rerankers["r"].model is None and rerankers["r"].top_k == 100 and rerankers["e"].top_k == 5


def test_a_trec_run_is_ranked_as_trec_eval_ranks_it():
    from resources.retrieval import parse_trec_run

    text = (
        "q1 Q0 d1 1 2.0 tag\n"
        "q1\tQ0 d10 7 2.0 tag\n"  # tied with d1: docid descending puts "d10" first
        "\n"
        "q1 Q0 d2 2 2.5 tag\n"  # the rank column says 2, the score says first
        "q2 0 x 0 -1e3 other\n"
    )
    hits = parse_trec_run(text, "f.trec")
    assert [(h.docid, h.rank, h.score) for h in hits["q1"]] == [("d2", 1, 2.5), ("d10", 2, 2.0), ("d1", 3, 2.0)]
    assert [(h.docid, h.rank, h.score) for h in hits["q2"]] == [("x", 1, -1000.0)]


@pytest.mark.parametrize(
    "line, error",
    [
        ("q1 Q0 d2 2 0.5", "f.trec line 2: expected 6 columns (qid Q0 docid rank score tag), found 5"),
        ("q1 Q0 d2 2 0.5 t extra", "f.trec line 2: expected 6 columns"),
        ("q1 Q0 d2 two 0.5 t", "f.trec line 2: column 4 (rank) is not an integer"),
        ("q1 Q0 d2 2 high t", "f.trec line 2: column 5 (score) is not a number"),
        ("q1 Q0 d2 2 nan t", "f.trec line 2: column 5 (score) is not finite"),
        ("q1 Q0 d1 2 0.5 t", "f.trec line 2: the document (column 3) is listed twice for its query (first on line 1)"),
    ],
)
def test_malformed_run_lines_are_named_by_file_and_line(line, error):
    from resources.retrieval import parse_trec_run

    with pytest.raises(ValueError, match=re.escape(error)) as raised:
        parse_trec_run(f"q1 Q0 d1 1 0.9 t\n{line}\n", "f.trec")
    # the file may be any file a template points at: its text is never quoted
    assert "'" not in str(raised.value)


def test_a_lenient_read_drops_repeats_and_unknown_documents_before_taking_the_top_k(tmp_path):
    from resources.retrieval import read_run_files

    # a byte order mark, a repeat whose later score is higher, an unknown document ranked
    # first, and a query id of no part (its own repeat is not counted)
    (tmp_path / "dev.trec").write_text(
        "\ufeffq1 Q0 d1 1 0.5 t\nq1 Q0 x 2 0.9 t\nq1 Q0 d2 3 0.4 t\nq1 Q0 d3 4 0.3 t\n"
        "q1 Q0 d3 5 0.95 t\nzz Q0 d1 1 1 t\nzz Q0 d1 2 1 t\n",
        encoding="utf-8",
    )
    spec = RetrieverSpec(alias="mine", kind="run", path=str(tmp_path / "{part}.trec"))
    files = read_run_files(spec, "recor", {"dev": ["q1"]}, k=2, documents={"d1", "d2", "d3"}, lenient=True)
    assert [(h.docid, h.rank, h.score) for h in files.hits["q1"]] == [("d1", 1, 0.5), ("d2", 2, 0.4)]
    assert [(d.line.number, d.reason) for d in files.dropped] == [(2, "unknown_document"), (5, "duplicate")]
    assert files.ignored == ["zz"] and files.metadata()["run_duplicates_removed"] == 1
    # read strictly (QUIT), the same file is an error at its first repeat
    with pytest.raises(
        ValueError,
        match=re.escape("dev.trec line 5: the document (column 3) is listed twice for its query (first on line 4)"),
    ):
        read_run_files(spec, "quit", {"dev": ["q1"]}, k=2, documents={"d1", "d2", "d3"})


@pytest.mark.parametrize(
    "ranked, error",
    [
        ("d1", "query 'q1': expected a list of (doc_id, score) pairs, got str"),
        ([("d1", 0.5, 1)], "query 'q1': item 1 is ('d1', 0.5, 1), not a (doc_id, score) pair"),
        ([(1, 0.5)], "query 'q1': item 1: doc id 1 is not a string"),
        ([("d1", "high")], "query 'q1': document 'd1': score 'high' is not a finite number"),
        ([("d1", float("inf"))], "query 'q1': document 'd1': score inf is not a finite number"),
        ([("nope", 1.0)], "query 'q1': unknown document 'nope'"),
        ([("d1", 1.0), ("d1", 0.5)], "query 'q1': document 'd1' is ranked twice"),
        (
            [("d1", 0.5), ("d2", 0.9)],
            "query 'q1': document 'd2' (rank 2) scores 0.9, above the 0.5 of rank 1: return the list best first",
        ),
        ([("d1", 0.9), ("d2", 0.5), ("d3", 0.1)], "query 'q1': 3 documents returned, more than the k=2 asked for"),
    ],
)
def test_entry_point_rankings_are_checked(ranked, error):
    from resources.retrieval import checked_ranking

    with pytest.raises(ValueError, match=re.escape(f"retriever 'x': {error}")):
        checked_ranking("retriever 'x'", "q1", ranked, {"d1", "d2", "d3"}, limit=2)
    assert checked_ranking("retriever 'x'", "q1", [("d2", 1), ("d1", 1.0)], {"d1", "d2"}) == [("d2", 1.0), ("d1", 1.0)]


@pytest.mark.parametrize(
    "target, error",
    [
        (
            "no_such_package.mod:f",
            "retriever 'x': cannot import module 'no_such_package.mod' of entry point 'no_such_package.mod:f'",
        ),
        (
            "examples.retrievers:bm42",
            "retriever 'x': entry point 'examples.retrievers:bm42': examples.retrievers has no attribute 'bm42'",
        ),
        ("examples.retrievers:BATCH", "retriever 'x': entry point 'examples.retrievers:BATCH' is not callable"),
    ],
)
def test_entry_points_that_do_not_resolve_are_named(target, error):
    from resources.retrieval import load_function

    with pytest.raises(ValueError, match=re.escape(error)):
        load_function("retriever 'x'", target)


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
    index = res.build_blocks(encode_corpus(spec, DOCS))
    hits = dense_search(
        spec,
        res,
        index,
        ["d0", "d1", "d2", "d3"],
        ["Which is the biggest planet?", "Where is the Eiffel Tower?"],
        ["q1", "q2"],
        k=2,
    )
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


@pytest.mark.parametrize(
    "entry, error",
    [
        (
            "z: {kind: monot5}",
            "reranker 'z' needs kind cross_encoder or entrypoint or pointwise or rankgpt or run or seq2seq or upr",
        ),
        ("p: {kind: pointwise, model: nobody}", "reranker 'p' names unknown model alias 'nobody'"),
        ("s: {kind: seq2seq, model: /m, score: max}", "reranker 's': score must be softmax or logit"),
        ("u: {kind: upr}", "reranker 'u' needs a model"),
    ],
)
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
