"""RECOR's retrieval evaluation (paper section 4.1): each turn's query under every strategy,
the runs per domain x retriever, and the retrieval report.

Partitioned by domain (and retriever alias from ``resources/retrievers.yaml``, the QUIT
evaluation's registry: the same retrievers, indexes and searches serve both benchmarks).
"""

import dagster as dg
import polars as pl

from assets.common.metadata import (
    counts_md,
    png_markdown,
    report_slice,
    report_table,
    run_profile,
    table_metadata,
    why_empty,
)
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version, load_prompt
from assets.eval import retrieve
from assets.eval.recor import rules as conversational
from assets.eval.recor.assets.common import BENCHMARK, BY_DOMAIN, GROUP, PREFIX, wiring
from assets.eval.recor.reteco import rules as reteco
from assets.eval.runs import RUN_SCHEMA, run_frame, trec_run
from assets.eval.uncertainty import UncertaintySettings
from assets.partitions import domain_partitions, domain_retriever_partitions
from resources.faiss_index import FaissIndexResource
from resources.llm import CallStats, LLMRequest, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.retrieval import RUN, load_retrievers
from resources.storage import StorageResource, write_bytes

TOP_K = 100


def qrels_frame(benchmark: pl.DataFrame) -> pl.DataFrame:
    """One qrel per turn and gold document; a turn without gold has none (exploding its
    empty list would leave a null document)."""
    return (
        benchmark.select(pl.col("qid").alias("question_id"), pl.col("gold_doc_ids").alias("passage_id"))
        .explode("passage_id")
        .drop_nulls("passage_id")
        .with_columns(pl.lit(1).alias("label"))
    )


def truncated(spec, texts: list[str]) -> int:
    """How many of ``texts`` the retriever cuts at its input limit: a dense or multi-vector
    encoder with a bounded input (sentence-transformers' ``max_seq_length``; a multi-vector
    model's question length, ``resources.multi_vector.query_limit``) keeps the start,
    so the question survives and the end of the history goes. BM25 and the bundled e5-small
    (sliding windows) read queries whole; a run file or an entry point is a system whose
    input limit the project cannot see, so it counts none."""
    from resources import multi_vector
    from resources.encoders import input_limit, token_counts

    if spec.kind == "multi_vector" and texts:
        return multi_vector.truncated(spec.encoder, texts)
    if spec.kind != "dense" or not texts:
        return 0
    limit = input_limit(spec.encoder)
    if limit is None:
        return 0
    return sum(n > limit for n in token_counts(spec.encoder, texts, "query", query_prefix=spec.query_prefix))


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=domain_partitions,
    ins={"benchmark": BENCHMARK},
    kinds={"litellm"},
    pool=llm_pool("recor"),
    code_version=code_version("2", "eval/query_rewrite", "eval/search_reasoning"),
)
def recor_queries(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Every turn's query under each strategy (4.1.1), laid out as the published retrieval
    code does (question first, then ``Conversation History:``, then ``Reasoning:``):
    Baseline (the question), Query Rewrite (made self-contained by the LLM), Reasoning (the
    retrieval guidance stored with the turn at construction), History (the whole
    conversation so far, as released), History+Reasoning, Last turn (the previous question
    and answer, then the question) and LLM reasoning (a search rationale the LLM writes
    now, this project's variant)."""
    builder = llm.model("recor.builder")
    stats = CallStats()
    rows = list(benchmark.iter_rows(named=True))
    rewrite, reason = load_prompt("eval", "query_rewrite"), load_prompt("eval", "search_reasoning")
    later = [t for t in rows if t["turn_id"] > 1]
    # A first question is self-contained already: it is its own rewrite.
    rewritten = builder.run(
        [
            LLMRequest(
                t["qid"],
                rewrite.messages(history=t["conversation_history"], query=t["query"]),
                params={"max_tokens": 60},
            )
            for t in later
        ],
        stats=stats,
        log=context.log.info,
    )
    why = builder.run(
        [
            LLMRequest(
                t["qid"],
                reason.messages(history=t["conversation_history"], query=t["query"]),
                params={"max_tokens": 80},
            )
            for t in rows
        ],
        stats=stats,
        log=context.log.info,
    )
    rewrites = {t["qid"]: t["query"] for t in rows if t["turn_id"] == 1}
    rewrites |= {
        t["qid"]: (" ".join(r.value.split()) or None) if r.ok and r.value else None for t, r in zip(later, rewritten)
    }
    rationales = {
        t["qid"]: (" ".join(r.value.split()) or None) if r.ok and r.value else None for t, r in zip(rows, why)
    }
    frame = conversational.strategy_queries(benchmark, rewrites, rationales)
    fallbacks = dict(frame.filter(pl.col("fallback")).group_by("strategy").len().sort("strategy").iter_rows())
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("qid", "strategy", "query")),
            "fallbacks": int(frame["fallback"].sum()),
            "fallbacks_by_strategy": counts_md(fallbacks, "strategy"),
            "strategies": counts_md(conversational.STRATEGY_TEXT, "strategy", "query text"),
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=domain_retriever_partitions,
    ins={
        "corpus": dg.AssetIn(key=[PREFIX, "recor_corpus"], partition_mapping=BY_DOMAIN),
        "recor_queries": dg.AssetIn(key=[PREFIX, "recor_queries"], partition_mapping=BY_DOMAIN),
    },
    kinds={"lucene", "faiss"},
    code_version="2",
    op_tags=GPU_STEP_TAGS,
)
def recor_runs(
    context: dg.AssetExecutionContext,
    corpus: pl.DataFrame,
    recor_queries: pl.DataFrame,
    lucene: LuceneResource,
    faiss_index: FaissIndexResource,
    storage: StorageResource,
) -> dg.Output:
    """One domain's corpus indexed for one retriever and searched with every turn's
    strategy queries: top-100 per turn and strategy, as a table and TREC run files. The
    queries go in whole; ``truncated_queries`` counts those the retriever's input limit cut.
    A run file retriever answers one strategy (its ``strategy``, baseline by default): its
    domain's file holds the turns' ids, and only that strategy's rows are produced."""
    keys = context.partition_key.keys_by_dimension
    domain, spec = keys["domain"], load_retrievers()[keys["retriever"]]
    docs = corpus.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents"))
    name = f"recor_{domain}"
    n, _ = retrieve.build(spec, name, docs, lucene, faiss_index, storage, context.log.info)
    if spec.kind == RUN and spec.strategy not in set(recor_queries["strategy"]):
        raise ValueError(
            f"retriever {spec.alias!r}: strategy {spec.strategy!r} is not one of the query strategies "
            f"{sorted(set(recor_queries['strategy']))}"
        )
    frames, cut, found = [], {}, {}
    for (strategy,), group in recor_queries.group_by("strategy", maintain_order=True):
        if spec.kind == RUN and strategy != spec.strategy:
            continue
        cut[strategy] = truncated(spec, group["query"].to_list())
        if spec.kind == RUN:
            # read as RETECO Track 2 reads a run: either query id style, repeats and unknown documents counted
            files = retrieve.from_run_files(
                spec,
                "recor",
                name,
                {domain: group["qid"].to_list()},
                TOP_K,
                storage,
                query_id=reteco.project_qid,
                lenient=True,
            )
            hits, found = files.hits, files.metadata()
        else:
            hits = retrieve.search(
                spec, name, group["query"].to_list(), group["qid"].to_list(), TOP_K, lucene, faiss_index, storage
            )
        run = run_frame(hits, spec.alias).with_columns(pl.lit(strategy).alias("strategy"))
        write_bytes(
            storage.path(PREFIX, "runs", "recor", domain, f"{spec.alias}.{strategy}.trec"),
            trec_run(run.drop("strategy")).encode(),
        )
        frames.append(run)
    runs = pl.concat(frames) if frames else pl.DataFrame(schema={**RUN_SCHEMA, "strategy": pl.String})
    return dg.Output(
        runs.with_columns(pl.lit(domain).alias("domain")),
        metadata={
            **table_metadata(runs.filter(pl.col("rank") <= 3)),
            "documents": n,
            "queries": recor_queries.height,
            "truncated_queries": sum(cut.values()),
            "truncated_by_strategy": counts_md(cut, "strategy"),
            **found,
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"recor_runs": wiring.materialized("recor_runs"), "benchmark": wiring.materialized("recor_turns")},
    kinds={"ranx", "scipy"},
    code_version="3",
)
def recor_retrieval_metrics(
    context: dg.AssetExecutionContext,
    recor_runs: pl.DataFrame,
    benchmark: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """nDCG@10 (primary), MAP@10, Recall@10 and MRR per turn, over the domains whose runs
    are materialized. Each table says its averaging in its scores' definitions: turn ->
    domain -> macro as the paper's text (Tables 3, 4, 18, 19, 20 and Figure 2), and turn ->
    conversation -> domain -> macro as the published ablation scripts
    (``table_3_conversation_first``, 4, 18). Table 17: paired t-tests over turn-level
    observations, Mean Delta the macro-averaged difference. ``<table>_uncertainty`` (Tables 3,
    18, 19, 20): each score's interval by the bootstrap over its turns (or conversations) and
    its paired test against the best of its table, the method in the definitions (issue 48;
    Table 4's scores are Table 3's). A turn without gold documents
    has no metric: it is left out and counted (``turns_without_gold``). ``slice`` names the
    domains, turns, retrievers and strategies counted and the run's profile."""
    qrels = qrels_frame(benchmark)
    scores = conversational.turn_scores(recor_runs, qrels, benchmark)
    skipped = conversational.without_gold(benchmark, qrels)
    tables = {}
    for averaging, suffix in (
        (conversational.TURN_FIRST, ""),
        (conversational.CONVERSATION_FIRST, "_conversation_first"),
    ):
        table3 = conversational.strategy_table(scores, averaging=averaging)
        tables |= {
            f"table_3{suffix}": (table3, strategy_definitions(averaging)),
            f"table_4{suffix}": (conversational.ablation_table(table3), table_4_definitions(averaging)),
            f"table_18{suffix}": (
                conversational.full_metrics(scores, averaging=averaging),
                table_18_definitions(averaging),
            ),
        }
    tables |= {
        "table_17": (conversational.t_tests(scores), TABLE_17_DEFINITIONS),
        "table_19": (conversational.turn_position_table(scores), TABLE_19_DEFINITIONS),
        "table_20": (conversational.domain_table(scores), TABLE_20_DEFINITIONS),
    }
    return dg.Output(
        scores,
        metadata={
            **table_metadata(scores, 5),
            "slice": report_slice(retrieval_covers(benchmark, scores), run_profile(context)),
            "turns": benchmark.height,
            "turns_without_gold": len(skipped),
            "turns_without_gold_ids": ", ".join(skipped[:20]) or "none",
            "strategies": counts_md(conversational.STRATEGY_TEXT, "strategy", "query text"),
            **{name: report_table(table, definitions) for name, (table, definitions) in tables.items()},
            **{
                f"{name}_uncertainty": report_table(long, definitions)
                for name, (long, definitions) in conversational.uncertainty_tables(scores, uncertainty).items()
            },
            **why_empty(
                {
                    name: (table, NO_SCORED_TURN if scores.is_empty() else NO_HISTORY_REASONING)
                    for name, (table, _) in tables.items()
                }
            ),
            "figure_2": png_markdown(conversational.turn_curve(scores)),
            "per_domain": png_markdown(conversational.domain_plot(scores)),
        },
    )


NO_HISTORY_REASONING = "no run with History+Reasoning queries: Tables 18-20 read that strategy (19 beside Baseline)"
NO_SCORED_TURN = (
    "no turn scored: no domain's recor_runs are materialized, or no turn of the benchmark read has a gold "
    "document (turns_without_gold)"
)


def retrieval_covers(benchmark: pl.DataFrame, scores: pl.DataFrame) -> str:
    """The domains, conversations and turns a retrieval report counts, and its systems."""
    domains, retrievers = (sorted(scores[c].unique().to_list()) for c in ("domain", "retriever"))
    return (
        f"{len(domains)} RECOR domains ({', '.join(domains) or 'none'}), {scores['conversation_id'].n_unique()} "
        f"conversations, {scores['qid'].n_unique()} of the benchmark's {benchmark.height} turns scored (a turn without "
        f"gold left out); {len(retrievers)} retrievers ({', '.join(retrievers) or 'none'}), "
        f"{scores['strategy'].n_unique()} query strategies"
    )


def strategy_definitions(averaging: str) -> dict[str, str]:
    """Table 3's columns: each strategy's nDCG@10 under its query text, the averaging named
    in every score's definition (the inline table has no caption line)."""
    return {
        "retriever": "a retriever alias (resources/retrievers.yaml); Average: the mean over the retrievers",
        **{
            conversational.SHORT[
                s
            ]: f"nDCG@10 (a share in [0, 1]), query: {text}; averaging: {conversational.AVERAGING[averaging]}"
            for s, text in conversational.STRATEGY_TEXT.items()
        },
    }


def table_4_definitions(averaging: str) -> dict[str, str]:
    """What each column of Table 4 holds: Table 3's scores and each strategy's gain over Base."""
    gains = {
        f"{conversational.SHORT[s]} gain": f"{conversational.SHORT[s]} / Base - 1, a share (the paper's Gain in "
        "percent: 0.25 is +25%); blank where Base is 0"
        for s in conversational.STRATEGY_TEXT
        if s != "baseline"
    }
    return {**strategy_definitions(averaging), **gains}


def table_18_definitions(averaging: str) -> dict[str, str]:
    return {
        "retriever": "a retriever alias (resources/retrievers.yaml)",
        **{
            m: f"{m} of the History+Reasoning queries' runs, a share in [0, 1]; averaging: {conversational.AVERAGING[averaging]}"
            for m in conversational.TURN_METRICS
        },
    }


TABLE_17_DEFINITIONS = {
    "comparison": "strategy B vs. strategy A, over the same turns and retrievers",
    "n": "paired turn-level observations (turn x retriever)",
    "mean delta": "nDCG@10 of B minus A, macro-averaged (turn -> domain -> macro, then the mean over retrievers)",
    "turn delta": "the mean of the paired turn-level differences, which t tests",
    "se": "standard error of the paired differences",
    "t": "paired t statistic",
    "p": "two-sided p-value",
    "note": "why t and p are blank, when they are (too few pairs, no variance)",
}
TABLE_19_DEFINITIONS = {
    "strategy": "History+Reasoning or Baseline",
    "retriever": "a retriever alias (resources/retrievers.yaml)",
    **{f"T{i}": f"nDCG@10 at turn {i}, a share in [0, 1]; turn -> domain -> macro" for i in range(1, 5)},
    "T5+": "nDCG@10 at turns 5 and later, a share in [0, 1]; turn -> domain -> macro",
}
TABLE_20_DEFINITIONS = {
    "domain": "a RECOR domain; each other column a retriever's nDCG@10 with History+Reasoning "
    "queries, the mean over the domain's turns, a share in [0, 1]"
}
