"""Checks of the leaderboard: one row per system over the three benchmarks and the registered
BEIR-layout datasets, merged from their report tables."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.eval import leaderboard as board
from checks.eval.shared import SCHEMA, eval_key, interval_problems
from checks.factories import TOLERANCE, UNIT, outside, problems_result, table_problems, typed, where

RUN_ON = "run_on"
LEADERBOARD_KEY = ("system",)
QUIT_HITS = [c for c in board.SCORES if c.startswith("quit/hit_rate@")]


@dg.asset_check(
    asset=eval_key("leaderboard"),
    name=SCHEMA,
    description="One row per system, of the known kinds; every score a share in [0, 1] (null: not run), "
    "QUIT's Hit@k rising with k, each interval holding its score.",
)
def leaderboard_schema(leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key = leaderboard, LEADERBOARD_KEY
    problems = table_problems(frame, board.SCHEMA, key, not_null=("system", "kind", "benchmarks"))
    if typed(frame, board.SCHEMA):
        known = pl.col("kind").str.split(", ").list.eval(pl.element().is_in(list(board.KINDS))).list.all()
        problems += where(frame, ~known, f"with a kind not of {list(board.KINDS)}", key)
        problems += outside(frame, board.score_columns(frame), UNIT, key)
        problems += interval_problems(frame, key)
        for a, b in zip(QUIT_HITS, QUIT_HITS[1:]):
            problems += where(frame, pl.col(a) > pl.col(b) + TOLERANCE, f"with {a} above {b}", key)
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("leaderboard"),
    name=RUN_ON,
    description="Each row names exactly the benchmarks it has scores on, at least one; a reader has its EM "
    "and the setting it was reached in, a subject its WikiProfile scores.",
)
def leaderboard_run_on(leaderboard: pl.DataFrame) -> dg.AssetCheckResult:
    """The row key merges a system's results from several report tables: a row whose
    ``benchmarks`` or ``kind`` disagree with its scores was merged wrong."""
    frame, key = leaderboard, LEADERBOARD_KEY
    problems = table_problems(frame, board.SCHEMA)
    if typed(frame, board.SCHEMA):
        columns = board.score_columns(frame)
        scored = [
            pl.when(pl.any_horizontal(pl.col(c).is_not_null() for c in columns if board.benchmark_of(c) == b)).then(
                pl.lit(b)
            )
            for b in board.benchmark_names(columns)
        ]
        expected = pl.concat_str(scored, separator=", ", ignore_nulls=True)
        kinds = pl.col("kind").str.split(", ")
        problems += where(frame, expected == "", "without any score", key)
        problems += where(
            frame,
            (expected != "") & (pl.col("benchmarks") != expected),
            "whose benchmarks are not those they have scores on",
            key,
        )
        problems += where(
            frame,
            kinds.list.contains(board.READER) != pl.col(board.QUIT_EM).is_not_null(),
            "with a QUIT EM but not a reader, or a reader without one",
            key,
        )
        problems += where(
            frame,
            pl.col(board.QUIT_EM).is_null() != pl.col(board.QUIT_EM_SETTING).is_null(),
            "with a QUIT EM and no setting, or a setting and no EM",
            key,
        )
        problems += where(
            frame,
            kinds.list.contains(board.SUBJECT) != pl.col("benchmarks").str.contains("wikiprofile"),
            "with WikiProfile scores but not a subject, or a subject without them",
            key,
        )
    return problems_result(problems, frame.height)


leaderboard_checks = [leaderboard_schema, leaderboard_run_on]
