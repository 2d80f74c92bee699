"""WikiProfile's pages from Wikimedia's own data (notes, step 1): the page summaries of the
dumps researchers download, the page views of the published ``country_project_page``
dataset (or the page-views API), and their join by page id. Pure functions and readers; the
assets are in ``assets.wikiprofile.assets.wikipedia``."""

from assets.wikiprofile.sources.wikipedia.files import WikipediaFileError, normalize_title, numbered_lines, open_binary
from assets.wikiprofile.sources.wikipedia.join import NO_VIEWS, ViewTotals, draw_pages, join_pages
from assets.wikiprofile.sources.wikipedia.summaries import (
    SUMMARY_REASONS,
    SUMMARY_SCHEMA,
    SummaryReader,
    hf_lead,
    is_heading,
    summary_format,
)
from assets.wikiprofile.sources.wikipedia.views import (
    VIEW_REASONS,
    VIEW_SCHEMA,
    WINDOW,
    ViewReader,
    api_months,
    day_of,
    window_months,
)

# Every reason a reject of Wikimedia's data may give.
WIKIPEDIA_REASONS = SUMMARY_REASONS | VIEW_REASONS | {NO_VIEWS}

__all__ = [
    "NO_VIEWS",
    "SUMMARY_REASONS",
    "SUMMARY_SCHEMA",
    "VIEW_REASONS",
    "VIEW_SCHEMA",
    "WIKIPEDIA_REASONS",
    "WINDOW",
    "SummaryReader",
    "ViewReader",
    "ViewTotals",
    "api_months",
    "WikipediaFileError",
    "day_of",
    "draw_pages",
    "hf_lead",
    "is_heading",
    "join_pages",
    "normalize_title",
    "numbered_lines",
    "open_binary",
    "summary_format",
    "window_months",
]
