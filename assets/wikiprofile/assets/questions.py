"""WikiProfile's questions as Dagster assets (notes, steps 7-17): the direct, reverse, natural
and contextual questions of each fact, and the search-grounded filters over the page index."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, table_metadata
from assets.wikiprofile import rules, sources, steps
from assets.wikiprofile.assets.common import STEP, builder, origin_counts, page_texts, prompted, wiring
from assets.wikiprofile.settings import WikiProfileSettings
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.search import DocumentSearchResource
from resources.storage import StorageResource


@dg.multi_asset(
    name="wikiprofile_direct_questions",
    outs={
        "direct_questions": wiring.out(
            "Each fact's direct question: as generated, after specification, after minimalism.", {"polars", "litellm"}
        ),
        "direct_question_rejects": wiring.out(
            "Facts whose direct question could not be written, named its answer, or was rejected.", {"polars"}
        ),
    },
    ins={"facts": wiring.input("facts"), "source_pages": wiring.input("source_pages")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/direct_question", "wikiprofile/refine_minimal", "wikiprofile/refine_specification"),
)
def direct_questions(
    context: dg.AssetExecutionContext, facts: pl.DataFrame, source_pages: pl.DataFrame, llm: LLMResource
):
    """Steps 7-9: the direct question (answer = the object) from the left context, refined
    for specification (edit or REJECT) and minimalism (deletions only). With advisory
    verdicts a question that fails the checks is replaced by the fact sentence's cloze
    (``origin = rules``)."""
    stats = CallStats()
    model = builder(llm)
    binding = model.binding
    frame, rejects = steps.direct_questions(facts, model, binding, stats, context.log.info, page_texts(source_pages))
    yield dg.Output(
        frame,
        output_name="direct_questions",
        metadata={
            **table_metadata(frame.select("fact_id", "generated", "question", "specification", "minimalism", "origin")),
            **stats.as_metadata(),
            "by_origin": origin_counts(frame),
            "verdicts": "binding" if binding else "advisory",
            "specification": counts_md(
                dict(frame.group_by("specification").len().sort("specification").iter_rows()), "outcome"
            ),
            "minimalism": counts_md(dict(frame.group_by("minimalism").len().sort("minimalism").iter_rows()), "outcome"),
        },
    )
    yield wiring.rejects("direct_question_rejects", steps.REJECTS, rejects)


INDEX = "wikiprofile_pages"


@dg.multi_asset(
    name="wikiprofile_page_index",
    outs={
        "page_index": wiring.out(
            "The page collection the search filters search: the source pages and the local page collection, "
            "indexed for BM25.",
            {"polars", "lucene"},
        ),
        "page_index_rejects": wiring.out("Records of the local page collection that could not be read.", {"polars"}),
    },
    ins={"source_pages": wiring.input("source_pages")},
    **STEP,
)
def page_index(
    source_pages: pl.DataFrame,
    search: DocumentSearchResource,
    storage: StorageResource,
    wikiprofile_settings: WikiProfileSettings,
):
    """One index for the three search-grounded filters (steps 10, 14, 17), built once: the
    source pages themselves (a web search would find them too) and the local page collection.
    With a web search API (``search.kind: http``) nothing is indexed here."""
    extra, rejected = sources.load_search_pages(wikiprofile_settings.search_pages_uri())
    collection = sources.search_collection(source_pages, extra)
    where = storage.index_path("search", INDEX)
    indexed = search.index(where, collection.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents")))
    yield dg.Output(
        collection,
        output_name="page_index",
        metadata={
            **table_metadata(collection),
            "indexed": indexed,
            "index": dg.MetadataValue.path(where),
            "search": search.kind,
        },
    )
    yield dg.Output(rejected, output_name="page_index_rejects", metadata=table_metadata(rejected))


def _search_filter(
    context,
    questions: pl.DataFrame,
    llm: LLMResource,
    search: DocumentSearchResource,
    storage: StorageResource,
    step: str,
):
    """The search-grounded filter: search each question in the page index, have the model
    answer from the hits and judge the answer; yields the filter table and its rejects."""
    stats = CallStats()
    asked = list(dict.fromkeys(q for q in questions["question"].to_list() if q.strip()))
    found = search.searcher(storage.index_path("search", INDEX)).batch_search(asked, asked, steps.SEARCH_K)
    hits = {q: [(h.docid, h.contents) for h in found[q]] for q in asked}
    model = builder(llm)
    binding = model.binding
    frame, rejects = steps.search_filter(questions, hits, model, binding, stats, context.log.info, step=step)
    yield dg.Output(frame, output_name=step, metadata=_filter_metadata(frame, stats, binding))
    yield wiring.rejects(step.replace("_filter", "_rejects"), steps.REJECTS, rejects)


def _filter_metadata(frame: pl.DataFrame, stats: CallStats, binding: bool) -> dict:
    return {
        **table_metadata(frame.select("fact_id", "question", "search_answer", "definite", "kept")),
        **stats.as_metadata(),
        "definite": int(frame["definite"].fill_null(False).sum()),
        "verdicts": "binding" if binding else "advisory",
    }


@dg.multi_asset(
    name="wikiprofile_direct_search_filter",
    outs={
        "direct_search_filter": wiring.out(
            "The direct questions answered from a search of the page collection, and judged.",
            {"polars", "litellm", "lucene"},
        ),
        "direct_search_rejects": wiring.out(
            "Direct questions whose search-grounded answer was not one definite answer.", {"polars"}
        ),
    },
    ins={"questions": wiring.input("direct_questions"), "page_index": wiring.input("page_index")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"),
)
def direct_search_filter(
    context: dg.AssetExecutionContext,
    questions: pl.DataFrame,
    page_index: pl.DataFrame,
    llm: LLMResource,
    search: DocumentSearchResource,
    storage: StorageResource,
):
    """Step 10: the search-grounded filter on the direct questions. The search resource (BM25
    over the page index by default, or a web search API) finds pages, the model answers from
    them, and a judge asks whether that answer is one definite answer."""
    yield from _search_filter(context, questions, llm, search, storage, "direct_search_filter")


@dg.multi_asset(
    name="wikiprofile_reverse_search_filter",
    outs={
        "reverse_search_filter": wiring.out(
            "The reverse questions answered from a search of the page collection, and judged.",
            {"polars", "litellm", "lucene"},
        ),
        "reverse_search_rejects": wiring.out(
            "Reverse questions whose search-grounded answer was not one definite answer.", {"polars"}
        ),
    },
    ins={"questions": wiring.input("reverse_questions"), "page_index": wiring.input("page_index")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"),
)
def reverse_search_filter(
    context: dg.AssetExecutionContext,
    questions: pl.DataFrame,
    page_index: pl.DataFrame,
    llm: LLMResource,
    search: DocumentSearchResource,
    storage: StorageResource,
):
    """Step 14: the search-grounded filter on the reverse questions."""
    yield from _search_filter(context, questions, llm, search, storage, "reverse_search_filter")


@dg.multi_asset(
    name="wikiprofile_natural_search_filter",
    outs={
        "natural_search_filter": wiring.out(
            "The natural and contextual questions answered from a search of the page collection, and judged.",
            {"polars", "litellm", "lucene"},
        ),
        "natural_search_rejects": wiring.out(
            "Natural questions whose search-grounded answer was not one definite answer.", {"polars"}
        ),
    },
    ins={"questions": wiring.input("natural_questions"), "page_index": wiring.input("page_index")},
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"),
)
def natural_search_filter(
    context: dg.AssetExecutionContext,
    questions: pl.DataFrame,
    page_index: pl.DataFrame,
    llm: LLMResource,
    search: DocumentSearchResource,
    storage: StorageResource,
):
    """Step 17: the search-grounded filter on DirectNatural, ReverseNatural and Contextual."""
    yield from _search_filter(context, questions, llm, search, storage, "natural_search_filter")


@dg.multi_asset(
    name="wikiprofile_reverse_questions",
    outs={
        "reverse_questions": wiring.out(
            "Each fact's reverse question (answer = the subject, the object inside), refined and pair-checked.",
            {"polars", "litellm"},
        ),
        "reverse_question_rejects": wiring.out(
            "Facts without a valid reverse question, with the step and the reason.", {"polars"}
        ),
    },
    ins={
        "facts": wiring.input("facts"),
        "direct_questions": wiring.input("direct_questions"),
        "direct_search_filter": wiring.input("direct_search_filter"),
        "source_pages": wiring.input("source_pages"),
    },
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted(
        "1",
        "wikiprofile/reverse_question",
        "wikiprofile/answer_type",
        "wikiprofile/pair_check",
        "wikiprofile/refine_minimal",
        "wikiprofile/refine_specification",
    ),
)
def reverse_questions(
    context: dg.AssetExecutionContext,
    facts: pl.DataFrame,
    direct_questions: pl.DataFrame,
    direct_search_filter: pl.DataFrame,
    source_pages: pl.DataFrame,
    llm: LLMResource,
):
    """Steps 11-13: for every fact whose direct question passed the search filter, the
    subject and the reverse question (or REJECT), the rule checks (subject in the text, object
    in the question, no answer in it), the answer type, both refinements and the pair check."""
    stats = CallStats()
    passed = rules.passed(direct_questions, direct_search_filter)
    model = builder(llm)
    binding = model.binding
    frame, rejects = steps.reverse_questions(
        facts, passed, model, binding, stats, context.log.info, page_texts(source_pages)
    )
    yield dg.Output(
        frame,
        output_name="reverse_questions",
        metadata={
            **table_metadata(frame.select("fact_id", "subject", "question", "pair_ok", "origin")),
            **stats.as_metadata(),
            "verdicts": "binding" if binding else "advisory",
            "by_origin": origin_counts(frame),
        },
    )
    yield wiring.rejects("reverse_question_rejects", steps.REJECTS, rejects)


@dg.multi_asset(
    name="wikiprofile_natural_questions",
    outs={
        "natural_questions": wiring.out(
            "Natural rephrasings of the direct and reverse questions, and the contextual question.",
            {"polars", "litellm"},
        ),
        "natural_question_rejects": wiring.out(
            "Rephrasings that were not questions or named their answer.", {"polars"}
        ),
    },
    ins={
        "facts": wiring.input("facts"),
        "direct_questions": wiring.input("direct_questions"),
        "direct_search_filter": wiring.input("direct_search_filter"),
        "reverse_questions": wiring.input("reverse_questions"),
        "reverse_search_filter": wiring.input("reverse_search_filter"),
        "source_pages": wiring.input("source_pages"),
    },
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("1", "wikiprofile/natural_question"),
)
def natural_questions(
    context: dg.AssetExecutionContext,
    facts: pl.DataFrame,
    direct_questions: pl.DataFrame,
    direct_search_filter: pl.DataFrame,
    reverse_questions: pl.DataFrame,
    reverse_search_filter: pl.DataFrame,
    source_pages: pl.DataFrame,
    llm: LLMResource,
):
    """Steps 15-16 for facts whose direct and reverse questions passed their search filters:
    the natural rephrasings (model) and the contextual question (the left context without its
    unfinished sentence, then the direct question)."""
    stats = CallStats()
    direct = dict(rules.passed(direct_questions, direct_search_filter).select("fact_id", "question").iter_rows())
    reverse = {r["fact_id"]: r for r in rules.passed(reverse_questions, reverse_search_filter).iter_rows(named=True)}
    live = [f for f in facts.iter_rows(named=True) if f["fact_id"] in direct and f["fact_id"] in reverse]
    items = [(f, "direct", direct[f["fact_id"]], f["object"]) for f in live]
    items += [(f, "reverse", reverse[f["fact_id"]]["question"], reverse[f["fact_id"]]["subject"]) for f in live]
    origins = {
        (r["fact_id"], r["kind"]): r["origin"]
        for r in pl.concat(
            [
                direct_questions.select("fact_id", "kind", "origin"),
                reverse_questions.select("fact_id", "kind", "origin"),
            ]
        ).iter_rows(named=True)
    }
    model = builder(llm)
    frame, rejects = steps.natural_questions(
        items, model, stats, context.log.info, model.binding, page_texts(source_pages), origins
    )
    contextual = pl.DataFrame(
        [
            {
                "fact_id": f["fact_id"],
                "kind": "contextual",
                "origin": "rules",
                "question": steps.contextual_question(f["left_context"], direct[f["fact_id"]]),
            }
            for f in live
        ],
        schema=steps.NATURAL_SCHEMA,
    )
    frame = pl.concat([frame, contextual]).sort("fact_id", "kind")
    yield dg.Output(
        frame,
        output_name="natural_questions",
        metadata={**table_metadata(frame), **stats.as_metadata(), "by_origin": origin_counts(frame)},
    )
    yield wiring.rejects("natural_question_rejects", steps.REJECTS, rejects)
