"""The built WikiProfile benchmark for sharing (:mod:`assets.common.sharing`): its tasks and
the pages they were written from, as a Hugging Face dataset and Croissant. WikiProfile asks
models for what they recall, with no corpus to retrieve from: it has no BEIR folder.

Configurations: ``tasks`` (ten a fact: completion, contextual, four knowledge questions and
their multiple-choice variants) and ``pages`` (the summaries the kept facts come from, with
their monthly views, which the popularity analyses read), one split each, ``test``."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assets.common.sharing import About, Build, BuildRecord, Share, build_card
from assets.wikiprofile.release import BENCHMARK_SCHEMA

PREFIX = "wikiprofile"
VERSION = "1.0.0"
# Built from Wikipedia's summaries, shared under CC BY-SA: a build of them is too.
LICENSE = "cc-by-sa-4.0"
CITATION = """@misc{calderon2026emptyshelves,
  title = {Empty Shelves or Lost Keys? Recall Is the Bottleneck for Parametric Factuality},
  author = {Calderon, Nitay and Ben-David, Eyal and Gekhman, Zorik and Ofek, Eran and Yona, Gal},
  year = {2026},
  eprint = {2602.14080},
  archivePrefix = {arXiv},
  url = {https://arxiv.org/abs/2602.14080}
}"""
SUMMARY = (
    "WikiProfile, built by benchfoundry following *Empty Shelves or Lost Keys? Recall Is the Bottleneck for "
    "Parametric Factuality*: facts from Wikipedia page summaries, each asked ten ways (a completion, a "
    "contextual question, direct and reverse questions, natural variants and multiple-choice versions), so "
    "that a model's knowledge is profiled per fact: encoded or not, and recalled directly, with thinking, "
    "or not at all. Configurations: `tasks` and `pages`."
)
ABOUT = About(
    "WikiProfile (benchfoundry build)",
    SUMMARY,
    CITATION,
    LICENSE,
    ("question-answering",),
    ("factuality", "knowledge-profiling", "benchfoundry"),
)
DESCRIPTIONS = {
    "tasks": "Ten tasks per fact: question, gold answer, options for the multiple-choice tasks, origin.",
    "pages": "The Wikipedia summaries the facts come from, with their mean monthly page views.",
}
PAGE_COLUMNS = ("page_id", "title", "summary", "words", "mean_monthly_views", "reference_category")
FUNNEL = (
    ("pages", "wikiprofile/source_pages"),
    ("object candidates", "wikiprofile/object_candidates"),
    ("facts (downsampled)", "wikiprofile/facts"),
    ("direct questions", "wikiprofile/direct_questions"),
    ("reverse questions", "wikiprofile/reverse_questions"),
    ("tasks (ten a final fact)", "wikiprofile/benchmark"),
)
# The built tables (the card names the run of the first), the steps before them, the build's roles.
BUILD = Build(
    PREFIX,
    (
        "benchmark",
        "source_pages",
        "object_candidates",
        "verified_objects",
        "facts",
        "direct_questions",
        "reverse_questions",
        "natural_questions",
    ),
    ("builder", "grader"),
)


def share(
    benchmark: pl.DataFrame,
    pages: pl.DataFrame,
    record: BuildRecord,
    models: Mapping[str, str],
    sizes: Mapping[str, int | str],
) -> Share:
    """What WikiProfile's export writes, from the built ``wikiprofile/benchmark`` and
    ``wikiprofile/source_pages`` (the pages of kept facts only) and the build's record."""
    tasks = benchmark.select(list(BENCHMARK_SCHEMA))
    used = pages.filter(pl.col("page_id").is_in(tasks["page_id"].unique())).select(PAGE_COLUMNS)
    card = build_card(
        ABOUT,
        record,
        models,
        {
            "facts": tasks["fact_id"].n_unique(),
            "tasks": tasks.height,
            "pages": used.height,
            **{f"{t} tasks": n for t, n in tasks.group_by("task").len().sort("task").iter_rows()},
            **sizes,
        },
        FUNNEL,
    )
    return Share(
        configs={"tasks": {"test": tasks}, "pages": {"test": used}},
        descriptions=DESCRIPTIONS,
        card=card,
        name="wikiprofile",
        url="https://arxiv.org/abs/2602.14080",
        version=VERSION,
    )
