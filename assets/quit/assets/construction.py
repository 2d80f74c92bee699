"""QUIT question construction as Dagster assets (paper section 3.1): the sources read and
screened for leakage, the hints scored and selected, each question's type and difficulty, its
closed-book answers and its split."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, table_metadata
from assets.common.placement import GPU_STEP_TAGS
from assets.common.prompts import code_version
from assets.common.records import read_json_list
from assets.partitions import quit_model_partitions
from assets.quit import release, rules, sources, steps
from assets.quit.assets.common import GROUP, PREFIX, info_log, judge, wiring
from assets.quit.settings import QuitSettings
from resources.encoders import EncoderResource
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.lucene import LuceneResource
from resources.storage import StorageResource


@dg.multi_asset(
    outs={
        "source_questions": wiring.out(
            kinds={"polars", "parquet"},
            description="TriviaHG and WikiHint unified: one row per usable question, hints deduplicated.",
        ),
        "source_rejects": wiring.out(
            kinds={"polars", "parquet"},
            description="Source records rejected at ingest, with the reason and the raw record.",
        ),
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
    yield dg.Output(
        questions,
        output_name="source_questions",
        metadata={
            **table_metadata(questions.select("question_id", "question", "answer", "hints")),
            "by_source": counts_md(dict(questions.group_by("source").len().sort("source").iter_rows())),
        },
    )
    yield wiring.rejects("source_rejects", sources.REJECTS, result.rejects)


@dg.multi_asset(
    outs={
        "screened_questions": wiring.out(
            kinds={"polars", "litellm"}, description="Questions none of whose hints leaks the answer."
        ),
        "leakage_rejects": wiring.out(
            kinds={"polars", "litellm"}, description="Questions discarded for answer leakage, naming the hint."
        ),
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
    stats, judge_model = CallStats(), judge(llm)
    kept, rejects, unresolved = steps.screen_leakage(
        source_questions, judge_model, stats, log=info_log(context), binding=judge_model.binding
    )
    if unresolved.height:
        context.log.warning(
            f"{unresolved.height} near-miss spans of kept questions were not judged leaks by a binding "
            "verdict (advisory Yes or failed call): see unresolved_spans"
        )
    yield dg.Output(
        kept,
        output_name="screened_questions",
        metadata={
            **table_metadata(kept.select("question_id", "question", "answer")),
            **stats.as_metadata(),
            "verdicts": judge_model.spec.verdicts,
            "unresolved_spans": dg.MetadataValue.md(md_table(unresolved, 20) if unresolved.height else "none"),
        },
    )
    yield wiring.rejects("leakage_rejects", sources.REJECTS, rejects)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"screened_questions": wiring.input("screened_questions")},
    kinds={"polars", "litellm"},
    pool=llm_pool("quit"),
    code_version=code_version("1", "quit/distractors", "quit/hint_fits"),
)
def hint_convergence(
    context: dg.AssetExecutionContext, screened_questions: pl.DataFrame, llm: LLMResource, quit_settings: QuitSettings
) -> dg.Output:
    """Convergence of every hint (HintEval): WikiHint's own scores; for TriviaHG, the share of
    wrong candidate answers a hint rules out (candidates from the source, else proposed by the
    LLM), 0 when the hint does not fit the gold answer. Over every screened question, or the
    slice ``max_questions_per_source`` takes of each source."""
    labeler = llm.model("quit.labelers")
    stats = CallStats()
    questions = steps.source_slice(screened_questions, quit_settings.max_questions_per_source)
    frame = steps.hint_convergence(questions, labeler, quit_settings.distractors, stats, info_log(context))
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("question_id", "hint_index", "convergence", "origin", "hint")),
            "mean_convergence": float(frame["convergence"].mean() or 0.0),
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "screened_questions": wiring.input("screened_questions"),
        "hint_convergence": wiring.input("hint_convergence"),
    },
    kinds={"polars"},
    code_version="1",
)
def selected_questions(
    screened_questions: pl.DataFrame, hint_convergence: pl.DataFrame, quit_settings: QuitSettings
) -> dg.Output:
    """Each question with its top-5 hints by convergence, best first: every screened
    question, or the slice ``max_questions_per_source`` takes of each source."""
    taken = quit_settings.max_questions_per_source
    frame = steps.select_hints(steps.source_slice(screened_questions, taken), hint_convergence)
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("question_id", "question", "hint_convergence", "hints")),
            "slice": f"{frame.height} of {screened_questions.height} screened questions"
            + ("" if taken is None else f" (the first {taken} of each source: max_questions_per_source)"),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"selected_questions": wiring.input("selected_questions")},
    kinds={"polars", "lucene"},
    code_version="1",
)
def reference_index(
    selected_questions: pl.DataFrame, lucene: LuceneResource, storage: StorageResource, quit_settings: QuitSettings
) -> dg.Output:
    """The reference passages of reference-based difficulty (3.1.5), indexed for BM25: the
    collection at ``reference_path`` (JSON Lines with id and contents, a Wikipedia passage
    collection in a real run), else the sources' own snippets."""
    references = sources.reference_passages(quit_settings.reference_path, selected_questions)
    where = storage.index_path("lucene", "quit_references")
    lucene.build(where, references.to_dicts())
    return dg.Output(
        references,
        metadata={
            **table_metadata(references),
            "index": dg.MetadataValue.path(where),
            "origin": quit_settings.reference_path or "source snippets",
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={"selected_questions": wiring.input("selected_questions"), "reference_index": wiring.input("reference_index")},
    kinds={"polars", "litellm", "lucene"},
    pool=llm_pool("quit"),
    code_version=code_version("1", "quit/question_type"),
    op_tags=GPU_STEP_TAGS,
)
def question_metadata(
    context: dg.AssetExecutionContext,
    selected_questions: pl.DataFrame,
    reference_index: pl.DataFrame,
    llm: LLMResource,
    lucene: LuceneResource,
    encoder: EncoderResource,
    storage: StorageResource,
    quit_settings: QuitSettings,
) -> dg.Output:
    """Question type (coarse:fine; the source's, else LLM classification) and difficulty (the
    source's, else reference-based complexity: how many of the BM25-retrieved reference
    passages contain the answer, weighted by their similarity to the question)."""
    stats = CallStats()
    types = steps.question_types(selected_questions, llm.model("quit.labelers"), stats, info_log(context))
    searcher = lucene.searcher(storage.index_path("lucene", "quit_references"))
    by_id = dict(reference_index.select("id", "contents").iter_rows())
    need = selected_questions.filter(pl.col("difficulty").is_null())
    hits = searcher.batch_search(
        need["question"].to_list(), need["question_id"].to_list(), quit_settings.reference_top_k
    )
    texts = {q: [by_id[h.docid] for h in hs] for q, hs in hits.items()}
    diff = steps.difficulties(
        selected_questions, texts, lambda t: encoder.encode(t, kind="passage", log=info_log(context))
    )
    frame = types.join(diff, on="question_id")
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            "types": counts_md(dict(frame.group_by("question_type").len().sort("question_type").iter_rows())),
            "difficulty": counts_md(dict(frame.group_by("difficulty").len().sort("difficulty").iter_rows())),
            "reference_passages": reference_index.height,
            # the encoder weighs the references' similarity: a difficulty names what computed it
            "difficulty_encoder": encoder.described,
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=quit_model_partitions,
    ins={"selected_questions": wiring.input("selected_questions")},
    kinds={"polars", "litellm"},
    pool=llm_pool("quit"),
    code_version=code_version("2", "quit/closed_book", "quit/judge"),
    backfill_policy=dg.BackfillPolicy.multi_run(1),
)
def parametric_answers(
    context: dg.AssetExecutionContext, selected_questions: pl.DataFrame, llm: LLMResource, quit_settings: QuitSettings
) -> dg.Output:
    """Closed-book answers of one reader/labeler model (partition = model alias): each
    question ``parametric_repeats`` times (3 in the paper), sampled at
    ``parametric_temperature`` with one seed per repeat, judged with the GPT-Eval prompt
    (3.1.4). A failed call leaves ``correct`` null, counted as ``undecided``."""
    stats, judge_model = CallStats(), judge(llm)
    frame = steps.closed_book_answers(
        selected_questions,
        llm.named(context.partition_key),
        judge_model,
        quit_settings.parametric_repeats,
        quit_settings.parametric_temperature,
        stats,
        info_log(context),
        binding=judge_model.binding,
    )
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("question_id", "item", "answer", "correct", "error")),
            "correct_rate": float(frame["correct"].mean() or 0.0),
            "undecided": frame["correct"].null_count(),
            "repeats": quit_settings.parametric_repeats,
            "temperature": quit_settings.parametric_temperature,
            "verdicts": judge_model.spec.verdicts,
            **stats.as_metadata(),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "selected_questions": wiring.input("selected_questions"),
        "parametric_answers": wiring.input("parametric_answers"),
    },
    kinds={"polars"},
    code_version="2",
)
def splits(
    context: dg.AssetExecutionContext,
    selected_questions: pl.DataFrame,
    parametric_answers: pl.DataFrame,
    quit_settings: QuitSettings,
) -> dg.Output:
    """train from parametrically answerable questions, test from the non-answerable, dev = the
    rest of the non-answerable (seeded). A question no model answered correctly while a
    failed call left one of its answers undecided is in no split (``undetermined``; a rerun
    of the parametric partition asks those calls again). ``labeled`` marks the questions
    whose passages are labeled in this configuration."""
    by_question = dict(parametric_answers.group_by("question_id").agg(pl.col("correct")).iter_rows())
    ids = selected_questions["question_id"].to_list()
    flags = {q: rules.parametric_answerable(by_question.get(q, [])) for q in ids}
    split = rules.assign_splits(flags, quit_settings.train_size, quit_settings.test_size, quit_settings.seed)
    frame = pl.DataFrame(
        {"question_id": ids, "parametric_answerable": [flags[q] for q in ids], "split": [split[q] for q in ids]},
        schema={"question_id": pl.String, "parametric_answerable": pl.Boolean, "split": pl.String},
    )
    frame = frame.with_columns(
        pl.col("question_id").is_in(_labeled(frame, quit_settings.max_labeled_questions)).alias("labeled")
    )
    undetermined = frame.filter(pl.col("split") == rules.UNDETERMINED)["question_id"]
    if undetermined.len():
        context.log.warning(
            f"{undetermined.len()} questions left out of every split: a failed closed-book call left "
            f"their answerability open ({', '.join(undetermined.head(10))})"
        )
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            "splits": counts_md(dict(frame.group_by("split").len().sort("split").iter_rows())),
            "labeled_questions": int(frame["labeled"].sum()),
            "undetermined_questions": dg.MetadataValue.text(", ".join(undetermined.to_list())),
            "models_asked": dg.MetadataValue.text(", ".join(sorted(parametric_answers["model"].unique().to_list()))),
        },
    )


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
