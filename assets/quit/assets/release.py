"""The QUIT benchmark as Dagster assets: its questions, corpus and qrels (3.2.4), the release
files in the public release's format, and Table 1."""

import dagster as dg
import polars as pl

from assets.common.metadata import (
    counts_md,
    md_table,
    png_markdown,
    report_slice,
    report_table,
    run_profile,
    table_metadata,
)
from assets.common.placement import GPU_STEP_TAGS
from assets.quit import release
from assets.quit.assets.common import GROUP, PREFIX, info_log, only_columns, streamed, wiring
from assets.quit.settings import QuitSettings
from resources.encoders import EncoderResource
from resources.storage import Batches, StorageResource


@dg.multi_asset(
    outs={
        "benchmark_questions": wiring.out(
            kinds={"polars"}, description="Final QUIT questions with split, answer pool, type, difficulty and source."
        ),
        "benchmark_corpus": wiring.out(
            kinds={"polars"}, description="Final QUIT corpus: the passages of the benchmark's questions."
        ),
        "benchmark_qrels": wiring.out(
            kinds={"polars"},
            description="Graded qrels: 2 and 1 for a question's own passages (0 for all others is implicit).",
        ),
    },
    ins={
        **{
            name: dg.AssetIn(key=[PREFIX, name])
            for name in (
                "selected_questions",
                "splits",
                "question_metadata",
                "passages",
                "verified_pools",
                "verification_rejects",
            )
        },
        "verified_labels": only_columns("verified_labels", "passage_id", "question_id", "label"),
    },
    code_version="2",
)
def benchmark(
    context: dg.AssetExecutionContext,
    selected_questions,
    splits,
    question_metadata,
    passages,
    verified_labels,
    verified_pools,
    verification_rejects,
):
    """The QUIT benchmark: corpus, questions per split and qrels (3.2.4). A passage left
    without a label by a failed call is in neither the corpus nor the qrels (a corpus passage
    without a qrel would read as irrelevant); ``unlabeled_passages_left_out`` counts them. The
    corpus is written a batch of passages at a time: the passages' texts are held once."""
    unlabeled = verified_labels.filter(pl.col("label").is_null())
    if unlabeled.height:
        context.log.warning(
            f"{unlabeled.height} passages without a label (failed calls) are left out of the corpus and "
            f"the qrels: {', '.join(unlabeled['passage_id'].head(10))}"
        )
    labels = verified_labels.filter(pl.col("label").is_not_null())
    questions = release.benchmark_questions(
        selected_questions, splits, question_metadata, verified_pools, verification_rejects
    )
    keep = release.in_corpus(passages, questions, labels)
    qrels = release.benchmark_qrels(questions, labels)
    yield dg.Output(
        questions,
        output_name="benchmark_questions",
        metadata={
            **table_metadata(
                questions.select("question_id", "split", "question", "answers", "question_type", "difficulty")
            ),
            "splits": counts_md(dict(questions.group_by("split").len().sort("split").iter_rows())),
        },
    )
    # The IO manager counts the rows as it writes them (dagster/row_count).
    preview = next(release.corpus_batches(passages, keep))
    yield dg.Output(
        Batches(release.corpus_batches(passages, keep)),
        output_name="benchmark_corpus",
        metadata={
            "preview": dg.MetadataValue.md(md_table(preview, 10)),
            "unlabeled_passages_left_out": unlabeled.height,
        },
    )
    yield dg.Output(
        qrels,
        output_name="benchmark_qrels",
        metadata={
            **table_metadata(qrels),
            "labels": counts_md(
                {str(k): v for k, v in qrels.group_by("label").len().sort("label").iter_rows()}, "label"
            ),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "benchmark_questions": wiring.input("benchmark_questions"),
        "benchmark_corpus": wiring.input("benchmark_corpus"),
        "benchmark_qrels": wiring.input("benchmark_qrels"),
    },
    kinds={"json"},
    code_version="1",
)
def release_files(
    benchmark_questions, benchmark_corpus, benchmark_qrels, quit_settings: QuitSettings, storage: StorageResource
) -> dg.Output:
    """Exports the benchmark in the public release's format: ``corpus.jsonl``, ``train.json``,
    ``dev.json``, ``test.json``, plus TREC qrels (``qrels.{split}.txt``)."""
    target = quit_settings.export_dir or storage.path(PREFIX, "release")
    manifest = release.export(benchmark_questions, benchmark_corpus, benchmark_qrels, target)
    return dg.Output(manifest, metadata={**table_metadata(manifest), "release_dir": dg.MetadataValue.path(target)})


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "benchmark_questions": wiring.input("benchmark_questions"),
        "benchmark_corpus": streamed("benchmark_corpus"),
        "benchmark_qrels": wiring.input("benchmark_qrels"),
    },
    kinds={"polars"},
    code_version="3",
    op_tags=GPU_STEP_TAGS,
)
def statistics(
    context: dg.AssetExecutionContext,
    benchmark_questions,
    benchmark_corpus,
    benchmark_qrels,
    encoder: EncoderResource,
    quit_settings: QuitSettings,
) -> dg.Output:
    """Table 1 of the paper with the release's definitions (results/statistics/
    dataset_statistics.py): over every corpus passage paired with its question, the distinct
    question texts and the passages, average lengths in words split on single spaces (answer
    length over each pool answer, once per passage), the Jaccard overlap of question and
    passage words without NLTK's English stop words, the share of passages containing a pool
    answer as a lower-cased substring, and the mean question-passage cosine (bundled MiniLM
    encoder; the release's all-MiniLM-L6-v2). The project adds answer containment on whole
    words (0 by construction) and the label counts. The ``definition`` column names each rule;
    ``slice`` the questions and passages counted and the run's profile. The semantic overlap
    encodes every passage, unless ``semantic_overlap_sample`` estimates it from that many
    passages of each question (seeded by ``seed``), with its 95% interval (``ci_low``,
    ``ci_high``)."""
    table, overlap = release.table1_estimated(
        benchmark_questions,
        benchmark_corpus,
        benchmark_qrels,
        lambda t: encoder.encode(t, kind="passage"),
        encoder.block_size,
        info_log(context),
        sample=quit_settings.semantic_overlap_sample,
        seed=quit_settings.seed,
        encoder=encoder.described,
    )
    meta = {row["metric"]: float(row["value"]) for row in table.iter_rows(named=True)}
    interval = (
        {"table1/semantic_overlap_ci_low": overlap.ci_low, "table1/semantic_overlap_ci_high": overlap.ci_high}
        if overlap.ci_low is not None
        else {}
    )
    return dg.Output(
        table,
        metadata={
            "slice": report_slice(
                f"{benchmark_questions.height} QUIT questions, {int(meta.get('Total Passages', 0)):,} "
                "question-passage pairs",
                run_profile(context),
            ),
            "table_1": report_table(table, TABLE_1_COLUMNS),
            **{f"table1/{k}": v for k, v in meta.items()},
            **interval,
            "table1/semantic_overlap_sampled": overlap.encoded,
            "encoder": encoder.described,
            "passages_by_hints": png_markdown(release.hint_count_plot(benchmark_corpus, benchmark_qrels)),
        },
    )


TABLE_1_COLUMNS = {
    "metric": "Table 1's row (the last rows are the project's: whole-word containment, label counts)",
    "value": "a count, an average in words, a share in [0, 1] (overlap, containment) or a mean cosine",
    "definition": "what the row counts, by the release's results/statistics/dataset_statistics.py",
    "ci_low": "the semantic overlap's 95% interval when it is estimated from a sample of passages "
    "(stratified by question; null where every passage is encoded and on the other rows)",
    "ci_high": "its upper end",
}
