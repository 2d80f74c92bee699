"""Checks of WikiProfile's construction steps (``assets.wikiprofile.steps``, steps 2-17):
categories, entities, object candidates and their verification, the facts, the direct,
reverse, natural and contextual questions, and the search-grounded filters between them."""

from __future__ import annotations

import dagster as dg
import polars as pl

from assets.wikiprofile import rules, steps
from assets.wikiprofile.settings import WikiProfileSettings
from checks.factories import flags, llm_accounting_check, missing, rejects_check, rows_check, table_check, unmet
from checks.wikiprofile.shared import ins, key, named

CATEGORY_NAMES = (*rules.CATEGORIES, rules.OTHER_CATEGORY)
# Who made a row: the builder model, or the rules that stand in for an advisory builder.
ORIGINS = ("model", "rules")
# A page's category is the model's, or the source's where advisory verdicts defer to it.
CATEGORY_ORIGINS = ("model", "reference")
NATURAL_KINDS = ("contextual", "direct_natural", "reverse_natural")

# The tables whose schema is written inline by their step (steps.categorize, steps.verify).
CATEGORY_SCHEMA = {
    "page_id": pl.String,
    "category": pl.String,
    "parsed": pl.Boolean,
    "llm_category": pl.String,
    "origin": pl.String,
}
VERIFIED_SCHEMA = {
    **steps.OBJECT_SCHEMA,
    "with_target": pl.Boolean,
    "left_context_alone": pl.Boolean,
    "difficulty": pl.Boolean,
    "verified": pl.Boolean,
}
FACT_SCHEMA = {**VERIFIED_SCHEMA, "category": pl.String, "type_group": pl.String}
VERDICTS = ("with_target", "left_context_alone", "difficulty")


def cut_before() -> pl.Expr:
    """The summary cut immediately before the object (``rules.left_context``)."""
    return pl.col("summary").str.slice(0, pl.col("start")).str.strip_chars_end()


# --- step 2: categories -------------------------------------------------------------------------

categories_schema = table_check(
    key("categories"), CATEGORY_SCHEMA, unique=["page_id"], not_null=["page_id", "category", "parsed", "origin"]
)


@dg.asset_check(
    asset=key("categories"),
    blocking=True,
    additional_ins=ins("source_pages"),
    description=f"Every page has one of {', '.join(CATEGORY_NAMES)}: the model's (Other when it named none) "
    "or the source's, as the origin says.",
)
def one_category_per_page(categories: pl.DataFrame, source_pages: pl.DataFrame) -> dg.AssetCheckResult:
    frame = categories.join(
        source_pages.select("page_id", "reference_category", pl.lit(True).alias("paged")), on="page_id", how="left"
    )
    bad = pl.concat(
        [
            unmet(
                frame,
                {
                    "a category of the method": pl.col("category").is_in(CATEGORY_NAMES),
                    "the model's answer is a category, or none": pl.col("llm_category").is_null()
                    | pl.col("llm_category").is_in(CATEGORY_NAMES),
                    "parsed when the model named a category": pl.col("parsed") == pl.col("llm_category").is_not_null(),
                    f"origin in {CATEGORY_ORIGINS}": pl.col("origin").is_in(CATEGORY_ORIGINS),
                    "the category its origin gives": pl.when(pl.col("origin") == "reference")
                    .then(pl.col("category") == pl.col("reference_category"))
                    .otherwise(pl.col("category") == pl.col("llm_category").fill_null(rules.OTHER_CATEGORY)),
                    "a source page": pl.col("paged"),
                },
                ids=["page_id"],
            ),
            missing(source_pages, categories, ["page_id"], "page without a category"),
        ]
    )
    return rows_check(bad, "one known category per source page")


categories_llm = llm_accounting_check(
    key("categories"), failed_items=lambda t: t.filter(~pl.col("parsed")), item_column="page_id"
)


# --- step 3: entities ---------------------------------------------------------------------------

entities_schema = table_check(
    key("entities"), steps.ENTITY_SCHEMA, unique=["entity_id"], not_null=list(steps.ENTITY_SCHEMA)
)


@dg.asset_check(
    asset=key("entities"),
    blocking=True,
    additional_ins=ins("source_pages"),
    description=f"At most {rules.MAX_ENTITIES} entities per page, each named once, of one of the "
    f"{len(rules.ENTITY_TYPES)} types, at most {rules.MAX_ENTITY_WORDS} words, at its offsets in its summary.",
)
def entity_rules(entities: pl.DataFrame, source_pages: pl.DataFrame) -> dg.AssetCheckResult:
    frame = entities.join(source_pages.select("page_id", "summary"), on="page_id", how="left")
    bad = unmet(
        frame,
        {
            "a source page": pl.col("summary").is_not_null(),
            "at its offsets in the summary": pl.col("summary").str.slice(
                pl.col("start"), pl.col("end") - pl.col("start")
            )
            == pl.col("name"),
            f"at most {rules.MAX_ENTITIES} per page": pl.len().over("page_id") <= rules.MAX_ENTITIES,
            "named once on its page": pl.len().over("page_id", pl.col("name").str.to_lowercase()) == 1,
            "one of the entity types": pl.col("type").is_in(rules.ENTITY_TYPES),
            f"at most {rules.MAX_ENTITY_WORDS} words": pl.col("name").str.count_matches(r"\S+")
            <= rules.MAX_ENTITY_WORDS,
            f"origin in {ORIGINS}": pl.col("origin").is_in(ORIGINS),
        },
        ids=["entity_id"],
    )
    return rows_check(bad, "entities as step 3 tags them")


# Pages whose tags the model got wrong got the rule-based entities.
entities_llm = llm_accounting_check(
    key("entities"),
    item_column="page_id",
    failed_items=lambda t: t.filter(pl.col("origin") == "rules").unique("page_id", maintain_order=True),
)
entity_rejects_reasons = rejects_check(key("entity_rejects"), steps.ENTITY_REASONS, steps.REJECTS.keys)


# --- step 4: object candidates ------------------------------------------------------------------

object_candidates_schema = table_check(
    key("object_candidates"), steps.OBJECT_SCHEMA, unique=["fact_id"], not_null=list(steps.OBJECT_SCHEMA)
)


@dg.asset_check(
    asset=key("object_candidates"),
    blocking=True,
    additional_ins=ins("source_pages"),
    description="At most the configured objects per page (the paper's 3), ranked from 1; each at its offset in "
    "its summary, meeting the position rules, with the summary cut before it as its left context.",
)
def object_rules(
    object_candidates: pl.DataFrame, source_pages: pl.DataFrame, wikiprofile_settings: WikiProfileSettings
) -> dg.AssetCheckResult:
    n = wikiprofile_settings.objects_per_page
    frame = object_candidates.join(source_pages.select("page_id", "summary"), on="page_id", how="left")
    frame = frame.with_columns(
        flags(
            frame,
            lambda text, start, obj: text is not None and rules.position_problem(text, start, start + len(obj)) is None,
            "summary",
            "start",
            "object",
        ).alias("well_placed")
    )
    bad = unmet(
        frame,
        {
            "a source page": pl.col("summary").is_not_null(),
            "at its offset in the summary": pl.col("summary").str.slice(
                pl.col("start"), pl.col("object").str.len_chars()
            )
            == pl.col("object"),
            "left context is the summary cut before it": pl.col("left_context") == cut_before(),
            "not opening a sentence, in the first clause or in its own left context": pl.col("well_placed"),
            f"ranked 1 to {n}": pl.col("rank").is_between(1, n),
            "one object per rank of a page": pl.len().over("page_id", "rank") == 1,
            "fact_id is the page and the rank": pl.col("fact_id") == pl.format("{}_o{}", "page_id", "rank"),
            "one of the entity types": pl.col("type").is_in(rules.ENTITY_TYPES),
            f"origin in {ORIGINS}": pl.col("origin").is_in(ORIGINS),
        },
        ids=["fact_id"],
    )
    return rows_check(bad, "object candidates as step 4 selects them")


# Pages whose ranking the model did not give got the rule-ranked entities.
object_candidates_llm = llm_accounting_check(
    key("object_candidates"),
    item_column="page_id",
    failed_items=lambda t: t.filter(pl.col("origin") == "rules").unique("page_id", maintain_order=True),
)
object_rejects_reasons = rejects_check(key("object_rejects"), steps.OBJECT_REASONS, steps.REJECTS.keys)


# --- step 5: verification -----------------------------------------------------------------------

verified_objects_schema = table_check(
    key("verified_objects"), VERIFIED_SCHEMA, unique=["fact_id"], not_null=[*steps.OBJECT_SCHEMA, "verified"]
)


@dg.asset_check(
    asset=key("verified_objects"),
    blocking=True,
    additional_ins=ins("object_candidates"),
    description="Every candidate verified once and left as it was; none turned down while all three verdicts say yes.",
)
def one_verdict_per_candidate(verified_objects: pl.DataFrame, object_candidates: pl.DataFrame) -> dg.AssetCheckResult:
    frame = verified_objects.join(
        object_candidates.select("fact_id", "object", "left_context"), on="fact_id", how="left", suffix="_candidate"
    )
    bad = pl.concat(
        [
            unmet(
                frame,
                {
                    "a candidate, with its object and left context": (pl.col("object") == pl.col("object_candidate"))
                    & (pl.col("left_context") == pl.col("left_context_candidate")),
                    "turned down only by a verdict that is not yes": pl.col("verified")
                    | ~pl.all_horizontal([pl.col(v).fill_null(False) for v in VERDICTS]),
                },
                ids=["fact_id"],
            ),
            missing(object_candidates, verified_objects, ["fact_id"], "candidate without verdicts"),
        ]
    )
    return rows_check(bad, "each candidate's verdicts")


verified_objects_llm = llm_accounting_check(
    key("verified_objects"),
    item_column="fact_id",
    failed_items=lambda t: t.filter(pl.any_horizontal([pl.col(v).is_null() for v in VERDICTS])),
)
verification_rejects_reasons = rejects_check(
    key("verification_rejects"), steps.VERIFICATION_REASONS, steps.REJECTS.keys
)


# --- step 6: facts ------------------------------------------------------------------------------

facts_schema = table_check(
    key("facts"), FACT_SCHEMA, unique=["fact_id"], not_null=[*steps.OBJECT_SCHEMA, "verified", "category", "type_group"]
)


@dg.asset_check(
    asset=key("facts"),
    blocking=True,
    additional_ins=ins("source_pages"),
    description="Verified objects only, at most the configured number, each of a known category and type with its "
    "type group, its left context its page's summary cut before it.",
)
def fact_rules(
    facts: pl.DataFrame, source_pages: pl.DataFrame, wikiprofile_settings: WikiProfileSettings
) -> dg.AssetCheckResult:
    frame = facts.join(source_pages.select("page_id", "summary"), on="page_id", how="left")
    frame = frame.with_columns(
        flags(frame, lambda t, g: rules.type_group(t) == g, "type", "type_group").alias("grouped")
    )
    target = wikiprofile_settings.downsample_to
    bad = unmet(
        frame,
        {
            "verified": pl.col("verified"),
            "a category of the method": pl.col("category").is_in(CATEGORY_NAMES),
            "one of the entity types": pl.col("type").is_in(rules.ENTITY_TYPES),
            "the type's group": pl.col("grouped"),
            "left context is its page's summary cut before it": pl.col("left_context") == cut_before(),
            f"within the downsampling target ({target})": pl.lit(True)
            if target is None
            else pl.int_range(pl.len()) < target,
        },
        ids=["fact_id"],
    )
    return rows_check(bad, "facts as step 6 keeps them")


# --- steps 7-9: direct questions ----------------------------------------------------------------

direct_questions_schema = table_check(
    key("direct_questions"),
    steps.QUESTION_SCHEMA,
    unique=["fact_id"],
    not_null=["fact_id", "kind", "question", "origin"],
)


@dg.asset_check(
    asset=key("direct_questions"),
    blocking=True,
    additional_ins=ins("facts"),
    description="One direct question per fact, a question that does not name its answer (the object).",
)
def direct_questions_of_facts(direct_questions: pl.DataFrame, facts: pl.DataFrame) -> dg.AssetCheckResult:
    frame = direct_questions.join(facts.select("fact_id", "object"), on="fact_id", how="left")
    bad = unmet(
        frame,
        {
            "kind direct": pl.col("kind") == "direct",
            "a fact": pl.col("object").is_not_null(),
            "a question": pl.col("question").str.ends_with("?"),
            "does not name the object": ~named("question", "object"),
            f"origin in {ORIGINS}": pl.col("origin").is_in(ORIGINS),
        },
        ids=["fact_id"],
    )
    return rows_check(bad, "direct questions of the facts")


# The facts whose model question failed got the sentence's cloze.
direct_questions_llm = llm_accounting_check(
    key("direct_questions"), item_column="fact_id", failed_items=lambda t: t.filter(pl.col("origin") == "rules")
)
direct_question_rejects_reasons = rejects_check(
    key("direct_question_rejects"), steps.DIRECT_QUESTION_REASONS, steps.REJECTS.keys
)


# --- steps 10, 14, 17: the search-grounded filters ----------------------------------------------


def search_filter_checks(stage: str, questions: str) -> list[dg.AssetChecksDefinition]:
    """A search filter's shape, its ``kept`` against its verdicts and its questions, its LLM
    accounting, and its rejects' vocabulary."""
    table = key(f"{stage}_search_filter")

    @dg.asset_check(
        asset=table,
        name="kept_consistency",
        blocking=True,
        additional_ins={"questions": dg.AssetIn(key=key(questions))},
        description=f"Every {questions} row searched once as asked, at most {steps.SEARCH_K} hits, kept unless "
        "judged not definite.",
    )
    def kept_consistency(frame: pl.DataFrame, questions: pl.DataFrame) -> dg.AssetCheckResult:
        joined = frame.join(
            questions.select("fact_id", "kind", pl.col("question").alias("asked")), on=["fact_id", "kind"], how="left"
        )
        bad = pl.concat(
            [
                unmet(
                    joined,
                    {
                        "kept unless judged not definite": pl.col("kept")
                        == (pl.col("definite").is_null() | pl.col("definite")),
                        f"at most {steps.SEARCH_K} hits": pl.col("search_hits").list.len() <= steps.SEARCH_K,
                        "a question of its stage, searched as asked": pl.col("question") == pl.col("asked"),
                    },
                    ids=["fact_id", "kind"],
                ),
                missing(questions, frame, ["fact_id", "kind"], "question not searched"),
            ]
        )
        return rows_check(bad, f"the {stage} search filter keeps what its verdicts pass")

    return [
        table_check(
            table,
            steps.SEARCH_SCHEMA,
            unique=["fact_id", "kind"],
            not_null=["fact_id", "kind", "question", "search_hits", "kept"],
        ),
        kept_consistency,
        # Asked and answered, but the judge's verdict did not parse.
        llm_accounting_check(
            table,
            item_column="fact_id",
            failed_items=lambda t: t.filter(
                pl.col("search_answer").is_not_null() & pl.col("definite").is_null()
            ).unique("fact_id", maintain_order=True),
        ),
        rejects_check(key(f"{stage}_search_rejects"), steps.SEARCH_REASONS, steps.REJECTS.keys),
    ]


# --- steps 11-13: reverse questions -------------------------------------------------------------

reverse_questions_schema = table_check(
    key("reverse_questions"),
    steps.REVERSE_SCHEMA,
    unique=["fact_id"],
    not_null=["fact_id", "kind", "question", "origin", "subject", "subject_type"],
)


@dg.asset_check(
    asset=key("reverse_questions"),
    blocking=True,
    additional_ins=ins("facts", "direct_search_filter"),
    description="One reverse question per fact whose direct question passed its search filter: it names the "
    "object and not its answer (the subject), whose type is one of the entity types.",
)
def reverse_questions_of_facts(
    reverse_questions: pl.DataFrame, facts: pl.DataFrame, direct_search_filter: pl.DataFrame
) -> dg.AssetCheckResult:
    passed = direct_search_filter.filter(pl.col("kept")).select("fact_id", pl.lit(True).alias("passed"))
    frame = reverse_questions.join(facts.select("fact_id", "object"), on="fact_id", how="left").join(
        passed, on="fact_id", how="left"
    )
    bad = unmet(
        frame,
        {
            "kind reverse": pl.col("kind") == "reverse",
            "a fact": pl.col("object").is_not_null(),
            "its direct question passed the search filter": pl.col("passed"),
            "names the object": named("question", "object"),
            "does not name the subject": ~named("question", "subject"),
            "the subject's type is one of the entity types": pl.col("subject_type").is_in(rules.ENTITY_TYPES),
            f"origin in {ORIGINS}": pl.col("origin").is_in(ORIGINS),
        },
        ids=["fact_id"],
    )
    return rows_check(bad, "reverse questions of the facts")


# The facts whose model reply failed the rules got the reverse cloze.
reverse_questions_llm = llm_accounting_check(
    key("reverse_questions"), item_column="fact_id", failed_items=lambda t: t.filter(pl.col("origin") == "rules")
)
reverse_question_rejects_reasons = rejects_check(
    key("reverse_question_rejects"), steps.REVERSE_QUESTION_REASONS, steps.REJECTS.keys
)


# --- steps 15-16: natural and contextual questions ----------------------------------------------

natural_questions_schema = table_check(
    key("natural_questions"), steps.NATURAL_SCHEMA, unique=["fact_id", "kind"], not_null=list(steps.NATURAL_SCHEMA)
)


@dg.asset_check(
    asset=key("natural_questions"),
    blocking=True,
    additional_ins=ins("facts", "reverse_questions"),
    description=f"Questions of kinds {', '.join(NATURAL_KINDS)} of facts with a reverse question, each fact with its "
    "contextual question (built by rule); a rephrasing does not name its answer.",
)
def natural_questions_of_facts(
    natural_questions: pl.DataFrame, facts: pl.DataFrame, reverse_questions: pl.DataFrame
) -> dg.AssetCheckResult:
    frame = natural_questions.join(facts.select("fact_id", "object"), on="fact_id", how="left").join(
        reverse_questions.select("fact_id", "subject"), on="fact_id", how="left"
    )
    frame = frame.with_columns(
        pl.when(pl.col("kind") == "reverse_natural").then("subject").otherwise("object").alias("answer")
    )
    bad = unmet(
        frame,
        {
            f"kind in {NATURAL_KINDS}": pl.col("kind").is_in(NATURAL_KINDS),
            "a fact with a reverse question": pl.col("object").is_not_null() & pl.col("subject").is_not_null(),
            "the fact has its contextual question": (pl.col("kind") == "contextual").any().over("fact_id"),
            "the contextual question is built by rule": (pl.col("kind") != "contextual")
            | (pl.col("origin") == "rules"),
            "a rephrasing does not name its answer": (pl.col("kind") == "contextual") | ~named("question", "answer"),
            f"origin in {ORIGINS}": pl.col("origin").is_in(ORIGINS),
        },
        ids=["fact_id", "kind"],
    )
    return rows_check(bad, "natural and contextual questions of the facts")


# The rephrasings made by rule (the contextual question always is).
natural_questions_llm = llm_accounting_check(
    key("natural_questions"),
    item_column="fact_id",
    failed_items=lambda t: t.filter((pl.col("origin") == "rules") & (pl.col("kind") != "contextual")).unique(
        "fact_id", maintain_order=True
    ),
)
natural_question_rejects_reasons = rejects_check(
    key("natural_question_rejects"), steps.NATURAL_QUESTION_REASONS, steps.REJECTS.keys
)


step_checks = [
    categories_schema,
    one_category_per_page,
    categories_llm,
    entities_schema,
    entity_rules,
    entities_llm,
    entity_rejects_reasons,
    object_candidates_schema,
    object_rules,
    object_candidates_llm,
    object_rejects_reasons,
    verified_objects_schema,
    one_verdict_per_candidate,
    verified_objects_llm,
    verification_rejects_reasons,
    facts_schema,
    fact_rules,
    direct_questions_schema,
    direct_questions_of_facts,
    direct_questions_llm,
    direct_question_rejects_reasons,
    *search_filter_checks("direct", "direct_questions"),
    reverse_questions_schema,
    reverse_questions_of_facts,
    reverse_questions_llm,
    reverse_question_rejects_reasons,
    *search_filter_checks("reverse", "reverse_questions"),
    natural_questions_schema,
    natural_questions_of_facts,
    natural_questions_llm,
    natural_question_rejects_reasons,
    *search_filter_checks("natural", "natural_questions"),
]
