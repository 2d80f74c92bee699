"""QUIT construction as Dagster assets (paper sections 3.1-3.2). Each asset is thin: the
rules live in :mod:`assets.quit.rules` and the LLM-driven steps in :mod:`assets.quit.steps`."""


import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, png_markdown, report_slice, report_table, run_profile, table_metadata
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version
from assets.common.records import read_json_list
from assets.common.wiring import Wiring
from assets.partitions import quit_labeler_partitions, quit_model_partitions
from assets.quit import release, rules, sources, steps
from assets.quit.rules import (
    PASSAGES_PER_QUESTION,
    passage_batches,
    passages_frame,
    sampled_orders,
)
from assets.quit.settings import QuitSettings
from resources.encoders import EncoderResource
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.storage import STREAMED, Batches, FrameTable, StorageResource, StoredTable, as_table

PREFIX = "quit"
GROUP = "quit"
wiring = Wiring(PREFIX, GROUP)


def _judge(llm: LLMResource) -> str:
    return llm.role("quit.judge")[0]


def _binding(llm: LLMResource) -> bool:
    """Whether the judge's verdicts may decide: an advisory judge's verdicts are recorded and
    only exact matches count (see steps)."""
    return llm.binding(_judge(llm))


def _verdicts(llm: LLMResource) -> str:
    return llm.spec(_judge(llm)).verdicts


def _log(context):
    return context.log.info


def _columns(name: str, *columns: str) -> dg.AssetIn:
    """``quit/<name>`` loaded with only ``columns`` (the IO manager reads no other): at 2.4M
    passages a step that needs the ids of passages or answers must not hold their texts."""
    return dg.AssetIn(key=[PREFIX, name], metadata={"columns": list(columns)})


def _streamed(name: str) -> dg.AssetIn:
    """``quit/<name>`` as a :class:`StoredTable`: read a few columns or a batch at a time."""
    return dg.AssetIn(key=[PREFIX, name], metadata=STREAMED)


def _kept(table: StoredTable | FrameTable, keep: pl.Series, *columns: str):
    """The rows of ``table`` where ``keep`` (a mask in the table's row order) is true, a batch
    at a time."""
    start = 0
    for batch in table.batches(*columns):
        mask = keep.slice(start, batch.height)
        start += batch.height
        if mask.any():
            yield batch.filter(mask)


@dg.multi_asset(
    outs={
        "source_questions": wiring.out(kinds={"polars", "parquet"}, description="TriviaHG and WikiHint unified: one row per usable question, hints deduplicated."),
        "source_rejects": wiring.out(kinds={"polars", "parquet"}, description="Source records rejected at ingest, with the reason and the raw record."),
    },
    code_version="1",
)
def source_questions(context: dg.AssetExecutionContext, quit_settings: QuitSettings):
    """Reads both sources (local paths or s3:// URIs), checks each record and unifies them."""
    loaded = []
    for name, path in (("triviahg", quit_settings.triviahg_path), ("wikihint", quit_settings.wikihint_path)):
        loaded.append((name, read_json_list(path)))
    result = sources.ingest(loaded)
    questions = sources.questions_frame(result.rows)
    yield dg.Output(questions, output_name="source_questions", metadata={
        **table_metadata(questions.select("question_id", "question", "answer", "hints")),
        "by_source": counts_md(dict(questions.group_by("source").len().sort("source").iter_rows())),
    })
    yield wiring.rejects("source_rejects", sources.REJECTS, result.rejects)


@dg.multi_asset(
    outs={
        "screened_questions": wiring.out(kinds={"polars", "litellm"}, description="Questions none of whose hints leaks the answer."),
        "leakage_rejects": wiring.out(kinds={"polars", "litellm"}, description="Questions discarded for answer leakage, naming the hint."),
    },
    ins={"source_questions": wiring.input("source_questions")},
    pool=llm_pool("quit"),
    code_version=code_version("2", "quit/leakage_span"),
)
def screened_questions(context: dg.AssetExecutionContext, source_questions: pl.DataFrame, llm: LLMResource):
    """Answer-leakage filter (3.1.2). The paper used BEM to find hint words equivalent to the
    answer; offline this uses normalized answer/alias matching, and asks the LLM judge about
    spans of a hint that nearly match the answer. Any leak discards the question; a judge
    with advisory verdicts (registry) discards nothing, its Yes is listed in the metadata
    (``unresolved_spans``) with the spans whose judge call failed."""
    stats = CallStats()
    kept, rejects, unresolved = steps.screen_leakage(source_questions, llm, _judge(llm), stats, log=_log(context),
                                                     binding=_binding(llm))
    if unresolved.height:
        context.log.warning(f"{unresolved.height} near-miss spans of kept questions were not judged leaks by a binding "
                            "verdict (advisory Yes or failed call): see unresolved_spans")
    yield dg.Output(kept, output_name="screened_questions", metadata={
        **table_metadata(kept.select("question_id", "question", "answer")), **stats.as_metadata(),
        "verdicts": _verdicts(llm), "unresolved_spans": dg.MetadataValue.md(md_table(unresolved, 20) if unresolved.height else "none"),
    })
    yield wiring.rejects("leakage_rejects", sources.REJECTS, rejects)


@dg.asset(key_prefix=PREFIX, group_name=GROUP, ins={"screened_questions": wiring.input("screened_questions")},
          kinds={"polars", "litellm"}, pool=llm_pool("quit"), code_version=code_version("1", "quit/distractors", "quit/hint_fits"))
def hint_convergence(context: dg.AssetExecutionContext, screened_questions: pl.DataFrame, llm: LLMResource, quit_settings: QuitSettings) -> dg.Output:
    """Convergence of every hint (HintEval): WikiHint's own scores; for TriviaHG, the share of
    wrong candidate answers a hint rules out (candidates from the source, else proposed by the
    LLM), 0 when the hint does not fit the gold answer."""
    alias = llm.role("quit.labelers")[0]
    stats = CallStats()
    frame = steps.hint_convergence(screened_questions, llm, alias, quit_settings.distractors, stats, _log(context))
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("question_id", "hint_index", "convergence", "origin", "hint")),
        "mean_convergence": float(frame["convergence"].mean() or 0.0),
        **stats.as_metadata(),
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"screened_questions": wiring.input("screened_questions"), "hint_convergence": wiring.input("hint_convergence")},
          kinds={"polars"}, code_version="1")
def selected_questions(screened_questions: pl.DataFrame, hint_convergence: pl.DataFrame) -> dg.Output:
    """Each question with its top-5 hints by convergence, best first."""
    frame = steps.select_hints(screened_questions, hint_convergence)
    return dg.Output(frame, metadata=table_metadata(frame.select("question_id", "question", "hint_convergence", "hints")))


@dg.asset(key_prefix=PREFIX, group_name=GROUP, ins={"selected_questions": wiring.input("selected_questions")},
          kinds={"polars", "lucene"}, code_version="1")
def reference_index(selected_questions: pl.DataFrame, lucene: LuceneResource, storage: StorageResource,
                    quit_settings: QuitSettings) -> dg.Output:
    """The reference passages of reference-based difficulty (3.1.5), indexed for BM25: the
    collection at ``reference_path`` (JSON Lines with id and contents, a Wikipedia passage
    collection in a real run), else the sources' own snippets."""
    references = sources.reference_passages(quit_settings.reference_path, selected_questions)
    where = storage.index_path("lucene", "quit_references")
    lucene.build(where, references.to_dicts())
    return dg.Output(references, metadata={**table_metadata(references), "index": dg.MetadataValue.path(where),
                                           "origin": quit_settings.reference_path or "source snippets"})


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"selected_questions": wiring.input("selected_questions"), "reference_index": wiring.input("reference_index")},
          kinds={"polars", "litellm", "lucene"}, pool=llm_pool("quit"), code_version=code_version("1", "quit/question_type"),
          op_tags=GPU_STEP_TAGS)
def question_metadata(context: dg.AssetExecutionContext, selected_questions: pl.DataFrame, reference_index: pl.DataFrame,
                      llm: LLMResource, lucene: LuceneResource, encoder: EncoderResource, storage: StorageResource,
                      quit_settings: QuitSettings) -> dg.Output:
    """Question type (coarse:fine; the source's, else LLM classification) and difficulty (the
    source's, else reference-based complexity: how many of the BM25-retrieved reference
    passages contain the answer, weighted by their similarity to the question)."""
    stats = CallStats()
    types = steps.question_types(selected_questions, llm, llm.role("quit.labelers")[0], stats, _log(context))
    searcher = lucene.searcher(storage.index_path("lucene", "quit_references"))
    by_id = dict(reference_index.select("id", "contents").iter_rows())
    need = selected_questions.filter(pl.col("difficulty").is_null())
    hits = searcher.batch_search(need["question"].to_list(), need["question_id"].to_list(), quit_settings.reference_top_k)
    texts = {q: [by_id[h.docid] for h in hs] for q, hs in hits.items()}
    diff = steps.difficulties(selected_questions, texts, lambda t: encoder.encode(t, kind="passage", log=_log(context)))
    frame = types.join(diff, on="question_id")
    return dg.Output(frame, metadata={
        **table_metadata(frame),
        "types": counts_md(dict(frame.group_by("question_type").len().sort("question_type").iter_rows())),
        "difficulty": counts_md(dict(frame.group_by("difficulty").len().sort("difficulty").iter_rows())),
        "reference_passages": reference_index.height,
        **stats.as_metadata(),
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=quit_model_partitions,
          ins={"selected_questions": wiring.input("selected_questions")},
          kinds={"polars", "litellm"}, pool=llm_pool("quit"), code_version=code_version("2", "quit/closed_book", "quit/judge"),
          backfill_policy=dg.BackfillPolicy.multi_run(1))
def parametric_answers(context: dg.AssetExecutionContext, selected_questions: pl.DataFrame, llm: LLMResource, quit_settings: QuitSettings) -> dg.Output:
    """Closed-book answers of one reader/labeler model (partition = model alias): each
    question ``parametric_repeats`` times (3 in the paper), sampled at
    ``parametric_temperature`` with one seed per repeat, judged with the GPT-Eval prompt
    (3.1.4). A failed call leaves ``correct`` null, counted as ``undecided``."""
    alias = context.partition_key
    stats = CallStats()
    frame = steps.closed_book_answers(selected_questions, llm, alias, _judge(llm), quit_settings.parametric_repeats,
                                      quit_settings.parametric_temperature, stats, _log(context), binding=_binding(llm))
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("question_id", "item", "answer", "correct", "error")),
        "correct_rate": float(frame["correct"].mean() or 0.0),
        "undecided": frame["correct"].null_count(),
        "repeats": quit_settings.parametric_repeats, "temperature": quit_settings.parametric_temperature,
        "verdicts": _verdicts(llm),
        **stats.as_metadata(),
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"selected_questions": wiring.input("selected_questions"), "parametric_answers": wiring.input("parametric_answers")},
          kinds={"polars"}, code_version="2")
def splits(context: dg.AssetExecutionContext, selected_questions: pl.DataFrame, parametric_answers: pl.DataFrame,
           quit_settings: QuitSettings) -> dg.Output:
    """train from parametrically answerable questions, test from the non-answerable, dev = the
    rest of the non-answerable (seeded). A question no model answered correctly while a
    failed call left one of its answers undecided is in no split (``undetermined``; a rerun
    of the parametric partition asks those calls again). ``labeled`` marks the questions
    whose passages are labeled in this configuration."""
    by_question = dict(parametric_answers.group_by("question_id").agg(pl.col("correct")).iter_rows())
    ids = selected_questions["question_id"].to_list()
    flags = {q: rules.parametric_answerable(by_question.get(q, [])) for q in ids}
    split = rules.assign_splits(flags, quit_settings.train_size, quit_settings.test_size, quit_settings.seed)
    frame = pl.DataFrame({"question_id": ids, "parametric_answerable": [flags[q] for q in ids], "split": [split[q] for q in ids]},
                         schema={"question_id": pl.String, "parametric_answerable": pl.Boolean, "split": pl.String})
    frame = frame.with_columns(pl.col("question_id").is_in(_labeled(frame, quit_settings.max_labeled_questions)).alias("labeled"))
    undetermined = frame.filter(pl.col("split") == rules.UNDETERMINED)["question_id"]
    if undetermined.len():
        context.log.warning(f"{undetermined.len()} questions left out of every split: a failed closed-book call left "
                            f"their answerability open ({', '.join(undetermined.head(10))})")
    return dg.Output(frame, metadata={
        **table_metadata(frame),
        "splits": counts_md(dict(frame.group_by("split").len().sort("split").iter_rows())),
        "labeled_questions": int(frame["labeled"].sum()),
        "undetermined_questions": dg.MetadataValue.text(", ".join(undetermined.to_list())),
        "models_asked": dg.MetadataValue.text(", ".join(sorted(parametric_answers["model"].unique().to_list()))),
    })


def _labeled(frame: pl.DataFrame, limit: int | None) -> list[str]:
    """Questions to label: all, or ``limit`` of them taken round-robin over test, dev, train
    so every split of a small run gets some."""
    usable = frame.filter(pl.col("split").is_in(release.SPLITS)).sort("question_id")
    if limit is None:
        return usable["question_id"].to_list()
    queues = [usable.filter(pl.col("split") == s)["question_id"].to_list() for s in ("test", "dev", "train")]
    chosen = []
    while len(chosen) < limit and any(queues):
        for q in queues:
            if q and len(chosen) < limit:
                chosen.append(q.pop(0))
    return chosen


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"selected_questions": wiring.input("selected_questions"), "splits": wiring.input("splits")},
          kinds={"polars", "parquet"}, code_version="2")
def passages(selected_questions: pl.DataFrame, splits: pl.DataFrame) -> dg.Output:
    """Every ordered non-empty subset of each question's 5 hints: 325 passages per question
    of train, dev and test (3.2.1). Ids encode the hint order:
    ``<question_id>_<subset mask>_<order>``."""
    qs = selected_questions.join(splits.filter(pl.col("split").is_in(release.SPLITS)).select("question_id"), on="question_id")
    # Streamed in batches: at full scale (2.4M passages) the texts alone outgrow memory.
    preview = passages_frame(qs.head(1).select("question_id", "hints"))
    return dg.Output(Batches(passage_batches(qs.select("question_id", "hints"))), metadata={
        "preview": dg.MetadataValue.md(md_table(preview.select("passage_id", "num_hints", "text"), 10)),
        "questions": qs.height,
        "passages_per_question": PASSAGES_PER_QUESTION,
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=quit_labeler_partitions,
          ins={"passages": _streamed("passages"), "selected_questions": wiring.input("selected_questions"),
               "splits": wiring.input("splits")},
          kinds={"polars", "litellm"}, pool=llm_pool("quit"), code_version=code_version("2", "quit/reader", "quit/judge"),
          backfill_policy=dg.BackfillPolicy.multi_run(1))
def passage_answers(context: dg.AssetExecutionContext, passages, selected_questions: pl.DataFrame, splits: pl.DataFrame,
                    llm: LLMResource, quit_settings: QuitSettings) -> dg.Output:
    """One labeler's answer from each passage of the labeled questions (few-shot prompt of
    A.4: a short answer or NO ANSWER), judged against the gold answers (3.2.2). A normalized
    exact match counts as correct without asking the judge; other answers count when a
    binding judge says Yes, and with an advisory judge (registry) the exact match alone
    decides while the verdict is kept in ``judge``. A labeler or binding-judge call that
    failed after its retries leaves ``correct`` null (``undecided``). The passages' texts are
    read a batch at a time (a stored table; a frame where another IO manager gives one)."""
    alias = context.partition_key
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
    context.log.info(f"labeling {count} passages of {labeled.len()} questions with {alias}")
    stats, judge_stats = CallStats(), CallStats()
    frame = steps.passage_answers(_kept(passages, keep, "passage_id", "question_id", "text"), selected_questions, llm, alias,
                                  _judge(llm), stats, _log(context), binding=_binding(llm), judge_stats=judge_stats,
                                  total=count)
    total = stats.merge(judge_stats)
    return dg.Output(frame, metadata={
        **table_metadata(frame.select("passage_id", "answer", "correct", "error")),
        "labeler_model": llm.spec(alias).model,
        "undecided": frame["correct"].null_count(), "verdicts": _verdicts(llm),
        "labeled_questions": labeled.len(),
        "labeled_passages_per_question": quit_settings.labeled_passages_per_question or PASSAGES_PER_QUESTION,
        "correct_rate": float(frame["correct"].mean() or 0.0),
        "llm/calls_per_passage": round(total.calls / max(count, 1), 3),
        # the labeler's and the judge's calls and tokens apart, and together
        **total.as_metadata(), **stats.as_metadata("llm/labeler"), **judge_stats.as_metadata("llm/judge"),
    })


@dg.multi_asset(
    outs={
        "passage_labels": wiring.out(kinds={"polars"}, description="Label 2 (some labeler answered correctly from the passage) or 1, per labeled passage; none, with the error, where a call failed."),
        "answer_pools": wiring.out(kinds={"polars"}, description="Valid answers per question: gold, aliases and generated answers judged correct."),
    },
    ins={"passage_answers": _columns("passage_answers", "passage_id", "question_id", "model", "answer", "error", "judge_error",
                                     "correct"),
         "passages": _columns("passages", "passage_id", "question_id", "num_hints"),
         "selected_questions": wiring.input("selected_questions")},
    code_version="2",
)
def passage_labels(passage_answers: pl.DataFrame, passages: pl.DataFrame, selected_questions: pl.DataFrame):
    """Combines every labeler partition into graded labels and answer pools (3.2.2). A passage
    with an answer a failed call left undecided gets no label (null) and an ``error`` naming
    the calls; the ``label_errors`` check fails above ``max_label_error_rate``, and a rerun of
    the labeler partitions asks only the failed calls again."""
    labeled = passages.select("passage_id", "question_id", "num_hints").filter(
        pl.col("passage_id").is_in(passage_answers["passage_id"].unique()))
    labels, pool = steps.labels_and_pool(passage_answers, labeled, selected_questions)
    pool = pool.filter(pl.col("question_id").is_in(labeled["question_id"].unique()))
    dist = dict(labels.group_by("label").len().sort("label").iter_rows())
    yield dg.Output(labels, output_name="passage_labels", metadata={
        **table_metadata(labels), "labels": counts_md({str(k): v for k, v in dist.items()}, "label"),
        "unlabeled_passages": labels["label"].null_count(),
        "labelers": dg.MetadataValue.text(", ".join(sorted(passage_answers["model"].unique().to_list()))),
    })
    yield dg.Output(pool, output_name="answer_pools", metadata=table_metadata(pool.select("question_id", "answer", "answer_pool")))


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"passage_answers": _columns("passage_answers", "question_id", "answer", "correct"),
               "selected_questions": wiring.input("selected_questions"), "passage_labels": _columns("passage_labels", "question_id")},
          kinds={"polars"}, code_version="1")
def verification_candidates(passage_answers: pl.DataFrame, selected_questions: pl.DataFrame, passage_labels: pl.DataFrame) -> dg.Output:
    """What the human verification page shows (A.1): per question, the gold answer and every
    distinct generated answer, judged-correct ones preselected, exact matches highlighted."""
    frame = rules.candidates(passage_answers, selected_questions.filter(pl.col("question_id").is_in(passage_labels["question_id"].unique())))
    return dg.Output(frame, metadata={
        **table_metadata(frame),
        "how_to_verify": dg.MetadataValue.md("Run `make verify` and open http://127.0.0.1:8765; decisions are picked up by the `quit_verification_sensor`."),
    })


@dg.multi_asset(
    outs={
        "verified_labels": wiring.out(kinds={"polars", "litellm"}, description="Labels after human verification (3.2.4): passages left with no accepted answer go from 2 to 1."),
        "verified_pools": wiring.out(kinds={"polars", "litellm"}, description="Answer pools after human verification."),
        "verification_rejects": wiring.out(kinds={"polars", "litellm"}, description="Questions removed because a newly accepted answer leaks through a hint."),
    },
    ins={"passage_answers": _columns("passage_answers", "passage_id", "question_id", "answer", "correct"),
         "passage_labels": wiring.input("passage_labels"), "answer_pools": wiring.input("answer_pools"),
         "selected_questions": wiring.input("selected_questions"),
         # read for its place in the graph (the page's decisions follow it), not its rows
         "verification_candidates": _columns("verification_candidates", "question_id")},
    pool=llm_pool("quit"),
    code_version=code_version("2", "quit/leakage_span"),
)
def verified_labels(context: dg.AssetExecutionContext, passage_answers, passage_labels, answer_pools, selected_questions,
                    verification_candidates, llm: LLMResource, quit_settings: QuitSettings, storage: StorageResource):
    """Applies the annotators' decisions: deselected answers leave the pool, passages whose
    answers were all deselected drop to label 1, and the leakage filter runs again with the
    newly accepted answers. Without decisions the labels pass through, marked unverified."""
    decisions = sources.load_decisions(sources.decisions_path(quit_settings, storage))
    stats = CallStats()
    out = steps.apply(decisions, passage_answers, passage_labels, answer_pools, selected_questions, llm, _judge(llm), stats,
                      _log(context), binding=_binding(llm))
    meta = {"verified": out.verified, "questions_with_decisions": out.decided, "labels_changed_2_to_1": out.demoted, **stats.as_metadata()}
    if not out.verified:
        context.log.warning("no human verification decisions found: labels are unverified")
    yield dg.Output(out.labels, output_name="verified_labels", metadata={**table_metadata(out.labels), **meta})
    yield dg.Output(out.pools, output_name="verified_pools", metadata=table_metadata(out.pools.select("question_id", "answer_pool")))
    yield wiring.rejects("verification_rejects", sources.REJECTS, out.rejects)


@dg.multi_asset(
    outs={
        "benchmark_questions": wiring.out(kinds={"polars"}, description="Final QUIT questions with split, answer pool, type, difficulty and source."),
        "benchmark_corpus": wiring.out(kinds={"polars"}, description="Final QUIT corpus: the passages of the benchmark's questions."),
        "benchmark_qrels": wiring.out(kinds={"polars"}, description="Graded qrels: 2 and 1 for a question's own passages (0 for all others is implicit)."),
    },
    ins={**{name: dg.AssetIn(key=[PREFIX, name]) for name in
            ("selected_questions", "splits", "question_metadata", "passages", "verified_pools", "verification_rejects")},
         "verified_labels": _columns("verified_labels", "passage_id", "question_id", "label")},
    code_version="2",
)
def benchmark(context: dg.AssetExecutionContext, selected_questions, splits, question_metadata, passages, verified_labels,
              verified_pools, verification_rejects):
    """The QUIT benchmark: corpus, questions per split and qrels (3.2.4). A passage left
    without a label by a failed call is in neither the corpus nor the qrels (a corpus passage
    without a qrel would read as irrelevant); ``unlabeled_passages_left_out`` counts them. The
    corpus is written a batch of passages at a time: the passages' texts are held once."""
    unlabeled = verified_labels.filter(pl.col("label").is_null())
    if unlabeled.height:
        context.log.warning(f"{unlabeled.height} passages without a label (failed calls) are left out of the corpus and "
                            f"the qrels: {', '.join(unlabeled['passage_id'].head(10))}")
    labels = verified_labels.filter(pl.col("label").is_not_null())
    questions = release.benchmark_questions(selected_questions, splits, question_metadata, verified_pools, verification_rejects)
    keep = release.in_corpus(passages, questions, labels)
    qrels = release.benchmark_qrels(questions, labels)
    yield dg.Output(questions, output_name="benchmark_questions", metadata={
        **table_metadata(questions.select("question_id", "split", "question", "answers", "question_type", "difficulty")),
        "splits": counts_md(dict(questions.group_by("split").len().sort("split").iter_rows())),
    })
    # The IO manager counts the rows as it writes them (dagster/row_count).
    preview = next(release.corpus_batches(passages, keep))
    yield dg.Output(Batches(release.corpus_batches(passages, keep)), output_name="benchmark_corpus", metadata={
        "preview": dg.MetadataValue.md(md_table(preview, 10)), "unlabeled_passages_left_out": unlabeled.height})
    yield dg.Output(qrels, output_name="benchmark_qrels", metadata={
        **table_metadata(qrels), "labels": counts_md({str(k): v for k, v in qrels.group_by("label").len().sort("label").iter_rows()}, "label"),
    })


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"benchmark_questions": wiring.input("benchmark_questions"), "benchmark_corpus": wiring.input("benchmark_corpus"),
               "benchmark_qrels": wiring.input("benchmark_qrels")},
          kinds={"json"}, code_version="1")
def release_files(benchmark_questions, benchmark_corpus, benchmark_qrels, quit_settings: QuitSettings,
                  storage: StorageResource) -> dg.Output:
    """Exports the benchmark in the public release's format: ``corpus.jsonl``, ``train.json``,
    ``dev.json``, ``test.json``, plus TREC qrels (``qrels.{split}.txt``)."""
    target = quit_settings.export_dir or storage.path(PREFIX, "release")
    manifest = release.export(benchmark_questions, benchmark_corpus, benchmark_qrels, target)
    return dg.Output(manifest, metadata={**table_metadata(manifest), "release_dir": dg.MetadataValue.path(target)})


@dg.asset(key_prefix=PREFIX, group_name=GROUP,
          ins={"benchmark_questions": wiring.input("benchmark_questions"), "benchmark_corpus": _streamed("benchmark_corpus"),
               "benchmark_qrels": wiring.input("benchmark_qrels")},
          kinds={"polars"}, code_version="2", op_tags=GPU_STEP_TAGS)
def statistics(context: dg.AssetExecutionContext, benchmark_questions, benchmark_corpus, benchmark_qrels,
               encoder: EncoderResource) -> dg.Output:
    """Table 1 of the paper with the release's definitions (results/statistics/
    dataset_statistics.py): over every corpus passage paired with its question, the distinct
    question texts and the passages, average lengths in words split on single spaces (answer
    length over each pool answer, once per passage), the Jaccard overlap of question and
    passage words without NLTK's English stop words, the share of passages containing a pool
    answer as a lower-cased substring, and the mean question-passage cosine (bundled MiniLM
    encoder; the release's all-MiniLM-L6-v2). The project adds answer containment on whole
    words (0 by construction) and the label counts. The ``definition`` column names each rule;
    ``slice`` the questions and passages counted and the run's profile."""
    table = rules.table1(benchmark_questions, benchmark_corpus, benchmark_qrels, lambda t: encoder.encode(t, kind="passage"),
                         encoder.block_size, _log(context))
    meta = {row["metric"]: float(row["value"]) for row in table.iter_rows(named=True)}
    return dg.Output(table, metadata={
        "slice": report_slice(f"{benchmark_questions.height} QUIT questions, {int(meta.get('Total Passages', 0)):,} "
                              "question-passage pairs", run_profile(context)),
        "table_1": report_table(table, TABLE_1_COLUMNS),
        **{f"table1/{k}": v for k, v in meta.items()},
        "passages_by_hints": png_markdown(rules.hint_count_plot(benchmark_corpus, benchmark_qrels)),
    })


TABLE_1_COLUMNS = {"metric": "Table 1's row (the last rows are the project's: whole-word containment, label counts)",
                   "value": "a count, an average in words, a share in [0, 1] (overlap, containment) or a mean cosine",
                   "definition": "what the row counts, by the release's results/statistics/dataset_statistics.py"}


quit_assets = [source_questions, screened_questions, hint_convergence, selected_questions, reference_index, question_metadata,
               parametric_answers, splits, passages, passage_answers, passage_labels, verification_candidates,
               verified_labels, benchmark, release_files, statistics]
