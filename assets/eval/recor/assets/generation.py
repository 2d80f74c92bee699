"""RECOR's RAG generation (paper section 4.2): each generator's answers in three modes,
judged on five dimensions, and the generation report."""

import dagster as dg
import polars as pl

from assets.common.metadata import report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.prompts import code_version
from assets.eval.recor import rules as conversational
from assets.eval.recor import steps as generation
from assets.eval.recor.assets.common import BENCHMARK, BY_DOMAIN, CORPUS, GROUP, PREFIX, wiring
from assets.eval.uncertainty import UncertaintySettings
from assets.partitions import domain_partitions
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=domain_partitions,
    ins={
        "benchmark": BENCHMARK,
        "corpus": CORPUS,
        "recor_runs": dg.AssetIn(key=[PREFIX, "recor_runs"], partition_mapping=BY_DOMAIN),
        "recor_retrieval_metrics": wiring.input("recor_retrieval_metrics"),
    },
    kinds={"litellm"},
    pool=llm_pool("recor"),
    code_version=code_version("3", "eval/closed_answer", "eval/rag_answer", "eval/rag_judge"),
)
def recor_generation(
    context: dg.AssetExecutionContext,
    benchmark: pl.DataFrame,
    corpus: pl.DataFrame,
    recor_runs: pl.DataFrame,
    recor_retrieval_metrics: pl.DataFrame,
    llm: LLMResource,
) -> dg.Output:
    """Every configured generator (registry role ``recor.generators``) answering each turn in
    three modes (4.2.1): Oracle (the gold passages), Retrieved (top 5 of the best retrieval
    configuration by macro nDCG@10) and NoRetrieval; judged on correctness, completeness,
    relevance, coherence and faithfulness (not for NoRetrieval), 1-5 normalized to 0-1, with
    ROUGE-L, METEOR and BERTScore F1 against the reference answer (definitions in the
    metadata). A failed call leaves its scores null; an empty answer scores 0."""
    retriever, strategy = conversational.best_configuration(recor_retrieval_metrics)
    run = recor_runs.filter((pl.col("system") == retriever) & (pl.col("strategy") == strategy)).sort(
        "question_id", "rank"
    )
    retrieved = {q: g["passage_id"].to_list() for (q,), g in run.group_by("question_id", maintain_order=True)}
    items = generation.contexts(benchmark, corpus, retrieved)
    judge = llm.model("recor.judge")
    stats = CallStats()
    rows = []
    for generator in llm.models("recor.generators"):
        answers = generation.answer(items, generator, stats, context.log.info)
        grades = generation.judge(items, answers, judge, stats, context.log.info)
        bert = generation.bertscore_f1([i["reference"] for i in items], answers)
        for item, text, grade, f1 in zip(items, answers, grades, bert):
            rows.append(
                {
                    "domain": item["domain"],
                    "qid": item["qid"],
                    "generator": generator.alias,
                    "mode": item["mode"],
                    "answer": text,
                    **{d: grade.get(d) for d in generation.DIMENSIONS},
                    **generation.lexical(item["reference"], text),
                    "bertscore_f1": f1,
                }
            )
    schema = {
        "domain": pl.String,
        "qid": pl.String,
        "generator": pl.String,
        "mode": pl.String,
        "answer": pl.String,
        **{d: pl.Float64 for d in generation.DIMENSIONS},
        **{m: pl.Float64 for m in generation.REFERENCE_METRICS},
    }
    frame = pl.DataFrame(rows, schema=schema)
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("qid", "generator", "mode", "answer", "correctness")),
            "retrieved_with": f"{retriever} / {strategy}",
            **generation.reference_metric_definitions(),
            "empty_answers": frame.filter(pl.col("answer") == "").height,
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"recor_generation": wiring.materialized("recor_generation")},
    kinds={"polars"},
    code_version="3",
)
def recor_generation_metrics(
    context: dg.AssetExecutionContext, recor_generation: pl.DataFrame, uncertainty: UncertaintySettings
) -> dg.Output:
    """Generation quality macro-averaged over domains: the overall score (mean of the judged
    dimensions) by domain and generator in Retrieved mode (Table 7), by mode and generator
    (Table 8), per domain in Oracle and NoRetrieval mode (Tables 21 and 22), per dimension in
    Retrieved mode (Table 23; ``dimensions`` every mode), and ROUGE-L / METEOR / BERTScore F1
    (Table 25, every mode; an empty answer's 0 counts in the means). Every score a share in
    [0, 1] (a judge's 1-5 normalized); ``slice`` names what is counted and the run's profile.
    ``<table>_uncertainty`` (Tables 7, 8, 21-23): each score's interval by the bootstrap over
    its turns and its paired test against the best of its table, the method in the
    definitions (issue 48)."""
    overall, tables = generation.report_tables(recor_generation)
    generators = sorted(recor_generation["generator"].unique().to_list())
    domains = sorted(recor_generation["domain"].unique().to_list())
    return dg.Output(
        overall,
        metadata={
            **table_metadata(overall),
            "slice": report_slice(
                f"{len(domains)} RECOR domains ({', '.join(domains) or 'none'}), "
                f"{recor_generation['qid'].n_unique()} turns answered; {len(generators)} generators "
                f"({', '.join(generators) or 'none'})",
                run_profile(context),
            ),
            **{name: report_table(table, definitions) for name, (table, definitions, _) in tables.items()},
            **{
                f"{name}_uncertainty": report_table(long, definitions)
                for name, (long, definitions) in generation.uncertainty_tables(recor_generation, uncertainty).items()
            },
            **why_empty({name: (table, why) for name, (table, _, why) in tables.items()}),
            **generation.reference_metric_definitions(),
        },
    )
