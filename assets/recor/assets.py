"""RECOR construction as Dagster assets, partitioned by domain (paper section 3). Each step
is a multi-asset: what it keeps and what it rejects, with the reason. The rules live in
:mod:`assets.recor.rules`, the LLM-driven steps in :mod:`assets.recor.steps`."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, report_slice, report_table, run_profile, table_metadata, why_empty
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from assets.partitions import domain_partitions
from assets.recor import release, rules, steps
from assets.recor.settings import RecorSettings
from resources.encoders import encode_texts
from resources.llm import CallStats, LLMResource, Model
from resources.llm.registry import llm_pool
from resources.search import DocumentSearchResource
from resources.storage import StorageResource

PREFIX = "recor"
GROUP = "recor"
wiring = Wiring(PREFIX, GROUP)


def _builder(llm: LLMResource) -> Model:
    return llm.model("recor.builder")


def _similarity(settings: RecorSettings) -> steps.Similarity:
    # On the CPU: a few sentences a question beside hours of LLM calls (placement.CPU_MODEL_CALLS).
    return steps.Similarity(lambda texts: encode_texts(settings.encoder, texts, "passage", device="cpu"))


STEP = dict(partitions_def=domain_partitions, code_version="1")


def _prompted(rules: str, *prompts: str) -> dict:
    """The step's settings with a code version that follows its rules and its prompts."""
    return {**STEP, "code_version": code_version(rules, *prompts)}


@dg.observable_source_asset(
    key=[PREFIX, "source_files"],
    group_name=GROUP,
    partitions_def=domain_partitions,
    required_resource_keys={"recor_settings"},
    description="Each domain's source files, observed as a content hash per domain.",
)
def source_files(context) -> dg.DataVersionsByPartition:
    """Each domain's source files as listed in ``assets/recor/sources.yaml``, observed as a
    content hash per domain: editing one domain's files makes only that domain's
    partitions stale in the UI."""
    settings: RecorSettings = context.resources.recor_settings
    return dg.DataVersionsByPartition(
        {d: dg.DataVersion(settings.fingerprint(d)) for d in domain_partitions.get_partition_keys()}
    )


@dg.multi_asset(
    outs={
        "source_questions": wiring.out(
            "One domain's source questions (BRIGHT queries or StackExchange questions with their accepted answer).",
            {"polars"},
        ),
        "source_documents": wiring.out(
            "One domain's documents: BRIGHT's corpus, or StackExchange positives and the mining pool.", {"polars"}
        ),
        "source_rejects": wiring.out(
            "Source records rejected at ingest, with the reason and the raw record.", {"polars"}
        ),
    },
    deps=[source_files],
    **STEP,
)
def sources(context: dg.AssetExecutionContext, recor_settings: RecorSettings):
    """Reads one domain's sources (local paths or s3:// URIs, as listed in
    ``assets/recor/sources.yaml``), checks each record and unifies the two formats."""
    questions, documents, rejects = recor_settings.load(context.partition_key).frames()
    yield dg.Output(
        questions,
        output_name="source_questions",
        metadata=table_metadata(questions.select("question_id", "query", "answer", "gold_ids")),
    )
    yield dg.Output(
        documents,
        output_name="source_documents",
        metadata={
            **table_metadata(documents.select("doc_id", "role", "content")),
            "by_role": counts_md(dict(documents.group_by("role").len().sort("role").iter_rows())),
        },
    )
    yield dg.Output(
        rejects,
        output_name="source_rejects",
        metadata=table_metadata(rejects.select("question_id", "reason", "detail")),
    )


@dg.multi_asset(
    outs={
        "hard_negatives": wiring.out(
            "Mined hard negatives (StackExchange domains): passages on the topic that do not help answer.",
            {"polars", "lucene"},
        ),
        "negative_rejects": wiring.out(
            "Mined candidates dropped as duplicates or for overlapping a positive.", {"polars"}
        ),
    },
    ins={"source_questions": wiring.input("source_questions"), "source_documents": wiring.input("source_documents")},
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted("1", "recor/negative_queries"),
)
def hard_negatives(
    context: dg.AssetExecutionContext,
    source_questions: pl.DataFrame,
    source_documents: pl.DataFrame,
    llm: LLMResource,
    search: DocumentSearchResource,
    storage: StorageResource,
    recor_settings: RecorSettings,
):
    """Hard-negative mining (3.1.2): the LLM writes queries on unhelpful aspects of each
    question, the search resource (BM25 over the domain's pool by default) finds candidates,
    which are segmented to the positives' length and filtered. BRIGHT domains keep BRIGHT's
    own negatives and mine nothing."""
    domain = context.partition_key
    pool = source_documents.filter(pl.col("role") == "pool")
    stats = CallStats()
    if pool.is_empty():
        context.log.info(f"{domain}: no mining pool (BRIGHT's negatives are used as released)")
        mined, rejects = steps.select_negatives(
            source_questions.clear(), source_documents, {}, recor_settings.negative_overlap
        )
    else:
        collection = f"recor_pool_{domain}"
        where = storage.index_path("search", collection)
        search.index(where, pool.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents")))
        queries = steps.mining_queries(
            source_questions, _builder(llm), recor_settings.mining_queries, stats, context.log.info
        )
        asked = list(dict.fromkeys(q for qs in queries.values() for q in qs if q.strip()))
        found = {
            q: [(h.docid, h.contents) for h in hs]
            for q, hs in search.searcher(where).batch_search(asked, asked, recor_settings.mining_hits).items()
        }
        hits = {qid: list(dict.fromkeys(h for q in qs for h in found.get(q, []))) for qid, qs in queries.items()}
        positives = source_documents.filter(pl.col("role") == "positive")
        mined, rejects = steps.select_negatives(source_questions, positives, hits, recor_settings.negative_overlap)
    yield dg.Output(
        mined,
        output_name="hard_negatives",
        metadata={**table_metadata(mined.select("question_id", "doc_id", "content")), **stats.as_metadata()},
    )
    yield wiring.rejects("negative_rejects", steps.REJECTS, rejects)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars"},
    ins={"source_documents": wiring.input("source_documents"), "hard_negatives": wiring.input("hard_negatives")},
    **STEP,
)
def corpus(source_documents: pl.DataFrame, hard_negatives: pl.DataFrame) -> dg.Output:
    """The domain's retrieval corpus: every positive and negative document (the mining pool
    itself is not part of it)."""
    frame = pl.concat([source_documents.filter(pl.col("role") != "pool"), hard_negatives])
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame.select("doc_id", "role", "content")),
            "by_role": counts_md(dict(frame.group_by("role").len().sort("role").iter_rows())),
        },
    )


@dg.multi_asset(
    outs={
        "aligned_documents": wiring.out(
            "Each gold document checked against the expert answer (judge verdict, coverage, kept).",
            {"polars", "litellm"},
        ),
        "alignment_rejects": wiring.out("Weakly related documents, and questions left without one.", {"polars"}),
    },
    ins={"source_questions": wiring.input("source_questions"), "source_documents": wiring.input("source_documents")},
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted("1", "recor/alignment"),
)
def aligned_documents(
    context: dg.AssetExecutionContext,
    source_questions: pl.DataFrame,
    source_documents: pl.DataFrame,
    llm: LLMResource,
    recor_settings: RecorSettings,
):
    """Document-answer alignment validation (3.2.1)."""
    stats, sim = CallStats(), _similarity(recor_settings)
    frame, rejects = steps.alignment(
        source_questions,
        source_documents,
        _builder(llm),
        sim,
        recor_settings.build_thresholds(llm),
        stats,
        context.log.info,
    )
    yield dg.Output(
        frame,
        output_name="aligned_documents",
        metadata={
            **table_metadata(frame),
            **stats.as_metadata(),
            "kept": int(frame["kept"].sum()),
            "similarity/texts_encoded": sim.texts_encoded,
        },
    )
    yield wiring.rejects("alignment_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    outs={
        "aspects": wiring.out(
            "Aspects of each answer in conversational order, with their document coverage.", {"polars", "litellm"}
        ),
        "aspect_rejects": wiring.out(
            "Aspect proposals rejected for overlap, low coverage or unsuitability.", {"polars"}
        ),
    },
    ins={
        "source_questions": wiring.input("source_questions"),
        "aligned_documents": wiring.input("aligned_documents"),
        "source_documents": wiring.input("source_documents"),
    },
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted("1", "recor/aspects", "recor/aspect_order", "recor/aspect_suitability"),
)
def aspects(
    context: dg.AssetExecutionContext,
    source_questions: pl.DataFrame,
    aligned_documents: pl.DataFrame,
    source_documents: pl.DataFrame,
    llm: LLMResource,
    recor_settings: RecorSettings,
):
    """Answer decomposition (3.2.1): iterative aspect extraction with the non-overlap and
    coverage checks, the suitability filter and reordering for conversational flow."""
    stats, sim = CallStats(), _similarity(recor_settings)
    frame, rejects = steps.aspects(
        source_questions,
        aligned_documents,
        source_documents,
        _builder(llm),
        sim,
        recor_settings.build_thresholds(llm),
        stats,
        context.log.info,
    )
    yield dg.Output(
        frame,
        output_name="aspects",
        metadata={
            **table_metadata(frame.select("aspect_id", "title", "text", "coverage")),
            **stats.as_metadata(),
            "similarity/texts_encoded": sim.texts_encoded,
        },
    )
    yield wiring.rejects("aspect_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    outs={
        "facts": wiring.out(
            "Atomic facts per aspect with their verification (similarity, judge, verified).", {"polars", "litellm"}
        ),
        "fact_rejects": wiring.out("Unsupported facts, and aspects left with no verified fact.", {"polars"}),
    },
    ins={
        "source_questions": wiring.input("source_questions"),
        "aspects": wiring.input("aspects"),
        "aligned_documents": wiring.input("aligned_documents"),
        "source_documents": wiring.input("source_documents"),
    },
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted("2", "recor/facts", "recor/fact_check"),
)
def facts(
    context: dg.AssetExecutionContext,
    source_questions: pl.DataFrame,
    aspects: pl.DataFrame,
    aligned_documents: pl.DataFrame,
    source_documents: pl.DataFrame,
    llm: LLMResource,
    recor_settings: RecorSettings,
):
    """Atomic fact extraction and verification against the documents (3.2.1, 3.2.3)."""
    stats, sim = CallStats(), _similarity(recor_settings)
    frame, rejects = steps.facts(
        source_questions,
        aspects,
        aligned_documents,
        source_documents,
        _builder(llm),
        sim,
        recor_settings.build_thresholds(llm),
        stats,
        context.log.info,
    )
    rate = float(frame["verified"].mean()) if frame.height else 0.0
    yield dg.Output(
        frame,
        output_name="facts",
        metadata={
            **table_metadata(frame.select("fact_id", "fact", "similarity", "verified")),
            "verification_rate": rate,
            **stats.as_metadata(),
            "similarity/texts_encoded": sim.texts_encoded,
        },
    )
    yield wiring.rejects("fact_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    outs={
        "turns": wiring.out(
            "Conversation turns: question, answer, selected documents with their scores, retrieval reasoning.",
            {"polars", "litellm"},
        ),
        "turn_rejects": wiring.out("Turns rejected as repetitive, off-aspect, unnatural or unanswerable.", {"polars"}),
    },
    ins={
        "source_questions": wiring.input("source_questions"),
        "aspects": wiring.input("aspects"),
        "facts": wiring.input("facts"),
        "aligned_documents": wiring.input("aligned_documents"),
        "source_documents": wiring.input("source_documents"),
    },
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted(
        "3",
        "recor/first_turn",
        "recor/follow_up",
        "recor/question_for_point",
        "recor/retrieval_reasoning",
        "recor/turn_answer",
        "recor/document_criterion",
        "recor/turn_relevance",
        "recor/turn_flow",
    ),
)
def turns(
    context: dg.AssetExecutionContext,
    source_questions: pl.DataFrame,
    aspects: pl.DataFrame,
    facts: pl.DataFrame,
    aligned_documents: pl.DataFrame,
    source_documents: pl.DataFrame,
    llm: LLMResource,
    recor_settings: RecorSettings,
):
    """Turn generation with retrieval reasoning (3.2.2) and turn validation (3.2.3)."""
    stats = CallStats()
    frame, rejects = steps.turns(
        source_questions,
        aspects,
        facts,
        aligned_documents,
        source_documents,
        _builder(llm),
        recor_settings.build_thresholds(llm),
        stats,
        context.log.info,
    )
    yield dg.Output(
        frame,
        output_name="turns",
        metadata={
            **table_metadata(frame.select("conversation_id", "turn_id", "query", "gold_doc_ids")),
            **stats.as_metadata(),
        },
    )
    yield wiring.rejects("turn_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    outs={
        "conversations": wiring.out(
            "Each conversation's validation: length, grounding, document diversity, coherence.", {"polars", "litellm"}
        ),
        "conversation_rejects": wiring.out("Conversations that failed validation, with their problems.", {"polars"}),
    },
    ins={"turns": wiring.input("turns")},
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted("1", "recor/conversation_check"),
)
def conversations(
    context: dg.AssetExecutionContext, turns: pl.DataFrame, llm: LLMResource, recor_settings: RecorSettings
):
    """Conversation validation (3.2.3): 3-12 turns, document diversity, logical progression."""
    stats = CallStats()
    frame, rejects = steps.conversations(
        turns, _builder(llm), recor_settings.build_thresholds(llm), stats, context.log.info
    )
    yield dg.Output(
        frame,
        output_name="conversations",
        metadata={**table_metadata(frame), "valid": int(frame["valid"].sum()), **stats.as_metadata()},
    )
    yield wiring.rejects("conversation_rejects", steps.REJECTS, rejects)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars", "json"},
    ins={
        "turns": wiring.input("turns"),
        "conversations": wiring.input("conversations"),
        "source_questions": wiring.input("source_questions"),
        "corpus": wiring.input("corpus"),
    },
    **{**STEP, "code_version": "2"},
)
def benchmark(
    context: dg.AssetExecutionContext,
    turns: pl.DataFrame,
    conversations: pl.DataFrame,
    source_questions: pl.DataFrame,
    corpus: pl.DataFrame,
    storage: StorageResource,
) -> dg.Output:
    """The domain's benchmark: the turns of every valid conversation, one row per turn with
    its query id, exported in RECOR's released format (``{domain}_benchmark.jsonl``,
    ``{domain}_documents.jsonl``) with TREC qrels."""
    domain = context.partition_key
    valid = set(conversations.filter(pl.col("valid"))["conversation_id"])
    kept = turns.filter(pl.col("conversation_id").is_in(valid)).sort("conversation_id", "turn_id")
    kept = kept.with_columns(pl.format("{}_turn_{}", "conversation_id", "turn_id").alias("qid"))
    folder = storage.path(PREFIX, "release")
    conversations_written, documents = release.export(kept, source_questions, corpus, folder, domain)
    return dg.Output(
        kept,
        metadata={
            **table_metadata(kept.select("qid", "query", "gold_doc_ids")),
            "conversations": conversations_written,
            "turns": kept.height,
            "documents": documents,
            "release_folder": dg.MetadataValue.path(folder),
        },
    )


@dg.multi_asset(
    outs={
        "quality_scores": wiring.out(
            "Judge scores (1-5) per conversation: naturalness, turn coherence, question quality, groundedness.",
            {"polars", "litellm"},
        ),
        "turn_labels": wiring.out(
            "Each turn's dependency type (6 classes) and question pattern (9 classes).", {"polars", "litellm"}
        ),
    },
    ins={"benchmark": wiring.input("benchmark"), "corpus": wiring.input("corpus")},
    pool=llm_pool("recor.builder", "recor.judge"),
    **_prompted(
        "3",
        "recor/quality_naturalness",
        "recor/quality_coherence",
        "recor/quality_questions",
        "recor/quality_groundedness",
        "recor/dependency_type",
        "recor/question_pattern",
    ),
)
def quality_scores(context: dg.AssetExecutionContext, benchmark: pl.DataFrame, corpus: pl.DataFrame, llm: LLMResource):
    """Automatic quality analysis of the domain's conversations (3.4, appendix G) by the
    registry's ``recor.judge`` model."""
    judge = llm.model("recor.judge")
    # each output carries the accounting of its own calls, so its check names its own failures
    scored, labeled = CallStats(), CallStats()
    scores = steps.conversation_scores(benchmark, corpus, judge, scored, context.log.info)
    labels = steps.turn_labels(benchmark, judge, labeled, context.log.info)
    yield dg.Output(scores, output_name="quality_scores", metadata={**table_metadata(scores), **scored.as_metadata()})
    yield dg.Output(
        labels,
        output_name="turn_labels",
        metadata={
            **table_metadata(labels),
            **labeled.as_metadata(),
            "dependency": counts_md(dict(labels.group_by("dependency").len().sort("dependency").iter_rows())),
            "pattern": counts_md(dict(labels.group_by("pattern").len().sort("pattern").iter_rows())),
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars"},
    code_version="2",
    ins={"quality_scores": wiring.materialized("quality_scores"), "turn_labels": wiring.materialized("turn_labels")},
)
def quality_report(
    context: dg.AssetExecutionContext,
    quality_scores: pl.DataFrame,
    turn_labels: pl.DataFrame,
    recor_settings: RecorSettings,
) -> dg.Output:
    """Per-domain quality table (Table 31's shape: conversations, turns, the four mean
    scores and the normalized dependency entropy), with the distributions of dependency
    types and question patterns over all turns (Tables 29 and 30) and their normalized
    entropies. An entropy with no labelled turn is n/a, and ``why_na`` says why; ``slice``
    names the domains, conversations and turns covered; ``why_empty`` why Table 29 or 30 has
    no row."""
    table = steps.domain_table(quality_scores, turn_labels)
    shown = rules.shown(table)
    distributions, empty = {}, {}
    for column, name in (("dependency", "table_29_dependency"), ("pattern", "table_30_pattern")):
        label = rules.LABELS[column][0]
        counts = rules.label_counts(turn_labels, column)
        frame = pl.DataFrame(
            {label: list(counts), "turns": list(counts.values())}, schema={label: pl.String, "turns": pl.Int64}
        )
        distributions[name] = report_table(
            frame,
            {
                label: f"a {label} the judge named (appendix G)",
                "turns": "turns given it, over every domain of the report",
            },
        )
        empty[name] = (frame, rules.why_unlabelled(turn_labels, column))
    return dg.Output(
        table,
        metadata={
            **table_metadata(shown, 11),
            "slice": rules.quality_slice(table, run_profile(context), recor_settings.max_questions),
            "table_31": report_table(shown, steps.TABLE_31_DEFINITIONS),
            **distributions,
            **why_empty(empty),
            "dependency_entropy": rules.label_entropy(turn_labels, "dependency"),
            "pattern_entropy": rules.label_entropy(turn_labels, "pattern"),
            **rules.unlabeled_turns(turn_labels),
            "why_na": "; ".join(rules.not_applicable(table, turn_labels)) or "none",
        },
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars"},
    code_version="2",
    ins={
        "benchmark": wiring.materialized("benchmark"),
        "aspects": wiring.materialized("aspects"),
        "corpus": wiring.materialized("corpus"),
    },
)
def statistics(
    context: dg.AssetExecutionContext, benchmark: pl.DataFrame, aspects: pl.DataFrame, corpus: pl.DataFrame
) -> dg.Output:
    """Per-domain statistics in Table 2's shape: conversations, turns, average turns per
    conversation, aspects per conversation and documents per turn, with corpus sizes, for
    every domain built so far (a built domain always has a corpus; one that kept no
    conversation has a row of zeros)."""
    from assets.partitions import DOMAINS

    built = [d for d in DOMAINS if d in set(corpus["domain"])]
    table = rules.domain_statistics(benchmark, aspects, corpus, built)
    return dg.Output(
        table,
        metadata={
            **table_metadata(table, 11),
            "slice": report_slice(
                f"{len(built)} RECOR domains built ({', '.join(built) or 'none'})", run_profile(context)
            ),
            "table_2": report_table(table, rules.TABLE_2_DEFINITIONS),
            **why_empty({"table_2": (table, "no domain is built: materialize recor/corpus for one")}),
            "conversations": int(table["#Conv."].sum()),
            "turns": int(table["#Turns"].sum()),
            "domains_not_built": ", ".join(d for d in DOMAINS if d not in built) or "none",
        },
    )


recor_assets = [
    source_files,
    sources,
    hard_negatives,
    corpus,
    aligned_documents,
    aspects,
    facts,
    turns,
    conversations,
    benchmark,
    quality_scores,
    quality_report,
    statistics,
]
