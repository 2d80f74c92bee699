"""The evaluation checks: each passes a sound table and fails a broken one, saying why."""

import math

import dagster as dg
import polars as pl
import pytest

from assets.eval import leaderboard as board
from assets.eval import metrics as eval_metrics
from assets.eval.beir import beir_eval_assets
from assets.eval.quit.assets import quit_eval_assets
from assets.eval.quit.finetune.assets import finetune_data_assets, finetune_model_assets
from assets.eval.quit.finetune.report import finetune_report_assets
from assets.eval.quit.steps import ANSWER_SCHEMA
from assets.eval.recor.assets import recor_eval_assets
from assets.eval.recor.rules import STRATEGIES
from assets.eval.recor.steps import DIMENSIONS, MODES
from assets.eval.runs import RUN_SCHEMA
from assets.eval.sources import benchmark_assets
from assets.eval.uncertainty import UncertaintySettings
from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile.analysis import PROFILE_SCHEMA, TAU_GRID
from assets.eval.wikiprofile.assets import SAMPLE_SCHEMA, wikiprofile_analysis_assets, wikiprofile_profile_assets
from assets.partitions import sync_partitions
from checks.eval import eval_checks
from checks.eval import leaderboard as el
from checks.eval import quit as eq
from checks.eval import recor as er
from checks.eval import shared as es
from checks.eval import wikiprofile as ew
from checks.factories import CheckSettings
from resources.retrieval import load_rerankers
from resources.storage import StorageResource


def fails(result: dg.AssetCheckResult, words: str) -> bool:
    return not result.passed and words in result.metadata["problems"].value


def run(system: str, passages: dict[str, list[str]], **extra) -> pl.DataFrame:
    """A TREC-style run: ranks 1..n per question, scores falling."""
    rows = [(q, p, rank, 1.0 / rank, system) for q, ps in passages.items() for rank, p in enumerate(ps, start=1)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row").with_columns(
        *[pl.lit(v, pl.String).alias(k) for k, v in extra.items()]
    )


def swap(frame: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    """``frame`` with one cell changed."""
    values = frame[column].to_list()
    values[row] = value
    return frame.with_columns(pl.Series(column, values, dtype=frame.schema[column]))


QUESTIONS = pl.DataFrame({"question_id": ["q1", "q2"], "split": ["test", "dev"]})
CORPUS = pl.DataFrame({"passage_id": ["p1", "p2", "p3", "p4"], "question_id": ["q1", "q1", "q2", "q2"]})
GOOD_RUN = run("bm25", {"q1": ["p1", "p2", "p3"], "q2": ["p3", "p4"]})


# --- QUIT ------------------------------------------------------------------------------------


def index_row(retriever: str, kind: str, documents: int, location: str) -> pl.DataFrame:
    return pl.DataFrame({"retriever": [retriever], "kind": [kind], "documents": [documents], "location": [location]})


def test_the_index_holds_the_whole_corpus_where_it_says(tmp_path):
    index = tmp_path / "minilm.faiss"
    index.write_bytes(b"faiss")
    assert eq.quit_index_files(quit_index=index_row("minilm", "dense", 4, str(index)), benchmark_corpus=CORPUS).passed
    assert eq.quit_index_files(quit_index=index_row("oracle", "oracle", 0, ""), benchmark_corpus=CORPUS).passed
    for broken, words in [
        (index_row("minilm", "dense", 3, str(index)), "3 documents indexed, the corpus has 4"),
        (index_row("minilm", "dense", 4, str(tmp_path / "gone.faiss")), "no index at"),
        (index_row("minilm", "bm25", 4, str(index)), "the registry says 'dense'"),
        (index_row("colbert", "dense", 4, str(index)), "not in the retriever registry"),
        (index_row("oracle", "oracle", 4, ""), "the Oracle reads the qrels"),
    ]:
        assert fails(eq.quit_index_files(quit_index=broken, benchmark_corpus=CORPUS), words)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(GOOD_RUN, "rank", 2, 4), "ranks are not 1..n"),
        (swap(GOOD_RUN, "passage_id", 1, "p1"), "repeated question_id+passage_id"),
        (swap(GOOD_RUN, "score", 1, 5.0), "scored above the passage ranked before them"),
        (swap(GOOD_RUN, "system", 0, "colbert"), "system not in"),
        (GOOD_RUN.drop("score"), "'score' is missing"),
    ],
)
def test_a_run_has_ranks_one_to_n_each_passage_once_and_falling_scores(broken, words):
    assert eq.quit_runs_ranks(GOOD_RUN).passed
    assert fails(eq.quit_runs_ranks(broken), words)


def test_a_run_points_at_benchmark_questions_and_corpus_passages():
    assert eq.quit_runs_references(quit_runs=GOOD_RUN, benchmark_questions=QUESTIONS, benchmark_corpus=CORPUS).passed
    ghost = swap(GOOD_RUN, "passage_id", 0, "ghost")
    assert fails(
        eq.quit_runs_references(quit_runs=ghost, benchmark_questions=QUESTIONS, benchmark_corpus=CORPUS),
        "passage ids not in eval/quit_corpus (e.g. ghost)",
    )
    stranger = swap(GOOD_RUN, "question_id", 0, "q9")
    assert fails(
        eq.quit_runs_references(quit_runs=stranger, benchmark_questions=QUESTIONS, benchmark_corpus=CORPUS),
        "question ids not in eval/quit_questions (e.g. q9)",
    )


def test_a_question_without_passages_is_a_warning():
    assert eq.quit_runs_coverage(quit_runs=GOOD_RUN, benchmark_questions=QUESTIONS).passed
    result = eq.quit_runs_coverage(
        quit_runs=GOOD_RUN.filter(pl.col("question_id") == "q1"), benchmark_questions=QUESTIONS
    )
    assert (
        fails(result, "benchmark questions without a passage (e.g. q2)")
        and result.severity == dg.AssetCheckSeverity.WARN
    )


def metrics_row(**ids) -> dict:
    """Sound ranx means: Hit@k and Recall@k rising with k."""
    values = {m: 0.5 for m in eval_metrics.RETRIEVAL_METRICS}
    values.update({"hit_rate@1": 0.2, "hit_rate@100": 0.9, "recall@5": 0.1})
    return {**ids, **values}


RETRIEVAL_METRICS = pl.DataFrame(
    [metrics_row(retriever="bm25", split="all", questions=2), metrics_row(retriever="bm25", split="test", questions=1)]
)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(RETRIEVAL_METRICS, "ndcg@10", 0, 1.5), "ndcg@10 outside [0, 1]"),
        (swap(RETRIEVAL_METRICS, "hit_rate@1", 0, 0.8), "hit_rate@1 above hit_rate@5"),
        (swap(RETRIEVAL_METRICS, "split", 1, "holiday"), "split not in"),
        (swap(RETRIEVAL_METRICS, "split", 1, "all"), "repeated retriever+split"),
        (swap(RETRIEVAL_METRICS, "retriever", 1, "oracle"), "of the Oracle"),
        (RETRIEVAL_METRICS.filter(pl.col("split") == "test"), "retrievers without an 'all' row"),
        (RETRIEVAL_METRICS.drop("mrr"), "'mrr' is missing"),
    ],
)
def test_retrieval_metrics_are_means_in_unit_range_rising_with_the_cutoff(broken, words):
    assert eq.quit_retrieval_metrics_ranges(RETRIEVAL_METRICS).passed
    assert fails(eq.quit_retrieval_metrics_ranges(broken), words)


def test_a_reranked_run_names_a_registered_retriever_and_reranker():
    reranked = GOOD_RUN.with_columns(pl.lit("bm25+pointwise").alias("system"))
    assert eq.quit_reranked_runs_ranks(reranked).passed
    assert fails(
        eq.quit_reranked_runs_ranks(reranked.with_columns(pl.lit("bm25+magic").alias("system"))), "system not in"
    )
    assert fails(eq.quit_reranked_runs_ranks(swap(reranked, "rank", 0, 0)), "rank below 1")


def test_a_reranker_reorders_the_retrieved_passages_and_keeps_the_tail_in_place():
    top_k = load_rerankers()["pointwise"].top_k
    retrieved_ids = [f"p{i}" for i in range(top_k + 5)]
    retrieved = run("bm25", {"q1": retrieved_ids})
    reordered = run("bm25+pointwise", {"q1": retrieved_ids[:top_k][::-1] + retrieved_ids[top_k:]})
    assert eq.quit_reranked_same_passages(quit_reranked_runs=reordered, quit_runs=retrieved).passed
    for broken, words in [
        (swap(reordered, "passage_id", 0, "ghost"), "reranked but never retrieved (e.g. q1/ghost)"),
        (reordered.filter(pl.col("passage_id") != "p3"), "retrieved but missing from the reranked run (e.g. q1/p3)"),
        (run("bm25+pointwise", {"q1": retrieved_ids[::-1]}), "below the reranked top_k but moved"),
    ]:
        assert fails(eq.quit_reranked_same_passages(quit_reranked_runs=broken, quit_runs=retrieved), words)


RERANK_METRICS = pl.DataFrame(
    [
        metrics_row(
            system="bm25+pointwise", retriever="bm25", reranker="pointwise", oracle=False, split="all", questions=2
        ),
        metrics_row(system="oracle+upr", retriever="oracle", reranker="upr", oracle=True, split="all", questions=2),
    ]
)


def test_rerank_metrics_name_both_parts_and_flag_the_oracle():
    assert eq.quit_rerank_metrics_ranges(RERANK_METRICS).passed
    for broken, words in [
        (swap(RERANK_METRICS, "oracle", 1, False), "Oracle flag wrong"),
        (swap(RERANK_METRICS, "reranker", 0, "upr"), "system is not retriever+reranker"),
        (swap(RERANK_METRICS, "mrr", 0, -0.1), "mrr outside [0, 1]"),
    ]:
        assert fails(eq.quit_rerank_metrics_ranges(broken), words)


def answers(rows: list[tuple]) -> pl.DataFrame:
    """Reader answers from (question, system, k, strategy, em, correct)."""
    return pl.DataFrame(
        [
            {
                "question_id": q,
                "reader": "smollm2",
                "system": s,
                "k": k,
                "strategy": st,
                "em": em,
                "correct": c,
                "answer": "Canberra" if em else "Sydney",
            }
            for q, s, k, st, em, c in rows
        ],
        schema=ANSWER_SCHEMA,
    )


READER_ANSWERS = answers(
    [
        ("q1", "bm25", 1, "union_norm", False, False),
        ("q1", "bm25", 1, "union_freq", True, True),
        ("q1", "bm25+upr", 3, "union_norm", False, True),
        ("q1", "optimal", None, None, True, True),
        ("q2", "optimal", None, None, False, False),
    ]
)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(READER_ANSWERS, "correct", 1, False), "exact match not counted correct"),
        (swap(READER_ANSWERS, "k", 0, 2), "k not in [1, 3, 5]"),
        (swap(READER_ANSWERS, "strategy", 0, "concat"), "context strategy not in"),
        (swap(READER_ANSWERS, "k", 3, 5), "Optimal bound with a k or strategy"),
        (swap(READER_ANSWERS, "system", 0, "colbert"), "system not in"),
        (
            swap(READER_ANSWERS, "strategy", 1, "union_norm").with_columns(pl.lit(False).alias("em")),
            "repeated question_id+system+k+strategy",
        ),
        (swap(READER_ANSWERS, "reader", 0, "qwen"), "2 readers in one reader's partition"),
    ],
)
def test_reader_answers_hold_one_answer_per_item_and_count_exact_matches_correct(broken, words):
    assert eq.quit_reader_answers_schema(READER_ANSWERS).passed
    assert fails(eq.quit_reader_answers_schema(broken), words)


def test_reader_answers_are_to_benchmark_questions_each_with_its_optimal_bound():
    assert eq.quit_reader_answers_references(quit_reader_answers=READER_ANSWERS, benchmark_questions=QUESTIONS).passed
    assert fails(
        eq.quit_reader_answers_references(
            quit_reader_answers=swap(READER_ANSWERS, "question_id", 0, "q9"), benchmark_questions=QUESTIONS
        ),
        "question ids not in",
    )
    without = READER_ANSWERS.filter(~((pl.col("question_id") == "q2") & (pl.col("system") == "optimal")))
    assert fails(
        eq.quit_reader_answers_references(quit_reader_answers=without, benchmark_questions=QUESTIONS),
        "benchmark questions without an Optimal row (e.g. q2)",
    )


READER_METRICS = pl.DataFrame(
    {
        "system": ["Optimal", "bm25"],
        "k": pl.Series([None, 1], dtype=pl.Int32),
        "strategy": ["oracle", "union_norm"],
        "reader": ["smollm2", "smollm2"],
        "em": [0.5, 0.25],
        "judge": [0.5, 0.5],
        "split": ["all", "all"],
        "questions": [2, 2],
    }
)


def test_reader_metrics_are_shares_with_one_optimal_row_per_reader():
    assert eq.quit_reader_metrics_ranges(READER_METRICS).passed
    assert fails(eq.quit_reader_metrics_ranges(swap(READER_METRICS, "em", 1, 1.25)), "em outside [0, 1]")
    assert fails(
        eq.quit_reader_metrics_ranges(
            swap(READER_METRICS, "system", 1, "Optimal").with_columns(
                pl.Series("k", [None, None], dtype=pl.Int32), pl.Series("strategy", ["oracle", "oracle2"])
            )
        ),
        "without exactly one Optimal row",
    )


def with_interval(frame: pl.DataFrame, metric: str, low: float | None, high: float | None) -> pl.DataFrame:
    """``frame`` with ``metric``'s interval columns (issue 48): on its last row, null on the others."""
    ends = {"ci_low": (low, pl.Float64), "ci_high": (high, pl.Float64), "tied_best": (True, pl.Boolean)}
    return frame.with_columns(
        pl.Series(f"{metric} {c}", [None] * (frame.height - 1) + [v], dtype=t) for c, (v, t) in ends.items()
    )


@pytest.mark.parametrize(
    "check, frame, metric",
    [
        (eq.quit_retrieval_metrics_ranges, RETRIEVAL_METRICS, "hit_rate@1"),
        (eq.quit_rerank_metrics_ranges, RERANK_METRICS, "ndcg_burges@10"),
        (eq.quit_reader_metrics_ranges, READER_METRICS, "em"),
    ],
)
def test_a_quit_report_whose_interval_does_not_hold_its_value_fails(check, frame, metric):
    value = frame[metric][-1]
    assert check(with_interval(frame, metric, value - 0.1, value + 0.1)).passed
    assert fails(
        check(with_interval(frame, metric, value + 0.05, value + 0.1)),
        f"whose {metric} interval does not hold the value",
    )
    assert fails(check(with_interval(frame, metric, value - 0.1, None)), f"with one end of {metric}'s interval")


# --- RECOR -----------------------------------------------------------------------------------

QUERIES = pl.DataFrame(
    [
        {
            "domain": "law",
            "qid": q,
            "conversation_id": "c1",
            "turn_id": t,
            "strategy": s,
            "query": f"{s} {q}",
            "fallback": False,
        }
        for t, q in ((1, "c1_turn1"), (2, "c1_turn2"))
        for s in STRATEGIES
    ],
    schema=er.QUERY_SCHEMA,
)
BENCHMARK = pl.DataFrame(
    {"domain": ["law", "law"], "qid": ["c1_turn1", "c1_turn2"], "turn_id": pl.Series([1, 2], dtype=pl.Int32)}
)


@pytest.mark.parametrize(
    "broken, words",
    [
        (
            QUERIES.filter(~((pl.col("qid") == "c1_turn2") & (pl.col("strategy") == "history"))),
            f"(turns) without all {len(STRATEGIES)} strategies",
        ),
        (swap(QUERIES, "query", 0, "  "), "empty query"),
        (swap(QUERIES, "strategy", 0, "telepathy"), "strategy not in"),
        (swap(QUERIES, "domain", 0, "astrology"), "domain not in"),
        (swap(QUERIES, "query", 0, None), "'query' has 1 nulls"),
    ],
)
def test_every_turn_has_a_query_under_each_strategy(broken, words):
    assert er.recor_queries_schema(QUERIES).passed
    assert fails(er.recor_queries_schema(broken), words)


def test_queries_are_for_exactly_the_benchmark_turns():
    assert er.recor_queries_references(recor_queries=QUERIES, benchmark=BENCHMARK).passed
    assert fails(
        er.recor_queries_references(recor_queries=QUERIES.filter(pl.col("qid") == "c1_turn1"), benchmark=BENCHMARK),
        "benchmark turns without queries (e.g. c1_turn2)",
    )
    assert fails(
        er.recor_queries_references(recor_queries=QUERIES, benchmark=BENCHMARK.head(1)), "turns not in eval/recor_turns"
    )


# The same document under two strategies of one turn is sound: ranks count per turn and strategy.
RECOR_RUN = pl.concat(
    [run("bm25", {"c1_turn1": ["d1", "d2"]}, strategy=s, domain="law") for s in ("baseline", "history")]
)
RECOR_CORPUS = pl.DataFrame({"doc_id": ["d1", "d2"], "content": ["a", "b"]})


def test_a_conversational_run_ranks_per_turn_and_strategy():
    assert er.recor_runs_ranks(RECOR_RUN).passed
    for broken, words in [
        (swap(RECOR_RUN, "rank", 3, 1), "repeated question_id+strategy+rank"),
        (RECOR_RUN.with_columns(pl.lit("oracle").alias("system")), "system not in"),
        (swap(RECOR_RUN, "strategy", 0, "telepathy"), "strategy not in"),
        (RECOR_RUN.drop("domain"), "'domain' is missing"),
    ]:
        assert fails(er.recor_runs_ranks(broken), words)


def test_a_conversational_run_searches_known_queries_over_the_domain_corpus():
    assert er.recor_runs_references(recor_runs=RECOR_RUN, recor_queries=QUERIES, corpus=RECOR_CORPUS).passed
    assert fails(
        er.recor_runs_references(
            recor_runs=swap(RECOR_RUN, "passage_id", 0, "d9"), recor_queries=QUERIES, corpus=RECOR_CORPUS
        ),
        "document ids not in eval/recor_corpus (e.g. d9)",
    )
    assert fails(
        er.recor_runs_references(
            recor_runs=swap(RECOR_RUN, "question_id", 0, "c9_turn1"), recor_queries=QUERIES, corpus=RECOR_CORPUS
        ),
        "turn+strategy not in eval/recor_queries",
    )


TURN_SCORES = pl.DataFrame(
    [
        {
            "domain": "law",
            "conversation_id": "c1",
            "qid": q,
            "turn_id": t,
            "retriever": "bm25",
            "strategy": "baseline",
            "ndcg@10": 0.5,
            "map@10": 0.4,
            "recall@10": 1.0,
            "mrr": 0.5,
        }
        for t, q in ((1, "c1_turn1"), (2, "c1_turn2"))
    ],
    schema_overrides={"turn_id": pl.Int32},
)


def test_turn_scores_are_ranx_means_in_unit_range():
    assert er.recor_retrieval_metrics_ranges(TURN_SCORES).passed
    for broken, words in [
        (swap(TURN_SCORES, "ndcg@10", 0, 1.1), "ndcg@10 outside [0, 1]"),
        (swap(TURN_SCORES, "mrr", 0, None), "'mrr' has 1 nulls"),
        (swap(TURN_SCORES, "retriever", 0, "oracle"), "retriever not in"),
        (swap(TURN_SCORES, "qid", 1, "c1_turn1"), "repeated qid+retriever+strategy"),
    ]:
        assert fails(er.recor_retrieval_metrics_ranges(broken), words)


@pytest.mark.usefixtures("compiled_metrics")
def test_reteco_scores_cover_every_target_turn_per_run_in_unit_range():
    from assets.eval.recor.assets import reteco_retrieval

    turns = pl.DataFrame(
        {
            "qid": ["c1_turn_1", "c1_turn_2"],
            "domain": ["law", "law"],
            "conversation_id": ["c1", "c1"],
            "turn_id": [1, 2],
            "gold_doc_ids": [["d1"], ["d2"]],
        }
    )
    runs = run("bm25", {"c1_turn_1": ["d1"], "c1_turn_2": ["d3", "d2"]}, strategy="baseline", domain="law")
    corpus = pl.DataFrame({"domain": ["law"] * 3, "doc_id": ["d1", "d2", "d3"]})
    with dg.build_asset_context() as context:
        scores = reteco_retrieval(
            context, recor_runs=runs, benchmark=turns, corpus=corpus, uncertainty=UncertaintySettings()
        ).value
    assert scores["ndcg@10"].to_list() == pytest.approx([1.0, 1 / math.log2(3)])
    assert er.reteco_retrieval_ranges(scores).passed
    for broken, words in [
        (swap(scores, "ndcg@10", 0, 1.5), "ndcg@10 outside [0, 1]"),
        (swap(scores, "depth", 1, "T5+"), "whose depth group is not their turn's"),
        (swap(scores, "task_qid", 0, "c1_turn_1"), "whose task id is not"),
        (scores.head(1).vstack(swap(scores, "run", 1, "other").tail(1)), "scoring fewer or more turns"),
    ]:
        assert fails(er.reteco_retrieval_ranges(broken), words)


def test_the_registry_run_files_are_read_by_the_task_rules(tmp_path, monkeypatch):
    from resources.retrieval import RetrieverSpec

    turns = pl.DataFrame(
        {
            "qid": ["c1_turn_1", "c1_turn_2"],
            "domain": ["law", "law"],
            "conversation_id": ["c1", "c1"],
            "turn_id": [1, 2],
            "gold_doc_ids": [["d1"], ["d2"]],
        }
    )
    corpus = pl.DataFrame({"domain": ["law"] * 3, "doc_id": ["d1", "d2", "d3"]})
    specs = {
        "bm25": RetrieverSpec(alias="bm25", kind="bm25"),
        "mine": RetrieverSpec(alias="mine", kind="run", path=f"{tmp_path}/{{part}}.trec"),
    }
    monkeypatch.setattr(er, "load_retrievers", lambda: specs)
    run = tmp_path / "law.trec"

    def check(text: str | None) -> dg.AssetCheckResult:
        if text is None:
            run.unlink()
        else:
            run.write_text(text)
        return er.reteco_run_files(benchmark=turns, corpus=corpus)

    clean = check("c1#turn1 Q0 d1 1 0.9 me\nc1#turn2 Q0 d3 1 0.8 me\nc1#turn2 Q0 d2 2 0.7 me\n")
    assert clean.passed and clean.metadata["run_files"].value == 1 and clean.metadata["problems"].value == "none"
    # the project's own query ids are read, but the task's scorer will not read them
    styled = check("c1#turn1 Q0 d1 1 0.9 me\nc1_turn_2 Q0 d3 1 0.8 me\nc1#turn2 Q0 d2 2 0.7 me\n")
    assert not styled.passed and styled.severity == dg.AssetCheckSeverity.WARN
    assert f"mine: {run}: warning line 2 [id_style]" in styled.metadata["problems"].value
    repeated = check("c1#turn1 Q0 d1 1 0.9 me\nc1#turn1 Q0 d9 2 0.5 me\nc1#turn1 Q0 d1 3 0.4 me\n")
    assert not repeated.passed and repeated.severity == dg.AssetCheckSeverity.WARN
    listed = repeated.metadata["problems"].value
    for words in (
        f"mine: {run}: warning line 2 [unknown_document]",
        f"mine: {run}: warning line 3 [duplicate]",
        "warning file [missing_turn]: 1 target turns have no line (c1#turn2)",
    ):
        assert words in listed, listed
    broken = check("c1#turn1 Q0 d1 1 0.9 me\nc1#turn2 Q0 d2 1 me\n")
    assert not broken.passed and broken.severity == dg.AssetCheckSeverity.ERROR
    assert broken.metadata["problems"].value.startswith(f"- mine: {run}: ERROR line 2 [columns]: 5 columns")
    assert fails(check(None), f"mine: {run}: ERROR file [file]: no run file")
    many = check("".join(f"c1#turn1 Q0 d1 {n} 0.5 me\n" for n in range(1, 30)))
    assert many.metadata["warnings"].value == 29 and many.metadata["problems"].value.endswith(
        f"- ... and {29 - er.PROBLEMS_SHOWN} more"
    )

    monkeypatch.setattr(er, "load_retrievers", lambda: {"bm25": specs["bm25"]})
    none = er.reteco_run_files(benchmark=turns, corpus=corpus)
    assert none.passed and none.metadata["problems"].value.startswith("none: no kind: run retriever in")


def generation(rows: list[tuple]) -> pl.DataFrame:
    """Generation rows from (turn, mode, answer, score); faithfulness only with passages."""
    return pl.DataFrame(
        [
            {
                "domain": "law",
                "qid": q,
                "generator": "smollm2",
                "mode": m,
                "answer": a,
                **{d: s for d in DIMENSIONS},
                "faithfulness": None if m == er.NO_RETRIEVAL else s,
                "rouge_l": s,
                "meteor": s,
                "bertscore_f1": s,
            }
            for q, m, a, s in rows
        ],
        schema=er.GENERATION_SCHEMA,
    )


GENERATION = generation([(q, m, "An answer.", 0.5) for q in ("c1_turn1", "c1_turn2") for m in MODES])


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(GENERATION, "faithfulness", 2, 0.5), "judged faithful to passages they were not given"),
        (swap(GENERATION, "answer", 0, None), "scored without an answer"),
        (swap(GENERATION, "correctness", 0, 1.25), "correctness outside [0, 1]"),
        (swap(GENERATION, "bertscore_f1", 0, 1.5), "bertscore_f1 outside [-1, 1]"),
        (swap(GENERATION, "meteor", 0, None), "answered without a reference score"),
        (swap(GENERATION, "mode", 0, "telepathy"), "mode not in"),
        (swap(GENERATION, "mode", 1, "oracle"), "repeated qid+generator+mode"),
    ],
)
def test_generation_rows_are_graded_in_unit_range_where_graded_at_all(broken, words):
    assert er.recor_generation_schema(GENERATION).passed
    assert fails(er.recor_generation_schema(broken), words)


def test_generation_answers_every_benchmark_turn_in_every_mode():
    assert er.recor_generation_references(recor_generation=GENERATION, benchmark=BENCHMARK).passed
    assert fails(
        er.recor_generation_references(
            recor_generation=GENERATION.filter(pl.col("mode") != "oracle"), benchmark=BENCHMARK
        ),
        "turn+generator+mode without an answer row",
    )
    assert fails(
        er.recor_generation_references(recor_generation=GENERATION, benchmark=BENCHMARK.head(1)),
        "turns not in eval/recor_turns",
    )


GENERATION_METRICS = pl.DataFrame(
    [
        {
            "generator": "smollm2",
            "mode": m,
            **{d: 0.4 for d in DIMENSIONS},
            "overall": 0.4,
            "rouge_l": 0.2,
            "meteor": 0.3,
            "bertscore_f1": -0.1,
        }
        for m in MODES
    ]
).with_columns(
    pl.when(pl.col("mode") == er.NO_RETRIEVAL).then(None).otherwise(pl.col("faithfulness")).alias("faithfulness")
)


def test_generation_metrics_are_unit_range_means_per_generator_and_mode():
    assert er.recor_generation_metrics_ranges(GENERATION_METRICS).passed
    for broken, words in [
        (swap(GENERATION_METRICS, "overall", 0, 1.5), "overall outside [0, 1]"),
        (swap(GENERATION_METRICS, "mode", 0, "telepathy"), "mode not in"),
        (swap(GENERATION_METRICS, "mode", 1, "oracle"), "repeated generator+mode"),
    ]:
        assert fails(er.recor_generation_metrics_ranges(broken), words)


# --- WikiProfile -----------------------------------------------------------------------------

SAMPLES = 4


def responses_frame() -> pl.DataFrame:
    """One fact: an encoding task, a knowledge question without and with thinking, and a
    multiple-choice question with the gold once in each of its four slots."""
    rows = [("completion", False, None), ("direct", False, None), ("direct", True, None), ("mc_direct", False, "slot")]
    return pl.DataFrame(
        [
            {
                "fact_id": "f1",
                "task": task,
                "thinking": thinking,
                "sample": k,
                "gold_slot": k if slot else None,
                "response": "Paris",
                "answer": "Paris",
                "error": None,
            }
            for task, thinking, slot in rows
            for k in range(SAMPLES)
        ],
        schema=SAMPLE_SCHEMA,
    )


RESPONSES = responses_frame()
WIKI_BENCHMARK = pl.DataFrame(
    {
        "fact_id": ["f1"] * 3,
        "task": ["completion", "direct", "mc_direct"],
        "options": [None, None, ["Paris", "Lyon", "Nice", "Metz"]],
    }
)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(RESPONSES, "thinking", 0, True), "asked with thinking though not a knowledge question"),
        (swap(RESPONSES, "gold_slot", 12, None), "of multiple choice without a gold slot"),
        (swap(RESPONSES, "gold_slot", 0, 1), "with a gold slot outside multiple choice"),
        (swap(RESPONSES, "response", 0, None), "neither a response nor an error"),
        (swap(RESPONSES, "task", 0, "riddle"), "task not in"),
        (swap(RESPONSES, "sample", 1, 0), "repeated fact_id+task+thinking+sample"),
    ],
)
def test_responses_are_one_row_per_sample_of_a_known_task(broken, words):
    assert ew.responses_schema(RESPONSES).passed
    assert fails(ew.responses_schema(broken), words)


def test_every_question_gets_n_samples_and_each_slot_holds_the_gold_equally_often():
    assert ew.responses_sampling(RESPONSES).passed
    assert fails(
        ew.responses_sampling(RESPONSES.filter(~((pl.col("task") == "completion") & (pl.col("sample") == 3)))),
        "(questions) without samples 0..3",
    )
    assert fails(ew.responses_sampling(swap(RESPONSES, "gold_slot", 12, 1)), "gold in some slots more often")


def test_responses_are_to_benchmark_questions_and_gold_slots_among_their_options():
    assert ew.responses_references(responses=RESPONSES, benchmark=WIKI_BENCHMARK).passed
    assert fails(
        ew.responses_references(responses=RESPONSES.filter(pl.col("task") != "direct"), benchmark=WIKI_BENCHMARK),
        "benchmark questions never asked (e.g. f1/direct)",
    )
    assert fails(
        ew.responses_references(responses=RESPONSES, benchmark=WIKI_BENCHMARK.head(2)),
        "fact+task not in eval/wikiprofile_tasks",
    )
    three = WIKI_BENCHMARK.with_columns(pl.Series("options", [None, None, ["Paris", "Lyon", "Nice"]]))
    assert fails(ew.responses_references(responses=RESPONSES, benchmark=three), "gold slot past the options")


GRADED = RESPONSES.with_columns(pl.lit(method.CORRECT).alias("label"), pl.lit("smollm2").alias("model"))


def test_graded_responses_carry_a_known_label_from_one_model():
    assert ew.graded_responses_schema(GRADED).passed
    assert fails(ew.graded_responses_schema(swap(GRADED, "label", 0, "MAYBE")), "label not in")
    assert fails(ew.graded_responses_schema(swap(GRADED, "model", 0, "qwen")), "2 models in one subject's partition")
    assert fails(ew.graded_responses_schema(swap(GRADED, "label", 0, None)), "'label' has 1 nulls")


def test_exactly_the_sampled_responses_are_graded():
    assert ew.graded_responses_references(graded_responses=GRADED, responses=RESPONSES).passed
    assert fails(
        ew.graded_responses_references(graded_responses=GRADED.slice(1), responses=RESPONSES), "responses left ungraded"
    )
    assert fails(
        ew.graded_responses_references(graded_responses=GRADED, responses=RESPONSES.slice(1)), "graded samples not in"
    )


def profiles_frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "model": "smollm2",
                "fact_id": f,
                "encodes": e,
                "knows": k0,
                "knows_thinking": kt,
                "profile": p,
                "thinking_run": "present",
            }
            for f, e, k0, kt, p in rows
        ],
        schema=PROFILE_SCHEMA,
    )


PROFILES = profiles_frame(
    [
        ("f1", False, False, False, "encoding_failure"),
        ("f2", True, True, False, "direct_recall"),
        ("f3", True, False, True, "recall_with_thinking"),
        ("f4", None, None, None, "ungradable"),
        ("f5", False, True, True, "direct_inference"),
    ]
)


def test_profiles_are_one_per_fact_from_the_known_kinds():
    assert ew.profiles_schema(PROFILES).passed
    assert fails(ew.profiles_schema(swap(PROFILES, "profile", 0, "genius")), "profile not in")
    assert fails(ew.profiles_schema(swap(PROFILES, "fact_id", 1, "f1")), "repeated model+fact_id")


def test_each_profile_is_the_one_its_flags_give():
    assert ew.profiles_follow_the_rule(PROFILES).passed
    for broken, words in [
        (
            swap(PROFILES, "profile", 2, "direct_recall"),
            "whose profile is not the one its flags give (e.g. smollm2/f3)",
        ),
        (swap(PROFILES, "encodes", 3, True), "ungradable yet with encodes / knows set"),
        (swap(PROFILES, "knows", 0, None), "profiled without encodes and knows"),
    ]:
        assert fails(ew.profiles_follow_the_rule(broken), words)


def test_exactly_the_benchmark_facts_are_profiled():
    facts = pl.DataFrame({"fact_id": ["f1", "f2", "f3", "f4", "f5"]})
    assert ew.profiles_references(profiles=PROFILES, benchmark=facts).passed
    assert fails(
        ew.profiles_references(profiles=PROFILES.head(4), benchmark=facts),
        "benchmark facts without a profile (e.g. f5)",
    )
    assert fails(
        ew.profiles_references(profiles=PROFILES, benchmark=facts.head(4)), "facts not in eval/wikiprofile_tasks"
    )


SUMMARY = {"model": "smollm2", **method.profile_summary(PROFILES.to_dicts())}
PROFILE_REPORT = pl.DataFrame([SUMMARY])


def test_table_2_shares_add_up():
    # 5 facts: f1-f3 profiled, f4 ungradable, f5 direct inference; 4 gradable
    assert (SUMMARY["encoding_failure"], SUMMARY["direct_recall"], SUMMARY["encodes"]) == pytest.approx(
        (1 / 3, 1 / 3, 2 / 3)
    )
    assert (SUMMARY["knows"], SUMMARY["knows_thinking"], SUMMARY["excluded_ungradable"]) == (0.5, 0.75, 0.2)
    assert ew.profile_report_shares(PROFILE_REPORT).passed
    for broken, words in [
        (
            swap(PROFILE_REPORT, "encoding_failure", 0, SUMMARY["encoding_failure"] + 0.1),
            "five profiles do not add up to 1",
        ),
        (swap(PROFILE_REPORT, "excluded_ungradable", 0, 0.0), "profiled and excluded shares do not add up"),
        (swap(PROFILE_REPORT, "profiled", 0, 9), "profiled facts not between 0 and all facts"),
        (swap(PROFILE_REPORT, "encodes", 0, 1.2), "encodes outside [0, 1]"),
    ]:
        assert fails(ew.profile_report_shares(broken), words)


def test_a_table_2_in_percent_fails_the_shares_check():
    """A share above 1 is a broken table: Table 2 as the reports held it before shares (in
    percent, as the paper prints it) is read as 100 times too large by the leaderboard."""
    percent = PROFILE_REPORT.with_columns(pl.col(c) * 100 for c in ew.SUMMARY_SHARES)
    assert fails(ew.profile_report_shares(percent), "encodes outside [0, 1] (e.g. smollm2)")
    assert fails(ew.profile_report_shares(swap(PROFILE_REPORT, "knows", 0, 1.5)), "knows outside [0, 1]")
    sweep = pl.DataFrame([{"model": "smollm2", "tau_enc": e, "tau_know": k, **SUMMARY} for e, k in TAU_GRID])
    assert fails(ew.robustness_report_shares(sweep.with_columns(pl.col("encodes") * 100)), "encodes outside [0, 1]")


def test_table_2_intervals_that_do_not_hold_their_share_fail():
    """Encodes, Knows and Knows(+Think) with their intervals, as the profile report stores them
    (issue 48): an interval beside its share, both ends or neither, within [0, 1]."""
    ends = {
        f"{m} {e}": pl.col(m) + shift
        for m in ("encodes", "knows", "knows_thinking")
        for e, shift in (("ci_low", -0.1), ("ci_high", 0.1))
    }
    report = PROFILE_REPORT.with_columns(**ends, **{"encodes tied_best": pl.lit(True)})
    assert ew.profile_report_shares(report).passed
    for broken, words in [
        (swap(report, "knows ci_low", 0, 0.55), "whose knows interval does not hold the value (e.g. smollm2)"),
        (swap(report, "encodes ci_high", 0, 0.5), "whose encodes interval does not hold the value"),
        (swap(report, "knows_thinking ci_high", 0, None), "with one end of knows_thinking's interval"),
        (swap(report, "knows_thinking ci_high", 0, 1.2), "knows_thinking ci_high outside [0, 1]"),
    ]:
        assert fails(ew.profile_report_shares(broken), words)


POPULARITY = pl.DataFrame(
    {
        "model": ["smollm2"] * 2,
        "tier": ["top", "bottom"],
        "facts": [2, 1],
        "encodes": [0.5, 0.0],
        "recall": [0.0, math.nan],
        "recall_thinking": [1.0, math.nan],
        "thinking_gain": [1.0, math.nan],
    }
)


def test_popularity_rates_are_shares_and_the_gain_their_difference():
    assert ew.popularity_report_shares(POPULARITY).passed
    backwards = POPULARITY.with_columns(
        pl.Series("recall", [0.5, math.nan]),
        pl.Series("recall_thinking", [0.4, math.nan]),
        pl.Series("thinking_gain", [-0.1, math.nan]),
    )
    in_percent = POPULARITY.with_columns(pl.col("encodes", "recall", "recall_thinking", "thinking_gain") * 100)
    for broken, words in [
        (swap(POPULARITY, "thinking_gain", 0, 0.5), "gain is not recall with minus without thinking"),
        (backwards, "recalling more without thinking than with it"),
        (swap(POPULARITY, "encodes", 0, -0.01), "encodes outside [0, 1]"),
        (in_percent, "recall_thinking outside [0, 1] (e.g. smollm2/top)"),
        (swap(POPULARITY, "tier", 1, "middle"), "tier not in"),
    ]:
        assert fails(ew.popularity_report_shares(broken), words)


def test_an_empty_popularity_tier_is_a_warning():
    assert ew.popularity_report_tiers(POPULARITY).passed
    result = ew.popularity_report_tiers(swap(POPULARITY, "facts", 1, 0))
    assert (
        fails(result, "(tiers) without facts (e.g. smollm2/bottom)") and result.severity == dg.AssetCheckSeverity.WARN
    )


DIRECTION = pl.DataFrame(
    {
        "model": ["smollm2"] * 3,
        "condition": list(ew.CONDITIONS),
        "facts": [2, 2, 0],
        "direct": [0.5, 1.0, math.nan],
        "reverse": [0.0, 0.5, math.nan],
        "delta": [-0.5, -0.5, math.nan],
    }
)


def test_direction_shares_are_in_0_1_and_delta_their_difference():
    assert ew.direction_report_shares(DIRECTION).passed
    for broken, words in [
        (swap(DIRECTION, "delta", 0, 0.5), "delta is not reverse minus direct"),
        (swap(DIRECTION, "condition", 0, "recite"), "condition not in"),
        (swap(DIRECTION, "direct", 1, 1.5), "direct outside [0, 1]"),
    ]:
        assert fails(ew.direction_report_shares(broken), words)


THINKING = pl.DataFrame(
    {
        "model": ["smollm2"] * 2,
        "encoded": [True, False],
        "not_known": [0, 4],
        "recovered": [0, 1],
        "recovered_share": [math.nan, 0.25],
    }
)


def test_recovery_is_a_share_of_the_facts_not_known():
    assert ew.thinking_report_shares(THINKING).passed
    assert fails(
        ew.thinking_report_shares(swap(THINKING, "recovered_share", 1, 0.3)), "share is not recovered over not known"
    )
    # 1 of 4 in percent, as the column held it before shares
    assert fails(
        ew.thinking_report_shares(swap(THINKING, "recovered_share", 1, 25.0)), "share is not recovered over not known"
    )
    assert fails(
        ew.thinking_report_shares(swap(THINKING, "recovered", 1, 5)), "recovering more facts than are not known"
    )


ROBUSTNESS = pl.DataFrame(
    [
        {"model": "smollm2", "tau_enc": e, "tau_know": k, **method.profile_summary(PROFILES.to_dicts())}
        for e, k in TAU_GRID
    ]
)


def test_the_threshold_sweep_covers_the_grid_with_sound_shares():
    assert ew.robustness_report_shares(ROBUSTNESS).passed
    for broken, words in [
        (ROBUSTNESS.slice(1), "model+thresholds of the grid missing"),
        (swap(ROBUSTNESS, "tau_know", 0, 1.5), "tau_know outside [0, 1]"),
        (swap(ROBUSTNESS, "direct_recall", 0, 0.9), "five profiles do not add up"),
    ]:
        assert fails(ew.robustness_report_shares(broken), words)


# --- LLM accounting ----------------------------------------------------------------------------


def accounting_evaluation(
    check: dg.AssetChecksDefinition, frame: pl.DataFrame, errors: int = 0, calls: int = 10, parse_failures: int = 0
) -> dg.AssetCheckEvaluation:
    """The accounting check after a stand-in for its asset, in one of its partitions, reported
    ``errors`` calls without an answer and ``parse_failures`` unparsable replies of ``calls``."""
    spec = next(iter(check.check_specs))
    partitions = spec.partitions_def
    instance = dg.DagsterInstance.ephemeral()
    sync_partitions(instance)
    # the tests' deployment registers no dataset in BEIR's layout: one stands in
    instance.add_dynamic_partitions("beir_datasets", ["tiny"])
    partition = partitions.get_partition_keys(dynamic_partitions_store=instance)[0] if partitions else None

    @dg.asset(key=spec.asset_key, partitions_def=partitions)
    def stand_in() -> dg.Output:
        return dg.Output(
            frame, metadata={"llm/calls": calls, "llm/errors": errors, "llm/parse_failures": parse_failures}
        )

    result = dg.materialize(
        [stand_in, check],
        partition_key=partition,
        instance=instance,
        raise_on_error=False,
        resources={"check_settings": CheckSettings(max_llm_failure_rate=0.5), "io_manager": dg.mem_io_manager},
    )
    return result.get_asset_check_evaluations()[0]


# Every LLM-bound evaluation step's accounting check, wherever its module defines it.
ACCOUNTING = [c for c in eval_checks if next(iter(c.check_specs)).name == "llm_accounting"]
RETECO_JUDGED = pl.DataFrame({"qid": ["c1_turn1", "c1_turn2"], "judge_failures": [0, 0]})
ACCOUNTED = {
    "eval/quit_reranked_runs": GOOD_RUN,
    "eval/beir_reranked_runs": GOOD_RUN.with_columns(pl.lit("tiny").alias("dataset")),
    "eval/quit_reader_answers": READER_ANSWERS,
    "eval/recor_queries": QUERIES,
    "eval/recor_generation": GENERATION,
    "eval/reteco_generation": RETECO_JUDGED,
    "eval/wikiprofile_responses": RESPONSES,
    "eval/wikiprofile_graded_responses": GRADED,
}


@pytest.mark.parametrize("check", ACCOUNTING, ids=lambda c: next(iter(c.check_specs)).asset_key.to_user_string())
def test_every_llm_step_warns_above_the_failure_rate_and_blocks_above_the_error_rate(check):
    frame = ACCOUNTED[next(iter(check.check_specs)).asset_key.to_user_string()]
    assert accounting_evaluation(check, frame, errors=1, parse_failures=2).passed
    unparsable = accounting_evaluation(check, frame, parse_failures=6)
    assert not unparsable.passed and unparsable.severity == dg.AssetCheckSeverity.WARN
    unanswered = accounting_evaluation(check, frame, errors=2)
    assert not unanswered.passed and unanswered.severity == dg.AssetCheckSeverity.ERROR


def test_the_accounting_names_the_items_the_step_kept_as_failed():
    check = next(c for c in ACCOUNTING if next(iter(c.check_specs)).asset_key == es.eval_key("recor_queries"))
    failing = accounting_evaluation(check, swap(QUERIES, "fallback", len(STRATEGIES), True), parse_failures=6)
    assert failing.metadata["failed_items"].value == "c1_turn2"


def test_every_evaluation_asset_has_checks_that_run_per_partition_with_unique_names():
    partitions = {
        k: a.partitions_def
        for a in (
            *benchmark_assets,
            *quit_eval_assets,
            *recor_eval_assets,
            *beir_eval_assets,
            *wikiprofile_profile_assets,
            *wikiprofile_analysis_assets,
            *board.leaderboard_assets,
            *finetune_data_assets,
            *finetune_model_assets,
            *finetune_report_assets,
        )
        for k in a.keys
    }
    specs = [spec for c in eval_checks for spec in c.check_specs]
    assert set(partitions) - {spec.asset_key for spec in specs} == set()
    assert all(spec.partitions_def == partitions[spec.asset_key] for spec in specs)
    assert len({spec.key for spec in specs}) == len(specs)


# --- the leaderboard --------------------------------------------------------------------------


def board_row(**values) -> dict:
    return {c: None for c in board.SCHEMA} | values


LEADERBOARD = pl.DataFrame(
    [
        board_row(
            system="bm25",
            kind="retriever",
            benchmarks="quit, recor",
            **{
                "quit/hit_rate@1": 0.25,
                "quit/hit_rate@5": 0.5,
                "quit/hit_rate@10": 0.75,
                "quit/ndcg_burges@10": 0.4,
                "recor/ndcg@10/baseline": 0.75,
            },
        ),
        board_row(
            system="smollm2",
            kind="reader LLM, subject LLM",
            benchmarks="quit, wikiprofile",
            **{"quit/em": 0.5, "quit/em_setting": "bm25, top-5, union_freq", "wikiprofile/encodes": 0.5},
        ),
    ],
    schema=board.SCHEMA,
)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(LEADERBOARD, "system", 1, "bm25"), "repeated system"),
        (swap(LEADERBOARD, "kind", 0, "judge"), "with a kind not of"),
        (swap(LEADERBOARD, "quit/ndcg_burges@10", 0, 1.5), "quit/ndcg_burges@10 outside [0, 1]"),
        (swap(LEADERBOARD, "wikiprofile/encodes", 1, 50.0), "wikiprofile/encodes outside [0, 1]"),
        (swap(LEADERBOARD, "quit/hit_rate@1", 0, 0.9), "quit/hit_rate@1 above quit/hit_rate@5"),
        (swap(LEADERBOARD, "benchmarks", 0, None), "'benchmarks' has 1 nulls"),
        (LEADERBOARD.drop("recor/ndcg@10/history"), "'recor/ndcg@10/history' is missing"),
    ],
)
def test_the_leaderboard_is_one_row_per_system_with_shares(broken, words):
    assert el.leaderboard_schema(LEADERBOARD).passed
    assert fails(el.leaderboard_schema(broken), words)


@pytest.mark.parametrize(
    "broken, words",
    [
        (swap(LEADERBOARD, "benchmarks", 0, "quit"), "whose benchmarks are not those they have scores on (e.g. bm25)"),
        (
            LEADERBOARD.with_columns(
                pl.when(pl.col("system") == "smollm2").then(None).otherwise(pl.col(c)).alias(c)
                for c in [*board.SCORES, board.QUIT_EM_SETTING]
            ),
            "without any score (e.g. smollm2)",
        ),
        (swap(LEADERBOARD, "kind", 1, "subject LLM"), "with a QUIT EM but not a reader"),
        (swap(LEADERBOARD, "quit/em_setting", 1, None), "with a QUIT EM and no setting"),
        (
            swap(LEADERBOARD, "kind", 0, "retriever, subject LLM"),
            "with WikiProfile scores but not a subject, or a subject without them (e.g. bm25)",
        ),
    ],
)
def test_each_leaderboard_row_names_the_benchmarks_and_kinds_its_scores_say(broken, words):
    assert el.leaderboard_run_on(LEADERBOARD).passed
    assert fails(el.leaderboard_run_on(broken), words)


@pytest.mark.usefixtures("compiled_metrics")
def test_reteco_generation_judges_generators_and_submissions_and_the_leaderboard_ranks_them(tmp_path, scripted_llm):
    """Two law turns. The generator answered turn 1 in both modes (the scripted judge gives 5
    on every dimension) and turn 2 only as Oracle (4); a submitted 2c file answered turn 2
    (3) from its own run. Every missing answer is 0 on every dimension."""
    from assets.eval.recor.assets import (
        ReTeCoGeneration,
        ReTeCoSubmission,
        reteco_generation,
        reteco_leaderboard,
        reteco_retrieval,
    )

    turns = pl.DataFrame(
        {
            "qid": ["c1_turn_1", "c1_turn_2"],
            "domain": ["law", "law"],
            "conversation_id": ["c1", "c1"],
            "turn_id": [1, 2],
            "gold_doc_ids": [["d1"], ["d2"]],
            "query": ["Is it binding?", "And land?"],
            "answer": ["Yes.", "Only in writing."],
            "conversation_history": ["", "Q: Is it binding?\nA: Yes."],
        }
    )
    corpus = pl.DataFrame(
        {"domain": ["law"] * 3, "doc_id": ["d1", "d2", "d3"], "content": ["Offer.", "Writing.", "Other."]}
    )
    runs = pl.concat(
        [
            run("bm25", {"c1_turn_1": ["d1"], "c1_turn_2": ["d3", "d2"]}, strategy=s, domain="law")
            for s in ("baseline", "rewrite")
        ]
    )
    generated = pl.DataFrame(
        {
            "domain": ["law"] * 4,
            "qid": ["c1_turn_1", "c1_turn_2", "c1_turn_1", "c1_turn_2"],
            "generator": ["g"] * 4,
            "mode": ["oracle", "oracle", "retrieved", "retrieved"],
            "answer": [
                "Yes. Scripted distribution: 5=1",
                "Writing. Scripted distribution: 4=1",
                "Yes. Scripted distribution: 5=1",
                None,
            ],
            "rouge_l": [0.5, 0.25, 0.5, None],
            "meteor": [0.5, 0.25, 0.5, None],
            "bertscore_f1": [0.5, 0.25, 0.5, None],
        }
    )
    metrics = pl.DataFrame(
        {
            "retriever": ["bm25", "bm25"],
            "strategy": ["baseline", "rewrite"],
            "ndcg@10": [0.5, 0.9],
            "qid": ["c1_turn_1", "c1_turn_1"],
            "domain": ["law", "law"],
        }
    )
    submitted = tmp_path / "submissions" / "team"  # participants' files: under the storage root's submissions/
    submitted.mkdir(parents=True)
    (submitted / "mine.jsonl").write_text(
        '{"turn_id": "c1#turn2", "answer": "In writing. Scripted distribution: 3=1"}\n'
    )
    (submitted / "mine.trec").write_text("c1#turn2 Q0 d2 1 2.0 mine\nc1#turn1 Q0 d3 1 1.0 mine\n")

    def judged(*submissions: ReTeCoSubmission) -> pl.DataFrame:
        return reteco_generation(
            dg.build_asset_context(partition_key="law"),
            ReTeCoGeneration(submissions=list(submissions)),
            benchmark=turns,
            corpus=corpus,
            recor_generation=generated,
            recor_runs=runs,
            recor_retrieval_metrics=metrics,
            llm=scripted_llm,
            storage=StorageResource(root=str(tmp_path)),
        ).value

    scores = judged(ReTeCoSubmission(path="team/mine.jsonl", subtrack="2c", run="team/mine.trec", name="mine"))
    assert er.reteco_generation_schema(scores).passed
    by = {(r["system"], r["subtrack"], r["qid"]): r for r in scores.iter_rows(named=True)}
    assert by["g", "2b", "c1_turn_1"]["correctness"] == 1.0 and by["g", "2b", "c1_turn_2"]["faithfulness"] == 0.75
    assert by["g", "2c", "c1_turn_2"]["coherence"] == 0.0 and not by["g", "2c", "c1_turn_2"]["answered"]
    assert by["g", "2c", "c1_turn_1"]["run"] == "bm25/rewrite"  # the best configuration by nDCG@10
    assert by["g", "2c", "c1_turn_2"]["ndcg@10"] == pytest.approx(1 / math.log2(3))  # d2 at rank 2 of bm25's run
    assert by["mine", "2c", "c1_turn_2"]["relevance"] == 0.5 and by["mine", "2c", "c1_turn_1"]["relevance"] == 0.0
    assert by["mine", "2c", "c1_turn_1"]["ndcg@10"] == 0.0 and by["mine", "2c", "c1_turn_2"]["ndcg@10"] == 1.0

    with dg.build_asset_context() as context:
        scored = reteco_retrieval(
            context, recor_runs=runs, benchmark=turns, corpus=corpus, uncertainty=UncertaintySettings()
        )
    retrieval = scored.value
    with dg.build_asset_context() as context:
        ranked = reteco_leaderboard(
            context, reteco_retrieval=retrieval, reteco_generation=scores, uncertainty=UncertaintySettings()
        )
    board = ranked.value
    assert er.reteco_leaderboard_ranges(board).passed
    # the official and per-domain tables' intervals, and each sub-track's official figure's on the board
    for meta, name in [(scored.metadata, "official"), (scored.metadata, "by_domain"), (ranked.metadata, "subtrack_2a")]:
        described = {c.name: c.description for c in meta[f"{name}_uncertainty"].schema.columns}
        assert "percentile bootstrap over target turns" in described["ci_low"], name
    assert [r.data["run"] for r in ranked.metadata["subtrack_2c_uncertainty"].records] == ["g", "mine"]
    assert (
        "nDCG@10 ci_low" in ranked.metadata["subtrack_2a"].value and "macro" not in ranked.metadata["subtrack_2a"].value
    )
    assert {"nDCG@10 ci_low", "nDCG@10 tied_best", "macro ci_high", "macro tied_best"} <= set(board.columns)
    rows = {(r["subtrack"], r["run"]): r for r in board.iter_rows(named=True)}
    assert set(rows) == {("2a", "bm25/baseline"), ("2a", "bm25/rewrite"), ("2b", "g"), ("2c", "g"), ("2c", "mine")}
    assert rows["2b", "g"]["macro"] == pytest.approx((1.0 + 0.75) / 2) and rows["2b", "g"]["nDCG@10"] is None
    assert rows["2c", "g"]["macro"] == 0.5 and rows["2c", "g"]["nDCG@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert rows["2c", "mine"]["macro"] == 0.25 and rows["2c", "mine"]["retrieval_run"] == "team/mine.trec"
    assert board.filter(pl.col("subtrack") == "2c")["run"].to_list() == ["g", "mine"]  # ranked by the macro
    # a run names a file under submissions/, never one elsewhere on the worker
    (tmp_path / "secret.jsonl").write_text("{}\n")
    for outside in ("../secret.jsonl", str(tmp_path / "secret.jsonl")):
        with pytest.raises(dg.Failure, match="under the storage root's submissions/"):
            judged(ReTeCoSubmission(path=outside))

    for broken, words in [
        (swap(scores, "correctness", 0, 0.3), "no normalized 1-5 integer"),
        (swap(scores, "answered", 0, False), "scored above 0 without an answer"),
        (swap(scores, "run", 0, "bm25/baseline"), "in 2b with a run"),
        (scores.head(scores.height - 1), "not scoring each of the 2 target turns once"),
    ]:
        assert fails(er.reteco_generation_schema(broken), words)
    for broken, words in [
        (swap(board, "macro", 0, 0.1), "macro is not the dimensions' mean"),
        (swap(board, "nDCG@10", 0, None), "missing a figure of their sub-track"),
        (swap(board, "MRR", 2, 1.5), "MRR outside [0, 1]"),
        # each sub-track's official figure with its interval (issue 48): one that misses the figure fails
        (swap(board, "nDCG@10 ci_high", 0, 0.01), "whose nDCG@10 interval does not hold the value"),
        (swap(board, "macro ci_low", 3, None), "with one end of macro's interval"),
    ]:
        assert fails(er.reteco_leaderboard_ranges(broken), words)
