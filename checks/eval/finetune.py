"""Checks of QUIT's fine-tuning: the training pairs drawn from the train split, the
fine-tuned models (saved, registered, their loss logs) and the report that scores them on the
held-out splits."""

from __future__ import annotations

import os

import dagster as dg
import polars as pl

from assets.common.text import normalize
from assets.eval.quit.finetune import report as finetune_report
from assets.eval.quit.finetune import rules as finetune_rules
from assets.eval.quit.finetune.assets import CROSS_ENCODER, DENSE, MULTI_VECTOR, TRAINED_ON, TrainedModel, models_of
from assets.eval.quit.finetune.steps import LOG_FILE, log_problems, read_log
from assets.partitions import finetune_base_partitions
from assets.quit.settings import FinetuneSettings
from checks.eval.shared import QUIT_CORPUS, QUIT_QUESTIONS, SCHEMA, eval_key
from checks.factories import UNIT, WARN, not_in, outside, problems_result, rejects_check, table_problems, typed, where

# --- the training pairs ---------------------------------------------------------------------------

POSITIVES = "positives"
NEGATIVES = "negatives"
PAIRS_PER_QUESTION = "pairs_per_question"
TRAIN_ONLY = "train_only"
RANDOM_FALLBACK = "random_fallback"
PAIR_KEY = ("question_id", "pair")
QUIT_QRELS = dg.AssetIn(key=eval_key("quit_qrels"))
FINETUNE_SOURCE = {"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS, "quit_qrels": QUIT_QRELS}


def _owners(corpus: pl.DataFrame, questions: pl.DataFrame, column: str) -> pl.DataFrame:
    """Each passage, named ``column``, with the question it was written for and that question's split."""
    return corpus.select(pl.col("passage_id").alias(column), pl.col("question_id").alias(f"{column}_of")).join(
        questions.select(pl.col("question_id").alias(f"{column}_of"), pl.col("split").alias(f"{column}_split")),
        on=f"{column}_of",
        how="left",
    )


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=SCHEMA,
    blocking=True,
    description="One row per question and pair, pairs numbered 0..n-1; every value there but a random "
    "negative's rank; each negative from BM25 (with its rank) or random.",
)
def quit_finetune_data_schema(quit_finetune_data: pl.DataFrame) -> dg.AssetCheckResult:
    frame, key, columns = quit_finetune_data, PAIR_KEY, finetune_rules.PAIRS_SCHEMA
    problems = table_problems(frame, columns, key, not_null=tuple(c for c in columns if c != "negative_rank"))
    if typed(frame, columns):
        bm25 = pl.col("negative_source") == finetune_rules.BM25
        problems += not_in(frame, "negative_source", finetune_rules.NEGATIVE_SOURCES, key)
        problems += where(
            frame,
            bm25 & ~(pl.col("negative_rank") >= 1).fill_null(False),
            "BM25 negatives without a rank of 1 or more",
            key,
        )
        problems += where(
            frame, ~bm25 & pl.col("negative_rank").is_not_null(), "random negatives with a BM25 rank", key
        )
        numbered = frame.group_by("question_id").agg(
            pl.len().alias("pairs"), pl.col("pair").min().alias("first"), pl.col("pair").max().alias("last")
        )
        problems += where(
            numbered,
            (pl.col("first") != 0) | (pl.col("last") != pl.col("pairs") - 1),
            "(questions) whose pairs are not numbered 0..n-1",
            ["question_id"],
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=POSITIVES,
    blocking=True,
    additional_ins={"quit_qrels": QUIT_QRELS},
    description="Every positive is relevant to its question (label 1 or 2 in the qrels, the label it carries); "
    "a question's label-2 pairs come before its label-1 pairs.",
)
def quit_finetune_data_positives(quit_finetune_data: pl.DataFrame, quit_qrels: pl.DataFrame) -> dg.AssetCheckResult:
    """Label 1 is a weaker positive: a question is trained on one only once its label-2
    passages run out, so a trainer that reads a prefix of its pairs gets the best first."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        labels = quit_qrels.select(
            "question_id", pl.col("passage_id").alias("positive_id"), pl.col("label").alias("qrel")
        )
        labeled = frame.join(labels, on=["question_id", "positive_id"], how="left")
        problems += where(
            labeled,
            ~(pl.col("qrel") >= 1).fill_null(False),
            "with a positive its question's qrels do not label 1 or 2",
            key,
        )
        problems += where(
            labeled, pl.col("qrel") != pl.col("positive_label"), "whose positive_label is not the qrels' label", key
        )
        ordered = frame.sort(*key).with_columns(
            pl.col("positive_label").cast(pl.Int32).diff().over("question_id").alias("rise")
        )
        problems += where(ordered, pl.col("rise") > 0, "with a label-2 positive after a label-1 one", key)
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=NEGATIVES,
    blocking=True,
    additional_ins=FINETUNE_SOURCE,
    description="Every negative is a passage of another train question (the one it names), of a different "
    "answer, and not in its question's qrels.",
)
def quit_finetune_data_negatives(
    quit_finetune_data: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame, quit_qrels: pl.DataFrame
) -> dg.AssetCheckResult:
    """A negative that answers its question, being its own, in its qrels, or written for the
    same answer, would teach the model to push away a relevant passage."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        answers = quit_questions.select("question_id", pl.col("answer").map_elements(normalize, return_dtype=pl.String))
        judged = (
            frame.join(_owners(quit_corpus, quit_questions, "negative_id"), on="negative_id", how="left")
            .join(
                quit_qrels.select(
                    "question_id", pl.col("passage_id").alias("negative_id"), pl.lit(True).alias("in_qrels")
                ),
                on=["question_id", "negative_id"],
                how="left",
            )
            .join(answers, on="question_id", how="left")
            .join(
                answers.rename({"question_id": "negative_id_of", "answer": "negative_answer"}),
                on="negative_id_of",
                how="left",
            )
        )
        problems += where(judged, pl.col("negative_id_of").is_null(), "with a negative not in eval/quit_corpus", key)
        problems += where(
            judged,
            pl.col("negative_id_of") != pl.col("negative_question_id"),
            "whose negative_question_id is not the negative's question in eval/quit_corpus",
            key,
        )
        problems += where(
            judged, pl.col("negative_id_of") == pl.col("question_id"), "with a negative of the question itself", key
        )
        problems += where(
            judged,
            pl.col("negative_id_split") != finetune_rules.TRAIN,
            "with a negative of a question outside the train split",
            key,
        )
        problems += where(judged, pl.col("in_qrels"), "with a negative in its question's qrels", key)
        problems += where(
            judged,
            (pl.col("answer") != "") & (pl.col("answer") == pl.col("negative_answer")),
            "with a negative of a question with the same answer",
            key,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=PAIRS_PER_QUESTION,
    blocking=True,
    additional_ins={**FINETUNE_SOURCE, "quit_finetune_rejects": dg.AssetIn(key=eval_key("quit_finetune_rejects"))},
    description="Every train question has min(positives, its relevant train passages) pairs, or none and a reject.",
)
def quit_finetune_data_pairs(
    quit_finetune_data: pl.DataFrame,
    quit_questions: pl.DataFrame,
    quit_corpus: pl.DataFrame,
    quit_qrels: pl.DataFrame,
    quit_finetune_rejects: pl.DataFrame,
    finetune_settings: FinetuneSettings,
) -> dg.AssetCheckResult:
    """A question with fewer pairs lost positives it had; one with none and no reject was
    dropped silently."""
    frame, n = quit_finetune_data, max(finetune_settings.positives)
    problems = table_problems(frame, {"question_id": pl.String}) + table_problems(
        quit_finetune_rejects, {"question_id": pl.String}
    )
    if not problems:
        pool = finetune_rules.train_passages(quit_questions, quit_corpus).select("passage_id")
        relevant = (
            quit_qrels.filter(pl.col("label") >= 1)
            .join(pool, on="passage_id", how="semi")
            .group_by("question_id")
            .len("relevant")
        )
        rejected = quit_finetune_rejects.select("question_id").unique().with_columns(pl.lit(True).alias("rejected"))
        counted = (
            quit_questions.filter(pl.col("split") == finetune_rules.TRAIN)
            .select("question_id")
            .join(relevant, on="question_id", how="left")
            .join(frame.group_by("question_id").len("pairs"), on="question_id", how="left")
            .join(rejected, on="question_id", how="left")
            .with_columns(pl.col("relevant", "pairs").fill_null(0))
        )
        expected = pl.when(pl.col("rejected")).then(0).otherwise(pl.min_horizontal(pl.col("relevant"), pl.lit(n)))
        problems += where(
            counted,
            pl.col("pairs") != expected,
            f"train questions whose pairs are not min({n}, their relevant train passages), none when rejected",
            ["question_id"],
        )
    return problems_result(problems, frame.height, positives=n)


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=TRAIN_ONLY,
    blocking=True,
    additional_ins={"quit_questions": QUIT_QUESTIONS, "quit_corpus": QUIT_CORPUS},
    description="No dev or test id: every question is a train question, every positive and negative a passage of one.",
)
def quit_finetune_data_train_only(
    quit_finetune_data: pl.DataFrame, quit_questions: pl.DataFrame, quit_corpus: pl.DataFrame
) -> dg.AssetCheckResult:
    """A dev or test passage trained on would inflate the fine-tuned models' scores on the
    splits they are evaluated on."""
    frame, key = quit_finetune_data, PAIR_KEY
    problems = table_problems(frame, finetune_rules.PAIRS_SCHEMA)
    if typed(frame, finetune_rules.PAIRS_SCHEMA):
        splits = quit_questions.select("question_id", "split")
        judged = (
            frame.join(splits, on="question_id", how="left")
            .join(_owners(quit_corpus, quit_questions, "positive_id"), on="positive_id", how="left")
            .join(_owners(quit_corpus, quit_questions, "negative_id"), on="negative_id", how="left")
        )
        for column, what in (
            ("split", "questions"),
            ("positive_id_split", "positives"),
            ("negative_id_split", "negatives"),
        ):
            problems += where(
                judged,
                pl.col(column).fill_null("none") != finetune_rules.TRAIN,
                f"with {what} not of a train question",
                key,
            )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_finetune_data"),
    name=RANDOM_FALLBACK,
    description="Under negatives: bm25, every negative is BM25's (warns): a random one stands in where BM25 "
    "found no passage of another train question.",
)
def quit_finetune_data_random_fallback(
    quit_finetune_data: pl.DataFrame, finetune_settings: FinetuneSettings
) -> dg.AssetCheckResult:
    frame = quit_finetune_data
    problems = table_problems(frame, {"question_id": pl.String, "pair": pl.Int32, "negative_source": pl.String})
    if not problems and finetune_settings.negatives == finetune_rules.BM25:
        problems += where(
            frame,
            pl.col("negative_source") == finetune_rules.RANDOM,
            "with a random negative under negatives: bm25",
            PAIR_KEY,
        )
    return problems_result(problems, frame.height, WARN, negatives=finetune_settings.negatives)


quit_finetune_rejects_reasons = rejects_check(
    eval_key("quit_finetune_rejects"), finetune_rules.REASONS, finetune_rules.REJECTS.keys
)

finetune_data_checks = [
    quit_finetune_data_schema,
    quit_finetune_data_positives,
    quit_finetune_data_negatives,
    quit_finetune_data_pairs,
    quit_finetune_data_train_only,
    quit_finetune_data_random_fallback,
    quit_finetune_rejects_reasons,
]


# --- the fine-tuned models -------------------------------------------------------------------------

REGISTERED = "registered"
LOSS_LOG = "loss_log"


def materialization_metadata(context: dg.AssetCheckExecutionContext, key: dg.AssetKey) -> dict:
    """The metadata of the checked partition's latest materialization (a model asset writes
    its own folder and stores no table to load)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]), limit=1
    ).records
    event = records[0].asset_materialization if records else None
    return {k: v.value for k, v in event.metadata.items()} if event is not None else {}


def trained_model_problems(meta: dict, specs: dict, model: TrainedModel) -> list[str]:
    """Each model of a materialization (one per count of positives) is saved where its row
    says, with its weights and loss log, and its alias is registered as a ``model.kind``
    system reading that folder, trained on QUIT (so RECOR leaves it out), with that count."""
    problems = []
    for row in models_of(meta):
        folder, alias, positives = row.get("model_path"), row.get("alias"), row.get("positives")
        if not folder or not alias:
            problems.append("the materialization names no model_path or no alias")
            continue
        if not os.path.isfile(os.path.join(folder, "modules.json")) or not os.path.isfile(
            os.path.join(folder, LOG_FILE)
        ):
            problems.append(f"no saved model with its loss log at {folder}")
        spec, key = specs.get(alias), model.path_key
        if spec is None:
            problems.append(f"{alias!r} is not registered")
            continue
        if (spec.kind, getattr(spec, key), spec.trained_on) != (model.kind, folder, TRAINED_ON):
            problems.append(
                f"{alias!r} is registered as kind {spec.kind!r}, {key} {getattr(spec, key)!r}, trained on "
                f"{spec.trained_on!r}; expected {model.kind!r}, {folder!r}, {TRAINED_ON!r}"
            )
        # A materialization made before the sweep records no count.
        if positives is not None and spec.positives != positives:
            problems.append(
                f"{alias!r} is registered with {spec.positives} positives a question; its model was "
                f"trained on {positives}"
            )
    return problems


def trained_model_checks(asset: str, model: TrainedModel) -> list[dg.AssetChecksDefinition]:
    """The checks of one fine-tuned model asset, per base model partition: each count's alias
    is registered at its folder (``registered``), and each loss log is usable (``loss_log``)."""
    key, what = eval_key(asset), model.section[:-1]

    @dg.asset_check(
        asset=key,
        name=REGISTERED,
        partitions_def=finetune_base_partitions,
        description=f"Each model folder is saved where the materialization says, and its {what} alias is "
        f"registered as a {model.kind} {what} reading that folder, trained on QUIT with its "
        "count of positives.",
    )
    def registered(context) -> dg.AssetCheckResult:
        """An alias registered at another folder would evaluate another training under this
        model's name; one not registered is never evaluated."""
        meta = materialization_metadata(context, key)
        models = models_of(meta)
        return problems_result(
            trained_model_problems(meta, model.load(), model),
            len(models),
            model_path=", ".join(str(m.get("model_path")) for m in models),
        )

    @dg.asset_check(
        asset=key,
        name=LOSS_LOG,
        partitions_def=finetune_base_partitions,
        description="Each saved loss log has a step, and every step's loss is a finite number.",
    )
    def loss_log(context) -> dg.AssetCheckResult:
        problems, steps = [], 0
        for row in models_of(materialization_metadata(context, key)):
            folder = row.get("model_path")
            if not folder or not os.path.isfile(os.path.join(folder, LOG_FILE)):
                problems.append(f"no loss log at {folder}")
                continue
            log = read_log(folder)
            problems += [f"{row.get('alias')}: {p}" for p in log_problems(log)]
            steps += len(log)
        return problems_result(problems, steps)

    return [registered, loss_log]


dense_model_checks = trained_model_checks("quit_dense_model", DENSE)
rerank_model_checks = trained_model_checks("quit_rerank_model", CROSS_ENCODER)
colbert_model_checks = trained_model_checks("quit_colbert_model", MULTI_VECTOR)
finetune_model_checks = [*dense_model_checks, *rerank_model_checks, *colbert_model_checks]


# --- the report ----------------------------------------------------------------------------------

FINETUNE_REPORT_KEY = ("table", "system", "reader", "split", "metric")
HELD_OUT, FINE_TUNED = "held_out", "fine_tuned"


@dg.asset_check(
    asset=eval_key("quit_finetune_report"),
    name=HELD_OUT,
    additional_ins={"quit_questions": QUIT_QUESTIONS},
    description="One row per table, system, reader, split and metric; each table's own metrics, in [0, 1]; "
    "only held-out splits (never train), each row counting all of its split's questions; a "
    "count of positives (at least 1) only on a fine-tuned retrieval or reranking row.",
)
def quit_finetune_report_held_out(
    quit_finetune_report: pl.DataFrame, quit_questions: pl.DataFrame
) -> dg.AssetCheckResult:
    """A train question in these tables would score a fine-tuned model on what it learned from."""
    frame, key = quit_finetune_report, FINETUNE_REPORT_KEY
    problems = table_problems(
        frame,
        finetune_report.SCHEMA,
        key,
        not_null=("table", "system", "retriever", "fine_tuned", "split", "questions", "metric", "value"),
    )
    if typed(frame, finetune_report.SCHEMA):
        problems += not_in(frame, "table", finetune_report.TABLES, key)
        for table, metrics in (
            (finetune_report.RETRIEVAL, finetune_report.RETRIEVAL_METRICS),
            (finetune_report.RERANKING, finetune_report.RERANKING_METRICS),
            (finetune_report.READER, finetune_report.READER_METRICS),
        ):
            problems += not_in(frame.filter(pl.col("table") == table), "metric", metrics, key)
        problems += outside(frame, ["value"], UNIT, key, missing_ok=False)
        held_out = {s: len(ids) for s, ids in finetune_report.held_out(quit_questions).items()}
        problems += not_in(frame, "split", held_out, key)
        counts = pl.DataFrame(
            {"split": list(held_out), "expected": list(held_out.values())},
            schema={"split": pl.String, "expected": pl.Int64},
        )
        joined = frame.join(counts, on="split", how="inner")
        problems += where(
            joined, pl.col("questions") != pl.col("expected"), "counting other than their split's questions", key
        )
        problems += where(frame, pl.col("positives") < 1, "with a count of positives below 1", key)
        untrained = ~pl.col("fine_tuned") | (pl.col("table") == finetune_report.READER)
        problems += where(
            frame,
            pl.col("positives").is_not_null() & untrained,
            "with a count of positives on a vanilla or a reader row",
            key,
        )
    return problems_result(problems, frame.height)


@dg.asset_check(
    asset=eval_key("quit_finetune_report"),
    name=FINE_TUNED,
    additional_ins={"quit_runs": dg.AssetIn(key=eval_key("quit_runs"))},
    description="Every registered fine-tuned retriever with a run is in the retrieval table, marked fine-tuned; "
    "a vanilla system is never marked so; a row's count of positives is its model's registered "
    "one (warns: a model not yet evaluated, or trained again since, is no broken table).",
)
def quit_finetune_report_fine_tuned(quit_finetune_report: pl.DataFrame, quit_runs: pl.DataFrame) -> dg.AssetCheckResult:
    frame, models = quit_finetune_report, finetune_report.trained_models()
    trained = set(models)
    problems = table_problems(
        frame,
        {
            "table": pl.String,
            "system": pl.String,
            "retriever": pl.String,
            "reranker": pl.String,
            "fine_tuned": pl.Boolean,
            "positives": pl.Int32,
        },
    )
    if not problems:
        retrieval = frame.filter(pl.col("table") == finetune_report.RETRIEVAL)
        run = set(quit_runs["system"].unique().to_list()) & trained
        absent = sorted(run - set(retrieval.filter(pl.col("fine_tuned"))["system"].to_list()))
        if absent and not frame.is_empty():
            problems.append(f"fine-tuned retrievers with a run but no fine-tuned row: {', '.join(absent)}")
        problems += where(
            retrieval,
            pl.col("fine_tuned") != pl.col("system").is_in(sorted(trained)),
            "marked fine-tuned or not against the registries",
            ("system",),
        )
        counts = pl.DataFrame(
            {"evaluated": list(models), "registered": [m.positives for m in models.values()]},
            schema={"evaluated": pl.String, "registered": pl.Int32},
        )
        scored = (
            frame.filter(pl.col("table") != finetune_report.READER)
            .with_columns(pl.coalesce("reranker", "retriever").alias("evaluated"))
            .join(counts, on="evaluated", how="left")
        )
        problems += where(
            scored,
            pl.col("positives").ne_missing(pl.col("registered")),
            "whose count of positives is not their model's registered one",
            ("system",),
        )
    return problems_result(problems, frame.height, WARN, fine_tuned=", ".join(sorted(trained)) or "none")


finetune_report_checks = [quit_finetune_report_held_out, quit_finetune_report_fine_tuned]
finetune_checks = [*finetune_data_checks, *finetune_model_checks, *finetune_report_checks]
