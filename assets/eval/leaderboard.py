"""The leaderboard (issue 17): every evaluated system on every benchmark it was run on, with
the papers' headline metrics, read from the stored report tables.

One row per ``system``: a retriever alias, ``<retriever>+<reranker>``, or a model alias.
``kind`` says in which parts it was evaluated (:data:`KINDS`, comma-joined: a model that
reads QUIT and is profiled on WikiProfile is one row, ``reader LLM, subject LLM``), and
``benchmarks`` the benchmarks it has scores on. The score columns are named
``<benchmark>/<metric>`` (:data:`SCORES`), are null where the system was not run, and are all
shares in [0, 1], as every report table holds them, so one scale and one plot serve the
three papers. Each dataset in BEIR's layout the deployment registers adds a column group
``beir/<dataset>/<metric>`` (:func:`score_columns`), its benchmark named ``beir/<dataset>``.
:func:`definitions` says what each column computes.
"""

from collections.abc import Collection, Mapping

import dagster as dg
import polars as pl

from assets.common import provenance
from assets.common.metadata import md_table, png_markdown, report_table, why_empty
from assets.eval import metrics as eval_metrics
from assets.eval import uncertainty
from assets.eval.beir import rules as beir
from assets.eval.beir.assets import beir_rerank_metrics, beir_retrieval_metrics
from assets.eval.quit.assets import oracle_aliases, quit_reader_metrics, quit_rerank_metrics, quit_retrieval_metrics
from assets.eval.recor import rules as conversational
from assets.eval.recor.assets import recor_retrieval_metrics
from assets.eval.reports import _plt
from assets.eval.uncertainty import UncertaintySettings
from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile.assets import wikiprofile_profile_report
from resources.datasets import load_datasets
from resources.storage import StorageResource, exists, read_parquet, table_uri, write_bytes

PREFIX = GROUP = "eval"

RETRIEVER, RERANKED, READER, SUBJECT = "retriever", "retriever+reranker", "reader LLM", "subject LLM"
KINDS = (RETRIEVER, RERANKED, READER, SUBJECT)
BENCHMARKS = ("quit", "recor", "wikiprofile")
# Datasets in BEIR's layout: a benchmark per registered dataset, after the three.
BEIR = "beir"

# QUIT's Tables 2 and 4 on the test split, as the paper and its code report them (never
# train: fine-tuned systems learned from it); nDCG with the QUIT release's exponential gain.
QUIT_SPLIT = "test"
QUIT_METRICS = ("hit_rate@1", "hit_rate@5", "hit_rate@10", eval_metrics.ndcg(10))
QUIT_EM, QUIT_EM_SETTING = "quit/em", "quit/em_setting"
# RECOR's Table 3: nDCG@10 per query strategy, averaged as the paper's text does.
RECOR_METRIC = "ndcg@10"
RECOR_AVERAGING = conversational.TURN_FIRST
# WikiProfile's Table 2, both Knows including direct inference as the table does.
WIKIPROFILE_SHARES = ("encodes", "knows", "knows_thinking")
# Readers: the Optimal bound and the Oracle retriever's passages are upper bounds, not settings.
OPTIMAL = "Optimal"

QUIT_SCORES = [*(f"quit/{m}" for m in QUIT_METRICS), QUIT_EM]
RECOR_SCORES = [f"recor/{RECOR_METRIC}/{s}" for s in conversational.STRATEGIES]
WIKIPROFILE_SCORES = [f"wikiprofile/{m}" for m in WIKIPROFILE_SHARES]
SCORES = [*QUIT_SCORES, *RECOR_SCORES, *WIKIPROFILE_SCORES]
# Each score's interval (issue 48), as its report computed it: ``<score> ci_low``, ``ci_high``.
INTERVAL = (" ci_low", " ci_high")


def with_intervals(columns: list[str]) -> dict[str, pl.DataType]:
    return {name: pl.Float64 for c in columns for name in (c, *(c + end for end in INTERVAL))}


SCHEMA = {
    "system": pl.String,
    "kind": pl.String,
    "benchmarks": pl.String,
    **with_intervals(QUIT_SCORES),
    QUIT_EM_SETTING: pl.String,
    **with_intervals([*RECOR_SCORES, *WIKIPROFILE_SCORES]),
    # the runs that materialized the report tables the row's scores came from, and their profile
    "dagster_runs": pl.String,
    "profile": pl.String,
}

# The report tables read, by asset key, with the benchmark each scores.
QUIT_RETRIEVAL = dg.AssetKey([PREFIX, "quit_retrieval_metrics"])
QUIT_RERANK = dg.AssetKey([PREFIX, "quit_rerank_metrics"])
QUIT_READER = dg.AssetKey([PREFIX, "quit_reader_metrics"])
RECOR_RETRIEVAL = dg.AssetKey([PREFIX, "recor_retrieval_metrics"])
WIKIPROFILE_REPORT = dg.AssetKey(["eval", "wikiprofile_profile_report"])
BEIR_RETRIEVAL = dg.AssetKey([PREFIX, "beir_retrieval_metrics"])
BEIR_RERANK = dg.AssetKey([PREFIX, "beir_rerank_metrics"])
REPORTS = {
    QUIT_RETRIEVAL: "quit",
    QUIT_RERANK: "quit",
    QUIT_READER: "quit",
    RECOR_RETRIEVAL: "recor",
    WIKIPROFILE_REPORT: "wikiprofile",
    BEIR_RETRIEVAL: BEIR,
    BEIR_RERANK: BEIR,
}
# Their definitions: the code version each has now and what each is built from.
DEFINITIONS = {
    QUIT_RETRIEVAL: quit_retrieval_metrics,
    QUIT_RERANK: quit_rerank_metrics,
    QUIT_READER: quit_reader_metrics,
    RECOR_RETRIEVAL: recor_retrieval_metrics,
    WIKIPROFILE_REPORT: wikiprofile_profile_report,
    BEIR_RETRIEVAL: beir_retrieval_metrics,
    BEIR_RERANK: beir_rerank_metrics,
}


def benchmark_of(column: str) -> str:
    """The benchmark a score column belongs to: its first part, ``beir/<dataset>`` for a
    dataset's column group."""
    parts = column.split("/")
    return "/".join(parts[:2]) if parts[0] == BEIR else parts[0]


def score_columns(table: pl.DataFrame) -> list[str]:
    """The score columns of a leaderboard: the three benchmarks' (:data:`SCORES`), then each
    dataset's group in name order (not the intervals' ends)."""
    datasets = [c for c in table.columns if c.startswith(f"{BEIR}/") and not c.endswith(INTERVAL)]
    return [*SCORES, *sorted(datasets)]


def scored(frame: pl.DataFrame, metric: str, column: str) -> list[pl.Expr]:
    """A report's ``metric`` as the leaderboard's ``column``, with its interval's ends where
    the report stored them (a table stored before issue 48: none)."""
    ends = [
        (pl.col(metric + end) if metric + end in frame.columns else pl.lit(None, pl.Float64)).alias(column + end)
        for end in INTERVAL
    ]
    return [pl.col(metric).alias(column), *ends]


def benchmark_names(columns: list[str]) -> list[str]:
    """The benchmarks of ``columns`` in leaderboard order (:data:`BENCHMARKS`, then the
    datasets by name), each once."""
    return sorted(dict.fromkeys(map(benchmark_of, columns)), key=benchmark_order)


def benchmark_order(benchmark: str) -> tuple[int, str]:
    return (BENCHMARKS.index(benchmark), "") if benchmark in BENCHMARKS else (len(BENCHMARKS), benchmark)


def on_quit_split(metrics: pl.DataFrame) -> pl.DataFrame:
    """A QUIT report's rows on ``QUIT_SPLIT``; none from a table stored before the reports
    kept splits (its rows mix every split: rematerialize it)."""
    return metrics.filter(pl.col("split") == QUIT_SPLIT) if "split" in metrics.columns else metrics.clear()


def quit_retrievers(metrics: pl.DataFrame) -> pl.DataFrame:
    """Retrievers from ``eval/quit_retrieval_metrics`` (the test split; no Oracle there)."""
    metrics = on_quit_split(metrics)
    return metrics.select(
        pl.col("retriever").alias("system"),
        pl.lit(RETRIEVER).alias("kind"),
        *[e for m in QUIT_METRICS for e in scored(metrics, m, f"quit/{m}")],
    )


def quit_reranked(metrics: pl.DataFrame) -> pl.DataFrame:
    """Retriever+reranker runs from ``eval/quit_rerank_metrics``; a reranker over the Oracle
    retriever's passages (Table 7) orders the qrels, so it is no system to rank."""
    metrics = on_quit_split(metrics).filter(~pl.col("oracle"))
    return metrics.select(
        "system", pl.lit(RERANKED).alias("kind"), *[e for m in QUIT_METRICS for e in scored(metrics, m, f"quit/{m}")]
    )


def quit_readers(metrics: pl.DataFrame, oracles: Collection[str] = ()) -> pl.DataFrame:
    """Each reader's best setting in ``eval/quit_reader_metrics`` on the test split: the run it read, k and
    context strategy with the highest EM (normalized), ties to the first setting in name
    order. The Optimal bound and runs over the Oracle retriever's passages are left out:
    both read the relevant passages the qrels name."""
    retriever = pl.col("system").str.split("+").list.first()
    settings = on_quit_split(metrics).filter(
        (pl.col("system") != OPTIMAL) & ~retriever.is_in(list(oracles)) & pl.col("em").is_not_null()
    )
    best = (
        settings.sort(["reader", "em", "system", "k", "strategy"], descending=[False, True, False, False, False])
        .group_by("reader", maintain_order=True)
        .first()
    )
    setting = pl.format("{}, top-{}, {}", "system", "k", "strategy")
    return best.select(
        pl.col("reader").alias("system"),
        pl.lit(READER).alias("kind"),
        *scored(best, "em", QUIT_EM),
        setting.alias(QUIT_EM_SETTING),
    )


def recor_retrievers(
    scores: pl.DataFrame, averaging: str = RECOR_AVERAGING, settings: UncertaintySettings | None = None
) -> pl.DataFrame:
    """Retrievers from ``eval/recor_retrieval_metrics`` (per-turn scores): nDCG@10 per query
    strategy, macro-averaged over the domains with ``averaging``, with its interval: each
    domain's turns (or, conversation first, conversations) resampled on their own."""
    table = conversational.macro(scores, ["retriever", "strategy"], RECOR_METRIC, averaging)
    wide = table.pivot(on="strategy", index="retriever", values=RECOR_METRIC)
    items = scores
    if averaging == conversational.CONVERSATION_FIRST:
        items = scores.group_by("retriever", "strategy", "domain", "conversation_id").agg(pl.col(RECOR_METRIC).mean())
    item = "conversation_id" if averaging == conversational.CONVERSATION_FIRST else "qid"
    long = uncertainty.summarize(
        items.with_columns(pl.format("{}/{}", "domain", item).alias("_item")),
        ["retriever", "strategy"],
        "_item",
        [RECOR_METRIC],
        settings or UncertaintySettings(),
        strata="domain",
        compare=False,
    )
    ends = long.pivot(on="strategy", index="retriever", values=["ci_low", "ci_high"])
    wide = wide.join(ends, on="retriever", how="left")
    present = [s for s in conversational.STRATEGIES if s in table["strategy"].to_list()]
    return wide.select(
        pl.col("retriever").alias("system"),
        pl.lit(RETRIEVER).alias("kind"),
        *[
            pl.col(name).alias(f"recor/{RECOR_METRIC}/{s}{end}")
            for s in present
            for name, end in ((s, ""), (f"ci_low_{s}", INTERVAL[0]), (f"ci_high_{s}", INTERVAL[1]))
        ],
    )


def beir_retrievers(metrics: pl.DataFrame) -> pl.DataFrame:
    """Retrievers from ``eval/beir_retrieval_metrics``: nDCG@10 and Recall@100 per dataset
    (the Oracle is not in that table)."""
    return beir.leaderboard_rows(metrics, "retriever").with_columns(pl.lit(RETRIEVER).alias("kind"))


def beir_reranked(metrics: pl.DataFrame) -> pl.DataFrame:
    """Retriever+reranker runs from ``eval/beir_rerank_metrics``; the Oracle's reranked
    documents are the qrels', so no system to rank."""
    return beir.leaderboard_rows(metrics.filter(~pl.col("oracle")), "system").with_columns(
        pl.lit(RERANKED).alias("kind")
    )


def wikiprofile_subjects(report: pl.DataFrame) -> pl.DataFrame:
    """Subject models from ``eval/wikiprofile_profile_report`` (Table 2, shares). A share over no
    facts (NaN) or without a thinking run (null) is left empty."""
    return report.select(
        pl.col("model").alias("system"),
        pl.lit(SUBJECT).alias("kind"),
        *[e.fill_nan(None) for m in WIKIPROFILE_SHARES for e in scored(report, m, f"wikiprofile/{m}")],
    )


def leaderboard_table(
    reports: Mapping[dg.AssetKey, pl.DataFrame],
    oracles: Collection[str] = (),
    averaging: str = RECOR_AVERAGING,
    built: Mapping[dg.AssetKey, provenance.Build] | None = None,
    settings: UncertaintySettings | None = None,
) -> pl.DataFrame:
    """One row per system over the report tables at hand (keyed as :data:`REPORTS`; an
    absent or empty one adds nothing), in the shape of :data:`SCHEMA`, sorted by kind, then
    system. ``oracles``: the Oracle retriever aliases; ``averaging``: RECOR's; ``built``: the
    latest materialization of each report table, whose run and profile its rows carry."""
    built = built or {}
    rows = {
        QUIT_RETRIEVAL: quit_retrievers,
        QUIT_RERANK: quit_reranked,
        QUIT_READER: lambda f: quit_readers(f, oracles),
        RECOR_RETRIEVAL: lambda f: recor_retrievers(f, averaging, settings),
        WIKIPROFILE_REPORT: wikiprofile_subjects,
        BEIR_RETRIEVAL: beir_retrievers,
        BEIR_RERANK: beir_reranked,
    }
    parts = [
        with_benchmark(rows[key](frame), REPORTS[key]).with_columns(
            pl.lit(built[key].run_id if key in built else None, pl.String).alias("dagster_runs"),
            pl.lit(built[key].profile if key in built else None, pl.String).alias("profile"),
        )
        for key, frame in reports.items()
        if frame.height
    ]
    if not parts:
        return pl.DataFrame(schema=SCHEMA)
    long = pl.concat(parts, how="diagonal_relaxed").with_columns(
        pl.col("kind").replace_strict({k: i for i, k in enumerate(KINDS)}, return_dtype=pl.Int32).alias("kind_rank"),
        pl.col("benchmark")
        .replace_strict({b: i for i, b in enumerate(BENCHMARKS)}, default=len(BENCHMARKS), return_dtype=pl.Int32)
        .alias("benchmark_rank"),
    )
    built_by = ("dagster_runs", "profile")
    datasets = sorted(c for c in long.columns if c.startswith(f"{BEIR}/"))
    schema = {**SCHEMA, **{c: pl.Float64 for c in datasets}}
    present = [c for c in schema if c in long.columns and c not in ("system", "kind", "benchmarks", *built_by)]
    merged = long.group_by("system").agg(
        pl.col("kind").sort_by("kind_rank").unique(maintain_order=True).str.join(", "),
        pl.col("benchmark")
        .sort_by("benchmark_rank", "benchmark")
        .unique(maintain_order=True)
        .str.join(", ")
        .alias("benchmarks"),
        pl.col("kind_rank").min(),
        # blank where no materialization of the tables is recorded (tables written by hand)
        *[pl.col(c).drop_nulls().unique().sort().str.join(", ").replace("", None) for c in built_by],
        # Each score comes from one report table: the system's one non-null value.
        *[pl.col(c).drop_nulls().first() for c in present],
    )
    return (
        merged.sort("kind_rank", "system")
        .select(*[pl.col(c) if c in merged.columns else pl.lit(None, t).alias(c) for c, t in schema.items()])
        .cast(schema)
    )


def with_benchmark(rows: pl.DataFrame, benchmark: str) -> pl.DataFrame:
    """``rows`` with the benchmark they score on, unless they name it per row (a dataset's)."""
    return rows if "benchmark" in rows.columns else rows.with_columns(pl.lit(benchmark).alias("benchmark"))


def dataset_definitions(columns: list[str]) -> dict[str, str]:
    """What each dataset's score columns compute."""
    out = {}
    for column in columns:
        _, dataset, metric = column.split("/", 2)
        out[column] = (
            f"{eval_metrics.metric_label(metric)} on the dataset {dataset} (resources/datasets.yaml), over its "
            f"judged queries; {beir.RELEVANCE}"
        )
    return out


def definitions(averaging: str = RECOR_AVERAGING, table: pl.DataFrame | None = None) -> dict[str, str]:
    """What each column of the leaderboard computes (with ``table``, its datasets' columns too)."""
    quit_metric = {
        m: f"{eval_metrics.metric_label(m)} over the QUIT {QUIT_SPLIT} split's questions; {eval_metrics.RELEVANCE}"
        for m in QUIT_METRICS
    }
    return {
        "system": "a retriever alias (resources/retrievers.yaml), <retriever>+<reranker>, or a model alias (resources/models.yaml)",
        "kind": f"the parts it was evaluated in, of {', '.join(KINDS)}",
        "benchmarks": "the benchmarks it has scores on",
        **{f"quit/{m}": text for m, text in quit_metric.items()},
        QUIT_EM: "EM (normalized: lower case; accents, punctuation, possessive 's and articles removed) of the reader's "
        "best setting: the run read, top-k passages and context strategy with the highest EM; the Optimal bound "
        f"and the Oracle retriever's runs left out; over the QUIT {QUIT_SPLIT} split's questions",
        QUIT_EM_SETTING: "that setting: run, top-k, context strategy",
        **{
            f"recor/{RECOR_METRIC}/{s}": f"nDCG@10 ({eval_metrics.GAIN_LABELS['ndcg']}), query: {text}; "
            f"averaging: {conversational.AVERAGING[averaging]}"
            for s, text in conversational.STRATEGY_TEXT.items()
        },
        **{f"wikiprofile/{m}": method.DEFINITIONS[m] for m in WIKIPROFILE_SHARES},
        **dataset_definitions(score_columns(table)[len(SCORES) :] if table is not None else []),
        **interval_definitions([*SCORES, *(score_columns(table)[len(SCORES) :] if table is not None else [])]),
        "dagster_runs": "the Dagster runs that materialized the report tables its scores came from "
        "(blank: none is recorded)",
        "profile": "those runs' profile (their benchfoundry/profile tag), the leaderboard's: "
        "it leaves out report tables of another (left_out)",
    }


def interval_definitions(columns: list[str]) -> dict[str, str]:
    return {
        column + end: f"the {side} end of {column}'s interval, as its report computed it (the report's "
        "definitions name the method; blank: a report stored without intervals)"
        for column in columns
        for end, side in zip(INTERVAL, ("lower", "upper"))
    }


def leaderboard_shown(table: pl.DataFrame) -> pl.DataFrame:
    """The rows without the score columns no system has, so the inline table stays as narrow
    as the evaluation run (all columns while there is no row); the intervals are their own
    table (:func:`leaderboard_intervals`)."""
    kept = [c for c in table.columns if not c.endswith(INTERVAL)]
    return table.select(c for c in kept if not table.height or table[c].null_count() < table.height)


def leaderboard_intervals(table: pl.DataFrame) -> pl.DataFrame:
    """Every score of the leaderboard with its interval: a row per system and score column."""
    rows = [
        (row["system"], column, row[column], row.get(column + INTERVAL[0]), row.get(column + INTERVAL[1]))
        for row in table.iter_rows(named=True)
        for column in score_columns(table)
        if row[column] is not None
    ]
    schema = {"system": pl.String, "score": pl.String, "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


INTERVALS_DEFINITIONS = {
    "system": "a system of the leaderboard",
    "score": "one of its score columns",
    "value": "the score",
    "ci_low": "the lower end of its interval, as its report computed it (the report's definitions name the method)",
    "ci_high": "the upper end (blank: the report was stored without intervals)",
}


def leaderboard_plot(table: pl.DataFrame):
    """Systems against the scores they have, each cell its share in [0, 1]."""
    import numpy as np

    plt = _plt()
    columns = [c for c in score_columns(table) if table[c].null_count() < table.height]
    values = np.ma.masked_invalid(table.select(columns).to_numpy().astype(float))
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * max(1, len(columns)), 1.2 + 0.4 * max(1, table.height)))
    ax.imshow(values, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for (i, j), v in np.ndenumerate(values.filled(np.nan)):
        if v == v:
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7, color="white" if v < 0.6 else "black")
    ax.set_xticks(range(len(columns)), columns, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(table.height), table["system"].to_list(), fontsize=8)
    ax.set_title("Leaderboard (shares in [0, 1]; blank: not run)", fontsize=9)
    return fig


def leaderboard_slice(reports: Mapping[dg.AssetKey, pl.DataFrame]) -> str:
    """What the leaderboard counts, from the report tables it read. It has no profile of its
    own: each report's ``slice`` names the profile it ran under."""
    parts = []
    if QUIT_RETRIEVAL in reports:
        quit = on_quit_split(reports[QUIT_RETRIEVAL])
        # tables stored before the questions column name no count
        parts.append(
            f"QUIT: {int(quit['questions'].max() or 0) if 'questions' in quit.columns else 'no'} {QUIT_SPLIT} questions"
        )
    if RECOR_RETRIEVAL in reports:
        recor = reports[RECOR_RETRIEVAL]
        parts.append(
            f"RECOR: {recor['domain'].n_unique()} domains ({', '.join(sorted(recor['domain'].unique()))}), "
            f"{recor['qid'].n_unique()} turns"
        )
    if WIKIPROFILE_REPORT in reports:
        wiki = reports[WIKIPROFILE_REPORT]
        parts.append(f"WikiProfile: {wiki.height} subject models, {int(wiki['facts'].max() or 0)} facts each at most")
    if BEIR_RETRIEVAL in reports or BEIR_RERANK in reports:
        frames = [reports[k] for k in (BEIR_RETRIEVAL, BEIR_RERANK) if k in reports]
        judged = pl.concat([f.select("dataset", "queries") for f in frames]).group_by("dataset").agg(pl.max("queries"))
        parts.append(
            "BEIR-layout datasets: " + ", ".join(f"{d} ({q} queries)" for d, q in judged.sort("dataset").iter_rows())
        )
    return ("; ".join(parts) or "no report materialized") + "; each report's own slice names the profile it ran under"


def current_reports(
    context: dg.AssetExecutionContext, reports: Mapping[dg.AssetKey, pl.DataFrame]
) -> tuple[dict[dg.AssetKey, pl.DataFrame], dict[dg.AssetKey, provenance.Build], dict]:
    """The report tables a leaderboard of this run's profile keeps (``assets/common/provenance.py``):
    each one's latest materialization built under the profile, by its definition's code version
    of now and after every partition it read; the latest materialization of each, and the
    metadata naming those left out with the reason."""
    builds = provenance.Builds(context.instance)
    built = {key: builds.latest(key) for key in reports}
    profile, said = provenance.report_profile(context, built.values())
    left_out = {}
    for key, build in built.items():
        if reason := builds.reason(build, DEFINITIONS[key], profile):
            left_out[build] = reason
    kept = {key: frame for key, frame in reports.items() if built[key] not in left_out}
    return kept, built, provenance.provenance_metadata(said, left_out)


def stored_table(storage: StorageResource, key: dg.AssetKey) -> pl.DataFrame | None:
    """An unpartitioned asset's stored table, None before it is materialized."""
    uri = table_uri(storage.root, key.path)
    return read_parquet(uri) if exists(uri) else None


@dg.asset(key_prefix=PREFIX, group_name=GROUP, deps=list(REPORTS), kinds={"polars", "scipy"}, code_version="6")
def leaderboard(
    context: dg.AssetExecutionContext, storage: StorageResource, uncertainty: UncertaintySettings
) -> dg.Output:
    """Every evaluated system on every benchmark it was run on, one row per system (a
    retriever alias evaluated on QUIT and RECOR is one row): QUIT's Hit@1/5/10 and nDCG@10
    (exponential gain, ``ndcg_burges@10``) and the EM of each reader's best setting, RECOR's
    nDCG@10 per query strategy (turn -> domain -> macro over domains, the paper's averaging),
    WikiProfile's Encodes, Knows and Knows(+Think), and each registered BEIR-layout dataset's
    nDCG@10 and Recall@100 (``beir/<dataset>/...``). ``kind`` names the parts a system was
    evaluated in (retriever, retriever+reranker, reader LLM, subject LLM); every score is a
    share in [0, 1], null where the system was not run; ``definitions`` says what each column
    computes. Reads the report tables that are materialized and names the others
    (``not_evaluated``); of those, keeps the ones built under the run's profile, by the current
    code and after what they read, and names the others with the reason (``left_out``); each
    row names the runs of the tables it came from (``dagster_runs``) and their ``profile``.
    Writes the table as CSV beside its Parquet file."""
    stored = {key: stored_table(storage, key) for key in REPORTS}
    materialized = {key: frame for key, frame in stored.items() if frame is not None and frame.height}
    reports, built, left_out = current_reports(context, materialized)
    table = leaderboard_table(reports, oracle_aliases(), built=built, settings=uncertainty)
    intervals = leaderboard_intervals(table)
    # the datasets' reports are expected where the deployment registers a dataset
    registered = bool(load_datasets())
    missing = [k.to_user_string() for k in REPORTS if k not in materialized and (REPORTS[k] != BEIR or registered)]
    benchmarks = [*BENCHMARKS, *([BEIR] if registered else [])]
    evaluated = [b for b in (*BENCHMARKS, BEIR) if b in {REPORTS[key] for key in reports}]
    csv = storage.path(PREFIX, "leaderboard.csv")
    write_bytes(csv, table.write_csv().encode())
    columns = definitions(table=table)
    return dg.Output(
        table,
        metadata={
            "dagster/row_count": table.height,
            "slice": leaderboard_slice(reports),
            "leaderboard": report_table(leaderboard_shown(table), columns),
            "leaderboard_intervals": report_table(intervals, INTERVALS_DEFINITIONS),
            **why_empty(
                {"leaderboard": (table, "no report table is materialized and kept (not_evaluated, left_out name them)")}
            ),
            **left_out,
            "benchmarks_evaluated": ", ".join(evaluated) or "none",
            "benchmarks_not_evaluated": ", ".join(b for b in benchmarks if b not in evaluated) or "none",
            "not_evaluated": ", ".join(missing) or "none",
            "recor_averaging": conversational.AVERAGING[RECOR_AVERAGING],
            "definitions": dg.MetadataValue.md(
                md_table(pl.DataFrame({"column": list(columns), "definition": list(columns.values())}), len(columns))
            ),
            "csv": dg.MetadataValue.path(csv),
            "parquet": dg.MetadataValue.path(table_uri(storage.root, [PREFIX, "leaderboard"])),
            **({"leaderboard_plot": png_markdown(leaderboard_plot(table))} if table.height else {}),
        },
    )


leaderboard_assets = [leaderboard]
