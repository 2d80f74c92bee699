"""The wiring the WikiProfile construction assets share: their key prefix and group, the step
settings and code versions, and the builder model the registry names."""

import polars as pl

from assets.common.metadata import counts_md
from assets.common.prompts import code_version
from assets.common.wiring import Wiring
from resources.llm import LLMResource, Model

PREFIX = GROUP = "wikiprofile"
wiring = Wiring(PREFIX, GROUP)
STEP = dict(code_version="1")


def prompted(rules: str, *prompts: str) -> dict:
    """The step's settings with a code version that follows its rules and its prompts."""
    return {**STEP, "code_version": code_version(rules, *prompts)}


def builder(llm: LLMResource) -> Model:
    """The registry's builder model; its ``verdicts`` say whether its judgements decide."""
    return llm.model("wikiprofile.builder")


def page_texts(source_pages: pl.DataFrame) -> dict[str, tuple[str, str]]:
    """Page id -> (title, summary), for the questions built by rule."""
    return {r["page_id"]: (r["title"], r["summary"]) for r in source_pages.iter_rows(named=True)}


def origin_counts(frame: pl.DataFrame) -> dict:
    return counts_md(dict(frame.group_by("origin").len().sort("origin").iter_rows()), "origin")
