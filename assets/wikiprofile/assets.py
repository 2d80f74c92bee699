"""WikiProfile's fact extraction as Dagster assets (notes, section 2, steps 1-6). Each step
is a multi-asset of what it keeps and what it rejects, with the reason; the rules live in
:mod:`assets.wikiprofile.rules`, the LLM-driven steps in :mod:`assets.wikiprofile.steps`."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, table_metadata
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from assets.wikiprofile import release, sources, steps
from assets.wikiprofile.settings import WikiProfileSettings
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.search import DocumentSearchResource
from resources.storage import StorageResource

PREFIX = GROUP = "wikiprofile"
wiring = Wiring(PREFIX, GROUP)
STEP = dict(code_version="1")


def _prompted(rules: str, *prompts: str) -> dict:
    """The step's settings with a code version that follows its rules and its prompts."""
    return {**STEP, "code_version": code_version(rules, *prompts)}


def _builder(llm: LLMResource) -> str:
    return llm.role("wikiprofile.builder")[0]


def _pages(source_pages: pl.DataFrame) -> dict[str, tuple[str, str]]:
    """Page id -> (title, summary), for the questions built by rule."""
    return {r["page_id"]: (r["title"], r["summary"]) for r in source_pages.iter_rows(named=True)}


def _origins(frame: pl.DataFrame) -> dict:
    return counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin")


def _binding(llm: LLMResource) -> bool:
    """Whether the builder's verdicts decide (the registry's ``verdicts``)."""
    return llm.binding(_builder(llm))








@dg.multi_asset(name="wikiprofile_source_pages", outs={
    "source_pages": wiring.out("Wikipedia page summaries of at least 50 words, with their mean monthly page views.", {"polars"}),
    "source_rejects": wiring.out("Page records rejected at ingest (malformed, duplicate, too short), with the raw record.", {"polars"}),
}, **STEP)
def source_pages(wikiprofile_settings: WikiProfileSettings):
    """Step 1: the page summaries (JSON Lines, JSON or Parquet; local path or s3 URI), each
    checked; ``max_pages`` draws that many pages at random (seeded, as the paper samples its
    10,000 summaries), kept in file order."""
    pages, rejects = sources.load_pages(wikiprofile_settings.pages_uri(), wikiprofile_settings.min_words)
    if wikiprofile_settings.max_pages is not None and pages.height > wikiprofile_settings.max_pages:
        pages = (pages.with_row_index("row").sample(n=wikiprofile_settings.max_pages, seed=wikiprofile_settings.seed)
                 .sort("row").drop("row"))
    views = pages["mean_monthly_views"]
    yield dg.Output(pages, output_name="source_pages", metadata={
        **table_metadata(pages.select("title", "words", "mean_monthly_views", "summary")),
        "mean_words": float(pages["words"].mean() or 0),
        "views_min": float(views.min() or 0), "views_median": float(views.median() or 0), "views_max": float(views.max() or 0),
    })
    yield dg.Output(rejects, output_name="source_rejects", metadata=table_metadata(rejects.select("question_id", "reason", "detail")))


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars", "litellm"}, ins={"source_pages": wiring.input("source_pages")},
          pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"), **_prompted("1", "wikiprofile/categorize"))
def categories(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource) -> dg.Output:
    """Step 2: one of the nine Vital Articles categories (or Other) per page. A reply naming
    none is kept as Other and marked unparsed; with advisory verdicts the source's category
    decides where it has one."""
    stats = CallStats()
    frame = steps.categorize(source_pages, llm, _builder(llm), stats, context.log.info, _binding(llm))
    agree = frame.join(source_pages.select("page_id", "reference_category"), on="page_id")
    agree = agree.filter(pl.col("reference_category").is_not_null())
    # How often the model's own answer matches the source's category, whichever decided.
    return dg.Output(frame, metadata={
        **table_metadata(frame), **stats.as_metadata(),
        "by_category": counts_md(dict(frame.group_by("category").len().sort("category").iter_rows()), "category"),
        "unparsed": int((~frame["parsed"]).sum()),
        "agreement_with_reference": float((agree["llm_category"] == agree["reference_category"]).mean()) if agree.height else 0.0,
        "verdicts": "binding" if _binding(llm) else "advisory",
    })


@dg.multi_asset(name="wikiprofile_entities", outs={
    "entities": wiring.out("Entities of each summary (name, one of 19 types, offsets), from the model's inline tags.", {"polars", "litellm"}),
    "entity_rejects": wiring.out("Tags dropped (unknown type, too long, not in the text) and pages without entities.", {"polars"}),
}, ins={"source_pages": wiring.input("source_pages")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"), **_prompted("1", "wikiprofile/ner"))
def entities(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, llm: LLMResource):
    """Step 3: named entities, at most eight per page, tagged inline by the model and found
    in the original text."""
    stats = CallStats()
    frame, rejects = steps.tag_entities(source_pages, llm, _builder(llm), stats, context.log.info, _binding(llm))
    yield dg.Output(frame, output_name="entities", metadata={
        **table_metadata(frame), **stats.as_metadata(),
        "by_type": counts_md(dict(frame.group_by("type").len().sort("type").iter_rows()), "type"),
        "by_origin": counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin"),
    })
    yield wiring.rejects("entity_rejects", steps.REJECTS, rejects)


@dg.multi_asset(name="wikiprofile_object_candidates", outs={
    "object_candidates": wiring.out("Up to 3 object entities per page, ranked, with their left context.", {"polars", "litellm"}),
    "object_rejects": wiring.out("Entities in a bad position, names the model invented, pages without an eligible entity.", {"polars"}),
}, ins={"source_pages": wiring.input("source_pages"), "entities": wiring.input("entities")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/select_objects"))
def object_candidates(context: dg.AssetExecutionContext, source_pages: pl.DataFrame, entities: pl.DataFrame, llm: LLMResource,
                      wikiprofile_settings: WikiProfileSettings):
    """Step 4: object selection. The position rules (not opening a sentence, not in the
    first clause, not named in its own left context) are enforced here; the model ranks the
    eligible entities."""
    stats = CallStats()
    frame, rejects = steps.select_objects(source_pages, entities, llm, _builder(llm), wikiprofile_settings.objects_per_page,
                                          stats, context.log.info)
    yield dg.Output(frame, output_name="object_candidates", metadata={
        **table_metadata(frame.select("fact_id", "object", "type", "origin", "left_context")), **stats.as_metadata(),
        "by_origin": counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin"),
    })
    yield wiring.rejects("object_rejects", steps.REJECTS, rejects)


@dg.multi_asset(name="wikiprofile_verified_objects", outs={
    "verified_objects": wiring.out("Object candidates with the three verification verdicts.", {"polars", "litellm"}),
    "verification_rejects": wiring.out("Candidates a binding verdict found unsuitable, with the verdicts.", {"polars"}),
}, ins={"object_candidates": wiring.input("object_candidates")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/verify_with_target", "wikiprofile/verify_left_context", "wikiprofile/verify_difficulty"))
def verified_objects(context: dg.AssetExecutionContext, object_candidates: pl.DataFrame, llm: LLMResource):
    """Step 5: suitability with the target, of the left context alone, and difficulty.
    Advisory verdicts (the registry's ``verdicts``) are recorded and do not reject."""
    stats = CallStats()
    binding = _binding(llm)
    frame, rejects = steps.verify(object_candidates, llm, _builder(llm), binding, stats, context.log.info)
    yes = {name: int(frame[name].fill_null(False).sum()) for name in ("with_target", "left_context_alone", "difficulty")}
    yield dg.Output(frame, output_name="verified_objects", metadata={
        **table_metadata(frame.select("fact_id", "object", "with_target", "left_context_alone", "difficulty", "verified")),
        **stats.as_metadata(), "verdicts": "binding" if binding else "advisory",
        "said_yes": dg.MetadataValue.md(md_table(pl.DataFrame([{"verification": k, "yes": v, "of": frame.height} for k, v in yes.items()]))),
    })
    yield wiring.rejects("verification_rejects", steps.REJECTS, rejects)


@dg.asset(key_prefix=PREFIX, group_name=GROUP, kinds={"polars"},
          ins={"verified_objects": wiring.input("verified_objects"), "categories": wiring.input("categories"), "source_pages": wiring.input("source_pages")},
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


@dg.multi_asset(name="wikiprofile_direct_questions", outs={
    "direct_questions": wiring.out("Each fact's direct question: as generated, after specification, after minimalism.", {"polars", "litellm"}),
    "direct_question_rejects": wiring.out("Facts whose direct question could not be written, named its answer, or was rejected.", {"polars"}),
}, ins={"facts": wiring.input("facts"), "source_pages": wiring.input("source_pages")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/direct_question", "wikiprofile/refine_minimal", "wikiprofile/refine_specification"))
def direct_questions(context: dg.AssetExecutionContext, facts: pl.DataFrame, source_pages: pl.DataFrame, llm: LLMResource):
    """Steps 7-9: the direct question (answer = the object) from the left context, refined
    for specification (edit or REJECT) and minimalism (deletions only). With advisory
    verdicts a question that fails the checks is replaced by the fact sentence's cloze
    (``origin = rules``)."""
    stats = CallStats()
    binding = _binding(llm)
    frame, rejects = steps.direct_questions(facts, llm, _builder(llm), binding, stats, context.log.info, _pages(source_pages))
    yield dg.Output(frame, output_name="direct_questions", metadata={
        **table_metadata(frame.select("fact_id", "generated", "question", "specification", "minimalism", "origin")),
        **stats.as_metadata(), "by_origin": _origins(frame), "verdicts": "binding" if binding else "advisory",
        "specification": counts_md(dict(frame.group_by("specification").len().sort("specification").iter_rows()), "outcome"),
        "minimalism": counts_md(dict(frame.group_by("minimalism").len().sort("minimalism").iter_rows()), "outcome"),
    })
    yield wiring.rejects("direct_question_rejects", steps.REJECTS, rejects)


INDEX = "wikiprofile_pages"


@dg.multi_asset(name="wikiprofile_page_index", outs={
    "page_index": wiring.out("The page collection the search filters search: the source pages and the local page collection, "
                       "indexed for BM25.", {"polars", "lucene"}),
    "page_index_rejects": wiring.out("Records of the local page collection that could not be read.", {"polars"}),
}, ins={"source_pages": wiring.input("source_pages")}, **STEP)
def page_index(source_pages: pl.DataFrame, search: DocumentSearchResource, storage: StorageResource,
               wikiprofile_settings: WikiProfileSettings):
    """One index for the three search-grounded filters (steps 10, 14, 17), built once: the
    source pages themselves (a web search would find them too) and the local page collection.
    With a web search API (``search.kind: http``) nothing is indexed here."""
    extra, rejected = sources.load_search_pages(wikiprofile_settings.search_pages_uri())
    collection = sources.search_collection(source_pages, extra)
    where = storage.index_path("search", INDEX)
    indexed = search.index(where, collection.select(pl.col("doc_id").alias("id"), pl.col("content").alias("contents")))
    yield dg.Output(collection, output_name="page_index", metadata={
        **table_metadata(collection), "indexed": indexed, "index": dg.MetadataValue.path(where), "search": search.kind})
    yield dg.Output(rejected, output_name="page_index_rejects", metadata=table_metadata(rejected))


def _search_filter(context, questions: pl.DataFrame, llm: LLMResource, search: DocumentSearchResource, storage: StorageResource,
                   step: str):
    """The search-grounded filter: search each question in the page index, have the model
    answer from the hits and judge the answer; yields the filter table and its rejects."""
    stats = CallStats()
    asked = list(dict.fromkeys(q for q in questions["question"].to_list() if q.strip()))
    found = search.searcher(storage.index_path("search", INDEX)).batch_search(asked, asked, steps.SEARCH_K)
    hits = {q: [(h.docid, h.contents) for h in found[q]] for q in asked}
    binding = _binding(llm)
    frame, rejects = steps.search_filter(questions, hits, llm, _builder(llm), binding, stats, context.log.info, step=step)
    yield dg.Output(frame, output_name=step, metadata=_filter_metadata(frame, stats, binding))
    yield wiring.rejects(step.replace("_filter", "_rejects"), steps.REJECTS, rejects)


def _filter_metadata(frame: pl.DataFrame, stats: CallStats, binding: bool) -> dict:
    return {**table_metadata(frame.select("fact_id", "question", "search_answer", "definite", "kept")), **stats.as_metadata(),
            "definite": int(frame["definite"].fill_null(False).sum()), "verdicts": "binding" if binding else "advisory"}



@dg.multi_asset(name="wikiprofile_direct_search_filter", outs={
    "direct_search_filter": wiring.out("The direct questions answered from a search of the page collection, and judged.",
                                 {"polars", "litellm", "lucene"}),
    "direct_search_rejects": wiring.out("Direct questions whose search-grounded answer was not one definite answer.", {"polars"}),
}, ins={"questions": wiring.input("direct_questions"), "page_index": wiring.input("page_index")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"))
def direct_search_filter(context: dg.AssetExecutionContext, questions: pl.DataFrame, page_index: pl.DataFrame, llm: LLMResource,
                         search: DocumentSearchResource, storage: StorageResource):
    """Step 10: the search-grounded filter on the direct questions. The search resource (BM25
    over the page index by default, or a web search API) finds pages, the model answers from
    them, and a judge asks whether that answer is one definite answer."""
    yield from _search_filter(context, questions, llm, search, storage, "direct_search_filter")


@dg.multi_asset(name="wikiprofile_reverse_search_filter", outs={
    "reverse_search_filter": wiring.out("The reverse questions answered from a search of the page collection, and judged.",
                                  {"polars", "litellm", "lucene"}),
    "reverse_search_rejects": wiring.out("Reverse questions whose search-grounded answer was not one definite answer.", {"polars"}),
}, ins={"questions": wiring.input("reverse_questions"), "page_index": wiring.input("page_index")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"))
def reverse_search_filter(context: dg.AssetExecutionContext, questions: pl.DataFrame, page_index: pl.DataFrame, llm: LLMResource,
                          search: DocumentSearchResource, storage: StorageResource):
    """Step 14: the search-grounded filter on the reverse questions."""
    yield from _search_filter(context, questions, llm, search, storage, "reverse_search_filter")


@dg.multi_asset(name="wikiprofile_natural_search_filter", outs={
    "natural_search_filter": wiring.out("The natural and contextual questions answered from a search of the page collection, and judged.",
                                  {"polars", "litellm", "lucene"}),
    "natural_search_rejects": wiring.out("Natural questions whose search-grounded answer was not one definite answer.", {"polars"}),
}, ins={"questions": wiring.input("natural_questions"), "page_index": wiring.input("page_index")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/search_answer", "wikiprofile/search_judge"))
def natural_search_filter(context: dg.AssetExecutionContext, questions: pl.DataFrame, page_index: pl.DataFrame, llm: LLMResource,
                          search: DocumentSearchResource, storage: StorageResource):
    """Step 17: the search-grounded filter on DirectNatural, ReverseNatural and Contextual."""
    yield from _search_filter(context, questions, llm, search, storage, "natural_search_filter")


@dg.multi_asset(name="wikiprofile_reverse_questions", outs={
    "reverse_questions": wiring.out("Each fact's reverse question (answer = the subject, the object inside), refined and pair-checked.",
                              {"polars", "litellm"}),
    "reverse_question_rejects": wiring.out("Facts without a valid reverse question, with the step and the reason.", {"polars"}),
}, ins={"facts": wiring.input("facts"), "direct_questions": wiring.input("direct_questions"), "direct_search_filter": wiring.input("direct_search_filter"),
        "source_pages": wiring.input("source_pages")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("1", "wikiprofile/reverse_question", "wikiprofile/answer_type", "wikiprofile/pair_check", "wikiprofile/refine_minimal", "wikiprofile/refine_specification"))
def reverse_questions(context: dg.AssetExecutionContext, facts: pl.DataFrame, direct_questions: pl.DataFrame,
                      direct_search_filter: pl.DataFrame, source_pages: pl.DataFrame, llm: LLMResource):
    """Steps 11-13: for every fact whose direct question passed the search filter, the
    subject and the reverse question (or REJECT), the rule checks (subject in the text, object
    in the question, no answer in it), the answer type, both refinements and the pair check."""
    stats = CallStats()
    passed = direct_questions.filter(pl.col("fact_id").is_in(direct_search_filter.filter(pl.col("kept"))["fact_id"].implode()))
    binding = _binding(llm)
    frame, rejects = steps.reverse_questions(facts, passed, llm, _builder(llm), binding, stats, context.log.info, _pages(source_pages))
    yield dg.Output(frame, output_name="reverse_questions", metadata={
        **table_metadata(frame.select("fact_id", "subject", "question", "pair_ok", "origin")), **stats.as_metadata(),
        "verdicts": "binding" if binding else "advisory", "by_origin": _origins(frame),
    })
    yield wiring.rejects("reverse_question_rejects", steps.REJECTS, rejects)


def _passed(questions: pl.DataFrame, filtered: pl.DataFrame) -> pl.DataFrame:
    return questions.filter(pl.col("fact_id").is_in(filtered.filter(pl.col("kept"))["fact_id"].implode()))


@dg.multi_asset(name="wikiprofile_natural_questions", outs={
    "natural_questions": wiring.out("Natural rephrasings of the direct and reverse questions, and the contextual question.",
                              {"polars", "litellm"}),
    "natural_question_rejects": wiring.out("Rephrasings that were not questions or named their answer.", {"polars"}),
}, ins={"facts": wiring.input("facts"), "direct_questions": wiring.input("direct_questions"), "direct_search_filter": wiring.input("direct_search_filter"),
        "reverse_questions": wiring.input("reverse_questions"), "reverse_search_filter": wiring.input("reverse_search_filter"),
        "source_pages": wiring.input("source_pages")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"), **_prompted("1", "wikiprofile/natural_question"))
def natural_questions(context: dg.AssetExecutionContext, facts: pl.DataFrame, direct_questions: pl.DataFrame,
                      direct_search_filter: pl.DataFrame, reverse_questions: pl.DataFrame, reverse_search_filter: pl.DataFrame,
                      source_pages: pl.DataFrame, llm: LLMResource):
    """Steps 15-16 for facts whose direct and reverse questions passed their search filters:
    the natural rephrasings (model) and the contextual question (the left context without its
    unfinished sentence, then the direct question)."""
    stats = CallStats()
    direct = dict(_passed(direct_questions, direct_search_filter).select("fact_id", "question").iter_rows())
    reverse = {r["fact_id"]: r for r in _passed(reverse_questions, reverse_search_filter).iter_rows(named=True)}
    live = [f for f in facts.iter_rows(named=True) if f["fact_id"] in direct and f["fact_id"] in reverse]
    items = [(f, "direct", direct[f["fact_id"]], f["object"]) for f in live]
    items += [(f, "reverse", reverse[f["fact_id"]]["question"], reverse[f["fact_id"]]["subject"]) for f in live]
    origins = {(r["fact_id"], r["kind"]): r["origin"] for r in pl.concat([direct_questions.select("fact_id", "kind", "origin"),
                                                                          reverse_questions.select("fact_id", "kind", "origin")]).iter_rows(named=True)}
    frame, rejects = steps.natural_questions(items, llm, _builder(llm), stats, context.log.info, _binding(llm), _pages(source_pages),
                                             origins)
    contextual = pl.DataFrame([{"fact_id": f["fact_id"], "kind": "contextual", "origin": "rules",
                                "question": steps.contextual_question(f["left_context"], direct[f["fact_id"]])} for f in live],
                              schema=steps.NATURAL_SCHEMA)
    frame = pl.concat([frame, contextual]).sort("fact_id", "kind")
    yield dg.Output(frame, output_name="natural_questions", metadata={**table_metadata(frame), **stats.as_metadata(),
                                                                      "by_origin": _origins(frame)})
    yield wiring.rejects("natural_question_rejects", steps.REJECTS, rejects)


@dg.multi_asset(name="wikiprofile_benchmark", outs={
    "benchmark": wiring.out("The facts, ten tasks each: completion, contextual, four knowledge questions and their four multiple-choice variants.",
                      {"polars", "litellm"}),
    "final_rejects": wiring.out("Facts lost at the last steps: a question missing after the filters, the length filter, too few distractors.",
                          {"polars"}),
}, ins={n: wiring.input(n) for n in ("facts", "direct_questions", "direct_search_filter", "reverse_questions", "reverse_search_filter",
                             "natural_questions", "natural_search_filter", "source_pages", "object_candidates",
                             "verified_objects", "entities", "categories")}, pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
          **_prompted("2", "wikiprofile/distractors"))
def benchmark(context: dg.AssetExecutionContext, facts: pl.DataFrame, direct_questions: pl.DataFrame,
              direct_search_filter: pl.DataFrame, reverse_questions: pl.DataFrame, reverse_search_filter: pl.DataFrame,
              natural_questions: pl.DataFrame, natural_search_filter: pl.DataFrame, source_pages: pl.DataFrame,
              object_candidates: pl.DataFrame, verified_objects: pl.DataFrame, entities: pl.DataFrame, categories: pl.DataFrame,
              llm: LLMResource):
    """Steps 18-19 and the release table: a fact is kept only when all five questions passed
    (the paper's discard rule: one rejected question discards the fact), they are at most 40
    words and the left context at least 30; then three distractors for each closed-book
    question. The funnel of every step is in the metadata."""
    stats = CallStats()
    direct = dict(_passed(direct_questions, direct_search_filter).select("fact_id", "question").iter_rows())
    reverse = {r["fact_id"]: r for r in _passed(reverse_questions, reverse_search_filter).iter_rows(named=True)}
    natural = {(r["fact_id"], r["kind"]): r["question"] for r in natural_search_filter.filter(pl.col("kept")).iter_rows(named=True)}
    complete, rejects = release.complete_facts(facts, direct, reverse, natural)
    pools = release.option_pools(entities, source_pages, categories)
    options, more = steps.distractors(release.closed_book_items(complete, reverse), llm, _builder(llm), stats, context.log.info,
                                      _binding(llm), pools)
    rejects += more
    frame = release.tasks_table(complete, reverse, options, [direct_questions, reverse_questions, natural_questions])
    funnel = pl.DataFrame([
        {"step": "1. pages", "count": source_pages.height},
        {"step": "4. object candidates", "count": object_candidates.height},
        {"step": "5. verified objects", "count": int(verified_objects["verified"].sum())},
        {"step": "6. facts (downsampled)", "count": facts.height},
        {"step": "7-9. direct questions", "count": direct_questions.height},
        {"step": "10. direct search filter", "count": len(direct)},
        {"step": "11-13. reverse questions", "count": reverse_questions.height},
        {"step": "14. reverse search filter", "count": len(reverse)},
        {"step": "15-17. natural and contextual questions", "count": sum(
            all((fid, k) in natural for k in ("direct_natural", "reverse_natural", "contextual")) for fid in direct if fid in reverse)},
        {"step": "18. length filter", "count": len(complete)},
        {"step": "19. distractors (final facts)", "count": frame["fact_id"].n_unique()},
    ])
    yield dg.Output(frame, output_name="benchmark", metadata={
        **table_metadata(frame.select("fact_id", "task", "question", "answer")), **stats.as_metadata(),
        "facts": frame["fact_id"].n_unique(), "funnel": dg.MetadataValue.md(md_table(funnel, 20)),
        "question_origin": counts_md(dict(frame.group_by("question_origin").len().sort("question_origin").iter_rows()), "origin"),
    })
    yield wiring.rejects("final_rejects", steps.REJECTS, rejects)


wikiprofile_assets = [source_pages, page_index, categories, entities, object_candidates, verified_objects, facts, direct_questions,
                      direct_search_filter, reverse_questions, reverse_search_filter, natural_questions, natural_search_filter,
                      benchmark]
