"""QUIT's fine-tuning report (paper section 5 and appendix A.2-A.3, Tables 10-12): each
fine-tuned model beside the vanilla systems, retrieval, reranking and the reader on their
contexts, scored over the questions no model trained on.

The evaluation assets score every question of the benchmark they read, train questions
included; a fine-tuned model has seen those, so these tables keep the held-out splits (dev
and test) alone, each split on its own rows. A model trained on a count of positives per
question (the settings' sweep, registered with its count) is also read per count, as Tables
10-12 read theirs.
"""

from collections.abc import Mapping
from typing import NamedTuple

import dagster as dg
import polars as pl

from assets.common.metadata import report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.wiring import Wiring
from assets.eval import metrics as eval_metrics
from assets.eval import reports
from assets.eval.quit import steps as readers
from assets.eval.quit.assets import QUIT_QRELS, QUIT_QUESTIONS, TABLE_4, oracle_aliases
from assets.eval.quit.finetune.rules import TRAIN
from resources.retrieval import load_rerankers, load_retrievers

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)

RETRIEVAL, RERANKING, READER = "retrieval", "reranking", "reader"
TABLES = (RETRIEVAL, RERANKING, READER)
# Tables 10-11 (retrievers) share Table 4's columns; Table 12 is the rerankers' nDCG at six
# depths, with QUIT's exponential gain.
RETRIEVAL_METRICS = TABLE_4
RERANKING_METRICS = [eval_metrics.ndcg(k) for k in (1, 5, 10, 20, 50, 100)]
# The reader's EM (normalized) at its best top-k and context strategy per system, as Table 8
# reads a reader's row; the setting is named beside it.
READER_METRICS = ["em", "em_raw"]

# One row per (table, system, split, metric): the three tables have different metrics.
# ``positives`` is the count of positives per question of the fine-tuned model the table
# evaluates (the retriever in retrieval rows, the reranker in reranking rows); null for a
# vanilla one, a model registered without a count, and the reader's rows.
SCHEMA = {
    "table": pl.String,
    "system": pl.String,
    "retriever": pl.String,
    "reranker": pl.String,
    "reader": pl.String,
    "fine_tuned": pl.Boolean,
    "positives": pl.Int32,
    "split": pl.String,
    "questions": pl.Int64,
    "setting": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}


class Trained(NamedTuple):
    """A fine-tuned alias as its registry entry describes it: its kind (``dense``,
    ``multi_vector``, ``cross_encoder``) and the positives per question it was trained on
    (None for an entry registered before the sweep)."""

    kind: str
    positives: int | None


def held_out(questions: pl.DataFrame) -> dict[str, list[str]]:
    """Each split no model trains on, with its question ids."""
    kept = questions.filter(pl.col("split") != TRAIN)
    return {
        split: sorted(kept.filter(pl.col("split") == split)["question_id"].to_list())
        for split in sorted(kept["split"].unique().to_list())
    }


def _rows(
    table: str,
    system: str,
    split: str,
    questions: int,
    scores: dict[str, float],
    fine_tuned: bool,
    retriever: str,
    reranker: str | None = None,
    reader: str | None = None,
    setting: str | None = None,
    positives: int | None = None,
) -> list[dict]:
    return [
        {
            "table": table,
            "system": system,
            "retriever": retriever,
            "reranker": reranker,
            "reader": reader,
            "fine_tuned": fine_tuned,
            "positives": positives,
            "split": split,
            "questions": questions,
            "setting": setting,
            "metric": metric,
            "value": float(value),
        }
        for metric, value in scores.items()
    ]


def _scored(qrels: pl.DataFrame, run: pl.DataFrame, ids: list[str], metrics: list[str]) -> dict[str, float] | None:
    """The run's metrics over ``ids``; None when the run ranks none of them."""
    run = run.filter(pl.col("question_id").is_in(ids))
    if run.is_empty():
        return None
    return eval_metrics.evaluate_run(qrels.filter(pl.col("question_id").is_in(ids)), run, metrics)


def _parts(system: str, trained: Mapping[str, Trained]) -> tuple[str, str | None, bool]:
    """A run's retriever, its reranker (``<retriever>+<reranker>``, or none) and whether
    either part is fine-tuned."""
    retriever, _, reranker = system.partition("+")
    return retriever, reranker or None, bool({retriever, reranker} & trained.keys())


def run_rows(
    table: str,
    runs: pl.DataFrame,
    qrels: pl.DataFrame,
    splits: dict[str, list[str]],
    trained: Mapping[str, Trained],
    metrics: list[str],
    left_out: set[str] = frozenset(),
) -> list[dict]:
    """One table's rows: every run's ``metrics`` per held-out split, but the systems
    ``left_out``. Tables 10-11 (ColBERT, DPR) are the retrievers but the Oracle (an upper
    bound); Table 12 every retriever + reranker run, fine-tuned when either part is (the
    paper's rows rerank one fixed retriever's passages; the Oracle retriever's row is that
    comparison here). A row's ``positives`` is the count of the model it evaluates: the
    reranker of a reranked run, else the retriever."""
    rows = []
    for system in sorted(set(runs["system"].unique().to_list()) - left_out):
        run = runs.filter(pl.col("system") == system)
        retriever, reranker, fine_tuned = _parts(system, trained)
        evaluated = trained.get(reranker or retriever)
        for split, ids in splits.items():
            scores = _scored(qrels, run, ids, metrics)
            if scores is not None:
                rows += _rows(
                    table,
                    system,
                    split,
                    len(ids),
                    scores,
                    fine_tuned,
                    retriever,
                    reranker,
                    positives=evaluated.positives if evaluated else None,
                )
    return rows


def reader_rows(answers: pl.DataFrame, splits: dict[str, list[str]], trained: Mapping[str, Trained]) -> list[dict]:
    """The reader on each system's contexts: per system, reader and held-out split, the EM of
    the best (k, strategy) by normalized EM (ties: the smaller k, then the strategy's name),
    with the raw EM of that same setting; the Optimal bound (every relevant passage) as its
    own system."""
    rows = []
    for split, ids in splits.items():
        kept = answers.filter(pl.col("question_id").is_in(ids))
        if kept.is_empty():
            continue
        optimal = kept.filter(pl.col("system") == "optimal")
        table = readers.em_table(kept.filter(pl.col("system") != "optimal"), optimal)
        best = (
            table.sort(["em", "k", "strategy"], descending=[True, False, False], nulls_last=True)
            .group_by("system", "reader", maintain_order=True)
            .first()
        )
        for r in best.sort("system", "reader").iter_rows(named=True):
            retriever, reranker, fine_tuned = _parts(r["system"], trained)
            setting = "every relevant passage" if r["k"] is None else f"top-{r['k']} {r['strategy']}"
            rows += _rows(
                READER,
                r["system"],
                split,
                len(ids),
                {m: r[m] for m in READER_METRICS},
                fine_tuned,
                retriever,
                reranker,
                r["reader"],
                setting,
            )
    return rows


def report(
    runs: pl.DataFrame,
    reranked: pl.DataFrame,
    answers: pl.DataFrame,
    qrels: pl.DataFrame,
    questions: pl.DataFrame,
    trained: Mapping[str, Trained],
    oracles: set[str],
) -> pl.DataFrame:
    """The three tables in one long frame (:data:`SCHEMA`), over the held-out splits only."""
    splits = held_out(questions)
    rows = (
        run_rows(RETRIEVAL, runs, qrels, splits, trained, RETRIEVAL_METRICS, oracles)
        + run_rows(RERANKING, reranked, qrels, splits, trained, RERANKING_METRICS)
        + reader_rows(answers, splits, trained)
    )
    return pl.DataFrame(rows, schema=SCHEMA)


def wide(frame: pl.DataFrame, table: str, key: str) -> pl.DataFrame:
    """One table's rows, one column per metric, fine-tuned systems after the vanilla ones."""
    part = frame.filter(pl.col("table") == table)
    if part.is_empty():
        return part
    index = [key, "split", "fine_tuned"] + (["reader", "setting"] if table == READER else [])
    return part.pivot(on="metric", index=index, values="value", maintain_order=True).sort("split", "fine_tuned", key)


def inline(frame: pl.DataFrame, table: str, metrics: list[str], key: str) -> dg.TableMetadataValue:
    """A table as the UI shows it inline: one row per split and system, vanilla before
    fine-tuned, each metric a share in [0, 1] under its definition (the reader's: at its
    best setting, named beside it)."""
    index = [key, "split", "fine_tuned"] + (["reader", "setting"] if table == READER else [])
    part = wide(frame, table, key)
    if part.is_empty():
        part = pl.DataFrame(schema={**{c: SCHEMA[c] for c in index}, **{m: pl.Float64 for m in metrics}})
    definitions = {
        key: "a retriever alias, or <retriever>+<reranker>",
        "split": "a held-out split (dev or test)",
        "fine_tuned": "true for a fine-tuned model, or a run that uses one",
        "reader": "a reader alias (registry role quit.readers)",
        "setting": "the reader's best top-k and context strategy on this system, by normalized EM",
        **{m: READER_DEFINITIONS.get(m) or reports.metric_definition(m) for m in metrics},
    }
    return report_table(part.select(*index, *metrics), definitions)


READER_DEFINITIONS = {
    "em": "EM (normalized), a share of the split's questions in [0, 1]",
    "em_raw": "EM (raw, as released), a share of the split's questions in [0, 1]",
}
NO_HELD_OUT = "no held-out question was evaluated (the benchmark read has no dev or test question)"


# The sweep's tables: Tables 10-11 (the retrievers) and 12 (the reranker), a row per count.
SWEEP_TABLES = {
    "positives_sweep_retrievers": (RETRIEVAL, RETRIEVAL_METRICS),
    "positives_sweep_rerankers": (RERANKING, RERANKING_METRICS),
}
NO_COUNT = (
    "no {} run of a model registered with its count of positives scored a held-out question (materialize "
    "the fine-tuned models, then the QUIT evaluation for their partitions)"
)
SWEEP_INDEX = ["model", "system", "positives", "split"]
SWEEP_DEFINITIONS = {
    "model": "the fine-tuned model's kind: dense (DPR-style, Table 11), multi_vector (ColBERT-style, Table 10), "
    "cross_encoder (the reranker, Table 12)",
    "system": "the fine-tuned retriever's alias, or <retriever>+<fine-tuned reranker>",
    "positives": "positive passages per train question the model was trained on (a count of the sweep)",
    "split": "a held-out split (dev or test)",
}


def sweep(frame: pl.DataFrame, table: str, trained: Mapping[str, Trained]) -> pl.DataFrame:
    """One table's rows of models trained on a count of positives, one column per metric:
    by model kind and split, then (reranking: per retriever) by count."""
    part = frame.filter((pl.col("table") == table) & pl.col("positives").is_not_null())
    if part.is_empty():
        return part
    evaluated = pl.col("reranker") if table == RERANKING else pl.col("retriever")
    kinds = {alias: t.kind for alias, t in trained.items()}
    part = part.with_columns(evaluated.replace_strict(kinds, default=None, return_dtype=pl.String).alias("model"))
    order = ["model", "split", *(["retriever"] if table == RERANKING else []), "positives", "system"]
    return (
        part.pivot(on="metric", index=[*SWEEP_INDEX, "retriever"], values="value", maintain_order=True)
        .sort(order)
        .drop("retriever")
    )


def inline_sweep(
    frame: pl.DataFrame, table: str, metrics: list[str], trained: Mapping[str, Trained]
) -> dg.TableMetadataValue:
    """The sweep's rows of one table as the UI shows them inline, each metric a share in [0, 1]."""
    part = sweep(frame, table, trained)
    if part.is_empty():
        part = pl.DataFrame(
            schema={
                "model": pl.String,
                "system": pl.String,
                "positives": pl.Int32,
                "split": pl.String,
                **{m: pl.Float64 for m in metrics},
            }
        )
    return report_table(
        part.select(*SWEEP_INDEX, *metrics), {**SWEEP_DEFINITIONS, **{m: reports.metric_definition(m) for m in metrics}}
    )


def trained_models() -> dict[str, Trained]:
    """Every retriever and reranker alias a fine-tuning asset registered, with its kind and count."""
    specs = {**load_retrievers(), **load_rerankers()}
    return {alias: Trained(s.kind, s.positives) for alias, s in specs.items() if s.trained_on}


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "quit_runs": wiring.input("quit_runs"),
        "quit_reranked_runs": wiring.input("quit_reranked_runs"),
        "quit_reader_answers": wiring.input("quit_reader_answers"),
        "benchmark_questions": QUIT_QUESTIONS,
        "benchmark_qrels": QUIT_QRELS,
    },
    kinds={"ranx"},
    code_version="1",
)
def quit_finetune_report(
    context: dg.AssetExecutionContext,
    quit_runs: pl.DataFrame,
    quit_reranked_runs: pl.DataFrame,
    quit_reader_answers: pl.DataFrame,
    benchmark_questions: pl.DataFrame,
    benchmark_qrels: pl.DataFrame,
) -> dg.Output:
    """Vanilla against fine-tuned systems on QUIT's held-out questions (dev and test; train
    questions are left out, as the fine-tuned models learned from them): Tables 10-11's
    shape for retrievers (Hit@1/5, Recall@5/10/50, MRR, nDCG@10/100), Table 12's for rerankers
    (nDCG@1/5/10/20/50/100, every retriever's run, the Oracle's included) and the reader's
    EM at its best setting on each system's contexts. A fine-tuned system is an alias the
    fine-tuning assets registered (``ft-dpr-<base>`` and ``ft-colbert-<base>``, Tables 11
    and 10; ``ft-ce-<base>``, Table 12's reranker; ``-p<count>`` after each when the settings
    sweep several counts of positives), or a run that uses one. The sweep's tables read the
    fine-tuned models per count of positives per train question, as the paper's Tables 10-12
    do: ``positives_sweep_retrievers`` (per kind, split and count) and
    ``positives_sweep_rerankers`` (per retriever whose run the reranker reorders, then count);
    the vanilla systems they compare with are in the tables above."""
    trained = trained_models()
    frame = report(
        quit_runs,
        quit_reranked_runs,
        quit_reader_answers,
        benchmark_qrels,
        benchmark_questions,
        trained,
        set(oracle_aliases()),
    )
    evaluated = sorted(set(frame.filter(pl.col("fine_tuned"))["system"].to_list()))
    if not evaluated:
        context.log.warning(
            "no fine-tuned system was evaluated on a held-out question: materialize eval/quit_dense_model, "
            "eval/quit_colbert_model or eval/quit_rerank_model, then the QUIT evaluation for its partitions"
        )
    splits = held_out(benchmark_questions)
    tables = {
        "table_10_11_retrievers": (RETRIEVAL, RETRIEVAL_METRICS),
        "table_12_rerankers": (RERANKING, RERANKING_METRICS),
        "reader_em": (READER, READER_METRICS),
    }
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            "slice": report_slice(
                f"{readers.questions_covered(benchmark_questions)}, the held-out ones counted "
                f"({sum(map(len, splits.values()))})",
                run_profile(context),
            ),
            "held_out_questions": dg.MetadataValue.text(
                ", ".join(f"{s}: {len(ids)}" for s, ids in splits.items()) or "none"
            ),
            "fine_tuned_systems": dg.MetadataValue.text(", ".join(evaluated) or "none"),
            **{name: inline(frame, table, metrics, "system") for name, (table, metrics) in tables.items()},
            **{name: inline_sweep(frame, table, metrics, trained) for name, (table, metrics) in SWEEP_TABLES.items()},
            **why_empty(
                {
                    name: (
                        frame.filter(pl.col("table") == table),
                        NO_HELD_OUT if not splits else f"no {table} run scored a held-out question",
                    )
                    for name, (table, _) in tables.items()
                }
                | {
                    name: (sweep(frame, table, trained), NO_HELD_OUT if not splits else NO_COUNT.format(table))
                    for name, (table, _) in SWEEP_TABLES.items()
                }
            ),
        },
    )


finetune_report_assets = [quit_finetune_report]
