"""WikiProfile's fact extraction as Dagster assets (notes, section 2, steps 1-6). Each step
is a multi-asset of what it keeps and what it rejects, with the reason; the rules live in
:mod:`assets.wikiprofile.rules`, the LLM-driven steps in :mod:`assets.wikiprofile.steps`.

The assets by stage: :mod:`.extraction` (steps 1-6: pages to facts), :mod:`.questions`
(steps 7-17: the questions and their search filters) and :mod:`.release` (steps 18-19: the
benchmark), with :mod:`.wikipedia` (the pages from Wikimedia's own data), sharing
:mod:`.common`'s wiring. ``wikiprofile_assets`` lists them: ``wikipedia_assets`` and
``construction_assets``."""

from assets.wikiprofile.assets.common import wiring
from assets.wikiprofile.assets.export import wikiprofile_export
from assets.wikiprofile.assets.extraction import (
    categories,
    entities,
    facts,
    object_candidates,
    source_pages,
    verified_objects,
)
from assets.wikiprofile.assets.questions import (
    direct_questions,
    direct_search_filter,
    natural_questions,
    natural_search_filter,
    page_index,
    reverse_questions,
    reverse_search_filter,
)
from assets.wikiprofile.assets.release import benchmark
from assets.wikiprofile.assets.wikipedia import wikipedia_assets

# The construction from the pages on: unpartitioned, one run builds it (``wikiprofile_build``).
construction_assets = [
    source_pages,
    page_index,
    categories,
    entities,
    object_candidates,
    verified_objects,
    facts,
    direct_questions,
    direct_search_filter,
    reverse_questions,
    reverse_search_filter,
    natural_questions,
    natural_search_filter,
    benchmark,
    wikiprofile_export,
]
# The Wikimedia readers are partitioned (a shard, a month): materialized on their own, before
# the build, never in one run with it.
wikiprofile_assets = [*wikipedia_assets, *construction_assets]

__all__ = ["construction_assets", "wikipedia_assets", "wikiprofile_assets", "wiring"]
