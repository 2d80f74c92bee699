"""Checks of what RECOR reads (``assets.recor.sources``): the observed source files, the
source questions and documents, and their rejects."""

import dagster as dg
import polars as pl

from assets.partitions import DOMAINS
from assets.recor import sources as recor_sources
from assets.recor.settings import RecorSettings
from checks.factories import WARN, broken, missing, problems_result, rejects_check, rows_check, rules_text, table_check
from checks.recor.shared import PARTS, key, same_domain

# Closed sets the sources write.
SOURCE_KINDS = ("bright", "stackexchange")
DOCUMENT_ROLES = ("positive", "negative", "pool")


@dg.asset_check(
    asset=key("source_files"),
    name="observed_versions",
    description="Every domain's files were observed, and are what was observed (else observe again).",
)
def observed_versions(context: dg.AssetCheckExecutionContext, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """An observable source has no stored value: the check reads each domain's latest
    observation from the instance and compares its data version with the files' hash now. A
    domain never observed, or whose files changed since, has partitions whose staleness the
    UI cannot tell. Unpartitioned because the observation (``recor_observe``) covers every
    domain in one run."""
    problems = []
    for domain in DOMAINS:
        records = context.instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=key("source_files"), asset_partitions=[domain]), limit=1
        ).records
        observed = records[0].asset_observation.data_version if records else None
        now = recor_settings.fingerprint(domain)
        if observed is None:
            problems.append(f"{domain}: never observed")
        elif observed != now:
            problems.append(f"{domain}: observed {observed}, the files are now {now}")
    return problems_result(problems, len(DOMAINS), severity=WARN)


source_questions_schema = table_check(
    key("source_questions"),
    recor_sources.QUESTION_SCHEMA,
    unique=["question_id"],
    not_null=["domain", "source", "question_id", "query", "answer", "gold_ids"],
    **PARTS,
)

QUESTION_RULES = {
    "source": f"one of {', '.join(SOURCE_KINDS)}",
    "domain_prefix": "the id starts with its domain",
    "no_gold": "at least one gold document",
    "gold_not_positive": "every gold id is a positive source document",
}


@dg.asset_check(
    asset=key("source_questions"),
    name="gold_documents",
    blocking=True,
    additional_ins={"source_documents": same_domain("source_documents")},
    description=rules_text(QUESTION_RULES),
    **PARTS,
)
def source_gold_documents(source_questions: pl.DataFrame, source_documents: pl.DataFrame) -> dg.AssetCheckResult:
    """A question's gold documents are what every later step aligns, decomposes and retrieves."""
    bad = broken(
        source_questions,
        ["question_id"],
        source=~pl.col("source").is_in(SOURCE_KINDS),
        domain_prefix=~pl.col("question_id").str.starts_with(pl.col("domain") + "_"),
        no_gold=pl.col("gold_ids").list.len().fill_null(0) == 0,
    )
    gold = source_questions.select("question_id", pl.col("gold_ids").alias("doc_id")).explode("doc_id").drop_nulls()
    positives = source_documents.filter(pl.col("role") == "positive")
    dangling = missing(gold, positives, ["doc_id"], "gold_not_positive")
    dangling = gold.join(dangling, on="doc_id").select("question_id", "rule").unique()
    return rows_check(pl.concat([bad, dangling]), rules_text(QUESTION_RULES), "question_id")


source_documents_schema = table_check(
    key("source_documents"),
    recor_sources.DOCUMENT_SCHEMA,
    unique=["doc_id"],
    not_null=["domain", "doc_id", "content", "role"],
    **PARTS,
)


@dg.asset_check(
    asset=key("source_documents"),
    name="roles",
    blocking=True,
    description=f"Roles from {', '.join(DOCUMENT_ROLES)}; no empty content.",
    **PARTS,
)
def source_document_roles(source_documents: pl.DataFrame) -> dg.AssetCheckResult:
    """The role decides what reaches the corpus: positives and negatives do, the mining pool does not."""
    bad = broken(
        source_documents,
        ["doc_id"],
        role=~pl.col("role").is_in(DOCUMENT_ROLES),
        empty=pl.col("content").str.strip_chars().str.len_chars() == 0,
    )
    return rows_check(bad, f"role in {DOCUMENT_ROLES}; non-empty content", "doc_id")


source_rejects_reasons = rejects_check(
    key("source_rejects"), recor_sources.SOURCE_REASONS, recor_sources.REJECTS.keys, **PARTS
)


source_checks = [
    observed_versions,
    source_questions_schema,
    source_gold_documents,
    source_documents_schema,
    source_document_roles,
    source_rejects_reasons,
]
