"""Data-quality checks of RECOR's construction assets: every table's shape, the references
between tables, the method's counts and ranges (paper section 3), every rejects table's
vocabulary and the LLM steps' accounting. Blocking on the construction tables, where a bad
table must not flow on; the quality analysis and the reports only report."""

import json
import re

import dagster as dg
import polars as pl

from assets.common.text import normalize
from assets.partitions import DOMAINS, domain_partitions
from assets.recor import rules, steps
from assets.recor import sources as recor_sources
from assets.recor.assets import wiring
from assets.recor.rules import gold_outside, word_overlap
from assets.recor.settings import RecorSettings, Thresholds
from checks.factories import (
    WARN,
    broken,
    llm_accounting_check,
    missing,
    problems_result,
    rejects_check,
    rows_check,
    table_check,
)
from resources.llm import LLMResource

PARTS = dict(partitions_def=domain_partitions)


key = wiring.key


def _in(name: str) -> dg.AssetIn:
    """Another RECOR table of the same domain (the identity mapping of one partitions definition)."""
    return dg.AssetIn(key=key(name))


def _text(rules_: dict[str, str]) -> str:
    return "; ".join(f"{name}: {what}" for name, what in rules_.items())


# --- vocabularies the steps write ------------------------------------------------------------

# What ``rules.conversation_problems`` and the coherence verdict write into a conversation's
# problems (and its reject's detail), as patterns; ``steps.conversations`` joins them with "; ".
CONVERSATION_PROBLEMS = (r"\d+ turns \(needs \d+-\d+\)", re.escape("a turn has no selected document"),
                         re.escape("every turn uses the same documents"), re.escape("judged incoherent"))
PROBLEM_SEPARATOR = "; "

# Other closed sets the steps write.
SOURCE_KINDS = ("bright", "stackexchange")
DOCUMENT_ROLES = ("positive", "negative", "pool")
CORPUS_ROLES = ("positive", "negative")
ASPECT_ORIGINS = ("llm", "answer_segment")
QUESTION_ORIGINS = ("first_turn", "follow_up", "question_for_point")
ANSWER_ORIGINS = ("model", "facts")
# The judge's 1-5 scale (``steps.conversation_scores``) and a normalized entropy's range.
SCORE_RANGE = (1.0, 5.0)
ENTROPY_RANGE = (0.0, 1.0)
# Cosine similarity of unit vectors, with room for float error.
SIMILARITY_RANGE = (-1.0 - 1e-6, 1.0 + 1e-6)


# --- schemas: what the steps write (``steps`` and ``sources`` build these frames) -----------------

ALIGNED_SCHEMA = {"domain": pl.String, "question_id": pl.String, "doc_id": pl.String, "llm_supports": pl.Boolean,
                  "coverage": pl.Float64, "kept": pl.Boolean}
ASPECT_SCHEMA = {"domain": pl.String, "question_id": pl.String, "aspect_id": pl.String, "position": pl.Int32,
                 "title": pl.String, "text": pl.String, "coverage": pl.Float64, "origin": pl.String, "llm_suitable": pl.Boolean}
FACT_SCHEMA = {"domain": pl.String, "question_id": pl.String, "aspect_id": pl.String, "fact_id": pl.String, "fact": pl.String,
               "similarity": pl.Float64, "doc_id": pl.String, "llm_supports": pl.Boolean, "verified": pl.Boolean}
CONVERSATION_SCHEMA = {"domain": pl.String, "conversation_id": pl.String, "num_turns": pl.Int32, "coherent": pl.Boolean,
                       "valid": pl.Boolean, "problems": pl.String}
BENCHMARK_SCHEMA = {**steps.TURN_SCHEMA, "qid": pl.String}
SCORE_SCHEMA = {"domain": pl.String, "conversation_id": pl.String, "turns": pl.Int64, **{d: pl.Float64 for d in steps.DIMENSIONS}}
LABEL_SCHEMA = {"domain": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32, "dependency": pl.String, "pattern": pl.String}
SCORE_COLUMNS = list(steps.DIMENSION_ABBREVIATIONS.values())
REPORT_SCHEMA = {"domain": pl.String, "#C": pl.Int64, "#T": pl.Int64, **{c: pl.Float64 for c in SCORE_COLUMNS},
                 "DE": pl.Float64, "QE": pl.Float64}
# The averages are null for a domain that kept no conversation: typed only when some domain did.
STATISTICS_SCHEMA = {"domain": pl.String, "#Conv.": pl.Int64, "#Turns": pl.Int64, "Avg #T": None, "Avg #A": None,
                     "Avg #D": None, "positives": pl.Int64, "negatives": pl.Int64}


# --- sources ---------------------------------------------------------------------------------------


@dg.asset_check(asset=key("source_files"), name="observed_versions",
                description="Every domain's files were observed, and are what was observed (else observe again).")
def observed_versions(context: dg.AssetCheckExecutionContext, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """An observable source has no stored value: the check reads each domain's latest
    observation from the instance and compares its data version with the files' hash now. A
    domain never observed, or whose files changed since, has partitions whose staleness the
    UI cannot tell. Unpartitioned because the observation (``recor_observe``) covers every
    domain in one run."""
    problems = []
    for domain in DOMAINS:
        records = context.instance.fetch_observations(
            dg.AssetRecordsFilter(asset_key=key("source_files"), asset_partitions=[domain]), limit=1).records
        observed = records[0].asset_observation.data_version if records else None
        now = recor_settings.fingerprint(domain)
        if observed is None:
            problems.append(f"{domain}: never observed")
        elif observed != now:
            problems.append(f"{domain}: observed {observed}, the files are now {now}")
    return problems_result(problems, len(DOMAINS), severity=WARN)


source_questions_schema = table_check(key("source_questions"), recor_sources.QUESTION_SCHEMA, unique=["question_id"],
                                      not_null=["domain", "source", "question_id", "query", "answer", "gold_ids"], **PARTS)

QUESTION_RULES = {"source": f"one of {', '.join(SOURCE_KINDS)}", "domain_prefix": "the id starts with its domain",
                  "no_gold": "at least one gold document", "gold_not_positive": "every gold id is a positive source document"}


@dg.asset_check(asset=key("source_questions"), name="gold_documents", blocking=True, additional_ins={"source_documents": _in("source_documents")},
                description=_text(QUESTION_RULES), **PARTS)
def source_gold_documents(source_questions: pl.DataFrame, source_documents: pl.DataFrame) -> dg.AssetCheckResult:
    """A question's gold documents are what every later step aligns, decomposes and retrieves."""
    bad = broken(source_questions, ["question_id"],
                 source=~pl.col("source").is_in(SOURCE_KINDS),
                 domain_prefix=~pl.col("question_id").str.starts_with(pl.col("domain") + "_"),
                 no_gold=pl.col("gold_ids").list.len().fill_null(0) == 0)
    gold = source_questions.select("question_id", pl.col("gold_ids").alias("doc_id")).explode("doc_id").drop_nulls()
    positives = source_documents.filter(pl.col("role") == "positive")
    dangling = missing(gold, positives, ["doc_id"], "gold_not_positive")
    dangling = gold.join(dangling, on="doc_id").select("question_id", "rule").unique()
    return rows_check(pl.concat([bad, dangling]), _text(QUESTION_RULES), "question_id")


source_documents_schema = table_check(key("source_documents"), recor_sources.DOCUMENT_SCHEMA, unique=["doc_id"],
                                      not_null=["domain", "doc_id", "content", "role"], **PARTS)


@dg.asset_check(asset=key("source_documents"), name="roles", blocking=True, description=f"Roles from {', '.join(DOCUMENT_ROLES)}; no empty content.",
                **PARTS)
def source_document_roles(source_documents: pl.DataFrame) -> dg.AssetCheckResult:
    """The role decides what reaches the corpus: positives and negatives do, the mining pool does not."""
    bad = broken(source_documents, ["doc_id"], role=~pl.col("role").is_in(DOCUMENT_ROLES),
                 empty=pl.col("content").str.strip_chars().str.len_chars() == 0)
    return rows_check(bad, f"role in {DOCUMENT_ROLES}; non-empty content", "doc_id")


source_rejects_reasons = rejects_check(key("source_rejects"), recor_sources.SOURCE_REASONS, recor_sources.REJECTS.keys, **PARTS)


# --- hard negatives and the corpus ---------------------------------------------------------------

hard_negatives_schema = table_check(key("hard_negatives"), recor_sources.DOCUMENT_SCHEMA, unique=["doc_id"],
                                    not_null=["domain", "doc_id", "content", "role", "question_id"], **PARTS)

NEGATIVE_RULES = {"role": "role negative", "question": "mined for a source question",
                  "overlap": "word overlap with every positive at most negative_overlap",
                  "duplicate": "no two mined passages alike"}


@dg.asset_check(asset=key("hard_negatives"), name="mined", blocking=True,
                additional_ins={"source_questions": _in("source_questions"), "source_documents": _in("source_documents")},
                description=_text(NEGATIVE_RULES), **PARTS)
def mined_negatives(hard_negatives: pl.DataFrame, source_questions: pl.DataFrame, source_documents: pl.DataFrame,
                    recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """A mined passage close to a positive would be a negative that answers (3.1.2)."""
    positives = source_documents.filter(pl.col("role") == "positive")["content"].to_list()
    closest = [max((word_overlap(text, p) for p in positives), default=0.0) for text in hard_negatives["content"]]
    mined = hard_negatives.with_columns(pl.Series("closest", closest, pl.Float64),
                                        pl.col("content").map_elements(normalize, return_dtype=pl.String).alias("normalized"))
    unknown = missing(mined, source_questions, ["question_id"], "question").join(
        mined.select("doc_id", "question_id"), on="question_id").select("doc_id", "rule")
    bad = pl.concat([broken(mined, ["doc_id"], role=pl.col("role") != "negative",
                            overlap=pl.col("closest") > recor_settings.negative_overlap,
                            duplicate=pl.col("normalized").is_duplicated()), unknown])
    return rows_check(bad, _text(NEGATIVE_RULES), "doc_id")


hard_negatives_llm = llm_accounting_check(key("hard_negatives"), **PARTS)
negative_rejects_reasons = rejects_check(key("negative_rejects"), steps.NEGATIVE_REASONS, steps.REJECTS.keys, **PARTS)

corpus_schema = table_check(key("corpus"), recor_sources.DOCUMENT_SCHEMA, unique=["doc_id"],
                            not_null=["domain", "doc_id", "content", "role"], **PARTS)


@dg.asset_check(asset=key("corpus"), name="gold_in_corpus", blocking=True, additional_ins={"source_questions": _in("source_questions")},
                description=f"Roles from {', '.join(CORPUS_ROLES)} (no pool); every source question's gold documents are in it.",
                **PARTS)
def corpus_gold(corpus: pl.DataFrame, source_questions: pl.DataFrame) -> dg.AssetCheckResult:
    """The corpus is what the evaluation retrieves from: a missing gold document makes a
    turn unanswerable, a pool document is a candidate that was never screened."""
    gold = source_questions.select(pl.col("gold_ids").alias("doc_id")).explode("doc_id").drop_nulls().unique()
    bad = pl.concat([broken(corpus, ["doc_id"], role=~pl.col("role").is_in(CORPUS_ROLES)),
                     missing(gold, corpus, ["doc_id"], "gold_missing")])
    return rows_check(bad, f"role in {CORPUS_ROLES}; every gold id in the corpus", "doc_id")


# --- decomposition and verification ------------------------------------------------------------------

aligned_documents_schema = table_check(key("aligned_documents"), ALIGNED_SCHEMA, unique=["question_id", "doc_id"],
                                       not_null=["domain", "question_id", "doc_id", "coverage", "kept"], **PARTS)

ALIGNMENT_RULES = {"not_gold": "each row is a gold document of its question",
                   "coverage": "coverage a cosine similarity",
                   "kept": "kept when the coverage reaches the minimum or a binding judge found the answer in it, else not"}


@dg.asset_check(asset=key("aligned_documents"), name="alignment", blocking=True, additional_ins={"source_questions": _in("source_questions")},
                description=_text(ALIGNMENT_RULES), **PARTS)
def alignment_rule(aligned_documents: pl.DataFrame, source_questions: pl.DataFrame, recor_settings: RecorSettings,
                   llm: LLMResource) -> dg.AssetCheckResult:
    """Document-answer alignment (3.2.1) decides which documents the aspects and facts may use."""
    t = recor_settings.build_thresholds(llm)
    gold = source_questions.select("question_id", pl.col("gold_ids").alias("doc_id")).explode("doc_id")
    should = (pl.col("coverage") >= t.alignment_min_coverage) | (pl.col("llm_supports").fill_null(False) & t.binding_verdicts)
    bad = pl.concat([missing(aligned_documents, gold, ["question_id", "doc_id"], "not_gold"),
                     broken(aligned_documents, ["question_id", "doc_id"], coverage=~pl.col("coverage").is_between(*SIMILARITY_RANGE),
                            kept=pl.col("kept") != should)])
    return rows_check(bad, _text(ALIGNMENT_RULES), "doc_id")


aligned_documents_llm = llm_accounting_check(key("aligned_documents"), **PARTS)
alignment_rejects_reasons = rejects_check(key("alignment_rejects"), steps.ALIGNMENT_REASONS, steps.REJECTS.keys, **PARTS)

aspects_schema = table_check(key("aspects"), ASPECT_SCHEMA, unique=["aspect_id"],
                             not_null=["domain", "question_id", "aspect_id", "position", "text", "coverage", "origin"], **PARTS)

ASPECT_RULES = {"no_aligned_document": "its question has a kept aligned document (so it is a source question: alignment checks that)",
                "positions": "positions 1..n per question, at most max_aspects, ids <question>_a<position>",
                "coverage": "the documents cover it (coverage at least aspect_min_coverage)",
                "origin": f"origin in {', '.join(ASPECT_ORIGINS)}"}


@dg.asset_check(asset=key("aspects"), name="decomposition", blocking=True, additional_ins={"aligned_documents": _in("aligned_documents")},
                description=_text(ASPECT_RULES), **PARTS)
def decomposition(aspects: pl.DataFrame, aligned_documents: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Answer decomposition (3.2.1): each aspect is one turn's topic, in conversational order."""
    t = recor_settings.thresholds()
    bad = pl.concat([
        missing(aspects, aligned_documents.filter(pl.col("kept")), ["question_id"], "no_aligned_document").join(
            aspects.select("question_id", "aspect_id"), on="question_id").select("aspect_id", "rule"),
        broken(aspects, ["aspect_id"],
               positions=(pl.col("position").rank("ordinal").over("question_id") != pl.col("position"))
               | (pl.len().over("question_id") > t.max_aspects) | (pl.col("aspect_id") != pl.format("{}_a{}", "question_id", "position")),
               coverage=pl.col("coverage") < t.aspect_min_coverage,
               origin=~pl.col("origin").is_in(ASPECT_ORIGINS))])
    return rows_check(bad, _text(ASPECT_RULES), "aspect_id")


aspects_llm = llm_accounting_check(key("aspects"), failed_items=lambda f: f.filter(pl.col("llm_suitable").is_null()),
                                   item_column="aspect_id", **PARTS)
aspect_rejects_reasons = rejects_check(key("aspect_rejects"), steps.ASPECT_REASONS, steps.REJECTS.keys, **PARTS)

facts_schema = table_check(key("facts"), FACT_SCHEMA, unique=["fact_id"],
                           not_null=["domain", "question_id", "aspect_id", "fact_id", "fact", "similarity", "verified"], **PARTS)

FACT_RULES = {"unknown_aspect": "its aspect is in the aspects table, of the same question",
              "count": "at most max_facts per aspect, ids <aspect>_f<n>",
              "verified": "similarity at least fact_accept verifies, below fact_reject does not",
              "no_document": "a verified fact names the document that holds it"}


@dg.asset_check(asset=key("facts"), name="verification", blocking=True, additional_ins={"aspects": _in("aspects")},
                description=_text(FACT_RULES), **PARTS)
def fact_verification(facts: pl.DataFrame, aspects: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Verified facts (3.2.1, 3.2.3) are the only content a turn's answer may state."""
    t = recor_settings.thresholds()
    bad = pl.concat([
        missing(facts, aspects, ["question_id", "aspect_id"], "unknown_aspect").join(
            facts.select("question_id", "aspect_id", "fact_id"), on=["question_id", "aspect_id"]).select("fact_id", "rule"),
        broken(facts, ["fact_id"],
               count=(pl.len().over("aspect_id") > t.max_facts)
               | ~pl.col("fact_id").str.starts_with(pl.col("aspect_id") + "_f"),
               verified=((pl.col("similarity") >= t.fact_accept) & ~pl.col("verified"))
               | ((pl.col("similarity") < t.fact_reject) & pl.col("verified")),
               no_document=pl.col("verified") & pl.col("doc_id").is_null())])
    return rows_check(bad, _text(FACT_RULES), "fact_id")


facts_llm = llm_accounting_check(key("facts"), **PARTS)
fact_rejects_reasons = rejects_check(key("fact_rejects"), steps.FACT_REASONS, steps.REJECTS.keys, **PARTS)


# --- turns and conversations ----------------------------------------------------------------------

turns_schema = table_check(key("turns"), steps.TURN_SCHEMA, unique=["conversation_id", "turn_id"],
                           not_null=["domain", "conversation_id", "turn_id", "aspect_id", "query", "answer", "gold_doc_ids",
                                     "doc_scores", "question_origin", "answer_origin"], **PARTS)

SEQUENCE_RULES = {"turn_ids": "turn ids 1..n per conversation, at most max_turns",
                  "aspect": "one turn per aspect, an aspect of the conversation's question",
                  "origin": f"question origin in {', '.join(QUESTION_ORIGINS)}, answer origin in {', '.join(ANSWER_ORIGINS)}",
                  "no_facts": "the answer's verified facts listed"}


@dg.asset_check(asset=key("turns"), name="turn_sequence", blocking=True, additional_ins={"aspects": _in("aspects")},
                description=_text(SEQUENCE_RULES), **PARTS)
def turn_sequence(turns: pl.DataFrame, aspects: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Turns follow the aspects' order, one per aspect, each answered from its facts (3.2.2)."""
    t = recor_settings.thresholds()
    ids = ["conversation_id", "turn_id"]
    by_question = aspects.select(pl.col("question_id").alias("conversation_id"), "aspect_id")
    bad = pl.concat([
        missing(turns, by_question, ["conversation_id", "aspect_id"], "aspect").join(
            turns.select(*ids, "aspect_id"), on=["conversation_id", "aspect_id"]).select(*ids, "rule"),
        broken(turns, ids,
               turn_ids=(pl.col("turn_id").rank("ordinal").over("conversation_id") != pl.col("turn_id")) | (pl.col("turn_id") > t.max_turns),
               aspect=pl.col("aspect_id").is_duplicated(),
               origin=~pl.col("question_origin").is_in(QUESTION_ORIGINS) | ~pl.col("answer_origin").is_in(ANSWER_ORIGINS),
               no_facts=pl.col("facts").list.len().fill_null(0) == 0)])
    return rows_check(bad.with_columns(pl.format("{}#{}", *ids).alias("turn")), _text(SEQUENCE_RULES), "turn")


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


@dg.asset_check(asset=key("turns"), name="gold_documents", blocking=True,
                description="1 to max_docs_per_turn distinct, rated gold documents per turn, best score first; with binding "
                            "verdicts each above doc_threshold.", **PARTS)
def turn_gold_documents(turns: pl.DataFrame, recor_settings: RecorSettings, llm: LLMResource) -> dg.AssetCheckResult:
    """The gold documents are the benchmark's qrels: too many, or ones the judge did not
    rate above the threshold, make the retrieval metrics measure the wrong thing."""
    return rows_check(gold_problems(turns, recor_settings.build_thresholds(llm)), "gold documents per the method", "turn")


@dg.asset_check(asset=key("turns"), name="gold_in_corpus", blocking=True, additional_ins={"corpus": _in("corpus")},
                description="Every gold document of every turn is in the domain's corpus.", **PARTS)
def turn_gold_in_corpus(turns: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """A qrel outside the corpus can never be retrieved."""
    return rows_check(gold_outside(turns, corpus), "gold documents in the corpus", "turn")


turns_llm = llm_accounting_check(key("turns"), item_column="aspect_id",
                                 failed_items=lambda f: f.filter(pl.col("llm_on_aspect").is_null() | pl.col("llm_natural").is_null()),
                                 **PARTS)
turn_rejects_reasons = rejects_check(key("turn_rejects"), steps.TURN_REASONS, steps.REJECTS.keys, **PARTS)

conversations_schema = table_check(key("conversations"), CONVERSATION_SCHEMA, unique=["conversation_id"],
                                   not_null=["domain", "conversation_id", "num_turns", "valid", "problems"], **PARTS)

KNOWN_PROBLEM = "^(?:" + "|".join(CONVERSATION_PROBLEMS) + ")$"


def unknown_problems(problems: pl.Expr) -> pl.Expr:
    """True where a problems text holds a problem outside ``CONVERSATION_PROBLEMS``."""
    return problems.str.split(PROBLEM_SEPARATOR).list.eval(
        (pl.element() != "") & ~pl.element().str.contains(KNOWN_PROBLEM)).list.any()


VALIDATION_RULES = {"not_validated": "every conversation of the turns validated once", "num_turns": "its turns counted",
                    "valid": "valid exactly when it has no problem", "length": f"a valid one has {rules.MIN_TURNS}-{rules.MAX_TURNS} turns",
                    "unknown_problem": "problems from rules.conversation_problems and the coherence verdict"}


@dg.asset_check(asset=key("conversations"), name="validation", blocking=True, additional_ins={"turns": _in("turns")},
                description=_text(VALIDATION_RULES), **PARTS)
def conversation_validation(conversations: pl.DataFrame, turns: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Conversation validation (3.2.3) decides what the benchmark releases."""
    t = recor_settings.thresholds()
    counted = turns.group_by("conversation_id").agg(pl.len().cast(pl.Int32).alias("turns"))
    joined = conversations.join(counted, on="conversation_id", how="left")
    bad = pl.concat([missing(counted, conversations, ["conversation_id"], "not_validated"),
                     broken(joined, ["conversation_id"],
                            num_turns=pl.col("num_turns") != pl.col("turns").fill_null(0),
                            valid=pl.col("valid") != (pl.col("problems") == ""),
                            length=pl.col("valid") & ~pl.col("num_turns").is_between(t.min_turns, t.max_turns),
                            unknown_problem=unknown_problems(pl.col("problems")))])
    return rows_check(bad, _text(VALIDATION_RULES), "conversation_id")


conversations_llm = llm_accounting_check(key("conversations"), item_column="conversation_id",
                                         failed_items=lambda f: f.filter(pl.col("coherent").is_null() & (pl.col("problems") == "")),
                                         **PARTS)
conversation_rejects_reasons = rejects_check(key("conversation_rejects"), steps.CONVERSATION_REASONS, steps.REJECTS.keys, **PARTS)


@dg.asset_check(asset=key("conversation_rejects"), name="problems", additional_ins={"conversations": _in("conversations")},
                description="The rejected conversations are the invalid ones, each with its problems as the detail.", **PARTS)
def conversation_reject_problems(conversation_rejects: pl.DataFrame, conversations: pl.DataFrame) -> dg.AssetCheckResult:
    """The detail is the only record of why a conversation did not reach the benchmark."""
    invalid = conversations.filter(~pl.col("valid")).select(pl.col("conversation_id").alias("item"), pl.col("problems").alias("detail"))
    rejected = conversation_rejects.select("item", "detail")
    bad = pl.concat([rejected.join(invalid, on=["item", "detail"], how="anti").with_columns(pl.lit("not_an_invalid_conversation").alias("rule")),
                     invalid.join(rejected, on=["item", "detail"], how="anti").with_columns(pl.lit("not_rejected").alias("rule"))])
    return rows_check(bad, "rejects and invalid conversations agree, problems as the detail", "item")


# --- the benchmark and its quality analysis -------------------------------------------------------

benchmark_schema = table_check(key("benchmark"), BENCHMARK_SCHEMA, unique=["qid"],
                               not_null=["domain", "conversation_id", "turn_id", "query", "answer", "gold_doc_ids", "qid"], **PARTS)

BENCHMARK_RULES = {"length": f"{rules.MIN_TURNS}-{rules.MAX_TURNS} turns per conversation, turn ids 1..n",
                   "documents": "1 to max_docs_per_turn gold documents per turn",
                   "qid": "qid <conversation>_turn_<turn>, as the published retrieval scripts",
                   "not_valid": "only valid conversations, with every turn"}


@dg.asset_check(asset=key("benchmark"), name="conversations", blocking=True, additional_ins={"conversations": _in("conversations")},
                description=_text(BENCHMARK_RULES), **PARTS)
def benchmark_conversations(benchmark: pl.DataFrame, conversations: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """The released benchmark holds the method's counts (3-12 turns, at most 5 documents per
    turn) and exactly the conversations that passed validation."""
    t = recor_settings.thresholds()
    valid = conversations.filter(pl.col("valid")).select("conversation_id", pl.col("num_turns").cast(pl.Int64))
    per = benchmark.with_columns(pl.len().over("conversation_id").alias("turns"))
    joined = per.join(valid, on="conversation_id", how="left")
    bad = pl.concat([
        broken(joined, ["qid"],
               length=~pl.col("turns").is_between(t.min_turns, t.max_turns)
               | (pl.col("turn_id").rank("ordinal").over("conversation_id") != pl.col("turn_id")),
               documents=~pl.col("gold_doc_ids").list.len().is_between(1, t.max_docs_per_turn),
               qid=pl.col("qid") != pl.format("{}_turn_{}", "conversation_id", "turn_id"),
               not_valid=pl.col("num_turns").is_null() | (pl.col("num_turns") != pl.col("turns"))),
        missing(valid, benchmark, ["conversation_id"], "not_valid").select(pl.col("conversation_id").alias("qid"), "rule")])
    return rows_check(bad, _text(BENCHMARK_RULES), "qid")


@dg.asset_check(asset=key("benchmark"), name="gold_in_corpus", blocking=True, additional_ins={"corpus": _in("corpus")},
                description="Every qrel of the release names a document of the released corpus.", **PARTS)
def benchmark_gold_in_corpus(benchmark: pl.DataFrame, corpus: pl.DataFrame) -> dg.AssetCheckResult:
    """The release's qrels and documents files are written from these two tables."""
    return rows_check(gold_outside(benchmark, corpus), "gold documents in the corpus", "turn")


quality_scores_schema = table_check(key("quality_scores"), SCORE_SCHEMA, unique=["conversation_id"],
                                    not_null=["domain", "conversation_id", "turns"], blocking=False, **PARTS)


def covers_benchmark(frame: pl.DataFrame, benchmark: pl.DataFrame, on: list[str]) -> pl.DataFrame:
    """Rows of ``frame`` (by ``on``) that the benchmark lacks, and benchmark rows ``frame`` lacks."""
    ours, theirs = frame.select(on).unique(), benchmark.select(on).unique()
    return pl.concat([missing(ours, theirs, on, "not_in_benchmark"), missing(theirs, ours, on, "not_analysed")])


@dg.asset_check(asset=key("quality_scores"), name="scores", additional_ins={"benchmark": _in("benchmark")},
                description=f"Each benchmark conversation scored once, with its turns; scores in {SCORE_RANGE[0]:g}-{SCORE_RANGE[1]:g} "
                            "(null when the judge named no number).", **PARTS)
def quality_score_range(quality_scores: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    """The judge's 1-5 scale (appendix G); Table 31 averages these."""
    turns = benchmark.group_by("conversation_id").agg(pl.len().cast(pl.Int64).alias("expected"))
    joined = quality_scores.join(turns, on="conversation_id", how="left")
    out_of_range = pl.any_horizontal(~pl.col(d).is_between(*SCORE_RANGE) for d in steps.DIMENSIONS)
    bad = pl.concat([broken(joined, ["conversation_id"], scale=out_of_range, turns=pl.col("turns") != pl.col("expected")),
                     covers_benchmark(quality_scores, benchmark, ["conversation_id"])])
    return rows_check(bad, f"scores in {SCORE_RANGE}; every benchmark conversation scored with its turn count", "conversation_id")


# The scores and the labels are asked in one step; each output carries its own calls' accounting.
quality_scores_llm = llm_accounting_check(key("quality_scores"), item_column="conversation_id",
                                          failed_items=lambda f: f.filter(pl.any_horizontal(pl.col(d).is_null() for d in steps.DIMENSIONS)),
                                          **PARTS)
turn_labels_llm = llm_accounting_check(key("turn_labels"), item_column="turn",
                                       failed_items=lambda f: f.filter(pl.col("dependency").is_null() | pl.col("pattern").is_null())
                                       .select(pl.format("{} turn {}", "conversation_id", "turn_id").alias("turn")), **PARTS)

turn_labels_schema = table_check(key("turn_labels"), LABEL_SCHEMA, unique=["conversation_id", "turn_id"],
                                 not_null=["domain", "conversation_id", "turn_id"], blocking=False, **PARTS)


@dg.asset_check(asset=key("turn_labels"), name="labels", additional_ins={"benchmark": _in("benchmark")},
                description="Each benchmark turn labeled once; dependency types and question patterns from RECOR's classes "
                            "(null when the reply named none).", **PARTS)
def turn_label_classes(turn_labels: pl.DataFrame, benchmark: pl.DataFrame) -> dg.AssetCheckResult:
    """Tables 29 and 30 count these labels, and their entropies are normalized by the number of classes."""
    ids = ["conversation_id", "turn_id"]
    bad = pl.concat([broken(turn_labels, ids, dependency=~pl.col("dependency").is_in(rules.DEPENDENCY_TYPES),
                            pattern=~pl.col("pattern").is_in(rules.QUESTION_PATTERNS)),
                     covers_benchmark(turn_labels, benchmark, ids)])
    return rows_check(bad.with_columns(pl.format("{}#{}", *ids).alias("turn")),
                      "labels from rules.DEPENDENCY_TYPES and rules.QUESTION_PATTERNS; every benchmark turn labeled", "turn")


# --- the reports (unpartitioned, over the materialized domains) --------------------------------------

quality_report_schema = table_check(key("quality_report"), REPORT_SCHEMA, unique=["domain"], not_null=["domain", "#C", "#T"],
                                    blocking=False)

REPORT_RULES = {"domain": "a RECOR domain", "scores": f"mean scores in {SCORE_RANGE[0]:g}-{SCORE_RANGE[1]:g}",
                "entropy": f"DE and QE in {ENTROPY_RANGE[0]:g}-{ENTROPY_RANGE[1]:g}",
                "n/a": "DE (QE) null exactly where no turn of the domain has a dependency type (question pattern)",
                "turns": f"#T between {rules.MIN_TURNS} and {rules.MAX_TURNS} times #C"}


@dg.asset_check(asset=key("quality_report"), name="ranges", description=_text(REPORT_RULES),
                additional_ins={"turn_labels": wiring.materialized("turn_labels")})
def quality_report_ranges(quality_report: pl.DataFrame, turn_labels: pl.DataFrame) -> dg.AssetCheckResult:
    """Table 31's values within what the judge's scale and a normalized entropy allow; an
    entropy with no labelled turn is undefined (n/a), never 0."""
    shorts = [short for _, short, _ in rules.LABELS.values()]
    labelled = turn_labels.group_by("domain").agg(pl.col(column).count().alias(f"labelled for {short}")
                                                  for column, (_, short, _) in rules.LABELS.items())
    report = quality_report.join(labelled, on="domain", how="left")
    bad = broken(report, ["domain"], domain=~pl.col("domain").is_in(DOMAINS),
                 scores=pl.any_horizontal(~pl.col(c).is_between(*SCORE_RANGE) for c in SCORE_COLUMNS),
                 entropy=~pl.col("DE").is_between(*ENTROPY_RANGE) | ~pl.col("QE").is_between(*ENTROPY_RANGE),
                 **{"n/a": pl.any_horizontal(pl.col(short).is_null() != (pl.col(f"labelled for {short}").fill_null(0) == 0)
                                             for short in shorts)},
                 turns=~pl.col("#T").is_between(pl.col("#C") * rules.MIN_TURNS, pl.col("#C") * rules.MAX_TURNS))
    return rows_check(bad, _text(REPORT_RULES), "domain")


statistics_schema = table_check(key("statistics"), STATISTICS_SCHEMA, unique=["domain"],
                                not_null=["domain", "#Conv.", "#Turns", "positives", "negatives"], blocking=False)

STATISTICS_RULES = {"domain": "RECOR's domains, in their order", "average": "Avg #T is #Turns over #Conv.",
                    "turns": f"Avg #T in {rules.MIN_TURNS}-{rules.MAX_TURNS}, Avg #A at least Avg #T",
                    "documents": "Avg #D in 1-max_docs_per_turn",
                    "empty": "a domain without conversations has no turns and no averages",
                    "positives": "every built domain has positive documents"}


@dg.asset_check(asset=key("statistics"), name="table_2", description=_text(STATISTICS_RULES))
def statistics_rules(statistics: pl.DataFrame, recor_settings: RecorSettings) -> dg.AssetCheckResult:
    """Table 2's numbers follow from the method's counts: 3-12 turns, one aspect per turn at
    least, at most 5 documents per turn."""
    t = recor_settings.thresholds()
    built = pl.col("#Conv.") > 0
    position = pl.col("domain").replace_strict({d: i for i, d in enumerate(DOMAINS)}, default=None, return_dtype=pl.Int64)
    bad = broken(statistics, ["domain"], domain=position.is_null() | (position.diff() <= 0),
                 average=built & ((pl.col("Avg #T") - pl.col("#Turns") / pl.col("#Conv.")).abs() > 1e-9),
                 turns=built & (~pl.col("Avg #T").is_between(t.min_turns, t.max_turns) | (pl.col("Avg #A") < pl.col("Avg #T"))),
                 documents=built & ~pl.col("Avg #D").is_between(1, t.max_docs_per_turn),
                 empty=~built & ((pl.col("#Turns") != 0) | pl.any_horizontal(pl.col(c).is_not_null() for c in ("Avg #T", "Avg #A", "Avg #D"))),
                 positives=pl.col("positives") < 1)
    return rows_check(bad, _text(STATISTICS_RULES), "domain")


recor_checks = [
    observed_versions,
    source_questions_schema, source_gold_documents, source_documents_schema, source_document_roles, source_rejects_reasons,
    hard_negatives_schema, mined_negatives, hard_negatives_llm, negative_rejects_reasons,
    corpus_schema, corpus_gold,
    aligned_documents_schema, alignment_rule, aligned_documents_llm, alignment_rejects_reasons,
    aspects_schema, decomposition, aspects_llm, aspect_rejects_reasons,
    facts_schema, fact_verification, facts_llm, fact_rejects_reasons,
    turns_schema, turn_sequence, turn_gold_documents, turn_gold_in_corpus, turns_llm, turn_rejects_reasons,
    conversations_schema, conversation_validation, conversations_llm, conversation_rejects_reasons, conversation_reject_problems,
    benchmark_schema, benchmark_conversations, benchmark_gold_in_corpus,
    quality_scores_schema, quality_score_range, quality_scores_llm,
    turn_labels_schema, turn_label_classes, turn_labels_llm,
    quality_report_schema, quality_report_ranges,
    statistics_schema, statistics_rules,
]
