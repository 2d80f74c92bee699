"""QUIT passage labeling as Dagster assets (paper section 3.2): the hint-permutation passages,
each labeler's answers from them, the graded labels and answer pools, and the human
verification (3.2.4)."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, table_metadata
from assets.common.prompts import code_version
from assets.partitions import quit_labeler_partitions
from assets.quit import release, rules, sources, steps
from assets.quit.assets.common import GROUP, PREFIX, info_log, judge, only_columns, streamed, wiring
from assets.quit.rules import PASSAGES_PER_QUESTION, passage_batches, passages_frame, sampled_orders
from assets.quit.settings import QuitSettings
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.storage import Batches, FrameTable, StorageResource, StoredTable, as_table


def _kept(table: StoredTable | FrameTable, keep: pl.Series, *columns: str):
    """The rows of ``table`` where ``keep`` (a mask in the table's row order) is true, a batch
    at a time."""
    start = 0
    for batch in table.batches(*columns):
        mask = keep.slice(start, batch.height)
        start += batch.height
        if mask.any():
            yield batch.filter(mask)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"selected_questions": wiring.input("selected_questions"), "splits": wiring.input("splits")},
    kinds={"polars", "parquet"},
    code_version="2",
)
def passages(selected_questions: pl.DataFrame, splits: pl.DataFrame) -> dg.Output:
    """Every ordered non-empty subset of each question's 5 hints: 325 passages per question
    of train, dev and test (3.2.1). Ids encode the hint order:
    ``<question_id>_<subset mask>_<order>``."""
    qs = selected_questions.join(
        splits.filter(pl.col("split").is_in(release.SPLITS)).select("question_id"), on="question_id"
    )
    # Streamed in batches: at full scale (2.4M passages) the texts alone outgrow memory.
    preview = passages_frame(qs.head(1).select("question_id", "hints"))
    return dg.Output(
        Batches(passage_batches(qs.select("question_id", "hints"))),
        metadata={
            "preview": dg.MetadataValue.md(md_table(preview.select("passage_id", "num_hints", "text"), 10)),
            "questions": qs.height,
            "passages_per_question": PASSAGES_PER_QUESTION,
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=quit_labeler_partitions,
    ins={
        "passages": streamed("passages"),
        "selected_questions": wiring.input("selected_questions"),
        "splits": wiring.input("splits"),
    },
    kinds={"polars", "litellm"},
    pool=llm_pool("quit"),
    code_version=code_version("2", "quit/reader", "quit/judge"),
    backfill_policy=dg.BackfillPolicy.multi_run(1),
)
def passage_answers(
    context: dg.AssetExecutionContext,
    passages,
    selected_questions: pl.DataFrame,
    splits: pl.DataFrame,
    llm: LLMResource,
    quit_settings: QuitSettings,
) -> dg.Output:
    """One labeler's answer from each passage of the labeled questions (few-shot prompt of
    A.4: a short answer or NO ANSWER), judged against the gold answers (3.2.2). A normalized
    exact match counts as correct without asking the judge; other answers count when a
    binding judge says Yes, and with an advisory judge (registry) the exact match alone
    decides while the verdict is kept in ``judge``. A labeler or binding-judge call that
    failed after its retries leaves ``correct`` null (``undecided``). The passages' texts are
    read a batch at a time (a stored table; a frame where another IO manager gives one)."""
    labeler, judge_model = llm.named(context.partition_key), judge(llm)
    passages = as_table(passages)
    labeled = splits.filter(pl.col("labeled"))["question_id"]
    ids = passages.read("question_id", "hint_order")
    chosen = pl.col("question_id").is_in(labeled)
    orders = sampled_orders(quit_settings.labeled_passages_per_question, quit_settings.seed)
    if orders is not None:
        chosen = chosen & pl.col("hint_order").is_in(orders)
    keep = ids.select(chosen).to_series()
    count = int(keep.sum())
    del ids
    context.log.info(f"labeling {count} passages of {labeled.len()} questions with {labeler.alias}")
    stats, judge_stats = CallStats(), CallStats()
    frame = steps.passage_answers(
        _kept(passages, keep, "passage_id", "question_id", "text"),
        selected_questions,
        labeler,
        judge_model,
        stats,
        info_log(context),
        binding=judge_model.binding,
        judge_stats=judge_stats,
        total=count,
    )
    total = stats.merge(judge_stats)
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("passage_id", "answer", "correct", "error")),
            "labeler_model": labeler.spec.model,
            "undecided": frame["correct"].null_count(),
            "verdicts": judge_model.spec.verdicts,
            "labeled_questions": labeled.len(),
            "labeled_passages_per_question": quit_settings.labeled_passages_per_question or PASSAGES_PER_QUESTION,
            "correct_rate": float(frame["correct"].mean() or 0.0),
            "llm/calls_per_passage": round(total.calls / max(count, 1), 3),
            # the labeler's and the judge's calls and tokens apart, and together
            **total.as_metadata(),
            **stats.as_metadata("llm/labeler"),
            **judge_stats.as_metadata("llm/judge"),
        },
    )


@dg.multi_asset(
    outs={
        "passage_labels": wiring.out(
            kinds={"polars"},
            description=(
                "Label 2 (some labeler answered correctly from the passage) or 1, per labeled passage; none, "
                "with the error, where a call failed."
            ),
        ),
        "answer_pools": wiring.out(
            kinds={"polars"},
            description="Valid answers per question: gold, aliases and generated answers judged correct.",
        ),
    },
    ins={
        "passage_answers": only_columns(
            "passage_answers", "passage_id", "question_id", "model", "answer", "error", "judge_error", "correct"
        ),
        "passages": only_columns("passages", "passage_id", "question_id", "num_hints"),
        "selected_questions": wiring.input("selected_questions"),
    },
    code_version="2",
)
def passage_labels(passage_answers: pl.DataFrame, passages: pl.DataFrame, selected_questions: pl.DataFrame):
    """Combines every labeler partition into graded labels and answer pools (3.2.2). A passage
    with an answer a failed call left undecided gets no label (null) and an ``error`` naming
    the calls; the ``label_errors`` check fails above ``max_label_error_rate``, and a rerun of
    the labeler partitions asks only the failed calls again."""
    labeled = passages.select("passage_id", "question_id", "num_hints").filter(
        pl.col("passage_id").is_in(passage_answers["passage_id"].unique())
    )
    labels, pool = rules.labels_and_pool(passage_answers, labeled, selected_questions)
    pool = pool.filter(pl.col("question_id").is_in(labeled["question_id"].unique()))
    dist = dict(labels.group_by("label").len().sort("label").iter_rows())
    yield dg.Output(
        labels,
        output_name="passage_labels",
        metadata={
            **table_metadata(labels),
            "labels": counts_md({str(k): v for k, v in dist.items()}, "label"),
            "unlabeled_passages": labels["label"].null_count(),
            "labelers": dg.MetadataValue.text(", ".join(sorted(passage_answers["model"].unique().to_list()))),
        },
    )
    yield dg.Output(
        pool, output_name="answer_pools", metadata=table_metadata(pool.select("question_id", "answer", "answer_pool"))
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "passage_answers": only_columns("passage_answers", "question_id", "answer", "correct"),
        "selected_questions": wiring.input("selected_questions"),
        "passage_labels": only_columns("passage_labels", "question_id"),
    },
    kinds={"polars"},
    code_version="1",
)
def verification_candidates(
    passage_answers: pl.DataFrame, selected_questions: pl.DataFrame, passage_labels: pl.DataFrame
) -> dg.Output:
    """What the human verification page shows (A.1): per question, the gold answer and every
    distinct generated answer, judged-correct ones preselected, exact matches highlighted."""
    frame = rules.candidates(
        passage_answers, selected_questions.filter(pl.col("question_id").is_in(passage_labels["question_id"].unique()))
    )
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            "how_to_verify": dg.MetadataValue.md(
                "Run `make verify` and open http://127.0.0.1:8765; decisions are picked up by the `quit_verification_sensor`."
            ),
        },
    )


@dg.multi_asset(
    outs={
        "verified_labels": wiring.out(
            kinds={"polars", "litellm"},
            description="Labels after human verification (3.2.4): passages left with no accepted answer go from 2 to 1.",
        ),
        "verified_pools": wiring.out(kinds={"polars", "litellm"}, description="Answer pools after human verification."),
        "verification_rejects": wiring.out(
            kinds={"polars", "litellm"},
            description="Questions removed because a newly accepted answer leaks through a hint.",
        ),
    },
    ins={
        "passage_answers": only_columns("passage_answers", "passage_id", "question_id", "answer", "correct"),
        "passage_labels": wiring.input("passage_labels"),
        "answer_pools": wiring.input("answer_pools"),
        "selected_questions": wiring.input("selected_questions"),
        # read for its place in the graph (the page's decisions follow it), not its rows
        "verification_candidates": only_columns("verification_candidates", "question_id"),
    },
    pool=llm_pool("quit"),
    code_version=code_version("2", "quit/leakage_span"),
)
def verified_labels(
    context: dg.AssetExecutionContext,
    passage_answers,
    passage_labels,
    answer_pools,
    selected_questions,
    verification_candidates,
    llm: LLMResource,
    quit_settings: QuitSettings,
    storage: StorageResource,
):
    """Applies the annotators' decisions: deselected answers leave the pool, passages whose
    answers were all deselected drop to label 1, and the leakage filter runs again with the
    newly accepted answers. Without decisions the labels pass through, marked unverified."""
    decisions = sources.load_decisions(sources.decisions_path(quit_settings, storage))
    stats, judge_model = CallStats(), judge(llm)
    out = steps.apply(
        decisions,
        passage_answers,
        passage_labels,
        answer_pools,
        selected_questions,
        judge_model,
        stats,
        info_log(context),
        binding=judge_model.binding,
    )
    meta = {
        "verified": out.verified,
        "questions_with_decisions": out.decided,
        "labels_changed_2_to_1": out.demoted,
        **stats.as_metadata(),
    }
    if not out.verified:
        context.log.warning("no human verification decisions found: labels are unverified")
    yield dg.Output(out.labels, output_name="verified_labels", metadata={**table_metadata(out.labels), **meta})
    yield dg.Output(
        out.pools, output_name="verified_pools", metadata=table_metadata(out.pools.select("question_id", "answer_pool"))
    )
    yield wiring.rejects("verification_rejects", sources.REJECTS, out.rejects)
