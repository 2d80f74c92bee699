"""Data-quality checks of WikiProfile's construction assets."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.wikiprofile import steps

PREFIX = "wikiprofile"


@dg.asset_check(asset=dg.AssetKey([PREFIX, "benchmark"]), blocking=True,
                description="Ten tasks per fact, four options with the gold first on the multiple-choice tasks, no answer in a closed-book question.")
def ten_tasks_per_fact(benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    counts = benchmark.group_by("fact_id").agg(pl.col("task").n_unique().alias("tasks"))
    wrong_count = counts.filter(pl.col("tasks") != 10)["fact_id"].to_list()
    mc = benchmark.filter(pl.col("task").str.starts_with("mc_"))
    bad_options = mc.filter((pl.col("options").list.len() != 4) | (pl.col("options").list.first() != pl.col("answer")))["fact_id"].to_list()
    closed = benchmark.filter(pl.col("task").is_in(["direct", "direct_natural", "reverse", "reverse_natural"]))
    leaking = [r["fact_id"] for r in closed.iter_rows(named=True) if steps.answer_leaks(r["question"], r["answer"])]
    return dg.AssetCheckResult(passed=not (wrong_count or bad_options or leaking), metadata={
        "facts_without_ten_tasks": len(wrong_count), "bad_options": len(bad_options), "answer_in_question": len(leaking),
        "examples": ", ".join((wrong_count + bad_options + leaking)[:5]) or "none"})


wikiprofile_checks = [ten_tasks_per_fact]
