"""Checks of RECOR's construction steps (``assets.recor.steps``, paper sections 3.1.2 and 3.2):
the mined hard negatives and the corpus, document alignment, answer decomposition, fact
verification, the turns and the validated conversations."""

import json
import re

import dagster as dg
import polars as pl

from assets.common.text import normalize
from assets.recor import rules, steps
from assets.recor import sources as recor_sources
from assets.recor.rules import gold_outside, word_overlap
from assets.recor.settings import RecorSettings, Thresholds
from checks.factories import broken, llm_accounting_check, missing, rejects_check, rows_check, rules_text, table_check
from checks.recor.shared import PARTS, key, same_domain
from resources.llm import LLMResource

# --- vocabularies the steps write ------------------------------------------------------------

# What ``rules.conversation_problems`` and the coherence verdict write into a conversation's
# problems (and its reject's detail), as patterns; ``steps.conversations`` joins them with "; ".
CONVERSATION_PROBLEMS = (
    r"\d+ turns \(needs \d+-\d+\)",
    re.escape("a turn has no selected document"),
    re.escape("every turn uses the same documents"),
    re.escape("judged incoherent"),
)
PROBLEM_SEPARATOR = "; "

# Other closed sets the steps write.
CORPUS_ROLES = ("positive", "negative")
ASPECT_ORIGINS = ("llm", "answer_segment")
QUESTION_ORIGINS = ("first_turn", "follow_up", "question_for_point")
ANSWER_ORIGINS = ("model", "facts")
# Cosine similarity of unit vectors, with room for float error.
SIMILARITY_RANGE = (-1.0 - 1e-6, 1.0 + 1e-6)


# --- schemas: what the steps write (``steps`` builds these frames) ---------------------------------

ALIGNED_SCHEMA = {
    "domain": pl.String,
    "question_id": pl.String,
    "doc_id": pl.String,
    "llm_supports": pl.Boolean,
    "coverage": pl.Float64,
    "kept": pl.Boolean,
}
CONVERSATION_SCHEMA = {
    "domain": pl.String,
    "conversation_id": pl.String,
    "num_turns": pl.Int32,
    "coherent": pl.Boolean,
    "valid": pl.Boolean,
    "problems": pl.String,
}


# --- hard negatives and the corpus ---------------------------------------------------------------

hard_negatives_schema = table_check(
    key("hard_negatives"),
    recor_sources.DOCUMENT_SCHEMA,
    unique=["doc_id"],
    not_null=["domain", "doc_id", "content", "role", "question_id"],
    **PARTS,
)

NEGATIVE_RULES = {
    "role": "role negative",
    "question": "mined for a source question",
    "overlap": "word overlap with every positive at most negative_overlap",
    "duplicate": "no two mined passages alike",
}


@dg.asset_check(
    asset=key("hard_negatives"),
    name="mined",
    blocking=True,
    additional_ins={
        "source_questions": same_domain("source_questions"),
        "source_documents": same_domain("source_documents"),
    },
    description=rules_text(NEGATIVE_RULES),
    **PARTS,
)
def mined_negatives(
    hard_negatives: pl.DataFrame,
    source_questions: pl.DataFrame,
    source_documents: pl.DataFrame,
    recor_settings: RecorSettings,
) -> dg.AssetCheckResult:
    """A mined passage close to a positive would be a negative that answers (3.1.2)."""
    positives = source_documents.filter(pl.col("role") == "positive")["content"].to_list()
    closest = [max((word_overlap(text, p) for p in positives), default=0.0) for text in hard_negatives["content"]]
    mined = hard_negatives.with_columns(
        pl.Series("closest", closest, pl.Float64),
        pl.col("content").map_elements(normalize, return_dtype=pl.String).alias("normalized"),
    )
    unknown = (
        missing(mined, source_questions, ["question_id"], "question")
        .join(mined.select("doc_id", "question_id"), on="question_id")
        .select("doc_id", "rule")
    )
    bad = pl.concat(
        [
            broken(
                mined,
                ["doc_id"],
                role=pl.col("role") != "negative",
                overlap=pl.col("closest") > recor_settings.negative_overlap,
                duplicate=pl.col("normalized").is_duplicated(),
            ),
            unknown,
        ]
    )
    return rows_check(bad, rules_text(NEGATIVE_RULES), "doc_id")


hard_negatives_llm = llm_accounting_check(key("hard_negatives"), **PARTS)
negative_rejects_reasons = rejects_check(key("negative_rejects"), steps.NEGATIVE_REASONS, steps.REJECTS.keys, **PARTS)

corpus_schema = table_check(
    key("corpus"),
    recor_sources.DOCUMENT_SCHEMA,
    unique=["doc_id"],
    not_null=["domain", "doc_id", "content", "role"],
    **PARTS,
)


@dg.asset_check(
    asset=key("corpus"),
    name="gold_in_corpus",
    blocking=True,
    additional_ins={"source_questions": same_domain("source_questions")},
    description=f"Roles from {', '.join(CORPUS_ROLES)} (no pool); every source question's gold documents are in it.",
    **PARTS,
)
def corpus_gold(corpus: pl.DataFrame, source_questions: pl.DataFrame) -> dg.AssetCheckResult:
    """The corpus is what the evaluation retrieves from: a missing gold document makes a
    turn unanswerable, a pool document is a candidate that was never screened."""
    gold = source_questions.select(pl.col("gold_ids").alias("doc_id")).explode("doc_id").drop_nulls().unique()
    bad = pl.concat(
        [
            broken(corpus, ["doc_id"], role=~pl.col("role").is_in(CORPUS_ROLES)),
            missing(gold, corpus, ["doc_id"], "gold_missing"),
        ]
    )
    return rows_check(bad, f"role in {CORPUS_ROLES}; every gold id in the corpus", "doc_id")


# --- decomposition and verification ------------------------------------------------------------------

aligned_documents_schema = table_check(
    key("aligned_documents"),
    ALIGNED_SCHEMA,
    unique=["question_id", "doc_id"],
    not_null=["domain", "question_id", "doc_id", "coverage", "kept"],
    **PARTS,
)

ALIGNMENT_RULES = {
    "not_gold": "each row is a gold document of its question",
    "coverage": "coverage a cosine similarity",
    "kept": "kept when the coverage reaches the minimum or a binding judge found the answer in it, else not",
}


@dg.asset_check(
    asset=key("aligned_documents"),
    name="alignment",
    blocking=True,
    additional_ins={"source_questions": same_domain("source_questions")},
    description=rules_text(ALIGNMENT_RULES),
    **PARTS,
)
def alignment_rule(
    aligned_documents: pl.DataFrame, source_questions: pl.DataFrame, recor_settings: RecorSettings, llm: LLMResource
) -> dg.AssetCheckResult:
    """Document-answer alignment (3.2.1) decides which documents the aspects and facts may use."""
    t = recor_settings.build_thresholds(llm)
    gold = source_questions.select("question_id", pl.col("gold_ids").alias("doc_id")).explode("doc_id")
    should = (pl.col("coverage") >= t.alignment_min_coverage) | (
        pl.col("llm_supports").fill_null(False) & t.binding_verdicts
    )
    bad = pl.concat(
        [
            missing(aligned_documents, gold, ["question_id", "doc_id"], "not_gold"),
            broken(
                aligned_documents,
                ["question_id", "doc_id"],
                coverage=~pl.col("coverage").is_between(*SIMILARITY_RANGE),
                kept=pl.col("kept") != should,
            ),
        ]
    )
    return rows_check(bad, rules_text(ALIGNMENT_RULES), "doc_id")


aligned_documents_llm = llm_accounting_check(key("aligned_documents"), **PARTS)
alignment_rejects_reasons = rejects_check(
    key("alignment_rejects"), steps.ALIGNMENT_REASONS, steps.REJECTS.keys, **PARTS
)

aspects_schema = table_check(
    key("aspects"),
    steps.ASPECT_SCHEMA,
    unique=["aspect_id"],
    not_null=["domain", "question_id", "aspect_id", "position", "text", "coverage", "origin"],
    **PARTS,
)

ASPECT_RULES = {
    "no_aligned_document": "its question has a kept aligned document (so it is a source question: alignment checks that)",
    "positions": "positions 1..n per question, at most max_aspects, ids <question>_a<position>",
    "coverage": "the documents cover it (coverage at least aspect_min_coverage)",
    "origin": f"origin in {', '.join(ASPECT_ORIGINS)}",
}


@dg.asset_check(
    asset=key("aspects"),
    name="decomposition",
    blocking=True,
    additional_ins={"aligned_documents": same_domain("aligned_documents")},
    description=rules_text(ASPECT_RULES),
    **PARTS,
)
def decomposition(
    aspects: pl.DataFrame, aligned_documents: pl.DataFrame, recor_settings: RecorSettings
) -> dg.AssetCheckResult:
    """Answer decomposition (3.2.1): each aspect is one turn's topic, in conversational order."""
    t = recor_settings.thresholds()
    bad = pl.concat(
        [
            missing(aspects, aligned_documents.filter(pl.col("kept")), ["question_id"], "no_aligned_document")
            .join(aspects.select("question_id", "aspect_id"), on="question_id")
            .select("aspect_id", "rule"),
            broken(
                aspects,
                ["aspect_id"],
                positions=(pl.col("position").rank("ordinal").over("question_id") != pl.col("position"))
                | (pl.len().over("question_id") > t.max_aspects)
                | (pl.col("aspect_id") != pl.format("{}_a{}", "question_id", "position")),
                coverage=pl.col("coverage") < t.aspect_min_coverage,
                origin=~pl.col("origin").is_in(ASPECT_ORIGINS),
            ),
        ]
    )
    return rows_check(bad, rules_text(ASPECT_RULES), "aspect_id")


aspects_llm = llm_accounting_check(
    key("aspects"), failed_items=lambda f: f.filter(pl.col("llm_suitable").is_null()), item_column="aspect_id", **PARTS
)
aspect_rejects_reasons = rejects_check(key("aspect_rejects"), steps.ASPECT_REASONS, steps.REJECTS.keys, **PARTS)

facts_schema = table_check(
    key("facts"),
    steps.FACT_SCHEMA,
    unique=["fact_id"],
    not_null=["domain", "question_id", "aspect_id", "fact_id", "fact", "similarity", "verified"],
    **PARTS,
)

FACT_RULES = {
    "unknown_aspect": "its aspect is in the aspects table, of the same question",
    "count": "at most max_facts per aspect, ids <aspect>_f<n>",
    "verified": "similarity at least fact_accept verifies, below fact_reject does not",
    "no_document": "a verified fact names the document that holds it",
}


@dg.asset_check(
    asset=key("facts"),
    name="verification",
    blocking=True,
    additional_ins={"aspects": same_domain("aspects")},
    description=rules_text(FACT_RULES),
    **PARTS,
)
def fact_verification(facts: pl.DataFrame, aspects: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Verified facts (3.2.1, 3.2.3) are the only content a turn's answer may state."""
    t = recor_settings.thresholds()
    bad = pl.concat(
        [
            missing(facts, aspects, ["question_id", "aspect_id"], "unknown_aspect")
            .join(facts.select("question_id", "aspect_id", "fact_id"), on=["question_id", "aspect_id"])
            .select("fact_id", "rule"),
            broken(
                facts,
                ["fact_id"],
                count=(pl.len().over("aspect_id") > t.max_facts)
                | ~pl.col("fact_id").str.starts_with(pl.col("aspect_id") + "_f"),
                verified=((pl.col("similarity") >= t.fact_accept) & ~pl.col("verified"))
                | ((pl.col("similarity") < t.fact_reject) & pl.col("verified")),
                no_document=pl.col("verified") & pl.col("doc_id").is_null(),
            ),
        ]
    )
    return rows_check(bad, rules_text(FACT_RULES), "fact_id")


facts_llm = llm_accounting_check(key("facts"), **PARTS)
fact_rejects_reasons = rejects_check(key("fact_rejects"), steps.FACT_REASONS, steps.REJECTS.keys, **PARTS)


# --- turns and conversations ----------------------------------------------------------------------

turns_schema = table_check(
    key("turns"),
    steps.TURN_SCHEMA,
    unique=["conversation_id", "turn_id"],
    not_null=[
        "domain",
        "conversation_id",
        "turn_id",
        "aspect_id",
        "query",
        "answer",
        "gold_doc_ids",
        "doc_scores",
        "question_origin",
        "answer_origin",
    ],
    **PARTS,
)

SEQUENCE_RULES = {
    "turn_ids": "turn ids 1..n per conversation, at most max_turns",
    "aspect": "one turn per aspect, an aspect of the conversation's question",
    "origin": f"question origin in {', '.join(QUESTION_ORIGINS)}, answer origin in {', '.join(ANSWER_ORIGINS)}",
    "no_facts": "the answer's verified facts listed",
}


@dg.asset_check(
    asset=key("turns"),
    name="turn_sequence",
    blocking=True,
    additional_ins={"aspects": same_domain("aspects")},
    description=rules_text(SEQUENCE_RULES),
    **PARTS,
)
def turn_sequence(turns: pl.DataFrame, aspects: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Turns follow the aspects' order, one per aspect, each answered from its facts (3.2.2)."""
    t = recor_settings.thresholds()
    ids = ["conversation_id", "turn_id"]
    by_question = aspects.select(pl.col("question_id").alias("conversation_id"), "aspect_id")
    bad = pl.concat(
        [
            missing(turns, by_question, ["conversation_id", "aspect_id"], "aspect")
            .join(turns.select(*ids, "aspect_id"), on=["conversation_id", "aspect_id"])
            .select(*ids, "rule"),
            broken(
                turns,
                ids,
                turn_ids=(pl.col("turn_id").rank("ordinal").over("conversation_id") != pl.col("turn_id"))
                | (pl.col("turn_id") > t.max_turns),
                aspect=pl.col("aspect_id").is_duplicated(),
                origin=~pl.col("question_origin").is_in(QUESTION_ORIGINS)
                | ~pl.col("answer_origin").is_in(ANSWER_ORIGINS),
                no_facts=pl.col("facts").list.len().fill_null(0) == 0,
            ),
        ]
    )
    return rows_check(bad.with_columns(pl.format("{}#{}", *ids).alias("turn")), rules_text(SEQUENCE_RULES), "turn")


def gold_problems(turns: pl.DataFrame, t: Thresholds) -> pl.DataFrame:
    """Each turn's gold documents against the method (3.2.2, ``rules.select_documents``): 1 to
    ``max_docs_per_turn`` distinct documents, each rated in the turn's ``doc_scores``, best
    score first, and with binding verdicts each scored above ``doc_threshold``."""
    rows = []
    for turn in turns.select("conversation_id", "turn_id", "gold_doc_ids", "doc_scores").iter_rows(named=True):
        gold, scores = turn["gold_doc_ids"] or [], json.loads(turn["doc_scores"] or "{}")
        score = [scores[d]["score"] for d in gold if d in scores]
        found = []
        if not 1 <= len(gold) <= t.max_docs_per_turn:
            found.append(f"{len(gold)} gold documents (needs 1-{t.max_docs_per_turn})")
        if len(set(gold)) < len(gold):
            found.append("a gold document repeated")
        if len(score) < len(gold):
            found.append("a gold document not rated")
        if score != sorted(score, reverse=True):
            found.append("not ranked by score")
        if t.binding_verdicts and any(s <= t.doc_threshold for s in score):
            found.append(f"a gold document scored at most {t.doc_threshold}")
        rows.extend({"turn": f"{turn['conversation_id']}#{turn['turn_id']}", "rule": f} for f in found)
    return pl.DataFrame(rows, schema={"turn": pl.String, "rule": pl.String})


@dg.asset_check(
    asset=key("turns"),
    name="gold_documents",
    blocking=True,
    description="1 to max_docs_per_turn distinct, rated gold documents per turn, best score first; with binding "
    "verdicts each above doc_threshold.",
    **PARTS,
)
def turn_gold_documents(turns: pl.DataFrame, recor_settings: RecorSettings, llm: LLMResource) -> dg.AssetCheckResult:
    """The gold documents are the benchmark's qrels: too many, or ones the judge did not
    rate above the threshold, make the retrieval metrics measure the wrong thing."""
    return rows_check(
        gold_problems(turns, recor_settings.build_thresholds(llm)), "gold documents per the method", "turn"
    )


@dg.asset_check(
    asset=key("turns"),
    name="gold_in_corpus",
    blocking=True,
    additional_ins={"corpus": same_domain("corpus")},
    description="Every gold document of every turn is in the domain's corpus.",
    **PARTS,
)
def turn_gold_in_corpus(turns: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A qrel outside the corpus can never be retrieved."""
    return rows_check(gold_outside(turns, corpus), "gold documents in the corpus", "turn")


turns_llm = llm_accounting_check(
    key("turns"),
    item_column="aspect_id",
    failed_items=lambda f: f.filter(pl.col("llm_on_aspect").is_null() | pl.col("llm_natural").is_null()),
    **PARTS,
)
turn_rejects_reasons = rejects_check(key("turn_rejects"), steps.TURN_REASONS, steps.REJECTS.keys, **PARTS)

conversations_schema = table_check(
    key("conversations"),
    CONVERSATION_SCHEMA,
    unique=["conversation_id"],
    not_null=["domain", "conversation_id", "num_turns", "valid", "problems"],
    **PARTS,
)

KNOWN_PROBLEM = "^(?:" + "|".join(CONVERSATION_PROBLEMS) + ")$"


def unknown_problems(problems: pl.Expr) -> pl.Expr:
    """True where a problems text holds a problem outside ``CONVERSATION_PROBLEMS``."""
    return (
        problems.str.split(PROBLEM_SEPARATOR)
        .list.eval((pl.element() != "") & ~pl.element().str.contains(KNOWN_PROBLEM))
        .list.any()
    )


VALIDATION_RULES = {
    "not_validated": "every conversation of the turns validated once",
    "num_turns": "its turns counted",
    "valid": "valid exactly when it has no problem",
    "length": f"a valid one has {rules.MIN_TURNS}-{rules.MAX_TURNS} turns",
    "unknown_problem": "problems from rules.conversation_problems and the coherence verdict",
}


@dg.asset_check(
    asset=key("conversations"),
    name="validation",
    blocking=True,
    additional_ins={"turns": same_domain("turns")},
    description=rules_text(VALIDATION_RULES),
    **PARTS,
)
def conversation_validation(
    conversations: pl.DataFrame, turns: pl.DataFrame, recor_settings: RecorSettings
) -> dg.AssetCheckResult:
    """Conversation validation (3.2.3) decides what the benchmark releases."""
    t = recor_settings.thresholds()
    counted = turns.group_by("conversation_id").agg(pl.len().cast(pl.Int32).alias("turns"))
    joined = conversations.join(counted, on="conversation_id", how="left")
    bad = pl.concat(
        [
            missing(counted, conversations, ["conversation_id"], "not_validated"),
            broken(
                joined,
                ["conversation_id"],
                num_turns=pl.col("num_turns") != pl.col("turns").fill_null(0),
                valid=pl.col("valid") != (pl.col("problems") == ""),
                length=pl.col("valid") & ~pl.col("num_turns").is_between(t.min_turns, t.max_turns),
                unknown_problem=unknown_problems(pl.col("problems")),
            ),
        ]
    )
    return rows_check(bad, rules_text(VALIDATION_RULES), "conversation_id")


conversations_llm = llm_accounting_check(
    key("conversations"),
    item_column="conversation_id",
    failed_items=lambda f: f.filter(pl.col("coherent").is_null() & (pl.col("problems") == "")),
    **PARTS,
)
conversation_rejects_reasons = rejects_check(
    key("conversation_rejects"), steps.CONVERSATION_REASONS, steps.REJECTS.keys, **PARTS
)


@dg.asset_check(
    asset=key("conversation_rejects"),
    name="problems",
    additional_ins={"conversations": same_domain("conversations")},
    description="The rejected conversations are the invalid ones, each with its problems as the detail.",
    **PARTS,
)
def conversation_reject_problems(
    conversation_rejects: pl.DataFrame, conversations: pl.DataFrame
) -> dg.AssetCheckResult:
    """The detail is the only record of why a conversation did not reach the benchmark."""
    invalid = conversations.filter(~pl.col("valid")).select(
        pl.col("conversation_id").alias("item"), pl.col("problems").alias("detail")
    )
    rejected = conversation_rejects.select("item", "detail")
    bad = pl.concat(
        [
            rejected.join(invalid, on=["item", "detail"], how="anti").with_columns(
                pl.lit("not_an_invalid_conversation").alias("rule")
            ),
            invalid.join(rejected, on=["item", "detail"], how="anti").with_columns(
                pl.lit("not_rejected").alias("rule")
            ),
        ]
    )
    return rows_check(bad, "rejects and invalid conversations agree, problems as the detail", "item")


step_checks = [
    hard_negatives_schema,
    mined_negatives,
    hard_negatives_llm,
    negative_rejects_reasons,
    corpus_schema,
    corpus_gold,
    aligned_documents_schema,
    alignment_rule,
    aligned_documents_llm,
    alignment_rejects_reasons,
    aspects_schema,
    decomposition,
    aspects_llm,
    aspect_rejects_reasons,
    facts_schema,
    fact_verification,
    facts_llm,
    fact_rejects_reasons,
    turns_schema,
    turn_sequence,
    turn_gold_documents,
    turn_gold_in_corpus,
    turns_llm,
    turn_rejects_reasons,
    conversations_schema,
    conversation_validation,
    conversations_llm,
    conversation_rejects_reasons,
    conversation_reject_problems,
]
