"""WikiProfile's fact extraction as Dagster assets (notes, section 2, steps 1-6). Each step
is a multi-asset of what it keeps and what it rejects, with the reason; the rules live in
:mod:`assets.wikiprofile.entities`, the LLM-driven steps in :mod:`assets.wikiprofile.steps`."""

import dagster as dg
import polars as pl

from assets.metadata import counts_md, md_table, table_metadata
from assets.wikiprofile import sources, steps
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wiring import asset_in, asset_out
from resources.llm import CallStats, LLMResource, role_aliases
from resources.search import DocumentSearchResource

PREFIX = GROUP = "wikiprofile"
STEP = dict(code_version="1")


def _builder() -> str:
    return role_aliases("wikiprofile.builder")[0]


def _out(description: str, kinds: set[str]) -> dg.AssetOut:
    return asset_out(PREFIX, GROUP, description, kinds)


def _in(name: str) -> dg.AssetIn:
    return asset_in(PREFIX, name)


def _rejects_output(name: str, rows: list[dict]) -> dg.Output:
    frame = steps.rejects_frame(rows)
    return dg.Output(frame, output_name=name, metadata={
        **table_metadata(frame.select("page_id", "item", "reason", "detail")),
        "by_reason": counts_md(dict(frame.group_by("reason").len().sort("reason").iter_rows())),
    })


@dg.multi_asset(outs={
    "source_pages": _out("Wikipedia page summaries of at least 50 words, with their mean monthly page views.", {"polars"}),
    "source_rejects": _out("Page records rejected at ingest (malformed, duplicate, too short), with the raw record.", {"polars"}),
}, **STEP)
def source_pages(wikiprofile_settings: WikiProfileSettings):
    """Step 1: the page summaries (JSON Lines, JSON or Parquet; local path or s3 URI), each
    checked; ``max_pages`` takes the first pages of the file."""
    pages, rejects = sources.load_pages(wikiprofile_settings.pages_uri(), wikiprofile_settings.min_words)
    if wikiprofile_settings.max_pages is not None:
        pages = pages.head(wikiprofile_settings.max_pages)
    views = pages["mean_monthly_views"]
    yield dg.Output(pages, output_name="source_pages", metadata={
        **table_metadata(pages.select("title", "words", "mean_monthly_views", "summary")),
        "mean_words": float(pages["words"].mean() or 0),
        "views_min": float(views.min() or 0), "views_median": float(views.median() or 0), "views_max": float(views.max() or 0),
    })
    yield dg.Output(rejects, output_name="source_rejects", metadata=table_metadata(rejects.select("question_id", "reason", "detail")))


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars", "litellm"}, ins={"source_pages": _in("source_pages")},
          pool="llm", **STEP)
def categories(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Step 2: one of the nine Vital Articles categories (or Other) per page. A reply naming
    none is kept as Other and marked unparsed."""
    stats = CallStats()
    frame = steps.categorize(source_pages, llm, _builder(), stats, context.log.info)
    agree = frame.join(source_pages.select("page_id", "reference_category"), on="page_id")
    agree = agree.filter(pl.col("reference_category").is_not_null())
    return dg.Output(frame, metadata={
        **table_metadata(frame), **stats.as_metadata(),
        "by_category": counts_md(dict(frame.group_by("category").len().sort("category").iter_rows()), "category"),
        "unparsed": int((~frame["parsed"]).sum()),
        "agreement_with_reference": float((agree["category"] == agree["reference_category"]).mean()) if agree.height else 0.0,
    })


@dg.multi_asset(outs={
    "entities": _out("Entities of each summary (name, one of 19 types, offsets), from the model's inline tags.", {"polars", "litellm"}),
    "entity_rejects": _out("Tags dropped (unknown type, too long, not in the text) and pages without entities.", {"polars"}),
}, ins={"source_pages": _in("source_pages")}, pool="llm", **STEP)
def entities(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource):
    """Step 3: named entities, at most eight per page, tagged inline by the model and found
    in the original text."""
    stats = CallStats()
    frame, rejects = steps.tag_entities(source_pages, llm, _builder(), stats, context.log.info)
    yield dg.Output(frame, output_name="entities", metadata={
        **table_metadata(frame), **stats.as_metadata(),
        "by_type": counts_md(dict(frame.group_by("type").len().sort("type").iter_rows()), "type"),
    })
    yield _rejects_output("entity_rejects", rejects)


@dg.multi_asset(outs={
    "object_candidates": _out("Up to 3 object entities per page, ranked, with their left context.", {"polars", "litellm"}),
    "object_rejects": _out("Entities in a bad position, names the model invented, pages without an eligible entity.", {"polars"}),
}, ins={"source_pages": _in("source_pages"), "entities": _in("entities")}, pool="llm", **STEP)
def object_candidates(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, entities: pl.DataFrame, llm: LLMResource,
                      wikiprofile_settings: WikiProfileSettings):
    """Step 4: object selection. The position rules (not opening a sentence, not in the
    first clause, not named in its own left context) are enforced here; the model ranks the
    eligible entities."""
    stats = CallStats()
    frame, rejects = steps.select_objects(source_pages, entities, llm, _builder(), wikiprofile_settings.objects_per_page,
                                          stats, context.log.info)
    yield dg.Output(frame, output_name="object_candidates", metadata={
        **table_metadata(frame.select("fact_id", "object", "type", "origin", "left_context")), **stats.as_metadata(),
        "by_origin": counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin"),
    })
    yield _rejects_output("object_rejects", rejects)


@dg.multi_asset(outs={
    "verified_objects": _out("Object candidates with the three verification verdicts.", {"polars", "litellm"}),
    "verification_rejects": _out("Candidates a binding verdict found unsuitable, with the verdicts.", {"polars"}),
}, ins={"object_candidates": _in("object_candidates")}, pool="llm", **STEP)
def verified_objects(context: dg.AssetExecutionContext, object_candidates: pl.DataFrame, llm: LLMResource):
    """Step 5: suitability with the target, of the left context alone, and difficulty.
    Advisory verdicts (the registry's ``verdicts``) are recorded and do not reject."""
    stats = CallStats()
    binding = llm.spec(_builder()).verdicts == "binding"
    frame, rejects = steps.verify(object_candidates, llm, _builder(), binding, stats, context.log.info)
    yes = {name: int(frame[name].fill_null(False).sum()) for name in ("with_target", "left_context_alone", "difficulty")}
    yield dg.Output(frame, output_name="verified_objects", metadata={
        **table_metadata(frame.select("fact_id", "object", "with_target", "left_context_alone", "difficulty", "verified")),
        **stats.as_metadata(), "verdicts": "binding" if binding else "advisory",
        "said_yes": dg.MetadataValue.md(md_table(pl.DataFrame([{"verification": k, "yes": v, "of": frame.height} for k, v in yes.items()]))),
    })
    yield _rejects_output("verification_rejects", rejects)


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"},
          ins={"verified_objects": _in("verified_objects"), "categories": _in("categories"), "source_pages": _in("source_pages")},
          **STEP)
def facts(verified_objects: pl.DataFrame, categories: pl.DataFrame, source_pages: pl.DataFrame,
          wikiprofile_settings: WikiProfileSettings) -> dg.Output:
    """Step 6: the verified objects, downsampled to ``downsample_to`` balancing categories and
    entity type groups (all of them by default). One object defines one fact."""
    kept = steps.downsample(verified_objects.filter(pl.col("verified")), categories, wikiprofile_settings.downsample_to,
                            wikiprofile_settings.seed)
    funnel = pl.DataFrame([
        {"step": "pages", "count": source_pages.height},
        {"step": "object candidates", "count": verified_objects.height},
        {"step": "verified", "count": int(verified_objects["verified"].sum())},
        {"step": "facts (downsampled)", "count": kept.height},
    ])
    return dg.Output(kept, metadata={
        **table_metadata(kept.select("fact_id", "object", "type", "category")),
        "funnel": dg.MetadataValue.md(md_table(funnel)),
        "by_category": counts_md(dict(kept.group_by("category").len().sort("category").iter_rows()), "category"),
        "by_type_group": counts_md(dict(kept.group_by("type_group").len().sort("type_group").iter_rows()), "type group"),
    })


@dg.multi_asset(outs={
    "direct_questions": _out("Each fact's direct question: as generated, after specification, after minimalism.", {"polars", "litellm"}),
    "direct_question_rejects": _out("Facts whose direct question could not be written, named its answer, or was rejected.", {"polars"}),
}, ins={"facts": _in("facts")}, pool="llm", **STEP)
def direct_questions(context: dg.AssetExecutionContext, facts: pl.DataFrame, llm: LLMResource):
    """Steps 7-9: the direct question (answer = the object) from the left context, refined
    for specification (edit or REJECT) and minimalism (deletions only)."""
    stats = CallStats()
    binding = llm.spec(_builder()).verdicts == "binding"
    frame, rejects = steps.direct_questions(facts, llm, _builder(), binding, stats, context.log.info)
    yield dg.Output(frame, output_name="direct_questions", metadata={
        **table_metadata(frame.select("fact_id", "generated", "question", "specification", "minimalism")), **stats.as_metadata(),
        "specification": counts_md(dict(frame.group_by("specification").len().sort("specification").iter_rows()), "outcome"),
        "minimalism": counts_md(dict(frame.group_by("minimalism").len().sort("minimalism").iter_rows()), "outcome"),
    })
    yield _rejects_output("direct_question_rejects", rejects)


COLLECTION = "wikiprofile_pages"


@dg.multi_asset(outs={
    "direct_search_filter": _out("Each direct question answered from a search of the page collection, and judged definite or not.",
                                 {"polars", "litellm", "lucene"}),
    "direct_search_rejects": _out("Direct questions whose search-grounded answer was not one definite answer.", {"polars"}),
}, ins={"direct_questions": _in("direct_questions"), "source_pages": _in("source_pages")}, pool="llm", **STEP)
def direct_search_filter(context: dg.AssetExecutionContext, direct_questions: pl.DataFrame, source_pages: pl.DataFrame,
                         llm: LLMResource, search: DocumentSearchResource, wikiprofile_settings: WikiProfileSettings):
    """Step 10: the search-grounded filter on the direct questions. The search resource (BM25
    over the source pages and the local page collection by default, or a web search API)
    finds pages, the model answers from them, and a judge asks whether that answer is one
    definite answer."""
    stats = CallStats()
    if search.kind == "bm25":
        extra, rejected = sources.load_search_pages(wikiprofile_settings.search_pages_uri())
        if rejected.height:
            context.log.warning(f"{rejected.height} records of the page collection rejected: {rejected['detail'].to_list()[:3]}")
        search.index(COLLECTION, sources.search_collection(source_pages, extra))
    hits = search.search(COLLECTION, direct_questions["question"].to_list(), steps.SEARCH_K)
    binding = llm.spec(_builder()).verdicts == "binding"
    frame, rejects = steps.search_filter(direct_questions, hits, llm, _builder(), binding, stats, context.log.info)
    yield dg.Output(frame, output_name="direct_search_filter", metadata={
        **table_metadata(frame.select("fact_id", "question", "search_answer", "definite", "kept")), **stats.as_metadata(),
        "definite": int(frame["definite"].fill_null(False).sum()), "verdicts": "binding" if binding else "advisory",
    })
    yield _rejects_output("direct_search_rejects", rejects)


wikiprofile_assets = [source_pages, categories, entities, object_candidates, verified_objects, facts, direct_questions,
                      direct_search_filter]
