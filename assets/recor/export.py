"""The built RECOR benchmark for sharing (:mod:`assets.common.sharing`), one domain or
several: the turns and documents as a Hugging Face dataset and Croissant, and BEIR folders.

Hugging Face configurations follow BRIGHT's own dataset: ``turns`` and ``documents``, a split
per domain. A document's ``role`` (positive or negative for its source question) is left out:
the qrels say what is relevant to which turn.

BEIR: one folder per domain and query strategy, ``beir/<domain>/<strategy>/``, each complete
(corpus, queries, ``qrels/test.tsv``), so that BEIR's loader, MTEB and pyserini evaluate a
strategy as they would any dataset, and scores per strategy are not mixed by a tool that
reads every query of a folder. The corpus is written once per strategy for that reason. The
strategies are the evaluation's whose text the build holds (``STRATEGIES``); the query
rewrite and the LLM's own rationale are asked of an LLM at evaluation time and are not part
of a build. Every gold document of a turn scores 1, as in the release's TREC qrels."""

import functools
from collections.abc import Mapping

import dagster as dg
import polars as pl

from assets.common.sharing import (
    MANIFEST_SCHEMA,
    About,
    BeirTables,
    Build,
    BuildRecord,
    Share,
    build_card,
    export_output,
)
from assets.partitions import domain_partitions
from assets.recor.assets import GROUP, wiring
from assets.recor.release import last_turn_query, with_context, with_release_text
from assets.recor.settings import RecorSettings
from resources.storage import StorageResource

PREFIX = "recor"
# The folder of the export of every built domain, beside one per domain.
ALL = "all"
VERSION = "1.0.0"
# StackExchange's posts and BRIGHT's documents are shared under CC BY-SA: a build of them is too.
LICENSE = "cc-by-sa-4.0"
STRATEGIES = {
    "baseline": "the question",
    "reasoning": "the question, then the retrieval guidance stored at construction",
    "history": "the question, then the conversation history",
    "history_reasoning": "the question, the history, then the stored retrieval guidance",
    "last_turn": "the previous question and answer, then the question",
}
CITATION = """@misc{recor,
  title = {RECOR: Reasoning-focused Multi-turn Conversational Retrieval Benchmark},
  author = {Ali, Mohammed and Abdallah, Abdelrahman and Agarwal, Amit and Patel, Hitesh Laxmichand and Jatowt, Adam},
  note = {University of Innsbruck and Oracle AI}
}"""
SUMMARY = (
    "RECOR, built by benchfoundry following the paper *RECOR: Reasoning-focused Multi-turn Conversational "
    "Retrieval Benchmark*: multi-turn conversations decomposed from reasoning-intensive questions, each turn "
    "with its gold documents, history and retrieval guidance. Configurations: `turns` and `documents`, a "
    "split per domain. BEIR folders: `beir/<domain>/<strategy>/`, one per query strategy ("
    + "; ".join(f"`{s}`: {text}" for s, text in STRATEGIES.items())
    + ")."
)
ABOUT = About(
    "RECOR (benchfoundry build)",
    SUMMARY,
    CITATION,
    LICENSE,
    ("text-retrieval", "question-answering"),
    ("conversational-retrieval", "reasoning", "benchfoundry"),
)
DESCRIPTIONS = {
    "turns": "One row per turn of a valid conversation: question, answer, gold documents, history, guidance.",
    "documents": "The domain's retrieval corpus: positive and hard negative documents.",
}
TURN_COLUMNS = (
    "domain",
    "conversation_id",
    "turn_id",
    "qid",
    "query",
    "answer",
    "gold_doc_ids",
    "history",
    "guidance",
    "target",
    "relevance_signals",
    "irrelevance_signals",
)
FUNNEL = (
    ("source questions", "recor/source_questions"),
    ("aspects", "recor/aspects"),
    ("facts", "recor/facts"),
    ("turns generated", "recor/turns"),
    ("turns of valid conversations", "recor/benchmark"),
    ("documents", "recor/corpus"),
)
# The built tables (the card names the run of the first), the steps before them, the build's roles.
BUILD = Build(
    PREFIX,
    ("benchmark", "corpus", "source_questions", "aspects", "facts", "turns", "conversations"),
    ("builder", "judge"),
)


def strategy_queries(turns: pl.DataFrame) -> pl.DataFrame:
    """One BEIR query per turn and strategy (``qid``, ``strategy``, ``text``), the texts the
    evaluation builds (``assets.eval.recor.rules.strategy_queries``) from the stored history
    and guidance."""
    rows, previous = [], {}
    for t in with_release_text(turns).iter_rows(named=True):
        q, history, guidance = t["query"], t["history"], t["guidance"]
        texts = {
            "baseline": q,
            "reasoning": with_context(q, reasoning=guidance),
            "history": with_context(q, history=history),
            "history_reasoning": with_context(q, history, guidance),
            "last_turn": last_turn_query(q, previous.get(t["conversation_id"])),
        }
        previous[t["conversation_id"]] = t
        rows += [(t["qid"], t["conversation_id"], t["turn_id"], strategy, text) for strategy, text in texts.items()]
    return pl.DataFrame(
        rows,
        schema={
            "qid": pl.String,
            "conversation_id": pl.String,
            "turn_id": pl.Int32,
            "strategy": pl.String,
            "text": pl.String,
        },
        orient="row",
    )


def by_domain(turns: pl.DataFrame, corpus: pl.DataFrame) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """Every domain's turns and documents, from tables holding several (each row names its
    domain); a domain with documents and no turn kept has its corpus and no turn."""
    domains = sorted(set(corpus["domain"]))
    return {d: (turns.filter(pl.col("domain") == d), corpus.filter(pl.col("domain") == d)) for d in domains}


def with_turns(domains: Mapping[str, tuple[pl.DataFrame, pl.DataFrame]]) -> tuple[dict, list[str]]:
    """The domains that kept a turn, and the names of those that kept none: a domain without a
    query is nothing to evaluate on, so it is left out of the export and named."""
    kept = {d: tables for d, tables in domains.items() if tables[0].height}
    return kept, sorted(set(domains) - set(kept))


def share(
    domains: Mapping[str, tuple[pl.DataFrame, pl.DataFrame]],
    record: BuildRecord,
    models: Mapping[str, str],
    sizes: Mapping[str, int | str],
) -> Share:
    """What RECOR's export writes, from each domain's built ``recor/benchmark`` turns and
    ``recor/corpus`` documents (domain -> (turns, corpus)) and the build's record."""
    turns = {d: with_release_text(t).select(TURN_COLUMNS) for d, (t, _) in domains.items()}
    documents = {d: c.select("doc_id", "content") for d, (_, c) in domains.items()}
    beir = {}
    for domain, frame in turns.items():
        corpus = documents[domain].select(
            pl.col("doc_id").alias("_id"), pl.lit("").alias("title"), pl.col("content").alias("text")
        )
        qrels = (
            frame.select(
                pl.col("qid").alias("query-id"),
                pl.col("gold_doc_ids").alias("corpus-id"),
                pl.lit(1, pl.Int64).alias("score"),
            )
            .explode("corpus-id")
            .unique(maintain_order=True)
        )
        queries = strategy_queries(domains[domain][0])
        for strategy in STRATEGIES:
            of = queries.filter(pl.col("strategy") == strategy)
            beir[f"{domain}/{strategy}"] = BeirTables(
                corpus,
                of.select(
                    pl.col("qid").alias("_id"),
                    "text",
                    pl.struct("conversation_id", "turn_id", "strategy").alias("metadata"),
                ),
                {"test": qrels},
            )
    card = build_card(
        ABOUT,
        record,
        models,
        {
            **{f"{d} conversations": t["conversation_id"].n_unique() for d, t in turns.items()},
            **{f"{d} turns": t.height for d, t in turns.items()},
            **{f"{d} documents": c.height for d, c in documents.items()},
            **sizes,
        },
        FUNNEL,
    )
    return Share(
        configs={"turns": turns, "documents": documents},
        descriptions=DESCRIPTIONS,
        card=card,
        name="recor",
        url="https://huggingface.co/datasets",
        version=VERSION,
        beir=beir,
    )


# --- the assets: thin, over the functions above ---------------------------------------------


def _write(context, folder: str, domains, settings: RecorSettings) -> dg.Output:
    """The export of the ``domains`` that kept a turn; those that kept none are named in the
    metadata (``domains_left_out``), and with none left nothing is written: the manifest is empty.
    The card names the run of the first kept domain (a one-domain export's own partition)."""
    kept, left_out = with_turns(domains)
    note = {"domains_left_out": ", ".join(left_out) or "none"}
    if left_out:
        context.log.warning(f"RECOR export: {', '.join(left_out)} kept no turn, so nothing of them is exported")
    if not kept:
        return dg.Output(pl.DataFrame(schema=MANIFEST_SCHEMA), metadata={"dagster/row_count": 0, **note})
    first = next(iter(kept))
    written = export_output(context, folder, BUILD, settings, functools.partial(share, kept), first)
    return dg.Output(written.value, metadata={**written.metadata, **note})


@dg.asset(
    key=[PREFIX, "export"],
    group_name=GROUP,
    ins={"benchmark": wiring.input("benchmark"), "corpus": wiring.input("corpus")},
    kinds={"parquet", "json"},
    partitions_def=domain_partitions,
    code_version="1",
)
def recor_export(
    context: dg.AssetExecutionContext,
    benchmark: pl.DataFrame,
    corpus: pl.DataFrame,
    recor_settings: RecorSettings,
    storage: StorageResource,
) -> dg.Output:
    """One domain's benchmark for sharing, under ``<storage root>/recor/export/<domain>``: ``hf/``
    (a Hugging Face dataset folder with its card and ``croissant.json``) and
    ``beir/<domain>/<strategy>/`` (BEIR's layout, one folder per query strategy). Returns the
    manifest of the files written."""
    domain = context.partition_key
    folder = storage.path(PREFIX, "export", domain)
    return _write(context, folder, {domain: (benchmark, corpus)}, recor_settings)


@dg.asset(
    key=[PREFIX, "export_all"],
    group_name=GROUP,
    ins={"benchmark": wiring.materialized("benchmark"), "corpus": wiring.materialized("corpus")},
    kinds={"parquet", "json"},
    code_version="1",
)
def recor_export_all(
    context: dg.AssetExecutionContext,
    benchmark: pl.DataFrame,
    corpus: pl.DataFrame,
    recor_settings: RecorSettings,
    storage: StorageResource,
) -> dg.Output:
    """Every built domain in one dataset, under ``<storage root>/recor/export/all``: the
    configurations with a split per domain, ``beir/<domain>/<strategy>/`` per domain. The card
    names the run of the first domain's turns (each domain's run is on its own export)."""
    domains = by_domain(benchmark, corpus)
    return _write(context, storage.path(PREFIX, "export", ALL), domains, recor_settings)


recor_export_assets = [recor_export, recor_export_all]
