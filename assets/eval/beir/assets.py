"""Every registered retriever and reranker evaluated on the datasets in BEIR's layout that
the deployment registers (``resources/datasets.yaml``): each dataset read with named rejects,
indexed and searched per retriever, the runs reranked, scored with BEIR's metrics and written
as TREC run files, as QUIT's and RECOR's evaluations are.

Partitioned by dataset (the registry's names, added by the registry sensor) and by dataset x
retriever alias; every registered reranker reorders a retriever's run within its partition
(Dagster partitions have at most two dimensions)."""

import dagster as dg
import polars as pl

from assets.common.formats import beir as layout
from assets.common.metadata import counts_md, report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from assets.eval import metrics as eval_metrics
from assets.eval import rerankers as rerank_methods
from assets.eval import retrieve
from assets.eval.beir import rules
from assets.eval.runs import RUN_SCHEMA, oracle_run, reranked_run, run_frame, trec_run
from assets.eval.uncertainty import UncertaintySettings
from assets.eval.uncertainty import definitions as uncertainty_definitions
from assets.partitions import beir_dataset_partitions, dataset_retriever_partitions
from resources.datasets import dataset
from resources.faiss_index import FaissIndexResource
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.retrieval import RUN, load_rerankers, load_retrievers
from resources.storage import StorageResource, write_bytes

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
TOP_K = 100
BY_DATASET = dg.MultiToSingleDimensionPartitionMapping(partition_dimension_name="dataset")
ORACLE = "oracle"
CORPUS_SCHEMA = {
    "dataset": pl.String,
    "passage_id": pl.String,
    "title": pl.String,
    "text": pl.String,
    "metadata": pl.String,
}
QUERIES_SCHEMA = {"dataset": pl.String, "question_id": pl.String, "query": pl.String, "metadata": pl.String}
QRELS_SCHEMA = {"dataset": pl.String, "question_id": pl.String, "passage_id": pl.String, "label": pl.Int64}
RUNS_SCHEMA = {**RUN_SCHEMA, "dataset": pl.String}
RETRIEVAL_LABELS = {"retriever": pl.String}
RERANK_LABELS = {"system": pl.String, "retriever": pl.String, "reranker": pl.String, "oracle": pl.Boolean}


def beir_tables(data: layout.BeirData, name: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A dataset as read (:func:`assets.common.formats.beir.read_beir`) in the evaluation's
    words: corpus passages, queries and graded qrels, each with the dataset's name."""
    named = pl.lit(name).alias("dataset")
    corpus = data.corpus.select(named, pl.col("_id").alias("passage_id"), "title", "text", "metadata")
    queries = data.queries.select(named, pl.col("_id").alias("question_id"), pl.col("text").alias("query"), "metadata")
    qrels = data.qrels.select(
        named,
        pl.col("query-id").alias("question_id"),
        pl.col("corpus-id").alias("passage_id"),
        pl.col("score").alias("label"),
    )
    return corpus.cast(CORPUS_SCHEMA), queries.cast(QUERIES_SCHEMA), qrels.cast(QRELS_SCHEMA)


@dg.multi_asset(
    name="eval_beir_source",
    group_name=GROUP,
    partitions_def=beir_dataset_partitions,
    outs={
        "beir_corpus": wiring.out("One registered dataset's documents (BEIR's corpus.jsonl).", {"polars"}),
        "beir_queries": wiring.out("The dataset's queries that its split judges (queries.jsonl).", {"polars"}),
        "beir_qrels": wiring.out("The split's judgments (qrels/<split>.tsv), graded as written.", {"polars"}),
        "beir_source_rejects": wiring.out(
            "Lines of the dataset's files that could not be used, with the file, line and reason.", {"polars"}
        ),
    },
    code_version="1",
)
def beir_source(context: dg.AssetExecutionContext):
    """One registered dataset (partition = its name in ``resources/datasets.yaml``) read from
    its folder or ``s3://`` prefix in BEIR's layout. A malformed line, a record without an id
    or text, a duplicate id, a qrel naming an unknown query or document, a repeated judgment or
    a non-integer score is a named reject; a query its split does not judge is kept out of
    scoring and named too (``rejects/<reason>`` counts each). A dataset key the registry does
    not hold is an error naming the registry file."""
    spec = dataset(context.partition_key)
    data = layout.read_beir(spec.path, spec.split)
    corpus, queries, qrels = beir_tables(data, spec.name)
    origin = {
        "source": spec.path,
        "split": spec.split,
        **{k: v for k, v in data.counts.items() if "/" not in k},
        "rejects_by_reason": counts_md({k.split("/", 1)[1]: v for k, v in data.counts.items() if "/" in k}, "reason"),
    }
    yield dg.Output(
        corpus,
        output_name="beir_corpus",
        metadata={**table_metadata(corpus.select("passage_id", "title", "text")), **origin},
    )
    yield dg.Output(
        queries,
        output_name="beir_queries",
        metadata={**table_metadata(queries.select("question_id", "query")), **origin},
    )
    labels = counts_md(dict(qrels.group_by("label").len().sort("label").iter_rows()), "label")
    yield dg.Output(
        qrels, output_name="beir_qrels", metadata={**table_metadata(qrels.drop("dataset")), **origin, "labels": labels}
    )
    yield wiring.rejects("beir_source_rejects", layout.REJECTS, data.rejects)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=dataset_retriever_partitions,
    ins={
        "beir_corpus": dg.AssetIn(key=[PREFIX, "beir_corpus"], partition_mapping=BY_DATASET),
        "beir_queries": dg.AssetIn(key=[PREFIX, "beir_queries"], partition_mapping=BY_DATASET),
        "beir_qrels": dg.AssetIn(key=[PREFIX, "beir_qrels"], partition_mapping=BY_DATASET),
    },
    kinds={"lucene", "faiss"},
    code_version="1",
    op_tags=GPU_STEP_TAGS,
)
def beir_runs(
    context: dg.AssetExecutionContext,
    beir_corpus: pl.DataFrame,
    beir_queries: pl.DataFrame,
    beir_qrels: pl.DataFrame,
    lucene: LuceneResource,
    faiss_index: FaissIndexResource,
    storage: StorageResource,
) -> dg.Output:
    """One dataset indexed for one retriever (title and text, as BEIR's baselines index
    them) and searched with every judged query: the top 100 per query, as a table and a TREC
    run file (``eval/runs/beir/<dataset>/<retriever>.trec``). The Oracle retriever lists each
    query's relevant documents, shuffled; a run file retriever reads its file for
    ``{benchmark}`` beir and ``{part}`` the dataset."""
    keys = context.partition_key.keys_by_dimension
    name, spec = keys["dataset"], load_retrievers()[keys["retriever"]]
    qids, texts = beir_queries["question_id"].to_list(), beir_queries["query"].to_list()
    corpus_name = f"beir_{name}"
    found, documents = {}, 0
    if spec.kind == ORACLE:
        run = oracle_run(beir_qrels, spec.alias)
    else:
        documents, _ = retrieve.build(
            spec, corpus_name, rules.contents(beir_corpus), lucene, faiss_index, storage, context.log.info
        )
        if spec.kind == RUN:
            files = retrieve.from_run_files(spec, "beir", corpus_name, {name: qids}, TOP_K, storage)
            run, found = run_frame(files.hits, spec.alias), files.metadata()
        else:
            hits = retrieve.search(spec, corpus_name, texts, qids, TOP_K, lucene, faiss_index, storage)
            run = run_frame(hits, spec.alias)
    trec_path = storage.path(PREFIX, "runs", "beir", name, f"{spec.alias}.trec")
    write_bytes(trec_path, trec_run(run).encode())
    run = run.with_columns(pl.lit(name).alias("dataset"))
    return dg.Output(
        run,
        metadata={
            **table_metadata(run.filter(pl.col("rank") <= 3)),
            "trec_run": dg.MetadataValue.path(trec_path),
            "documents": documents,
            "queries": len(qids),
            "queries_without_results": len(set(qids) - set(run["question_id"])),
            **found,
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=dataset_retriever_partitions,
    ins={
        "beir_runs": wiring.input("beir_runs"),
        "beir_corpus": dg.AssetIn(key=[PREFIX, "beir_corpus"], partition_mapping=BY_DATASET),
        "beir_queries": dg.AssetIn(key=[PREFIX, "beir_queries"], partition_mapping=BY_DATASET),
    },
    kinds={"litellm"},
    pool=llm_pool("quit.readers", "quit.judge"),
    op_tags=GPU_STEP_TAGS,
    code_version=code_version("1", "eval/relevance", "eval/upr", "eval/seq2seq", "eval/rankgpt"),
    backfill_policy=dg.BackfillPolicy.multi_run(1),
)
def beir_reranked_runs(
    context: dg.AssetExecutionContext,
    beir_runs: pl.DataFrame,
    beir_corpus: pl.DataFrame,
    beir_queries: pl.DataFrame,
    llm: LLMResource,
    storage: StorageResource,
) -> dg.Output:
    """One retriever's run on one dataset reranked by every registered reranker: each
    reorders the top ``top_k`` passages of its registry entry (pointwise LLM relevance, UPR,
    RankGPT, seq2seq, a cross-encoder, a run file or an entry point, by its kind), the rest
    kept below in their retrieved order; a table and a TREC file per
    ``<retriever>+<reranker>``."""
    keys = context.partition_key.keys_by_dimension
    name, retriever = keys["dataset"], keys["retriever"]
    run = beir_runs.sort("question_id", "rank")
    queries = dict(beir_queries.select("question_id", "query").iter_rows())
    # a reranker reads the text a retriever indexed: title and text
    texts = dict(rules.contents(beir_corpus).iter_rows())
    ranked = {q: g["passage_id"].to_list() for (q,), g in run.group_by("question_id", maintain_order=True)}
    stats, frames, reranked = CallStats(), [], {}
    for alias, spec in sorted(load_rerankers().items()):
        head = {q: ids[: spec.top_k] for q, ids in ranked.items()}
        context.log.info(f"{alias} ({spec.kind}) reranks the top {spec.top_k} of {retriever}'s run on {name}")
        if spec.kind == RUN:
            done = rerank_methods.from_run_files(spec, retriever, "beir", {name: list(ranked)}, head)
        else:
            done = rerank_methods.rerank(spec, llm, queries, head, texts, stats, context.log.info)
        system = f"{retriever}+{alias}"
        frame = reranked_run(ranked, done.lists, spec.top_k, system)
        write_bytes(storage.path(PREFIX, "runs", "beir", name, f"{system}.trec"), trec_run(frame).encode())
        frames.append(frame)
        reranked[alias] = {"kind": spec.kind, "top_k": spec.top_k, "unscored": done.unscored, "repaired": done.repaired}
    out = (pl.concat(frames) if frames else pl.DataFrame(schema=RUN_SCHEMA)).with_columns(
        pl.lit(name, pl.String).alias("dataset")
    )
    return dg.Output(
        out,
        metadata={
            **table_metadata(out.filter(pl.col("rank") <= 3)),
            "rerankers": dg.MetadataValue.md(
                "\n".join(
                    f"- {a}: {r['kind']}, top {r['top_k']}, {r['unscored']} unscored, {r['repaired']} repaired"
                    for a, r in reranked.items()
                )
                or "none registered"
            ),
            "unscored_passages": sum(r["unscored"] for r in reranked.values()),
            "trec_runs": str(storage.path(PREFIX, "runs", "beir", name)),
            **stats.as_metadata(),
        },
    )


def covers(runs: pl.DataFrame, qrels: pl.DataFrame, what: str) -> str:
    datasets = sorted(runs["dataset"].unique().to_list())
    systems = sorted(runs["system"].unique().to_list())
    judged = qrels.filter(pl.col("dataset").is_in(datasets))["question_id"].n_unique()
    return (
        f"{len(datasets)} BEIR-layout datasets ({', '.join(datasets) or 'none'}), {judged} judged queries; "
        f"{len(systems)} {what} ({', '.join(systems) or 'none'})"
    )


def definitions(labels: dict[str, str], settings: UncertaintySettings) -> dict[str, str]:
    return {
        "dataset": "a dataset of resources/datasets.yaml",
        **labels,
        "queries": "the judged queries averaged over (a query the run misses scores 0)",
        **{
            m: f"{eval_metrics.metric_label(m)}; {rules.RELEVANCE}; its interval and test in the uncertainty "
            f"table ({settings.describe('queries')}; systems compared within a dataset)"
            for m in rules.BEIR_METRICS
        },
    }


def interval_definitions(labels: dict[str, str], settings: UncertaintySettings) -> dict[str, str]:
    return uncertainty_definitions(
        {"dataset": "a dataset of resources/datasets.yaml; systems are compared within it", **labels},
        settings,
        "queries",
    )


RETRIEVER_DEFINITION = {"retriever": "a retriever alias (resources/retrievers.yaml); the Oracle left out"}
RERANK_DEFINITIONS = {
    "system": "<retriever>+<reranker>: a retriever's run reordered by a reranker (resources/rerankers.yaml)",
    "retriever": "the retriever whose run was reranked",
    "reranker": "a reranker alias (resources/rerankers.yaml)",
    "oracle": "the retriever is the Oracle: the reranker ordered the relevant documents alone",
}


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"beir_runs": wiring.materialized("beir_runs"), "beir_qrels": wiring.materialized("beir_qrels")},
    kinds={"ranx", "scipy"},
    code_version="2",
)
def beir_retrieval_metrics(
    context: dg.AssetExecutionContext,
    beir_runs: pl.DataFrame,
    beir_qrels: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """nDCG@10 and @100, MAP@100, Recall@10 and @100, P@10 and MRR@10 (ranx; nDCG with linear
    gain, as BEIR's pytrec_eval computes it) per dataset and retriever, over the dataset's
    judged queries, for every run materialized, each with its interval and its paired test
    against the dataset's best retriever (``uncertainty``). The Oracle retriever is an upper
    bound and is left out. ``slice`` names the datasets, queries and retrievers counted."""
    oracles = [a for a, s in load_retrievers().items() if s.kind == ORACLE]
    runs = beir_runs.filter(~pl.col("system").is_in(oracles))
    table, long = rules.metric_table(
        rules.per_query(runs, beir_qrels), lambda s: {"retriever": s}, RETRIEVAL_LABELS, uncertainty
    )
    return dg.Output(
        table,
        metadata={
            **table_metadata(table.select("dataset", "retriever", "queries", *rules.BEIR_METRICS)),
            "slice": report_slice(covers(runs, beir_qrels, "retrievers, the Oracle left out"), run_profile(context)),
            "retrieval": report_table(
                table.select("dataset", "retriever", "queries", *rules.BEIR_METRICS),
                definitions(RETRIEVER_DEFINITION, uncertainty),
            ),
            "retrieval_uncertainty": report_table(long, interval_definitions(RETRIEVER_DEFINITION, uncertainty)),
            **why_empty({"retrieval": (table, "no retriever's run other than the Oracle's is materialized")}),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "beir_reranked_runs": wiring.materialized("beir_reranked_runs"),
        "beir_qrels": wiring.materialized("beir_qrels"),
    },
    kinds={"ranx", "scipy"},
    code_version="2",
)
def beir_rerank_metrics(
    context: dg.AssetExecutionContext,
    beir_reranked_runs: pl.DataFrame,
    beir_qrels: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """BEIR's metrics of every retriever+reranker run per dataset, with intervals and tests
    against the dataset's best run; a reranker over the Oracle retriever's documents is
    flagged ``oracle`` (it orders the relevant documents alone: nDCG, not recall, is what it
    shows)."""
    oracles = {a for a, s in load_retrievers().items() if s.kind == ORACLE}

    def labels(system: str) -> dict:
        retriever, reranker = system.split("+", 1)
        return {"system": system, "retriever": retriever, "reranker": reranker, "oracle": retriever in oracles}

    table, long = rules.metric_table(
        rules.per_query(beir_reranked_runs, beir_qrels), labels, RERANK_LABELS, uncertainty
    )
    shown = table.select("dataset", *RERANK_LABELS, "queries", *rules.BEIR_METRICS)
    return dg.Output(
        table,
        metadata={
            **table_metadata(shown),
            "slice": report_slice(
                covers(beir_reranked_runs, beir_qrels, "retriever+reranker runs"), run_profile(context)
            ),
            "rerank": report_table(shown, definitions(RERANK_DEFINITIONS, uncertainty)),
            "rerank_uncertainty": report_table(long, interval_definitions(RERANK_DEFINITIONS, uncertainty)),
            **why_empty({"rerank": (table, "no reranked run is materialized")}),
        },
    )


beir_eval_assets = [beir_source, beir_runs, beir_reranked_runs, beir_retrieval_metrics, beir_rerank_metrics]
