"""Issue 47's round trip: a benchmark's exported BEIR folder, read by BEIR's own loader and
indexed by the project's BM25 under another corpus name, scores what the benchmark's own
evaluation scored, every metric of every split to 1e-9."""

import dagster as dg
import polars as pl
import pytest

from assets.common.sharing import BEIR, BuildRecord, write_share
from assets.eval import metrics as eval_metrics
from assets.eval import retrieve
from assets.eval.quit.assets import TOP_K, QuitReport, quit_index, quit_retrieval_metrics, quit_runs
from assets.eval.runs import run_frame
from assets.quit import export
from resources.faiss_index import FaissIndexResource
from resources.lucene import LuceneResource
from resources.retrieval import load_retrievers
from resources.storage import StorageResource
from tests.assets.common.export_readers import beir_load
from tests.assets.quit.test_release import built

RECORD = BuildRecord("run-1", "demo", {"quit/benchmark_questions": "2"}, {"quit/source_questions": 40})
QUESTIONS_PER_SPLIT = 3


@pytest.fixture(scope="module")
def quit_tables():
    """Three questions of each split of the bundled sample's build, with all their passages
    (hint permutations, about 245 a question) and graded qrels, in the built tables' schemas.
    A QUIT question shares few words with its passages by design, so each is asked with its
    second hint and, as a distractor, the third hint of the next question: BM25 ranks some of
    another question's passages above its own."""
    questions, corpus, qrels = built()
    questions = pl.concat([questions.filter(pl.col("split") == s).head(QUESTIONS_PER_SPLIT) for s in export.SPLITS])
    hints = questions["hints"].to_list()
    asked = [
        f"{q} {own[1]} {hints[(i + 1) % len(hints)][2]}" for i, (q, own) in enumerate(zip(questions["question"], hints))
    ]
    questions = questions.with_columns(pl.Series("question", asked))
    ids = questions["question_id"]
    return questions, corpus.filter(pl.col("question_id").is_in(ids)), qrels.filter(pl.col("question_id").is_in(ids))


def beir_scores(folder, split: str, storage: StorageResource, lucene: LuceneResource) -> dict[str, float]:
    """One split of a BEIR folder as a BEIR user evaluates it: BEIR's loader, the project's
    BM25 (the registry's spec) indexing ``title text`` under its own corpus name, the
    benchmark's k and metrics, scored against the loaded qrels."""
    corpus, queries, qrels = beir_load(folder, split)
    spec = load_retrievers()["bm25"]
    docs = pl.DataFrame(
        [(pid, f"{d['title']} {d['text']}") for pid, d in corpus.items()], schema=["id", "contents"], orient="row"
    )
    retrieve.build(spec, f"beir_{split}", docs, lucene, None, storage)
    qids = list(queries)
    hits = retrieve.search(spec, f"beir_{split}", [queries[q] for q in qids], qids, TOP_K, lucene, None, storage)
    loaded = pl.DataFrame(
        [(q, d, s) for q, docs in qrels.items() for d, s in docs.items()],
        schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
        orient="row",
    )
    return eval_metrics.evaluate_run(loaded, run_frame(hits, spec.alias))


@pytest.mark.slow
def test_quits_beir_export_scores_as_its_bm25_evaluation(quit_tables, tmp_path):
    questions, corpus, qrels = quit_tables
    storage = StorageResource(root=str(tmp_path / "storage"))
    resources = {"lucene": LuceneResource(), "faiss_index": FaissIndexResource(), "storage": storage}
    with dg.build_asset_context(partition_key="bm25") as context:
        index = quit_index(context, benchmark_corpus=corpus, **resources).value
    assert index["documents"][0] == corpus.height
    with dg.build_asset_context(partition_key="bm25") as context:
        runs = quit_runs(
            context, quit_index=index, benchmark_questions=questions, benchmark_qrels=qrels, **resources
        ).value
    benchmark = quit_retrieval_metrics(
        dg.build_asset_context(),
        config=QuitReport(),
        quit_runs=runs,
        benchmark_qrels=qrels,
        benchmark_questions=questions,
    ).value
    own = {row["split"]: row for row in benchmark.iter_rows(named=True)}

    share = export.share(questions, corpus, qrels, RECORD, {}, {})
    write_share(str(tmp_path / "export"), share, formats=[BEIR])
    folder = tmp_path / "export" / "beir"
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    assert splits == sorted(export.SPLITS)

    metrics = eval_metrics.RETRIEVAL_METRICS
    for split in splits:
        round_trip = beir_scores(folder, split, storage, resources["lucene"])
        assert round_trip == pytest.approx({m: own[split][m] for m in metrics}, abs=1e-9, rel=0), split
    # BM25 ranks the split's passages among the other questions' (some of which share its
    # words): the scores are neither all 0 nor all perfect, so the comparison can fail.
    scores = {own[s][m] for s in splits for m in metrics}
    assert any(0 < v < 1 for v in scores) and max(scores) > 0
