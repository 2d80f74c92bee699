"""Checks of RECOR's release (``assets.recor.release``): the benchmark, its quality analysis
(the judge's scores and turn labels, Table 31) and the statistics (Table 2)."""

import dagster as dg
import polars as pl

from assets.partitions import DOMAINS
from assets.recor import rules, steps
from assets.recor.assets import wiring
from assets.recor.rules import gold_outside
from assets.recor.settings import RecorSettings
from checks.factories import broken, export_check, llm_accounting_check, missing, rows_check, rules_text, table_check
from checks.recor.shared import PARTS, key, same_domain

# The judge's 1-5 scale (``steps.conversation_scores``) and a normalized entropy's range.
SCORE_RANGE = (1.0, 5.0)
ENTROPY_RANGE = (0.0, 1.0)


# --- schemas: what the release and its analyses write ------------------------------------------

BENCHMARK_SCHEMA = {**steps.TURN_SCHEMA, "qid": pl.String}
SCORE_SCHEMA = {
    "domain": pl.String,
    "conversation_id": pl.String,
    "turns": pl.Int64,
    **{d: pl.Float64 for d in steps.DIMENSIONS},
}
LABEL_SCHEMA = {
    "domain": pl.String,
    "conversation_id": pl.String,
    "turn_id": pl.Int32,
    "dependency": pl.String,
    "pattern": pl.String,
}
SCORE_COLUMNS = list(steps.DIMENSION_ABBREVIATIONS.values())
REPORT_SCHEMA = {
    "domain": pl.String,
    "#C": pl.Int64,
    "#T": pl.Int64,
    **{c: pl.Float64 for c in SCORE_COLUMNS},
    "DE": pl.Float64,
    "QE": pl.Float64,
}
# The averages are null for a domain that kept no conversation: typed only when some domain did.
STATISTICS_SCHEMA = {
    "domain": pl.String,
    "#Conv.": pl.Int64,
    "#Turns": pl.Int64,
    "Avg #T": None,
    "Avg #A": None,
    "Avg #D": None,
    "positives": pl.Int64,
    "negatives": pl.Int64,
}


# --- the benchmark and its quality analysis -------------------------------------------------------

benchmark_schema = table_check(
    key("benchmark"),
    BENCHMARK_SCHEMA,
    unique=["qid"],
    not_null=["domain", "conversation_id", "turn_id", "query", "answer", "gold_doc_ids", "qid"],
    **PARTS,
)

BENCHMARK_RULES = {
    "length": f"{rules.MIN_TURNS}-{rules.MAX_TURNS} turns per conversation, turn ids 1..n",
    "documents": "1 to max_docs_per_turn gold documents per turn",
    "qid": "qid <conversation>_turn_<turn>, as the published retrieval scripts",
    "not_valid": "only valid conversations, with every turn",
}


@dg.asset_check(
    asset=key("benchmark"),
    name="conversations",
    blocking=True,
    additional_ins={"conversations": same_domain("conversations")},
    description=rules_text(BENCHMARK_RULES),
    **PARTS,
)
def benchmark_conversations(
    benchmark: pl.DataFrame, conversations: pl.DataFrame, recor_settings: RecorSettings
) -> dg.AssetCheckResult:
    """The released benchmark holds the method's counts (3-12 turns, at most 5 documents per
    turn) and exactly the conversations that passed validation."""
    t = recor_settings.thresholds()
    valid = conversations.filter(pl.col("valid")).select("conversation_id", pl.col("num_turns").cast(pl.Int64))
    per = benchmark.with_columns(pl.len().over("conversation_id").alias("turns"))
    joined = per.join(valid, on="conversation_id", how="left")
    bad = pl.concat(
        [
            broken(
                joined,
                ["qid"],
                length=~pl.col("turns").is_between(t.min_turns, t.max_turns)
                | (pl.col("turn_id").rank("ordinal").over("conversation_id") != pl.col("turn_id")),
                documents=~pl.col("gold_doc_ids").list.len().is_between(1, t.max_docs_per_turn),
                qid=pl.col("qid") != pl.format("{}_turn_{}", "conversation_id", "turn_id"),
                not_valid=pl.col("num_turns").is_null() | (pl.col("num_turns") != pl.col("turns")),
            ),
            missing(valid, benchmark, ["conversation_id"], "not_valid").select(
                pl.col("conversation_id").alias("qid"), "rule"
            ),
        ]
    )
    return rows_check(bad, rules_text(BENCHMARK_RULES), "qid")


@dg.asset_check(
    asset=key("benchmark"),
    name="gold_in_corpus",
    blocking=True,
    additional_ins={"corpus": same_domain("corpus")},
    description="Every qrel of the release names a document of the released corpus.",
    **PARTS,
)
def benchmark_gold_in_corpus(benchmark: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The release's qrels and documents files are written from these two tables."""
    return rows_check(gold_outside(benchmark, corpus), "gold documents in the corpus", "turn")


quality_scores_schema = table_check(
    key("quality_scores"),
    SCORE_SCHEMA,
    unique=["conversation_id"],
    not_null=["domain", "conversation_id", "turns"],
    blocking=False,
    **PARTS,
)


def covers_benchmark(frame: pl.DataFrame, benchmark: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Rows of ``frame`` (by ``on``) that the benchmark lacks, and benchmark rows ``frame`` lacks."""
    ours, theirs = frame.select(on).unique(), benchmark.select(on).unique()
    return pl.concat([missing(ours, theirs, on, "not_in_benchmark"), missing(theirs, ours, on, "not_analysed")])


@dg.asset_check(
    asset=key("quality_scores"),
    name="scores",
    additional_ins={"benchmark": same_domain("benchmark")},
    description=f"Each benchmark conversation scored once, with its turns; scores in {SCORE_RANGE[0]:g}-{SCORE_RANGE[1]:g} "
    "(null when the judge named no number).",
    **PARTS,
)
def quality_score_range(quality_scores: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    """The judge's 1-5 scale (appendix G); Table 31 averages these."""
    turns = benchmark.group_by("conversation_id").agg(pl.len().cast(pl.Int64).alias("expected"))
    joined = quality_scores.join(turns, on="conversation_id", how="left")
    out_of_range = pl.any_horizontal(~pl.col(d).is_between(*SCORE_RANGE) for d in steps.DIMENSIONS)
    bad = pl.concat(
        [
            broken(joined, ["conversation_id"], scale=out_of_range, turns=pl.col("turns") != pl.col("expected")),
            covers_benchmark(quality_scores, benchmark, ["conversation_id"]),
        ]
    )
    return rows_check(
        bad, f"scores in {SCORE_RANGE}; every benchmark conversation scored with its turn count", "conversation_id"
    )


# The scores and the labels are asked in one step; each output carries its own calls' accounting.
quality_scores_llm = llm_accounting_check(
    key("quality_scores"),
    item_column="conversation_id",
    failed_items=lambda f: f.filter(pl.any_horizontal(pl.col(d).is_null() for d in steps.DIMENSIONS)),
    **PARTS,
)
turn_labels_llm = llm_accounting_check(
    key("turn_labels"),
    item_column="turn",
    failed_items=lambda f: f.filter(pl.col("dependency").is_null() | pl.col("pattern").is_null()).select(
        pl.format("{} turn {}", "conversation_id", "turn_id").alias("turn")
    ),
    **PARTS,
)

turn_labels_schema = table_check(
    key("turn_labels"),
    LABEL_SCHEMA,
    unique=["conversation_id", "turn_id"],
    not_null=["domain", "conversation_id", "turn_id"],
    blocking=False,
    **PARTS,
)


@dg.asset_check(
    asset=key("turn_labels"),
    name="labels",
    additional_ins={"benchmark": same_domain("benchmark")},
    description="Each benchmark turn labeled once; dependency types and question patterns from RECOR's classes "
    "(null when the reply named none).",
    **PARTS,
)
def turn_label_classes(turn_labels: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    """Tables 29 and 30 count these labels, and their entropies are normalized by the number of classes."""
    ids = ["conversation_id", "turn_id"]
    bad = pl.concat(
        [
            broken(
                turn_labels,
                ids,
                dependency=~pl.col("dependency").is_in(rules.DEPENDENCY_TYPES),
                pattern=~pl.col("pattern").is_in(rules.QUESTION_PATTERNS),
            ),
            covers_benchmark(turn_labels, benchmark, ids),
        ]
    )
    return rows_check(
        bad.with_columns(pl.format("{}#{}", *ids).alias("turn")),
        "labels from rules.DEPENDENCY_TYPES and rules.QUESTION_PATTERNS; every benchmark turn labeled",
        "turn",
    )


# --- the reports (unpartitioned, over the materialized domains) --------------------------------------

quality_report_schema = table_check(
    key("quality_report"), REPORT_SCHEMA, unique=["domain"], not_null=["domain", "#C", "#T"], blocking=False
)

REPORT_RULES = {
    "domain": "a RECOR domain",
    "scores": f"mean scores in {SCORE_RANGE[0]:g}-{SCORE_RANGE[1]:g}",
    "entropy": f"DE and QE in {ENTROPY_RANGE[0]:g}-{ENTROPY_RANGE[1]:g}",
    "n/a": "DE (QE) null exactly where no turn of the domain has a dependency type (question pattern)",
    "turns": f"#T between {rules.MIN_TURNS} and {rules.MAX_TURNS} times #C",
}


@dg.asset_check(
    asset=key("quality_report"),
    name="ranges",
    description=rules_text(REPORT_RULES),
    additional_ins={"turn_labels": wiring.materialized("turn_labels")},
)
def quality_report_ranges(quality_report: pl.DataFrame, turn_labels: pl.DataFrame) -> dg.AssetCheckResult:
    """Table 31's values within what the judge's scale and a normalized entropy allow; an
    entropy with no labelled turn is undefined (n/a), never 0."""
    shorts = [short for _, short, _ in rules.LABELS.values()]
    labelled = turn_labels.group_by("domain").agg(
        pl.col(column).count().alias(f"labelled for {short}") for column, (_, short, _) in rules.LABELS.items()
    )
    report = quality_report.join(labelled, on="domain", how="left")
    bad = broken(
        report,
        ["domain"],
        domain=~pl.col("domain").is_in(DOMAINS),
        scores=pl.any_horizontal(~pl.col(c).is_between(*SCORE_RANGE) for c in SCORE_COLUMNS),
        entropy=~pl.col("DE").is_between(*ENTROPY_RANGE) | ~pl.col("QE").is_between(*ENTROPY_RANGE),
        **{
            "n/a": pl.any_horizontal(
                pl.col(short).is_null() != (pl.col(f"labelled for {short}").fill_null(0) == 0) for short in shorts
            )
        },
        turns=~pl.col("#T").is_between(pl.col("#C") * rules.MIN_TURNS, pl.col("#C") * rules.MAX_TURNS),
    )
    return rows_check(bad, rules_text(REPORT_RULES), "domain")


statistics_schema = table_check(
    key("statistics"),
    STATISTICS_SCHEMA,
    unique=["domain"],
    not_null=["domain", "#Conv.", "#Turns", "positives", "negatives"],
    blocking=False,
)

STATISTICS_RULES = {
    "domain": "RECOR's domains, in their order",
    "average": "Avg #T is #Turns over #Conv.",
    "turns": f"Avg #T in {rules.MIN_TURNS}-{rules.MAX_TURNS}, Avg #A at least Avg #T",
    "documents": "Avg #D in 1-max_docs_per_turn",
    "empty": "a domain without conversations has no turns and no averages",
    "positives": "every built domain has positive documents",
}


@dg.asset_check(asset=key("statistics"), name="table_2", description=rules_text(STATISTICS_RULES))
def statistics_rules(statistics: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Table 2's numbers follow from the method's counts: 3-12 turns, one aspect per turn at
    least, at most 5 documents per turn."""
    t = recor_settings.thresholds()
    built = pl.col("#Conv.") > 0
    position = pl.col("domain").replace_strict(
        {d: i for i, d in enumerate(DOMAINS)}, default=None, return_dtype=pl.Int64
    )
    bad = broken(
        statistics,
        ["domain"],
        domain=position.is_null() | (position.diff() <= 0),
        average=built & ((pl.col("Avg #T") - pl.col("#Turns") / pl.col("#Conv.")).abs() > 1e-9),
        turns=built & (~pl.col("Avg #T").is_between(t.min_turns, t.max_turns) | (pl.col("Avg #A") < pl.col("Avg #T"))),
        documents=built & ~pl.col("Avg #D").is_between(1, t.max_docs_per_turn),
        empty=~built
        & (
            (pl.col("#Turns") != 0) | pl.any_horizontal(pl.col(c).is_not_null() for c in ("Avg #T", "Avg #A", "Avg #D"))
        ),
        positives=pl.col("positives") < 1,
    )
    return rows_check(bad, rules_text(STATISTICS_RULES), "domain")


release_checks = [
    benchmark_schema,
    benchmark_conversations,
    benchmark_gold_in_corpus,
    quality_scores_schema,
    quality_score_range,
    quality_scores_llm,
    turn_labels_schema,
    turn_label_classes,
    turn_labels_llm,
    quality_report_schema,
    quality_report_ranges,
    statistics_schema,
    statistics_rules,
    export_check(key("export"), beir=True, **PARTS),
    export_check(key("export_all"), beir=True),
]
