"""WikiProfile's fact extraction as Dagster assets (notes, section 2, steps 1-6): the page
summaries, their categories and entities, the object candidates and their verification, and
the facts."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, table_metadata
from assets.wikiprofile import sources, steps
from assets.wikiprofile.assets.common import GROUP, PREFIX, STEP, builder, prompted, wiring
from assets.wikiprofile.assets.wikipedia import SUMMARIES, VIEWS, wikipedia_pages
from assets.wikiprofile.settings import WikiProfileSettings
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.storage import StorageResource


@dg.multi_asset(
    name="wikiprofile_source_pages",
    outs={
        "source_pages": wiring.out(
            "Wikipedia page summaries of at least 50 words, with their mean monthly page views.", {"polars"}
        ),
        "source_rejects": wiring.out(
            "Page records rejected at ingest (malformed, duplicate, too short; from Wikipedia: no views in the "
            "window, a month or shard not materialized), with the raw record.",
            {"polars"},
        ),
    },
    # read only with pages_source: wikipedia (what is materialized of them), so deps, not inputs
    deps=[dg.AssetDep(dg.AssetKey(list(k)), partition_mapping=dg.AllPartitionMapping()) for k in (SUMMARIES, VIEWS)],
    **STEP,
)
def source_pages(
    context: dg.AssetExecutionContext, wikiprofile_settings: WikiProfileSettings, storage: StorageResource
):
    """Step 1: the page summaries. From the project's own JSON (JSON Lines, JSON or Parquet;
    local path or s3 URI), each record checked, ``max_pages`` drawn at random (seeded, as the
    paper samples its 10,000 summaries) and kept in file order; or, with ``pages_source:
    wikipedia``, from the materialized shards and months of Wikimedia's data
    (:func:`assets.wikiprofile.assets.wikipedia.wikipedia_pages`)."""
    counts = {}
    if wikiprofile_settings.pages_source == "wikipedia":
        pages, rejects, counts = wikipedia_pages(context.instance, storage, wikiprofile_settings, context.log.warning)
    else:
        pages, rejects = sources.load_pages(wikiprofile_settings.pages_uri(), wikiprofile_settings.min_words)
    if (
        wikiprofile_settings.pages_source != "wikipedia"
        and wikiprofile_settings.max_pages is not None
        and pages.height > wikiprofile_settings.max_pages
    ):
        pages = (
            pages.with_row_index("row")
            .sample(n=wikiprofile_settings.max_pages, seed=wikiprofile_settings.seed)
            .sort("row")
            .drop("row")
        )
    views = pages["mean_monthly_views"]
    yield dg.Output(
        pages,
        output_name="source_pages",
        metadata={
            **table_metadata(pages.select("title", "words", "mean_monthly_views", "summary")),
            "mean_words": float(pages["words"].mean() or 0),
            "views_min": float(views.min() or 0),
            "views_median": float(views.median() or 0),
            "views_max": float(views.max() or 0),
            "pages_source": wikiprofile_settings.pages_source,
            **counts,
        },
    )
    yield dg.Output(
        rejects,
        output_name="source_rejects",
        metadata=table_metadata(rejects.select("question_id", "reason", "detail")),
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars", "litellm"},
    ins={"source_pages": wiring.input("source_pages")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/categorize"),
)
def categories(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Step 2: one of the nine Vital Articles categories (or Other) per page. A reply naming
    none is kept as Other and marked unparsed; with advisory verdicts the source's category
    decides where it has one."""
    stats = CallStats()
    model = builder(llm)
    frame = steps.categorize(source_pages, model, stats, context.log.info, model.binding)
    agree = frame.join(source_pages.select("page_id", "reference_category"), on="page_id")
    agree = agree.filter(pl.col("reference_category").is_not_null())
    # How often the model's own answer matches the source's category, whichever decided.
    return dg.Output(
        frame,
        metadata={
            **table_metadata(frame),
            **stats.as_metadata(),
            "by_category": counts_md(dict(frame.group_by("category").len().sort("category").iter_rows()), "category"),
            "unparsed": int((~frame["parsed"]).sum()),
            "agreement_with_reference": float((agree["llm_category"] == agree["reference_category"]).mean())
            if agree.height
            else 0.0,
            "verdicts": "binding" if model.binding else "advisory",
        },
    )


@dg.multi_asset(
    name="wikiprofile_entities",
    outs={
        "entities": wiring.out(
            "Entities of each summary (name, one of 19 types, offsets), from the model's inline tags.",
            {"polars", "litellm"},
        ),
        "entity_rejects": wiring.out(
            "Tags dropped (unknown type, too long, not in the text) and pages without entities.", {"polars"}
        ),
    },
    ins={"source_pages": wiring.input("source_pages")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/ner"),
)
def entities(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource):
    """Step 3: named entities, at most eight per page, tagged inline by the model and found
    in the original text."""
    stats = CallStats()
    model = builder(llm)
    frame, rejects = steps.tag_entities(source_pages, model, stats, context.log.info, model.binding)
    yield dg.Output(
        frame,
        output_name="entities",
        metadata={
            **table_metadata(frame),
            **stats.as_metadata(),
            "by_type": counts_md(dict(frame.group_by("type").len().sort("type").iter_rows()), "type"),
            "by_origin": counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin"),
        },
    )
    yield wiring.rejects("entity_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    name="wikiprofile_object_candidates",
    outs={
        "object_candidates": wiring.out(
            "Up to 3 object entities per page, ranked, with their left context.", {"polars", "litellm"}
        ),
        "object_rejects": wiring.out(
            "Entities in a bad position, names the model invented, pages without an eligible entity.", {"polars"}
        ),
    },
    ins={"source_pages": wiring.input("source_pages"), "entities": wiring.input("entities")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/select_objects"),
)
def object_candidates(
    context: dg.AssetExecutionContext,
    source_pages: pl.DataFrame,
    entities: pl.DataFrame,
    llm: LLMResource,
    wikiprofile_settings: WikiProfileSettings,
):
    """Step 4: object selection. The position rules (not opening a sentence, not in the
    first clause, not named in its own left context) are enforced here; the model ranks the
    eligible entities."""
    stats = CallStats()
    frame, rejects = steps.select_objects(
        source_pages, entities, builder(llm), wikiprofile_settings.objects_per_page, stats, context.log.info
    )
    yield dg.Output(
        frame,
        output_name="object_candidates",
        metadata={
            **table_metadata(frame.select("fact_id", "object", "type", "origin", "left_context")),
            **stats.as_metadata(),
            "by_origin": counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin"),
        },
    )
    yield wiring.rejects("object_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    name="wikiprofile_verified_objects",
    outs={
        "verified_objects": wiring.out(
            "Object candidates with the three verification verdicts.", {"polars", "litellm"}
        ),
        "verification_rejects": wiring.out(
            "Candidates a binding verdict found unsuitable, with the verdicts.", {"polars"}
        ),
    },
    ins={"object_candidates": wiring.input("object_candidates")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted(
        "1", "wikiprofile/verify_with_target", "wikiprofile/verify_left_context", "wikiprofile/verify_difficulty"
    ),
)
def verified_objects(context: dg.AssetExecutionContext, object_candidates: pl.DataFrame, llm: LLMResource):
    """Step 5: suitability with the target, of the left context alone, and difficulty.
    Advisory verdicts (the registry's ``verdicts``) are recorded and do not reject."""
    stats = CallStats()
    model = builder(llm)
    binding = model.binding
    frame, rejects = steps.verify(object_candidates, model, binding, stats, context.log.info)
    yes = {
        name: int(frame[name].fill_null(False).sum()) for name in ("with_target", "left_context_alone", "difficulty")
    }
    yield dg.Output(
        frame,
        output_name="verified_objects",
        metadata={
            **table_metadata(
                frame.select("fact_id", "object", "with_target", "left_context_alone", "difficulty", "verified")
            ),
            **stats.as_metadata(),
            "verdicts": "binding" if binding else "advisory",
            "said_yes": dg.MetadataValue.md(
                md_table(pl.DataFrame([{"verification": k, "yes": v, "of": frame.height} for k, v in yes.items()]))
            ),
        },
    )
    yield wiring.rejects("verification_rejects", steps.REJECTS, rejects)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    kinds={"polars"},
    ins={
        "verified_objects": wiring.input("verified_objects"),
        "categories": wiring.input("categories"),
        "source_pages": wiring.input("source_pages"),
    },
    **STEP,
)
def facts(
    verified_objects: pl.DataFrame,
    categories: pl.DataFrame,
    source_pages: pl.DataFrame,
    wikiprofile_settings: WikiProfileSettings,
) -> dg.Output:
    """Step 6: the verified objects, downsampled to ``downsample_to`` balancing categories and
    entity type groups (all of them by default). One object defines one fact."""
    kept = steps.downsample(
        verified_objects.filter(pl.col("verified")),
        categories,
        wikiprofile_settings.downsample_to,
        wikiprofile_settings.seed,
    )
    funnel = pl.DataFrame(
        [
            {"step": "pages", "count": source_pages.height},
            {"step": "object candidates", "count": verified_objects.height},
            {"step": "verified", "count": int(verified_objects["verified"].sum())},
            {"step": "facts (downsampled)", "count": kept.height},
        ]
    )
    return dg.Output(
        kept,
        metadata={
            **table_metadata(kept.select("fact_id", "object", "type", "category")),
            "funnel": dg.MetadataValue.md(md_table(funnel)),
            "by_category": counts_md(dict(kept.group_by("category").len().sort("category").iter_rows()), "category"),
            "by_type_group": counts_md(
                dict(kept.group_by("type_group").len().sort("type_group").iter_rows()), "type group"
            ),
        },
    )
