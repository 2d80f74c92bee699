"""Retrieval evaluation on QUIT (paper section 4-5): indexes, runs and retrieval metrics.

Partitioned by retriever alias from ``resources/retrievers.yaml``: adding an alias there
makes its partitions appear, and materializing one partition recomputes only that slice.
"""

from functools import partial
from typing import Literal

import dagster as dg
import polars as pl
from pydantic import Field

from assets.common.metadata import png_markdown, report_slice, run_profile, table_metadata, why_empty
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from assets.eval import metrics as eval_metrics
from assets.eval import reports, retrieve
from assets.eval import rerankers as rerank_methods
from assets.eval.quit import steps as readers
from assets.eval.quit.steps import (
    READER_UNCERTAINTY,
    RERANK_UNCERTAINTY,
    RERANKED_UNCERTAINTY,
    RETRIEVAL_UNCERTAINTY,
    TABLE_2,
    TABLE_4,
    TABLE_5,
    TABLE_7,
)
from assets.eval.reports import definition_metadata
from assets.eval.runs import oracle_run, reranked_run, run_frame, trec_run
from assets.eval.uncertainty import UncertaintySettings, summarize
from assets.partitions import quit_reader_partitions, retriever_partitions, retriever_reranker_partitions
from assets.quit import rules as quit_rules
from assets.quit.settings import QuitSettings
from resources.faiss_index import FaissIndexResource
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.retrieval import RUN, load_rerankers, load_retrievers
from resources.storage import StorageResource, write_bytes

PREFIX = "eval"
GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
TOP_K = 100


# The benchmark as the evaluation reads it: built or released (assets.eval.sources).
QUIT_CORPUS = wiring.input("quit_corpus")
QUIT_QUESTIONS = wiring.input("quit_questions")
QUIT_QRELS = wiring.input("quit_qrels")


# The split QUIT's headline tables score: test, as the paper and its published evaluation
# (which reads index/test only) report them. The stored tables keep a row per split, and
# "all"; train never heads a table, since a fine-tuned model learned from its questions.
HEADLINE_SPLIT = "test"
HEADLINE_SPLITS = ("test", "dev")


class QuitReport(dg.Config):
    split: str = Field(
        default=HEADLINE_SPLIT,
        description="the split the headline tables score: test (the paper's) or dev; "
        "the stored table has every split's rows and all",
    )


class QuitReader(dg.Config):
    answer_line: Literal["last_line", "first_line"] = Field(
        default="last_line",
        description="which line of the reader's reply is its answer: last_line, as the QUIT release's "
        "answer cleaning keeps it, or first_line",
    )


def headline_split(config: QuitReport) -> str:
    """The split a QUIT report heads its tables with; train and all are refused, both hold
    the questions a fine-tuned model trained on."""
    if config.split not in HEADLINE_SPLITS:
        raise ValueError(
            f"QUIT report split {config.split!r}: a headline table scores {' or '.join(HEADLINE_SPLITS)} "
            "questions (train and all hold the questions fine-tuned models learned from)"
        )
    return config.split


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=retriever_partitions,
    ins={"benchmark_corpus": QUIT_CORPUS},
    kinds={"lucene", "faiss"},
    code_version="1",
    op_tags=GPU_STEP_TAGS,
)
def quit_index(
    context: dg.AssetExecutionContext,
    benchmark_corpus: pl.DataFrame,
    lucene: LuceneResource,
    faiss_index: FaissIndexResource,
    storage: StorageResource,
) -> dg.Output:
    """The QUIT corpus indexed for one retriever: a Lucene index for BM25, a FAISS index of
    the retriever's passage embeddings for dense retrievers (persisted under the storage
    root). The Oracle retriever reads the qrels and needs no index."""
    spec = load_retrievers()[context.partition_key]
    docs = benchmark_corpus.select(pl.col("passage_id").alias("id"), pl.col("text").alias("contents"))
    n, location = (
        (0, "")
        if spec.kind == "oracle"
        else retrieve.build(spec, "quit", docs, lucene, faiss_index, storage, context.log.info)
    )
    frame = pl.DataFrame({"retriever": [spec.alias], "kind": [spec.kind], "documents": [n], "location": [location]})
    return dg.Output(frame, metadata={**table_metadata(frame), "documents": n})


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=retriever_partitions,
    ins={
        "quit_index": wiring.input("quit_index"),
        "benchmark_questions": QUIT_QUESTIONS,
        "benchmark_qrels": QUIT_QRELS,
    },
    kinds={"lucene", "faiss"},
    code_version="2",
    op_tags=GPU_STEP_TAGS,
)
def quit_runs(
    context: dg.AssetExecutionContext,
    quit_index: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
    lucene: LuceneResource,
    faiss_index: FaissIndexResource,
    storage: StorageResource,
) -> dg.Output:
    """Top-100 passages per question for one retriever, as a table and a TREC run file (the
    Oracle retriever: every relevant passage, shuffled; a run file retriever: its file per
    split, ``run_queries_missing`` questions it has no list for, ``run_ids_ignored`` ids
    that are not the split's questions)."""
    spec = load_retrievers()[context.partition_key]
    questions = benchmark_questions["question"].to_list()
    qids = benchmark_questions["question_id"].to_list()
    found = {}
    if spec.kind == "oracle":
        run = oracle_run(benchmark_qrels.filter(pl.col("question_id").is_in(qids)), spec.alias)
    elif spec.kind == RUN:
        splits = {
            s: g["question_id"].to_list() for (s,), g in benchmark_questions.group_by("split", maintain_order=True)
        }
        files = retrieve.from_run_files(spec, "quit", "quit", splits, TOP_K, storage)
        run, found = run_frame(files.hits, spec.alias), files.metadata()
    else:
        run = run_frame(retrieve.search(spec, "quit", questions, qids, TOP_K, lucene, faiss_index, storage), spec.alias)
    trec_path = storage.path(PREFIX, "runs", "quit", f"{spec.alias}.trec")
    write_bytes(trec_path, trec_run(run).encode())
    return dg.Output(
        run,
        metadata={**table_metadata(run), "trec_run": dg.MetadataValue.path(trec_path), "questions": len(qids), **found},
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"quit_runs": wiring.input("quit_runs"), "benchmark_qrels": QUIT_QRELS, "benchmark_questions": QUIT_QUESTIONS},
    kinds={"ranx"},
    code_version="4",
)
def quit_retrieval_metrics(
    context: dg.AssetExecutionContext,
    config: QuitReport,
    quit_runs: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """Hit@1/5/10/50/100, Recall@5/10/50, MRR and nDCG@10/100 (ranx, graded labels) per
    retriever, over all benchmark questions and per split: the shapes of Tables 2 and 4,
    Hit@k curves (Figure 4 left) and Hit@100 by number of relevant passages (Figure 4 right).
    Table 4's nDCG uses the QUIT release's exponential gain 2^rel-1 (``ndcg_burges@k``); the
    linear-gain nDCG of trec_eval stays in the table as ``ndcg@k``. The Oracle retriever is
    an upper bound, not a retriever, and is left out. The tables and figures score the test
    split (``config.split``; the stored table has a row per split and all). Each metric of
    Tables 2 and 4 has, on that split, its interval and its test against the best retriever
    (``<metric> ci_low``, ``ci_high``, ``tied_best``; ``table_2_uncertainty`` and
    ``table_4_uncertainty``, by the ``uncertainty`` resource). ``slice`` names the questions
    and retrievers counted and the run's profile."""
    split = headline_split(config)
    quit_runs = quit_runs.filter(~pl.col("system").is_in(oracle_aliases()))
    metrics = eval_metrics.RETRIEVAL_METRICS
    per_question = readers.per_question_scores(quit_runs, benchmark_qrels, benchmark_questions, metrics)
    rows = readers.scores_by_split(per_question, benchmark_questions, lambda system: {"retriever": system}, metrics)
    table = readers.metrics_table(rows, {"retriever": pl.String}, metrics)
    compared = readers.of_split(per_question, benchmark_questions, split).rename({"system": "retriever"})
    long = summarize(compared, ["retriever"], "question_id", RETRIEVAL_UNCERTAINTY, uncertainty)
    table = readers.with_intervals(table, long, ["retriever"], split, RETRIEVAL_UNCERTAINTY)
    headline = readers.on_split(table, split)
    retrievers = sorted(quit_runs["system"].unique().to_list())
    column = f"a retriever alias (resources/retrievers.yaml), on the {split} split; the Oracle retriever left out"
    split_runs, split_qrels = (readers.of_split(f, benchmark_questions, split) for f in (quit_runs, benchmark_qrels))
    return dg.Output(
        table,
        metadata={
            **table_metadata(table),
            "slice": report_slice(
                f"{readers.questions_covered(benchmark_questions)}; {len(retrievers)} retrievers "
                f"({', '.join(retrievers) or 'none'}), the Oracle left out; tables on the {split} split",
                run_profile(context),
            ),
            "split": split,
            **reports.headline_tables(
                headline, long, "retriever", column, {"table_2": TABLE_2, "table_4": TABLE_4}, uncertainty
            ),
            **why_empty(
                {
                    name: (headline, readers.no_rows(benchmark_questions, split, NO_RETRIEVER_RUN))
                    for name in ("table_2", "table_4")
                }
            ),
            **definition_metadata(),
            "figure_4_left": png_markdown(reports.hit_curves(split_runs, split_qrels, split)),
            "figure_4_right": png_markdown(reports.hit_by_relevant(split_runs, split_qrels, split)),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=retriever_reranker_partitions,
    ins={
        "quit_runs": dg.AssetIn(
            key=[PREFIX, "quit_runs"],
            partition_mapping=dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="retriever"),
        ),
        "benchmark_questions": QUIT_QUESTIONS,
        "benchmark_corpus": QUIT_CORPUS,
    },
    kinds={"litellm"},
    pool=llm_pool("quit.readers", "quit.judge"),
    op_tags=GPU_STEP_TAGS,
    code_version=code_version("2", "eval/relevance", "eval/upr", "eval/seq2seq", "eval/rankgpt"),
    backfill_policy=dg.BackfillPolicy.multi_run(1),
)
def quit_reranked_runs(
    context: dg.AssetExecutionContext,
    quit_runs: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    benchmark_corpus: pl.DataFrame,
    llm: LLMResource,
    storage: StorageResource,
    quit_settings: QuitSettings,
) -> dg.Output:
    """One retriever's run reranked by one reranker (partition = retriever x reranker): the
    top ``quit_settings.rerank_depth`` passages (the paper's 100; the demo profile: the
    reranker's own ``top_k``) reordered (pointwise LLM relevance, UPR, RankGPT or seq2seq, by
    the reranker's kind), the rest kept below in their retrieved order."""
    keys = context.partition_key.keys_by_dimension
    spec = load_rerankers()[keys["reranker"]]
    run = quit_runs.sort("question_id", "rank")
    queries = dict(benchmark_questions.select("question_id", "question").iter_rows())
    texts = dict(benchmark_corpus.select("passage_id", "text").iter_rows())
    ranked = {q: g["passage_id"].to_list() for (q,), g in run.group_by("question_id", maintain_order=True)}
    depth = quit_settings.rerank_depth or spec.top_k
    head = {q: ids[:depth] for q, ids in ranked.items()}
    stats = CallStats()
    context.log.info(f"{spec.alias} ({spec.kind}) reranks the top {depth} of each run (the paper reranks 100)")
    if spec.kind == RUN:
        splits = {
            s: g["question_id"].to_list() for (s,), g in benchmark_questions.group_by("split", maintain_order=True)
        }
        done = rerank_methods.from_run_files(spec, keys["retriever"], "quit", splits, head)
    else:
        done = rerank_methods.rerank(spec, llm, queries, head, texts, stats, context.log.info)
    system = f"{keys['retriever']}+{spec.alias}"
    frame = reranked_run(ranked, done.lists, depth, system)
    trec_path = storage.path(PREFIX, "runs", "quit", f"{system}.trec")
    write_bytes(trec_path, trec_run(frame).encode())
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            "reranker_kind": spec.kind,
            "reranked_top_k": depth,
            "unscored_passages": done.unscored,
            "repaired_permutations": done.repaired,
            **done.found,
            "trec_run": dg.MetadataValue.path(trec_path),
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "quit_reranked_runs": wiring.input("quit_reranked_runs"),
        "benchmark_qrels": QUIT_QRELS,
        "benchmark_questions": QUIT_QUESTIONS,
    },
    kinds={"ranx"},
    code_version="4",
)
def quit_rerank_metrics(
    context: dg.AssetExecutionContext,
    config: QuitReport,
    quit_reranked_runs: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """Every retriever x reranker run scored with ranx: Hit@1/10/50 and MRR (Table 5's
    shape), the full metric set (Table 6's shape; the paper's rows there are a fine-tuned
    MonoT5), and nDCG@5/10/50/100 of each reranker on the Oracle retriever's passages
    (Table 7's shape). nDCG in Tables 6 and 7 uses the QUIT release's exponential gain
    (``ndcg_burges@k``); the linear gain stays in the table as ``ndcg@k``. The tables score
    the test split (``config.split``; the stored table has a row per split and all). Each
    metric of the tables has, on that split, its interval and its test against the best of
    its table (``<metric> ci_low``, ``ci_high``, ``tied_best``; ``table_5_uncertainty`` to
    ``table_7_uncertainty``, by the ``uncertainty`` resource): the retriever+reranker runs of
    Tables 5 and 6 against each other, the rerankers of the Oracle's passages of Table 7
    against each other."""
    split, metrics, oracles = headline_split(config), readers.RERANK_METRICS, oracle_aliases()
    per_question = readers.per_question_scores(quit_reranked_runs, benchmark_qrels, benchmark_questions, metrics)
    labels = partial(readers.reranked_labels, oracles=oracles)
    rows = readers.scores_by_split(per_question, benchmark_questions, labels, metrics)
    table = readers.metrics_table(rows, readers.RERANKED_KEYS, metrics)
    over_retrieved, over_oracle = readers.by_oracle(readers.of_split(per_question, benchmark_questions, split), oracles)
    long_retrieved = summarize(over_retrieved, ["system"], "question_id", RERANKED_UNCERTAINTY, uncertainty)
    long_oracle = summarize(over_oracle, ["system"], "question_id", TABLE_7, uncertainty)
    table = readers.with_intervals(
        table, pl.concat([long_retrieved, long_oracle]), ["system"], split, RERANK_UNCERTAINTY
    )
    headline = readers.on_split(table, split)
    retrieved, oracle = headline.filter(~pl.col("oracle")), headline.filter(pl.col("oracle"))
    systems = sorted(quit_reranked_runs["system"].unique().to_list())
    reranked_column, reranker_column = (f"{c}, on the {split} split" for c in (RERANKED_COLUMN, RERANKER_COLUMN))
    # Table 7's rows are keyed by reranker: its summary, keyed by run, takes theirs
    by_reranker = long_oracle.join(oracle.select("system", "reranker"), on="system", how="left")
    tables = {
        **reports.headline_tables(
            retrieved, long_retrieved, "system", reranked_column, {"table_5": TABLE_5, "table_6": TABLE_4}, uncertainty
        ),
        **reports.headline_tables(oracle, by_reranker, "reranker", reranker_column, {"table_7": TABLE_7}, uncertainty),
    }
    return dg.Output(
        table,
        metadata={
            **table_metadata(table),
            "slice": report_slice(
                f"{quit_reranked_runs['question_id'].n_unique()} QUIT questions reranked; {len(systems)} "
                f"retriever+reranker runs ({', '.join(systems) or 'none'}); tables on the {split} split",
                run_profile(context),
            ),
            "split": split,
            # Tables 5 to 7, then their intervals and tests, as the other reports list theirs
            **dict(sorted(tables.items(), key=lambda item: item[0].endswith("_uncertainty"))),
            **why_empty(
                {
                    "table_5": (retrieved, readers.no_rows(benchmark_questions, split, NO_RERANKED_RUN)),
                    "table_6": (retrieved, readers.no_rows(benchmark_questions, split, NO_RERANKED_RUN)),
                    "table_7": (oracle, readers.no_rows(benchmark_questions, split, NO_ORACLE_RERANKED_RUN)),
                }
            ),
            **definition_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=quit_reader_partitions,
    ins={
        "quit_runs": dg.AssetIn(key=[PREFIX, "quit_runs"], partition_mapping=dg.AllPartitionMapping()),
        "quit_reranked_runs": dg.AssetIn(
            key=[PREFIX, "quit_reranked_runs"], partition_mapping=dg.AllPartitionMapping()
        ),
        "benchmark_questions": QUIT_QUESTIONS,
        "benchmark_corpus": QUIT_CORPUS,
        "benchmark_qrels": QUIT_QRELS,
    },
    kinds={"litellm"},
    pool=llm_pool("quit.readers", "quit.judge"),
    code_version=code_version("4", "quit/reader", "quit/judge"),
    backfill_policy=dg.BackfillPolicy.multi_run(1),
)
def quit_reader_answers(
    context: dg.AssetExecutionContext,
    config: QuitReader,
    quit_runs: pl.DataFrame,
    quit_reranked_runs: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    benchmark_corpus: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
    llm: LLMResource,
) -> dg.Output:
    """One reader (partition = model alias) answering from the top-1, top-3 and top-5
    passages of every retriever's and retriever+reranker's run, with Union_norm and
    Union_freq contexts over the passages' hints (equation 1, alpha 0.6, beta 0.4, every hint
    kept, as released), plus the Optimal bound: the reader on each question's relevant
    passages until one answers it (``readers.read_relevant``: the same bound as reading all),
    a row for every question, one without a relevant passage unanswered (the release's
    denominator). Each answer has ``em`` (normalized EM) and ``em_raw`` (the release's raw,
    case-sensitive EM); ``passages_cut_into_sentences`` counts the passages whose id encodes
    no hints. The answer is the reply's last line, as the release's answer cleaning takes it
    (``config.answer_line``: ``first_line`` for the first)."""
    reader, judge = llm.named(context.partition_key), llm.model("quit.judge")
    parse = quit_rules.READER_PARSES[config.answer_line]
    stats = CallStats()
    items, split = readers.reader_items(
        pl.concat([quit_runs, quit_reranked_runs]), benchmark_corpus, benchmark_questions
    )
    if split:
        context.log.warning(
            f"{len(split)} passages encode no hints in their id and are cut into sentences: {', '.join(split[:10])}"
        )
    answers = readers.read(items, benchmark_questions, reader, judge, stats, context.log.info, parse=parse)
    relevant = benchmark_corpus.join(benchmark_qrels.select("passage_id", "label"), on="passage_id")
    # With the labeling prompt and model these calls are served from the labeling cache.
    per_passage = readers.read_relevant(relevant, benchmark_questions, reader, judge, stats, context.log.info, parse)
    best = readers.optimal(per_passage, benchmark_qrels, reader.alias, benchmark_questions)
    frame = pl.concat(
        [answers, best.select("question_id", "reader", "system", "em", "em_raw", "correct")], how="diagonal_relaxed"
    )
    return dg.Output(
        frame,
        metadata={
            **table_metadata(
                answers.select("question_id", "system", "k", "strategy", "answer", "em", "em_raw", "correct")
            ),
            "em": float(answers["em"].mean() or 0.0),
            "em_raw": float(answers["em_raw"].mean() or 0.0),
            "optimal_em": float(best["em"].mean() or 0.0),
            "optimal_em_raw": float(best["em_raw"].mean() or 0.0),
            "optimal_passages_read": f"{per_passage.height:,} of {relevant.height:,} relevant passages (a question "
            "is read until one passage has answered it by each measure)",
            "passages_cut_into_sentences": len(split),
            "answer_line": config.answer_line,
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "quit_reader_answers": wiring.input("quit_reader_answers"),
        "quit_runs": wiring.input("quit_runs"),
        "quit_reranked_runs": wiring.input("quit_reranked_runs"),
        "benchmark_corpus": QUIT_CORPUS,
        "benchmark_qrels": QUIT_QRELS,
        "benchmark_questions": QUIT_QUESTIONS,
    },
    kinds={"polars"},
    code_version="6",
)
def quit_reader_metrics(
    context: dg.AssetExecutionContext,
    config: QuitReport,
    quit_reader_answers: pl.DataFrame,
    quit_runs: pl.DataFrame,
    quit_reranked_runs: pl.DataFrame,
    benchmark_corpus: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """EM of every reader per retriever (and retriever+reranker, the Oracle ones included),
    k and context strategy, with the Optimal bound (Table 8's shape; ``em`` normalized,
    ``em_raw`` the release's raw match, each its own table), and the distribution of
    top-5 passages by number of hints for the retrievers and the Oracle retriever with each
    reranker, next to the fully relevant ones (Figure 6's shape). Table 8 scores the test
    split (``config.split``; the stored table has a row per split and all), as the
    published RAG inputs hold the test questions only; Figure 6 is drawn on the same split.
    On that split ``em``, ``em_raw`` and ``judge`` have their intervals and each setting its
    test against its reader's best (``<metric> ci_low``, ``ci_high``, ``tied_best``;
    ``table_8_uncertainty`` and ``table_8_em_raw_uncertainty``, by the ``uncertainty``
    resource; ``readers.table_8_summary`` says which settings are compared)."""
    split = headline_split(config)
    table = readers.em_by_split(quit_reader_answers, benchmark_questions)
    scores = readers.table_8_scores(readers.of_split(quit_reader_answers, benchmark_questions, split))
    oracles = oracle_aliases()
    long = readers.table_8_summary(scores, oracles, READER_UNCERTAINTY, uncertainty)
    table = readers.with_intervals(table, long, readers.TABLE_8_KEYS, split, READER_UNCERTAINTY)
    headline = readers.on_split(table, split).drop("questions")
    names = sorted(quit_reader_answers["reader"].unique().to_list())
    figure_6 = readers.of_split(
        readers.figure_6_runs(quit_runs, quit_reranked_runs, oracles), benchmark_questions, split
    )
    return dg.Output(
        table,
        metadata={
            **table_metadata(table, 30),
            "slice": report_slice(
                f"{quit_reader_answers['question_id'].n_unique()} QUIT questions answered; {len(names)} "
                f"readers ({', '.join(names) or 'none'}); tables on the {split} split",
                run_profile(context),
            ),
            "split": split,
            **reports.table_8_tables(headline, long, split, uncertainty),
            **why_empty(
                {
                    name: (
                        headline,
                        readers.no_rows(benchmark_questions, split, "no reader's answers are materialized"),
                    )
                    for name in ("table_8", "table_8_em_raw")
                }
            ),
            "figure_6": png_markdown(
                reports.hint_distribution(
                    figure_6, benchmark_corpus, readers.of_split(benchmark_qrels, benchmark_questions, split), split
                )
            ),
        },
    )


# Why a report's headline table is empty when its split has questions.
NO_RETRIEVER_RUN = "no retriever's run other than the Oracle's is materialized"
NO_RERANKED_RUN = "no reranked run of a retriever other than the Oracle is materialized"
NO_ORACLE_RERANKED_RUN = "no reranked run of the Oracle retriever is materialized"
# The rerank report's row keys, as its headline tables define them.
RERANKED_COLUMN = "<retriever>+<reranker>: a retriever's run reordered by a reranker (resources/rerankers.yaml)"
RERANKER_COLUMN = "a reranker alias (resources/rerankers.yaml), reordering the Oracle retriever's passages"


def oracle_aliases() -> list[str]:
    return [alias for alias, spec in load_retrievers().items() if spec.kind == "oracle"]


quit_eval_assets = [
    quit_index,
    quit_runs,
    quit_retrieval_metrics,
    quit_reranked_runs,
    quit_rerank_metrics,
    quit_reader_answers,
    quit_reader_metrics,
]
