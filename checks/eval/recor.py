"""Checks of RECOR's evaluation: the rewritten queries, the runs and their per-turn metrics,
RETECO Track 2's run files, generation and leaderboard, and the generation judged on five
dimensions."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg
import polars as pl

from assets.eval.quit.assets import wiring
from assets.eval.recor.assets import BY_DOMAIN, RETECO_GENERATION_SCHEMA
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from assets.eval.recor.rules import STRATEGIES as QUERY_STRATEGIES
from assets.eval.recor.rules import TURN_METRICS
from assets.eval.recor.steps import DIMENSIONS, MODES, REFERENCE_METRICS
from assets.eval.runs import RUN_SCHEMA
from assets.partitions import DOMAINS, domain_partitions, domain_retriever_partitions
from checks.eval.shared import (
    METRICS,
    RANKS,
    RECOR_BENCHMARK,
    REFERENCES,
    SCHEMA,
    eval_key,
    interval_problems,
    metric_problems,
    retriever_aliases,
    run_problems,
)
from checks.factories import (
    TOLERANCE,
    UNIT,
    WARN,
    differs,
    llm_accounting_check,
    not_in,
    outside,
    problems_result,
    table_problems,
    typed,
    unmatched,
    where,
)
from resources.retrieval import RETRIEVERS_PATH, RUN, RetrieverSpec, load_retrievers, run_file_uri
from resources.storage import MATERIALIZED_PARTITIONS, read_bytes

RUN_FILES = "run_files"

QUERY_SCHEMA = {
    "domain": pl.String,
    "qid": pl.String,
    "conversation_id": pl.String,
    "turn_id": pl.Int32,
    "strategy": pl.String,
    "query": pl.String,
    "fallback": pl.Boolean,
}


@dg.asset_check(
    asset=eval_key("recor_queries"),
    name=SCHEMA,
    blocking=True,
    partitions_def=domain_partitions,
    description="Each turn's query under each strategy of assets.eval.recor.rules.STRATEGIES, none empty, in a known domain.",
)
def recor_queries_schema(recor_queries: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_queries
    problems = table_problems(frame, QUERY_SCHEMA, ("qid", "strategy"), not_null=tuple(QUERY_SCHEMA))
    if typed(frame, QUERY_SCHEMA):
        ids = ("qid", "strategy")
        problems += not_in(frame, "strategy", QUERY_STRATEGIES, ids) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += where(frame, pl.col("turn_id") < 1, "with a turn below 1", ids)
        problems += where(frame, pl.col("query").str.strip_chars() == "", "with an empty query", ids)
        turns = frame.group_by("qid").agg(pl.col("strategy").n_unique().alias("strategies"))
        problems += where(
            turns,
            pl.col("strategies") != len(QUERY_STRATEGIES),
            f"(turns) without all {len(QUERY_STRATEGIES)} strategies",
            ("qid",),
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("recor_queries"),
    name=REFERENCES,
    blocking=True,
    partitions_def=domain_partitions,
    additional_ins={"benchmark": RECOR_BENCHMARK},
    description="Queries for exactly the domain's benchmark turns.",
)
def recor_queries_references(recor_queries: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(recor_queries, ["qid"], benchmark, ["qid"], "turns not in eval/recor_turns") + unmatched(
        benchmark, ["qid"], recor_queries, ["qid"], "benchmark turns without queries"
    )
    return problems_result(problems, recor_queries.height)


RECOR_RUN_SCHEMA = {**RUN_SCHEMA, "strategy": pl.String, "domain": pl.String}


@dg.asset_check(
    asset=eval_key("recor_runs"),
    name=RANKS,
    blocking=True,
    partitions_def=domain_retriever_partitions,
    description=(
        "Per turn and strategy: ranks 1..n, each document once, scores not rising; a registered "
        "retriever, known strategy and domain."
    ),
)
def recor_runs_ranks(recor_runs: pl.DataFrame) -> dg.AssetCheckResult:
    problems = run_problems(
        recor_runs, retriever_aliases(with_oracle=False), ("question_id", "strategy"), RECOR_RUN_SCHEMA
    )
    if typed(recor_runs, RECOR_RUN_SCHEMA):
        problems += not_in(recor_runs, "strategy", QUERY_STRATEGIES, ("strategy",)) + not_in(
            recor_runs, "domain", DOMAINS, ("domain",)
        )
    return problems_result(problems, recor_runs.height)


@dg.asset_check(
    asset=eval_key("recor_runs"),
    name=REFERENCES,
    blocking=True,
    partitions_def=domain_retriever_partitions,
    additional_ins={
        "recor_queries": dg.AssetIn(key=eval_key("recor_queries").path, partition_mapping=BY_DOMAIN),
        "corpus": dg.AssetIn(key=eval_key("recor_corpus"), partition_mapping=BY_DOMAIN),
    },
    description="Every turn and strategy searched is one of the domain's queries; every document is in the domain's corpus.",
)
def recor_runs_references(
    recor_runs: pl.DataFrame, recor_queries: pl.DataFrame, corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    problems = unmatched(
        recor_runs,
        ["question_id", "strategy"],
        recor_queries,
        ["qid", "strategy"],
        "turn+strategy not in eval/recor_queries",
    ) + unmatched(recor_runs, ["passage_id"], corpus, ["doc_id"], "document ids not in eval/recor_corpus")
    return problems_result(problems, recor_runs.height)


@dg.asset_check(
    asset=eval_key("recor_retrieval_metrics"),
    name=METRICS,
    blocking=True,
    description="One row per turn with gold documents, retriever and strategy; nDCG@10, MAP@10, Recall@10 and MRR in [0, 1].",
)
def recor_retrieval_metrics_ranges(recor_retrieval_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    """Blocking: the generation picks its retrieval configuration by these scores."""
    frame = recor_retrieval_metrics
    columns = {
        "domain": pl.String,
        "conversation_id": pl.String,
        "qid": pl.String,
        "turn_id": pl.Int32,
        "retriever": pl.String,
        "strategy": pl.String,
    }
    key = ("qid", "retriever", "strategy")
    problems = metric_problems(frame, columns, key, TURN_METRICS)
    if typed(frame, columns):
        problems += not_in(frame, "strategy", QUERY_STRATEGIES, key) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += not_in(frame, "retriever", retriever_aliases(with_oracle=False), ("retriever",))
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("reteco_retrieval"),
    name=METRICS,
    description="One row per target turn and run; every run scores every target turn; the depth group is the turn's; "
    "nDCG@10, MAP@10, Recall@10 and MRR in [0, 1].",
)
def reteco_retrieval_ranges(reteco_retrieval: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_retrieval, ("qid", "run")
    columns = {**reteco.TURN_SCHEMA, "run": pl.String, "retriever": pl.String, "strategy": pl.String}
    problems = metric_problems(frame, columns, key, reteco.METRICS)
    if typed(frame, columns):
        problems += where(frame, pl.col("depth") != reteco.depth_expr(), "whose depth group is not their turn's", key)
        problems += where(
            frame, pl.col("task_qid") != reteco.task_qid_expr(), "whose task id is not <conversation>#turn<n>", key
        )
        turns = frame.group_by("domain").agg(pl.col("qid").n_unique().alias("turns"))
        per_run = (
            frame.group_by("domain", "run").len().join(turns, on="domain").filter(pl.col("len") != pl.col("turns"))
        )
        problems += where(
            per_run,
            pl.lit(True),
            "(domain, run) scoring fewer or more turns than the domain's targets",
            ("domain", "run"),
        )
    return problems_result(problems, frame.height)


# Problems of the registry's run files the check's metadata names; the rest are counted.
PROBLEMS_SHOWN = 20


def recor_run_retrievers() -> list[RetrieverSpec]:
    """The registry's run file retrievers that RECOR's evaluation runs (not one trained on
    another benchmark, as ``assets.partitions`` leaves it out of RECOR's partitions)."""
    return [s for _, s in sorted(load_retrievers().items()) if s.kind == RUN and s.trained_on in (None, "recor")]


def registry_runs(
    specs: Iterable[RetrieverSpec], benchmark: pl.DataFrame, corpus: pl.DataFrame
) -> list[reteco.Checked]:
    """Each run file ``specs`` name for the domains of ``benchmark``, read raw by RETECO's
    rules (``reteco.check_run``) against the target turns and documents of the domains it
    serves: its own domain, or every domain for a template without ``{part}``. A missing file,
    or a file whose domains share a task query id, is a file the scorer cannot read."""
    domains = sorted(set(benchmark["domain"]))
    targets: dict[tuple[str, ...], reteco.Targets] = {}
    checked = []
    for spec in specs:
        served: dict[str, list[str]] = {}
        for domain in domains:
            served.setdefault(run_file_uri(spec, "recor", domain), []).append(domain)
        for uri, parts in served.items():
            source, key = f"{spec.alias}: {uri}", tuple(parts)
            try:
                if key not in targets:
                    targets[key] = reteco.Targets.from_tables(
                        benchmark.filter(pl.col("domain").is_in(parts)),
                        corpus.filter(pl.col("domain").is_in(parts))["doc_id"],
                    )
            except ValueError as e:
                checked.append(unreadable(source, f"{e}; give each domain its own file ({{part}} in the template)"))
                continue
            try:
                data = read_bytes(uri)
            except FileNotFoundError:
                checked.append(unreadable(source, f"no run file (template {spec.path!r}) for {', '.join(parts)}"))
                continue
            checked.append(reteco.check_run(data, source, targets[key]))
    return checked


def unreadable(source: str, why: str) -> reteco.Checked:
    return reteco.Checked(source, "run", [reteco.Problem(None, "file", True, why)], {})


def run_files_result(checked: list[reteco.Checked]) -> dg.AssetCheckResult:
    """Passed when no file has a problem; otherwise ERROR when one cannot be scored and WARN
    when the scorer only changes something. Errors are listed first, each problem with its
    file and line, at most :data:`PROBLEMS_SHOWN` of them."""
    problems = sorted(((c.source, p) for c in checked for p in c.problems), key=lambda found: not found[1].fatal)
    errors = sum(p.fatal for _, p in problems)
    shown = [f"{source}: {p}" for source, p in problems[:PROBLEMS_SHOWN]]
    if len(problems) > PROBLEMS_SHOWN:
        shown.append(f"... and {len(problems) - PROBLEMS_SHOWN} more")
    return dg.AssetCheckResult(
        passed=not problems,
        severity=dg.AssetCheckSeverity.ERROR if errors else WARN,
        metadata={
            "run_files": len(checked),
            "errors": errors,
            "warnings": len(problems) - errors,
            "problems": dg.MetadataValue.md("\n".join(f"- {line}" for line in shown) or "none"),
            "summaries": dg.MetadataValue.md("\n\n".join(f"```\n{c.summary()}\n```" for c in checked)),
        },
    )


@dg.asset_check(
    asset=eval_key("reteco_retrieval"),
    name=RUN_FILES,
    additional_ins={
        "benchmark": wiring.materialized("recor_turns"),
        "corpus": dg.AssetIn(
            key=eval_key("recor_corpus"),
            partition_mapping=dg.AllPartitionMapping(),
            metadata={**MATERIALIZED_PARTITIONS, "columns": ["domain", "doc_id"]},
        ),
    },
    description="Every run file of a kind: run retriever in the registry, for each evaluated domain, read raw by "
    "RETECO Track 2's rules against the domain's target turns and documents: ERROR when a file cannot "
    "be scored, WARN when the scorer changes something (a repeated document removed, an unknown one "
    "discarded, a missing turn scored 0, a line ignored); each problem named by file and line.",
)
def reteco_run_files(benchmark: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The files as a participant would submit them, before ``eval/recor_runs`` keeps the top
    100 of each turn: what the task's scorer would say of them, not what the project made of them."""
    specs = recor_run_retrievers()
    if not specs:
        return dg.AssetCheckResult(
            passed=True,
            metadata={
                "run_files": 0,
                "problems": dg.MetadataValue.md(f"none: no kind: run retriever in {RETRIEVERS_PATH}"),
            },
        )
    return run_files_result(registry_runs(specs, benchmark, corpus))


RETECO_GENERATION_KEY = ("qid", "system", "subtrack")


@dg.asset_check(
    asset=eval_key("reteco_generation"),
    name=SCHEMA,
    blocking=True,
    partitions_def=domain_partitions,
    description="One row per target turn, system and sub-track (2b, 2c); every system scores every target turn "
    "of the domain; each dimension a normalized 1-5 integer, (s - 1) / 4 in {0, 0.25, ..., 1}; a turn "
    "without an answer 0 on every dimension; 2c rows name their run and carry its nDCG@10, MAP@10, "
    "Recall@10, MRR in [0, 1], 2b rows neither.",
)
def reteco_generation_schema(reteco_generation: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_generation, RETECO_GENERATION_KEY
    problems = table_problems(
        frame,
        RETECO_GENERATION_SCHEMA,
        key,
        not_null=(*reteco.TURN_SCHEMA, "system", "subtrack", *reteco.DIMENSIONS, "answered"),
    )
    if typed(frame, RETECO_GENERATION_SCHEMA):
        problems += not_in(frame, "subtrack", reteco_judge.SUBTRACKS, key)
        problems += outside(frame, reteco.DIMENSIONS, UNIT, key)
        problems += where(
            frame,
            pl.any_horizontal(((pl.col(d) * 4) - (pl.col(d) * 4).round()).abs() > TOLERANCE for d in reteco.DIMENSIONS),
            "with a dimension that is no normalized 1-5 integer",
            key,
        )
        problems += where(
            frame,
            ~pl.col("answered") & pl.any_horizontal(pl.col(d) != 0 for d in reteco.DIMENSIONS),
            "scored above 0 without an answer",
            key,
        )
        is_2c = pl.col("subtrack") == "2c"
        problems += where(
            frame,
            is_2c & (pl.col("run").is_null() | pl.any_horizontal(pl.col(m).is_null() for m in reteco.METRICS)),
            "in 2c without their run's retrieval scores",
            key,
        )
        problems += where(
            frame,
            ~is_2c & (pl.col("run").is_not_null() | pl.any_horizontal(pl.col(m).is_not_null() for m in reteco.METRICS)),
            "in 2b with a run",
            key,
        )
        problems += outside(frame, reteco.METRICS, UNIT, key)
        turns = frame.select("qid").n_unique()
        short = frame.group_by("system", "subtrack").len().filter(pl.col("len") != turns)
        problems += where(
            short,
            pl.lit(True),
            f"(system, sub-track) not scoring each of the {turns} target turns once",
            ("system", "subtrack"),
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("reteco_leaderboard"),
    name=METRICS,
    description="One row per sub-track and run; 2a rows hold nDCG@10, MAP@10, Recall@10, MRR and no judge "
    "dimension, 2b rows the five dimensions and no retrieval figure, 2c rows both; every figure in "
    "[0, 1]; the macro the mean of the five dimensions; each official figure's interval holds it.",
)
def reteco_leaderboard_ranges(reteco_leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = reteco_leaderboard, ("subtrack", "run")
    retrieval = [reteco.METRIC_NAMES[m] for m in reteco.METRICS]
    judged = [*reteco.DIMENSIONS, "macro"]
    columns = {
        "subtrack": pl.String,
        "run": pl.String,
        "turns": pl.Int64,
        **{c: pl.Float64 for c in (*retrieval, *judged)},
    }
    problems = table_problems(frame, columns, key, not_null=("subtrack", "run", "turns"))
    if typed(frame, columns):
        problems += not_in(frame, "subtrack", ["2a", *reteco_judge.SUBTRACKS], key)
        problems += outside(frame, [*retrieval, *judged], UNIT, key)
        for subtrack, present, absent in (
            ("2a", retrieval, judged),
            ("2b", judged, retrieval),
            ("2c", [*retrieval, *judged], []),
        ):
            rows = frame.filter(pl.col("subtrack") == subtrack)
            problems += where(
                rows,
                pl.any_horizontal(pl.col(c).is_null() for c in present),
                "missing a figure of their sub-track",
                key,
            )
            if absent:
                problems += where(
                    rows,
                    pl.any_horizontal(pl.col(c).is_not_null() for c in absent),
                    "holding another sub-track's figure",
                    key,
                )
        problems += differs(
            frame, "macro", pl.mean_horizontal(*reteco.DIMENSIONS), "whose macro is not the dimensions' mean", key
        )
        problems += interval_problems(frame, key)
    return problems_result(problems, frame.height)


# Reference-answer scores: ROUGE-L and METEOR in [0, 1]; unrescaled BERTScore F1 is a mean of
# cosines, so [-1, 1].
REFERENCE_SCORES = tuple(REFERENCE_METRICS)
SCORES = (*DIMENSIONS, *REFERENCE_SCORES)
UNIT_SCORES = tuple(s for s in SCORES if s != "bertscore_f1")
COSINE = (-1.0, 1.0)
GENERATION_SCHEMA = {
    "domain": pl.String,
    "qid": pl.String,
    "generator": pl.String,
    "mode": pl.String,
    "answer": pl.String,
    **{s: pl.Float64 for s in SCORES},
}
GENERATION_KEY = ("qid", "generator", "mode")
NO_RETRIEVAL = "no_retrieval"


@dg.asset_check(
    asset=eval_key("recor_generation"),
    name=SCHEMA,
    blocking=True,
    partitions_def=domain_partitions,
    description=(
        "One answer per turn, generator and mode; judged dimensions, ROUGE-L and METEOR in [0, 1], "
        "BERTScore F1 in [-1, 1]; no faithfulness without passages, no score without an answer, every "
        "answer (an empty one too) scored against the reference."
    ),
)
def recor_generation_schema(recor_generation: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_generation
    problems = table_problems(frame, GENERATION_SCHEMA, GENERATION_KEY, not_null=("domain", "qid", "generator", "mode"))
    if typed(frame, GENERATION_SCHEMA):
        problems += not_in(frame, "mode", MODES, GENERATION_KEY) + not_in(frame, "domain", DOMAINS, ("domain",))
        problems += outside(frame, UNIT_SCORES, UNIT, GENERATION_KEY) + outside(
            frame, ["bertscore_f1"], COSINE, GENERATION_KEY
        )
        problems += where(
            frame,
            (pl.col("mode") == NO_RETRIEVAL) & pl.col("faithfulness").is_not_null(),
            "judged faithful to passages they were not given",
            GENERATION_KEY,
        )
        problems += where(
            frame,
            pl.col("answer").is_null() & pl.any_horizontal(pl.col(s).is_not_null() for s in SCORES),
            "scored without an answer",
            GENERATION_KEY,
        )
        problems += where(
            frame,
            pl.col("answer").is_not_null() & pl.any_horizontal(pl.col(s).is_null() for s in REFERENCE_SCORES),
            "answered without a reference score",
            GENERATION_KEY,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("recor_generation"),
    name=REFERENCES,
    blocking=True,
    partitions_def=domain_partitions,
    additional_ins={"benchmark": RECOR_BENCHMARK},
    description="Answers to the domain's benchmark turns, every turn in every mode by every generator.",
)
def recor_generation_references(recor_generation: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    problems = unmatched(recor_generation, ["qid"], benchmark, ["qid"], "turns not in eval/recor_turns")
    if not problems and "generator" in recor_generation.columns:
        expected = (
            benchmark.select("qid")
            .unique()
            .join(recor_generation.select("generator").unique(), how="cross")
            .join(pl.DataFrame({"mode": MODES}), how="cross")
        )
        problems += unmatched(
            expected,
            list(GENERATION_KEY),
            recor_generation,
            list(GENERATION_KEY),
            "turn+generator+mode without an answer row",
        )
    return problems_result(problems, recor_generation.height)


@dg.asset_check(
    asset=eval_key("recor_generation_metrics"),
    name=METRICS,
    description="One row per generator and mode; judged dimensions, overall, ROUGE-L and METEOR in [0, 1], BERTScore F1 in [-1, 1].",
)
def recor_generation_metrics_ranges(recor_generation_metrics: pl.DataFrame) -> dg.AssetCheckResult:
    frame = recor_generation_metrics
    columns = {
        "generator": pl.String,
        "mode": pl.String,
        **{s: pl.Float64 for s in (*DIMENSIONS, "overall", *REFERENCE_SCORES)},
    }
    key = ("generator", "mode")
    problems = table_problems(frame, columns, key, not_null=key)
    if typed(frame, columns):
        problems += not_in(frame, "mode", MODES, key) + outside(
            frame, [c for c in columns if c not in (*key, "bertscore_f1")], UNIT, key
        )
        problems += outside(frame, ["bertscore_f1"], COSINE, key)
    return problems_result(problems, frame.height)


recor_eval_checks = [
    recor_queries_schema,
    recor_queries_references,
    recor_runs_ranks,
    recor_runs_references,
    recor_retrieval_metrics_ranges,
    reteco_retrieval_ranges,
    reteco_run_files,
    reteco_generation_schema,
    reteco_leaderboard_ranges,
    recor_generation_schema,
    recor_generation_references,
    recor_generation_metrics_ranges,
    llm_accounting_check(
        eval_key("recor_queries"),
        partitions_def=domain_partitions,
        failed_items=lambda frame: frame.filter(pl.col("fallback")),
        item_column="qid",
    ),
    llm_accounting_check(
        eval_key("recor_generation"),
        partitions_def=domain_partitions,
        failed_items=lambda frame: frame.filter(pl.col("answer").is_null() | pl.col("correctness").is_null()),
        item_column="qid",
    ),
    llm_accounting_check(
        eval_key("reteco_generation"),
        partitions_def=domain_partitions,
        failed_items=lambda frame: frame.filter(pl.col("judge_failures") > 0),
        item_column="qid",
    ),
]
