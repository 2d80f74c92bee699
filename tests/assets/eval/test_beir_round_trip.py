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
from assets.eval.recor import rules as conversational
from assets.eval.runs import run_frame
from assets.eval.uncertainty import UncertaintySettings
from assets.quit import export
from assets.recor import export as recor_export
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


def beir_scores(folder, splits: list[str], storage: StorageResource, lucene: LuceneResource) -> dict[str, dict]:
    """Each split of a BEIR folder as a BEIR user evaluates it: BEIR's loader, the project's
    BM25 (the registry's spec) indexing ``title text`` under its own corpus name (once: every
    split reads the same corpus), the benchmark's k and metrics, scored against the loaded qrels."""
    spec, scores = load_retrievers()["bm25"], {}
    for split in splits:
        corpus, queries, qrels = beir_load(folder, split)
        if not scores:
            docs = pl.DataFrame(
                [(pid, f"{d['title']} {d['text']}") for pid, d in corpus.items()],
                schema=["id", "contents"],
                orient="row",
            )
            retrieve.build(spec, "beir", docs, lucene, None, storage)
        qids = list(queries)
        hits = retrieve.search(spec, "beir", [queries[q] for q in qids], qids, TOP_K, lucene, None, storage)
        loaded = pl.DataFrame(
            [(q, d, s) for q, docs in qrels.items() for d, s in docs.items()],
            schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
            orient="row",
        )
        scores[split] = eval_metrics.evaluate_run(loaded, run_frame(hits, spec.alias))
    return scores


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
        uncertainty=UncertaintySettings(),
    ).value
    own = {row["split"]: row for row in benchmark.iter_rows(named=True)}

    share = export.share(questions, corpus, qrels, RECORD, {}, {})
    write_share(str(tmp_path / "export"), share, formats=[BEIR])
    folder = tmp_path / "export" / "beir"
    splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
    assert splits == sorted(export.SPLITS)

    metrics = eval_metrics.RETRIEVAL_METRICS
    for split, round_trip in beir_scores(folder, splits, storage, resources["lucene"]).items():
        assert round_trip == pytest.approx({m: own[split][m] for m in metrics}, abs=1e-9, rel=0), split
    # BM25 ranks the split's passages among the other questions' (some of which share its
    # words): the scores are neither all 0 nor all perfect, so the comparison can fail.
    scores = {own[s][m] for s in splits for m in metrics}
    assert any(0 < v < 1 for v in scores) and max(scores) > 0


# One RECOR domain: two conversations, a turn with two gold documents each, and distractors
# that share the questions' words, so that BM25 ranks some gold below another document.
RECOR_DOMAIN = "law"
RECOR_RECORD = BuildRecord("run-2", "demo", {"recor/benchmark": "2"}, {"recor/turns": 5})
RECOR_TURNS = [
    ("law_1", "When may police search a car without a warrant?", "With probable cause.", ["d1"]),
    ("law_1", "What if I refuse consent to the search?", "Refusal is not cause.", ["d2", "d3"]),
    ("law_1", "Can they use a dog to sniff the car?", "A sniff is not a search.", ["d4"]),
    ("law_2", "How long does a landlord have to return a security deposit?", "Thirty days.", ["d5"]),
    ("law_2", "Can the landlord keep the deposit for cleaning?", "Beyond wear and tear.", ["d6", "d7"]),
]
RECOR_DOCUMENTS = {
    "d1": "The automobile exception lets police search a car with probable cause and no warrant.",
    "d2": "A person may refuse consent to a search; refusal alone is not probable cause.",
    "d3": "Consent searches need voluntary consent, not mere submission to authority.",
    "d4": "A dog sniff around a car during a lawful traffic stop is not a search.",
    "d5": "Most states require a landlord to return a security deposit within thirty days.",
    "d6": "A landlord may deduct cleaning costs beyond normal wear and tear from a deposit.",
    "d7": "Normal wear and tear cannot be charged to a tenant.",
    "n1": "Police need a warrant to search a home, and consent can replace it.",
    "n2": "The landlord must give notice before entering the tenant's home.",
    "n3": "A dog bite makes the owner liable in many states.",
    "n4": "Car insurance is required in every state, and police may ask for it.",
}


def recor_tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A domain's ``recor/benchmark`` turns (with ``qid``) and ``recor/corpus`` documents."""
    rows, turn = [], {}
    for conversation, query, answer, gold in RECOR_TURNS:
        turn[conversation] = turn.get(conversation, 0) + 1
        rows.append(
            {
                "domain": RECOR_DOMAIN,
                "conversation_id": conversation,
                "turn_id": turn[conversation],
                "qid": f"{conversation}_turn_{turn[conversation]}",
                "query": query,
                "answer": answer,
                "gold_doc_ids": gold,
                "conversation_history": "",
                "target": "",
                "relevance_signals": [],
                "irrelevance_signals": [],
            }
        )
    turns = pl.DataFrame(
        rows, schema_overrides={"relevance_signals": pl.List(pl.String), "irrelevance_signals": pl.List(pl.String)}
    )
    corpus = pl.DataFrame(
        {
            "domain": RECOR_DOMAIN,
            "doc_id": list(RECOR_DOCUMENTS),
            "content": list(RECOR_DOCUMENTS.values()),
            "role": ["positive" if d.startswith("d") else "negative" for d in RECOR_DOCUMENTS],
        }
    )
    return turns, corpus


@pytest.mark.slow
def test_recors_beir_export_scores_as_its_bm25_evaluation(scripted_llm, tmp_path):
    """RECOR's ``beir/<domain>/baseline/`` folder, read by BEIR's loader and indexed by the
    project's BM25, scores every turn as ``recor_runs`` and ``recor_retrieval_metrics``
    scored the baseline strategy (nDCG@10, MAP@10, Recall@10, MRR), and so the report's
    domain means, to 1e-9."""
    from assets.eval.recor.assets import recor_queries, recor_retrieval_metrics, recor_runs

    turns, corpus = recor_tables()
    storage = StorageResource(root=str(tmp_path / "storage"))
    resources = {"lucene": LuceneResource(), "faiss_index": FaissIndexResource(), "storage": storage}
    with dg.build_asset_context(partition_key=RECOR_DOMAIN, resources={"llm": scripted_llm}) as context:
        queries = recor_queries(context, benchmark=turns).value
    key = dg.MultiPartitionKey({"domain": RECOR_DOMAIN, "retriever": "bm25"})
    with dg.build_asset_context(partition_key=key) as context:
        runs = recor_runs(context, corpus=corpus, recor_queries=queries, **resources).value
    scores = recor_retrieval_metrics(
        dg.build_asset_context(), recor_runs=runs, benchmark=turns, uncertainty=UncertaintySettings()
    ).value
    baseline = scores.filter((pl.col("strategy") == "baseline") & (pl.col("retriever") == "bm25"))
    metrics = conversational.TURN_METRICS
    own = {row["qid"]: {m: row[m] for m in metrics} for row in baseline.iter_rows(named=True)}
    assert sorted(own) == sorted(turns["qid"])
    [report] = conversational.full_metrics(scores, strategy="baseline").iter_rows(named=True)

    share = recor_export.share({RECOR_DOMAIN: (turns, corpus)}, RECOR_RECORD, {}, {})
    write_share(str(tmp_path / "export"), share, formats=[BEIR])
    folder = tmp_path / "export" / "beir" / RECOR_DOMAIN / "baseline"
    loaded_corpus, loaded_queries, loaded_qrels = beir_load(folder, "test")
    spec = load_retrievers()["bm25"]
    docs = pl.DataFrame(
        [(pid, f"{d['title']} {d['text']}") for pid, d in loaded_corpus.items()],
        schema=["id", "contents"],
        orient="row",
    )
    retrieve.build(spec, "beir_recor", docs, resources["lucene"], None, storage)
    qids = list(loaded_queries)
    hits = retrieve.search(
        spec, "beir_recor", [loaded_queries[q] for q in qids], qids, 100, resources["lucene"], None, storage
    )
    qrels = pl.DataFrame(
        [(q, d, s) for q, docs in loaded_qrels.items() for d, s in docs.items()],
        schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
        orient="row",
    )
    run = run_frame(hits, spec.alias)
    per_turn = eval_metrics.per_question_metrics(qrels, run, metrics)
    round_trip = {q: {m: per_turn[m][q] for m in metrics} for q in per_turn[metrics[0]]}
    assert sorted(round_trip) == sorted(own)
    for qid, values in own.items():
        assert round_trip[qid] == pytest.approx(values, abs=1e-9, rel=0), qid
    assert eval_metrics.evaluate_run(qrels, run, metrics) == pytest.approx(
        {m: report[m] for m in metrics}, abs=1e-9, rel=0
    )
    # Some gold documents rank below a distractor: not every score is 0 or 1.
    values = {v for row in own.values() for v in row.values()}
    assert any(0 < v < 1 for v in values) and max(values) > 0
