"""The WikiProfile benchmark as a Dagster asset (notes, steps 18-19): the facts whose questions
all passed, with their distractors, as the release table of ten tasks a fact."""

import dagster as dg
import polars as pl

from assets.common.metadata import counts_md, md_table, table_metadata
from assets.wikiprofile import release, rules, steps
from assets.wikiprofile.assets.common import builder, prompted, wiring
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool


@dg.multi_asset(
    name="wikiprofile_benchmark",
    outs={
        "benchmark": wiring.out(
            "The facts, ten tasks each: completion, contextual, four knowledge questions and their four multiple-choice variants.",
            {"polars", "litellm"},
        ),
        "final_rejects": wiring.out(
            "Facts lost at the last steps: a question missing after the filters, the length filter, too few distractors.",
            {"polars"},
        ),
    },
    ins={
        n: wiring.input(n)
        for n in (
            "facts",
            "direct_questions",
            "direct_search_filter",
            "reverse_questions",
            "reverse_search_filter",
            "natural_questions",
            "natural_search_filter",
            "source_pages",
            "object_candidates",
            "verified_objects",
            "entities",
            "categories",
        )
    },
    pool=llm_pool("wikiprofile.builder", "wikiprofile.grader"),
    **prompted("2", "wikiprofile/distractors"),
)
def benchmark(
    context: dg.AssetExecutionContext,
    facts: pl.DataFrame,
    direct_questions: pl.DataFrame,
    direct_search_filter: pl.DataFrame,
    reverse_questions: pl.DataFrame,
    reverse_search_filter: pl.DataFrame,
    natural_questions: pl.DataFrame,
    natural_search_filter: pl.DataFrame,
    source_pages: pl.DataFrame,
    object_candidates: pl.DataFrame,
    verified_objects: pl.DataFrame,
    entities: pl.DataFrame,
    categories: pl.DataFrame,
    llm: LLMResource,
):
    """Steps 18-19 and the release table: a fact is kept only when all five questions passed
    (the paper's discard rule: one rejected question discards the fact), they are at most 40
    words and the left context at least 30; then three distractors for each closed-book
    question. The funnel of every step is in the metadata."""
    stats = CallStats()
    direct = dict(rules.passed(direct_questions, direct_search_filter).select("fact_id", "question").iter_rows())
    reverse = {r["fact_id"]: r for r in rules.passed(reverse_questions, reverse_search_filter).iter_rows(named=True)}
    natural = {
        (r["fact_id"], r["kind"]): r["question"]
        for r in natural_search_filter.filter(pl.col("kept")).iter_rows(named=True)
    }
    complete, rejects = release.complete_facts(facts, direct, reverse, natural)
    pools = release.option_pools(entities, source_pages, categories)
    model = builder(llm)
    options, more = steps.distractors(
        release.closed_book_items(complete, reverse), model, stats, context.log.info, model.binding, pools
    )
    rejects += more
    frame = release.tasks_table(complete, reverse, options, [direct_questions, reverse_questions, natural_questions])
    funnel = pl.DataFrame(
        [
            {"step": "1. pages", "count": source_pages.height},
            {"step": "4. object candidates", "count": object_candidates.height},
            {"step": "5. verified objects", "count": int(verified_objects["verified"].sum())},
            {"step": "6. facts (downsampled)", "count": facts.height},
            {"step": "7-9. direct questions", "count": direct_questions.height},
            {"step": "10. direct search filter", "count": len(direct)},
            {"step": "11-13. reverse questions", "count": reverse_questions.height},
            {"step": "14. reverse search filter", "count": len(reverse)},
            {
                "step": "15-17. natural and contextual questions",
                "count": sum(
                    all((fid, k) in natural for k in ("direct_natural", "reverse_natural", "contextual"))
                    for fid in direct
                    if fid in reverse
                ),
            },
            {"step": "18. length filter", "count": len(complete)},
            {"step": "19. distractors (final facts)", "count": frame["fact_id"].n_unique()},
        ]
    )
    yield dg.Output(
        frame,
        output_name="benchmark",
        metadata={
            **table_metadata(frame.select("fact_id", "task", "question", "answer")),
            **stats.as_metadata(),
            "facts": frame["fact_id"].n_unique(),
            "funnel": dg.MetadataValue.md(md_table(funnel, 20)),
            "question_origin": counts_md(
                dict(frame.group_by("question_origin").len().sort("question_origin").iter_rows()), "origin"
            ),
        },
    )
    yield wiring.rejects("final_rejects", steps.REJECTS, rejects)
