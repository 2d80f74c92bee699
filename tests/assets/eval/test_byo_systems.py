"""Bring your own system: a TREC run file or a Python entry point registered as a retriever
or reranker is evaluated by the same assets and metrics as the built-in kinds."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.eval import metrics as eval_metrics
from assets.eval import rerankers as rerank_methods
from assets.eval import retrieve
from assets.eval.runs import run_frame
from resources.faiss_index import FaissIndexResource
from resources.lucene import LuceneResource
from resources.retrieval import RetrieverSpec, load_rerankers, load_retrievers
from resources.storage import StorageResource

# ranx compiles its metrics once a session, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")

ROOT = Path(__file__).resolve().parents[3]

# Two QUIT splits. q1 and q2 are test questions, q3 a dev question that no file ranks.
# The test file ties d1/d2 for q1 and d4/d6 for q2, with rank columns that disagree with
# trec_eval's order (score descending, docid descending), and ranks a query id "zz" that is
# not a question. The dev file ranks q1, which is not a dev question: ignored, not merged.
TEST_RUN = """q1 Q0 d1 1 2.0 mine
q1 Q0 d2 2 2.0 mine
q1 Q0 d3 3 1.5 mine
q1 Q0 d4 4 0.5 mine
q2 Q0 d4 1 3 mine
q2 Q0 d6 2 3 mine
q2 Q0 d5 3 1 mine
zz Q0 d1 1 1 mine
"""
DEV_RUN = "q1 Q0 d9 1 5.0 mine\n"
QRELS = {"q1": {"d2": 2, "d3": 1, "d9": 1}, "q2": {"d5": 1}, "q3": {"d1": 2}}
SPLITS = {"test": ["q1", "q2"], "dev": ["q3"]}
DOCS = pl.DataFrame({"id": [f"d{i}" for i in range(1, 10)], "contents": [f"text {i}" for i in range(1, 10)]})


def qrels_frame() -> pl.DataFrame:
    rows = [(q, d, label) for q, docs in QRELS.items() for d, label in docs.items()]
    return pl.DataFrame(
        rows, schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64}, orient="row"
    )


def registry(tmp_path, text: str) -> str:
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return str(path)


def run_file_retriever(tmp_path):
    runs = tmp_path / "runs" / "quit"
    runs.mkdir(parents=True)
    (runs / "test.trec").write_text(TEST_RUN)
    (runs / "dev.trec").write_text(DEV_RUN)
    path = registry(
        tmp_path, f"retrievers:\n  mine: {{kind: run, path: '{tmp_path}/runs/{{benchmark}}/{{part}}.trec'}}\n"
    )
    return load_retrievers(path)["mine"]


@pytest.fixture
def storage(tmp_path):
    return StorageResource(root=str(tmp_path / "storage"))


def test_a_run_file_retriever_scores_as_pytrec_eval(tmp_path, storage):
    import pytrec_eval

    spec = run_file_retriever(tmp_path)
    assert retrieve.build(spec, "quit", DOCS, None, None, storage)[0] == 9
    files = retrieve.from_run_files(spec, "quit", "quit", SPLITS, 100, storage)
    assert [h.docid for h in files.hits["q1"]] == ["d2", "d1", "d3", "d4"]
    assert [h.docid for h in files.hits["q2"]] == ["d6", "d4", "d5"]
    assert files.missing == ["q3"] and files.ignored == ["q1", "zz"]
    assert files.metadata()["run_queries_missing"] == 1 and files.metadata()["run_ids_ignored"] == 2

    ours = eval_metrics.evaluate_run(
        qrels_frame(),
        run_frame(files.hits, "mine"),
        ["hit_rate@1", "hit_rate@5", "recall@2", "recall@10", "precision@2", "mrr", "map", "ndcg@2", "ndcg@10"],
    )
    # trec_eval (through pytrec_eval) on the raw file: it orders the tied scores itself.
    trec = {}
    for line in TEST_RUN.splitlines():
        qid, _, doc, _, score, _ = line.split()
        trec.setdefault(qid, {})[doc] = float(score)
    measures = {
        "hit_rate@1": "success_1",
        "hit_rate@5": "success_5",
        "recall@2": "recall_2",
        "recall@10": "recall_10",
        "precision@2": "P_2",
        "mrr": "recip_rank",
        "map": "map",
        "ndcg@2": "ndcg_cut_2",
        "ndcg@10": "ndcg_cut_10",
    }
    evaluator = pytrec_eval.RelevanceEvaluator(
        QRELS, {"success.1,5", "recall.2,10", "P.2", "recip_rank", "map", "ndcg_cut.2,10"}
    )
    per_query = evaluator.evaluate(trec)
    # trec_eval -c: a question with qrels and no ranking scores 0 in the mean.
    expected = {m: sum(per_query.get(q, {}).get(t, 0.0) for q in QRELS) / len(QRELS) for m, t in measures.items()}
    assert ours == pytest.approx(expected, abs=1e-9)
    # By hand: q1 ranks d2 (label 2) first thanks to the tie rule, q2 finds d5 third.
    assert ours["mrr"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert ours["hit_rate@1"] == pytest.approx(1 / 3)
    assert ours["recall@10"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    q1_ndcg = (2 + 1 / 2) / (2 + 1 / 1.584962500721156 + 1 / 2)
    assert ours["ndcg@10"] == pytest.approx((q1_ndcg + 1 / 2) / 3)


def test_run_files_that_do_not_fit_are_named_errors(tmp_path, storage):
    spec = run_file_retriever(tmp_path)
    retrieve.build(spec, "quit", DOCS.filter(pl.col("id") != "d6"), None, None, storage)
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"retriever 'mine': {tmp_path}/runs/quit/test.trec: query 'q2' ranks 1 "
            "documents that are not in the quit corpus (e.g. d6)"
        ),
    ):
        retrieve.from_run_files(spec, "quit", "quit", SPLITS, 100, storage)
    with pytest.raises(
        FileNotFoundError, match=re.escape(f"retriever 'mine': no run file at {tmp_path}/runs/quit/train.trec")
    ):
        retrieve.from_run_files(spec, "quit", "quit", {"train": ["q1"]}, 100, storage)
    (tmp_path / "runs" / "quit" / "dev.trec").write_text("q3 Q0 d1 1\n")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path}/runs/quit/dev.trec line 1: expected 6 columns")):
        retrieve.from_run_files(spec, "quit", "quit", {"dev": ["q3"]}, 100, storage)


QUIT_CORPUS = pl.DataFrame(
    {
        "passage_id": ["p1", "p2", "p3", "p4"],
        "text": [
            "The Eiffel Tower stands in Paris.",
            "Mount Everest is the highest mountain on Earth.",
            "The Pacific is the largest ocean.",
            "Jupiter is the largest planet.",
        ],
    }
)
QUIT_QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2"],
        "question": ["Which planet is the largest?", "Where is the highest mountain?"],
        "split": ["test", "test"],
    }
)
QUIT_QRELS = pl.DataFrame({"question_id": ["q1", "q2"], "passage_id": ["p4", "p2"], "label": [2, 2]})


@pytest.fixture
def with_tfidf(monkeypatch):
    """The registry with the bundled example entry point registered as ``tfidf`` (the
    default registry lists it as a commented example: the default run does not evaluate it)."""
    from assets.eval.quit import assets as quit
    from assets.eval.recor.assets import retrieval as recor

    specs = {
        **load_retrievers(),
        "tfidf": RetrieverSpec(alias="tfidf", kind="entrypoint", function="examples.retrievers:tfidf"),
    }
    for module in (quit, recor):
        monkeypatch.setattr(module, "load_retrievers", lambda: specs)


def test_the_bundled_entry_point_retriever_runs_through_the_quit_assets(storage, with_tfidf):
    from assets.eval.quit.assets import quit_index, quit_runs

    resources = {"lucene": LuceneResource(), "faiss_index": FaissIndexResource(), "storage": storage}
    with dg.build_asset_context(partition_key="tfidf") as context:
        index = quit_index(context, benchmark_corpus=QUIT_CORPUS, **resources).value
    assert index.row(0, named=True)["kind"] == "entrypoint" and index["documents"][0] == 4
    with dg.build_asset_context(partition_key="tfidf") as context:
        out = quit_runs(
            context, quit_index=index, benchmark_questions=QUIT_QUESTIONS, benchmark_qrels=QUIT_QRELS, **resources
        )
    run = out.value.sort("question_id", "rank")
    # "which", "is", "the" are stop words: q1 shares "planet" and "largest" with p4 and
    # "largest" with p3; q2 "highest" and "mountain" with p2; no other passage shares a term.
    assert run.select("question_id", "passage_id", "rank").rows() == [("q1", "p4", 1), ("q1", "p3", 2), ("q2", "p2", 1)]
    assert run["score"][0] > run["score"][1] > 0 and set(run["system"]) == {"tfidf"}
    assert eval_metrics.evaluate_run(QUIT_QRELS, run, ["mrr"]) == {"mrr": 1.0}
    assert Path(out.metadata["trec_run"].path).read_text().startswith("q1 Q0 p4 1 ")


RECOR_CORPUS = pl.DataFrame(
    {
        "doc_id": ["law1", "law2", "law3"],
        "content": [
            "A search warrant is needed to search a home.",
            "Consent to a search can be refused.",
            "Speed limits differ by state.",
        ],
    }
)


def recor_queries() -> pl.DataFrame:
    rows = [
        ("law", "c1_turn_1", "c1", 1, "baseline", "Can police search my home?"),
        ("law", "c1_turn_1", "c1", 1, "history", "Can police search my home? Conversation History: none"),
        ("law", "c1_turn_2", "c1", 2, "baseline", "Can I refuse consent?"),
        ("law", "c1_turn_2", "c1", 2, "history", "Can I refuse consent? Conversation History: search my home"),
    ]
    return pl.DataFrame(
        rows,
        schema={
            "domain": pl.String,
            "qid": pl.String,
            "conversation_id": pl.String,
            "turn_id": pl.Int32,
            "strategy": pl.String,
            "query": pl.String,
        },
        orient="row",
    ).with_columns(fallback=pl.lit(False))


def recor_context(retriever: str):
    return dg.build_asset_context(partition_key=dg.MultiPartitionKey({"domain": "law", "retriever": retriever}))


def test_the_entry_point_retriever_runs_through_the_recor_assets(storage, with_tfidf):
    from assets.eval.recor.assets import recor_runs

    with recor_context("tfidf") as context:
        out = recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )
    top = out.value.filter(pl.col("rank") == 1).sort("strategy", "question_id")
    assert top.select("strategy", "question_id", "passage_id").rows() == [
        ("baseline", "c1_turn_1", "law1"),
        ("baseline", "c1_turn_2", "law2"),
        ("history", "c1_turn_1", "law1"),
        ("history", "c1_turn_2", "law2"),
    ]
    assert set(out.value["domain"]) == {"law"} and out.metadata["truncated_queries"].value == 0


def test_a_run_file_retriever_answers_one_recor_strategy(tmp_path, storage, monkeypatch):
    from assets.eval.recor.assets import retrieval as recor

    # the task's query ids (RETECO) beside the project's: both name the same turns
    (tmp_path / "law.trec").write_text(
        "c1#turn1 Q0 law3 1 0.2 me\nc1#turn1 Q0 law1 2 0.9 me\nc9_turn_1 Q0 law1 1 1 me\n"
    )
    specs = load_retrievers(
        registry(
            tmp_path, f"retrievers:\n  tfidf: {{kind: run, path: '{tmp_path}/{{part}}.trec', strategy: history}}\n"
        )
    )
    monkeypatch.setattr(recor, "load_retrievers", lambda: specs)
    with recor_context("tfidf") as context:
        out = recor.recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )
    assert out.value.select("question_id", "passage_id", "rank", "strategy").rows() == [
        ("c1_turn_1", "law1", 1, "history"),
        ("c1_turn_1", "law3", 2, "history"),
    ]
    meta = out.metadata
    assert meta["run_queries_missing"].value == 1 and meta["run_queries_missing_ids"].value == "c1_turn_2"
    assert meta["run_ids_ignored"].value == 1 and meta["run_ids_ignored_examples"].value == "c9_turn_1"
    # One turn written both ways is one query, as RETECO's checker reads it (it was an error
    # before RECOR's run files followed the task's rules): law3 again on line 3 is a repeat.
    (tmp_path / "law.trec").write_text(
        "c1#turn1 Q0 law3 1 0.2 me\nc1_turn_1 Q0 law1 2 0.9 me\nc1_turn_1 Q0 law3 3 1.5 me\n"
    )
    with recor_context("tfidf") as context:
        out = recor.recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )
    assert out.value.select("question_id", "passage_id").rows() == [("c1_turn_1", "law1"), ("c1_turn_1", "law3")]
    assert out.metadata["run_duplicates_removed"].value == 1
    hyde = load_retrievers(
        registry(tmp_path, f"retrievers:\n  tfidf: {{kind: run, path: '{tmp_path}/{{part}}.trec', strategy: hyde}}\n")
    )
    monkeypatch.setattr(recor, "load_retrievers", lambda: hyde)
    with (
        recor_context("tfidf") as context,
        pytest.raises(ValueError, match="retriever 'tfidf': strategy 'hyde' is not one of"),
    ):
        recor.recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )


def test_a_recor_run_file_is_read_as_the_reteco_scorer_reads_it(tmp_path, storage, monkeypatch):
    """A repeated document keeps its first line, a document outside the corpus is discarded,
    both counted and named by file and line in the run's metadata; a turn left with nothing is
    missing. The rankings and counts are the ones ``reteco.check_run`` gives the same file."""
    from assets.eval.recor.assets import retrieval as recor
    from assets.eval.recor.reteco import rules as reteco

    run = tmp_path / "law.trec"
    run.write_bytes(
        b"c1#turn1 Q0 law2 1 0.9 me\n"
        b"c1#turn1 Q0 law9 2 0.8 me\n"  # not in the corpus
        b"c1#turn1 Q0 law1 3 0.5 me\n"
        b"c1#turn1 Q0 law2 4 0.99 me\n"  # again, scored higher: the first line's 0.9 stands
        b"c1#turn2 Q0 law9 1 1.0 me\n"  # the turn's only document is unknown
        b"c1#turn2 Q0 law9 2 0.5 me\n"
    )
    specs = load_retrievers(
        registry(tmp_path, f"retrievers:\n  mine: {{kind: run, path: '{tmp_path}/{{part}}.trec'}}\n")
    )
    monkeypatch.setattr(recor, "load_retrievers", lambda: specs)
    with recor_context("mine") as context:
        out = recor.recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )
    assert out.value.select("question_id", "passage_id", "rank").rows() == [
        ("c1_turn_1", "law2", 1),
        ("c1_turn_1", "law1", 2),
    ]
    meta = {k: v.value for k, v in out.metadata.items()}
    assert meta["run_duplicates_removed"] == 2 and meta["run_unknown_documents"] == 2
    assert meta["run_lines_dropped"] == (
        f"{run} line 2: c1#turn1 law9: not in the recor corpus: discarded; "
        f"{run} line 4: c1#turn1 law2: listed again after line 1: removed; "
        f"{run} line 5: c1#turn2 law9: not in the recor corpus: discarded; "
        f"{run} line 6: c1#turn2 law9: listed again after line 5: removed"
    )
    assert meta["run_queries_missing_ids"] == "c1_turn_2"

    turns = pl.DataFrame(
        {
            "qid": ["c1_turn_1", "c1_turn_2"],
            "domain": ["law", "law"],
            "conversation_id": ["c1", "c1"],
            "turn_id": [1, 2],
            "gold_doc_ids": [["law1"], ["law2"]],
        }
    )
    checked = reteco.check_run(run.read_bytes(), str(run), reteco.Targets.from_tables(turns, RECOR_CORPUS["doc_id"]))
    assert checked.rankings == {"c1_turn_1": ["law2", "law1"]} and checked.missing == ["c1_turn_2"]
    assert (checked.counts["duplicates_removed"], checked.counts["unknown_documents"]) == (2, 2)

    run.write_text("c1#turn1 Q0 law2 1 0.9 me\nc1#turn1 Q0 law1 2 me\n")
    with (
        recor_context("mine") as context,
        pytest.raises(ValueError, match=re.escape(f"{run} line 2: expected 6 columns")),
    ):
        recor.recor_runs(
            context,
            corpus=RECOR_CORPUS,
            recor_queries=recor_queries(),
            lucene=LuceneResource(),
            faiss_index=FaissIndexResource(),
            storage=storage,
        )


def answers(queries, corpus, k):
    return {"q1": [("d2", 0.9), ("d1", 0.4)]}


def invents_a_query(queries, corpus, k):
    return {"q1": [], "q7": [("d1", 1.0)]}


def unknown_document(queries, corpus, k):
    return {"q1": [("d404", 1.0)]}


def not_a_mapping(queries, corpus, k):
    return [("d1", 1.0)]


@pytest.mark.parametrize(
    "function, error",
    [
        (
            "invents_a_query",
            "retriever 'byo': tests.assets.eval.test_byo_systems:invents_a_query returned 1 query ids it was not given (e.g. q7)",
        ),
        ("unknown_document", "retriever 'byo': query 'q1': unknown document 'd404'"),
        (
            "not_a_mapping",
            "retriever 'byo': tests.assets.eval.test_byo_systems:not_a_mapping returned list, expected {qid: [(doc_id, score), ...]}",
        ),
    ],
)
def test_bad_entry_point_retrievers_are_named(tmp_path, storage, function, error):
    spec = load_retrievers(
        registry(
            tmp_path,
            f"retrievers:\n  byo: {{kind: entrypoint, function: 'tests.assets.eval.test_byo_systems:{function}'}}\n",
        )
    )["byo"]
    retrieve.build(spec, "c", DOCS, None, None, storage)
    with pytest.raises(ValueError, match=re.escape(error)):
        retrieve.search(spec, "c", ["a", "b"], ["q1", "q2"], 10, None, None, storage)


def test_an_entry_point_retriever_hits_are_its_ranking(tmp_path, storage):
    spec = load_retrievers(
        registry(
            tmp_path, "retrievers:\n  byo: {kind: entrypoint, function: 'tests.assets.eval.test_byo_systems:answers'}\n"
        )
    )["byo"]
    retrieve.build(spec, "c", DOCS, None, None, storage)
    hits = retrieve.search(spec, "c", ["a", "b"], ["q1", "q2"], 10, None, None, storage)
    # q2 got nothing back: no hits, so it scores 0 and the coverage check names it.
    assert {q: [(h.docid, h.rank, h.score) for h in hs] for q, hs in hits.items()} == {
        "q1": [("d2", 1, 0.9), ("d1", 2, 0.4)]
    }


HEAD = {"q1": ["d1", "d2", "d3", "d4"], "q2": ["d5", "d6"]}


def test_a_run_file_reranker_reorders_each_head(tmp_path):
    (tmp_path / "bm25.test.trec").write_text(
        "q1 Q0 d3 1 0.5 r\nq1 Q0 d1 2 0.9 r\nq1 Q0 d4 3 0.5 r\nq1 Q0 d8 4 0.7 r\nzz Q0 d1 1 1 r\n"
    )
    spec = load_rerankers(
        registry(tmp_path, f"rerankers:\n  mine: {{kind: run, path: '{tmp_path}/{{retriever}}.{{part}}.trec'}}\n")
    )["mine"]
    done = rerank_methods.from_run_files(spec, "bm25", "quit", {"test": ["q1", "q2", "q3"]}, HEAD)
    # d1 (0.9), then the 0.5 tie by docid descending (d4, d3); d8 is outside the head; d2 is
    # not listed and q2 not at all: they keep their retrieved order below.
    assert done.lists == {"q1": ["d1", "d4", "d3", "d2"], "q2": ["d5", "d6"]}
    assert done.unscored == 3 and done.found["run_rows_outside_head"] == 1
    assert done.found["run_queries_missing"] == 1 and done.found["run_ids_ignored"] == 1


def test_an_entry_point_reranker_reorders_each_head(tmp_path):
    spec = load_rerankers(
        registry(tmp_path, "rerankers:\n  overlap: {kind: entrypoint, function: 'examples.rerankers:overlap'}\n")
    )["overlap"]
    texts = {"d1": "speed limits", "d2": "consent to a search", "d3": "search warrant for a home", "d4": "nothing"}
    done = rerank_methods.rerank(spec, None, {"q1": "search my home"}, {"q1": ["d1", "d2", "d3", "d4"]}, texts, None)
    # d3 shares 2 of 3 words, d2 one, d1 and d4 none (tied, in retrieved order).
    assert done.lists == {"q1": ["d3", "d2", "d1", "d4"]} and done.unscored == 0


def partial(query, candidates):
    return [(candidates[-1][0], 1.0)]


def invents_a_passage(query, candidates):
    return [("elsewhere", 1.0)]


def test_an_entry_point_reranker_may_leave_candidates_out_but_not_invent_them(tmp_path):
    path = registry(
        tmp_path,
        "rerankers:\n  p: {kind: entrypoint, function: 'tests.assets.eval.test_byo_systems:partial'}\n"
        "  bad: {kind: entrypoint, function: 'tests.assets.eval.test_byo_systems:invents_a_passage'}\n",
    )
    specs = load_rerankers(path)
    texts = {d: d for d in ["d1", "d2", "d3"]}
    done = rerank_methods.rerank(specs["p"], None, {"q1": "x"}, {"q1": ["d1", "d2", "d3"]}, texts, None)
    assert done.lists == {"q1": ["d3", "d1", "d2"]} and done.unscored == 2
    with pytest.raises(ValueError, match=re.escape("reranker 'bad': query 'q1': unknown document 'elsewhere'")):
        rerank_methods.rerank(specs["bad"], None, {"q1": "x"}, {"q1": ["d1", "d2", "d3"]}, texts, None)


def test_the_tfidf_example_breaks_ties_as_trec_eval_and_caps_at_k():
    from examples.retrievers import tfidf

    corpus = {"a": "red apple", "b": "red apple", "c": "green pear", "z": "red apple"}
    out = tfidf({"q": "red apple", "none": "blue sky"}, corpus, 2)
    assert [d for d, _ in out["q"]] == ["z", "b"] and out["q"][0][1] == pytest.approx(1.0)
    assert out["none"] == []


def test_the_examples_import_nothing_from_the_project():
    """They stand for a user's own package: the contracts are all they may rely on."""
    project = {"assets", "resources", "checks", "pipelines"}
    for path in (ROOT / "examples").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not imported & project, f"{path.name} imports {sorted(imported & project)}"
