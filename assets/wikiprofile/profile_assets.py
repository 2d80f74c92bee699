"""Profiling subject models on the WikiProfile benchmark as Dagster assets, partitioned by
model alias (dynamic: an alias added to the registry's ``wikiprofile.subjects`` becomes a
partition). The rules live in :mod:`assets.wikiprofile.method` and
:mod:`assets.wikiprofile.profiling`."""

import dagster as dg
import polars as pl

from assets.metadata import counts_md, md_table, png_markdown, table_metadata
from assets.wikiprofile import analysis, method, profiling
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wiring import asset_in, materialized_in
from resources.llm import CallStats, LLMResource, role_aliases

PREFIX = GROUP = "wikiprofile"
subject_partitions = dg.DynamicPartitionsDefinition(name="wikiprofile_subjects")
STEP = dict(key_prefix=PREFIX, group_name=GROUP, partitions_def=subject_partitions, code_version="2")
SAMPLE_SCHEMA = {"fact_id": pl.String, "task": pl.String, "thinking": pl.Boolean, "sample": pl.Int32, "gold_slot": pl.Int32,
                 "response": pl.String, "answer": pl.String, "error": pl.String}


def _grader() -> str:
    return role_aliases("wikiprofile.grader")[0]


@dg.asset(ins={"benchmark": asset_in(PREFIX, "benchmark")}, kinds={"polars", "litellm"}, pool="llm", **STEP)
def responses(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, llm: LLMResource,
              wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """The subject model's sampled responses: ``n_samples`` per task at temperature 1, the
    knowledge questions without and with thinking, multiple-choice options shuffled per
    sample (each position holds the gold equally often)."""
    alias = context.partition_key
    spec = llm.spec(alias)
    planned = profiling.sample_requests(benchmark, spec.thinking, wikiprofile_settings.n_samples, wikiprofile_settings.temperature)
    stats, rows = CallStats(), []
    for thinking in (False, True):
        part = [(s, r) for s, r, t in planned if t == thinking]
        if not part:
            continue
        results = llm.run(alias, [r for _, r in part], stats=stats, thinking=thinking, log=context.log.info)
        for (s, _), res in zip(part, results):
            text = res.text if res.ok else None
            rows.append({"fact_id": s.fact_id, "task": s.task, "thinking": s.thinking, "sample": s.sample, "gold_slot": s.gold_slot,
                         "response": text, "answer": profiling.response_answer(text, s.thinking) if text is not None else None,
                         "error": res.error})
    frame = pl.DataFrame(rows, schema=SAMPLE_SCHEMA)
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("fact_id", "task", "thinking", "sample", "answer")), **stats.as_metadata(),
        "model": alias, "thinking_switch": spec.thinking, "samples_per_question": wikiprofile_settings.n_samples,
    })


@dg.asset(ins={"responses": asset_in(PREFIX, "responses"), "benchmark": asset_in(PREFIX, "benchmark")},
          kinds={"polars", "litellm"}, pool="llm", **STEP)
def graded_responses(context: dg.AssetExecutionContext, responses: pl.DataFrame, benchmark: pl.DataFrame,
                     llm: LLMResource) -> dg.Output:
    """Every response labelled CORRECT, INCORRECT, PARTIALLY or OTHER: multiple choice by
    its letter, the rest by the autorater (the registry's ``wikiprofile.grader``) with all
    samples of a question in one call. A reply the autorater's parser cannot read leaves
    those samples OTHER, counted in ``grader_unparsed``. An autorater whose verdicts are
    advisory (the embedded model cannot judge answers) is not asked: the samples are graded
    by rule (:func:`method.rule_grade`), and ``grader`` says so."""
    stats = CallStats()
    mc = responses.filter(pl.col("task").str.starts_with("mc_"))
    labels = [{**r, "label": method.mc_grade(r["response"] or "", r["gold_slot"])} for r in mc.iter_rows(named=True)]
    free = responses.filter(~pl.col("task").str.starts_with("mc_"))
    unparsed, grader = 0, _grader()
    if llm.spec(grader).verdicts == "advisory":
        labels += [{**r, "label": g} for r, g in zip(free.iter_rows(named=True), profiling.rule_labels(free, benchmark))]
        grader = f"rules ({grader} is advisory)"
    else:
        planned = profiling.grading_requests(free, benchmark)
        results = llm.run(grader, [r for _, r in planned], stats=stats, log=context.log.info)
        groups = {key: g.sort("sample") for key, g in free.group_by("fact_id", "task", "thinking", maintain_order=True)}
        for (key, _), res in zip(planned, results):
            group = groups[key]
            try:
                got = method.parse_grades(res.text or "", group.height) if res.ok else None
            except ValueError:
                got = None
            if got is None:
                unparsed += 1
                got = [method.OTHER] * group.height
            labels += [{**r, "label": g} for r, g in zip(group.iter_rows(named=True), got)]
    # The model column lets the reports read every partition as one table.
    frame = (pl.DataFrame(labels, schema={**SAMPLE_SCHEMA, "label": pl.String}).sort("fact_id", "task", "thinking", "sample")
             .with_columns(pl.lit(context.partition_key).alias("model")))
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("fact_id", "task", "thinking", "answer", "label")), **stats.as_metadata(),
        "grader": grader, "grader_unparsed": unparsed,
        "by_label": counts_md(dict(frame.group_by("label").len().sort("label").iter_rows()), "label"),
    })


@dg.asset(ins={"graded_responses": asset_in(PREFIX, "graded_responses")}, kinds={"polars"}, **STEP)
def profiles(context: dg.AssetExecutionContext, graded_responses: pl.DataFrame, wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Each fact's question grades g(q), encodes / knows without and with thinking, and its
    profile under the configured NaN strategy (S2 by default), with the model's row of
    Table 2."""
    strategy = wikiprofile_settings.nan_strategy
    weight = method.PARTIAL_WEIGHT_S3 if strategy == "S3" else None
    grades = profiling.question_grades(graded_responses, weight)
    facts = profiling.fact_profiles(grades, strategy, wikiprofile_settings.tau, wikiprofile_settings.tau)
    summary = method.profile_summary(facts.to_dicts())
    facts = facts.with_columns(pl.lit(context.partition_key).alias("model"))
    return dg.Output(facts, metadata={
        **table_metadata(facts), "strategy": strategy, "tau": wikiprofile_settings.tau,
        "table_2_row": dg.MetadataValue.md(md_table(pl.DataFrame([{"model": context.partition_key, **summary}]))),
        **{f"pct/{k}": float(v) for k, v in summary.items() if k not in ("facts", "profiled")},
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"}, code_version="1",
          ins={"profiles": materialized_in(PREFIX, "profiles")})
def profile_report(profiles: pl.DataFrame) -> dg.Output:
    """Table 2 over every profiled model: Encodes, Knows(+Think), Knows, the five profiles
    and the excluded shares, with a stacked bar plot of the profiles."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [{"model": alias, **method.profile_summary(frame.to_dicts())}
            for (alias,), frame in sorted(analysis.with_schema(profiles, analysis.PROFILE_SCHEMA).group_by("model"), key=lambda kv: kv[0])]
    table = pl.DataFrame(rows) if rows else pl.DataFrame(schema={"model": pl.String, **{k: pl.Float64 for k in method.profile_summary([])}})
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.5 * max(1, len(rows))))
    left = [0.0] * len(rows)
    for name in method.PROFILES:
        values = [r[name] if r[name] == r[name] else 0.0 for r in rows]
        ax.barh([r["model"] for r in rows], values, left=left, label=name.replace("_", " "))
        left = [a + b for a, b in zip(left, values)]
    ax.set_xlabel("% of profiled facts")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=3)
    return dg.Output(table, metadata={**table_metadata(table), "table_2": dg.MetadataValue.md(md_table(table, 30)),
                                      "profiles_plot": png_markdown(fig)})


wikiprofile_profile_assets = [responses, graded_responses, profiles, profile_report]
