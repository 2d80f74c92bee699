"""Settings of the WikiProfile construction and profiling runs."""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

from assets.common.records import project_path
from assets.common.settings import ProfiledSettings


class WikiProfileSettings(ProfiledSettings):
    """Where the page summaries are, and the method's knobs.

    The defaults are the paper's configuration (notes, sections 1-3). It samples 10,000 page
    summaries of at least 50 words and picks up to 3 objects per page. The verified objects
    are downsampled to 5,000 facts. Each question is sampled 8 times at temperature 1 and
    graded with the threshold 0.5. The stability analysis draws 1,000 bootstrap resamples
    (appendix D.4). The registry's ``wikiprofile.builder`` and ``wikiprofile.grader`` roles
    should name a strong model with binding verdicts (the paper uses Gemini-2.5-Pro with
    thinking).

    ``profile: demo`` reads 12 pages, keeps 8 facts and samples each question 4 times (the
    fewest that put the gold in each of the 4 option slots equally often).
    """

    DEMO_SLICE: ClassVar[dict[str, Any]] = {"max_pages": 12, "downsample_to": 8, "n_samples": 4}

    # Where the page summaries come from: the project's own JSON at ``pages_path`` (the bundled
    # sample by default), or Wikimedia's data under ``wikipedia_path`` through the
    # ``wikipedia_summaries`` and ``wikipedia_views`` assets (docs/benchmarks/wikiprofile.md, "WikiProfile from Wikipedia").
    pages_source: Literal["sample", "wikipedia"] = "sample"
    pages_path: str = "data/wikiprofile/pages.jsonl"
    # The deployment's folder of Wikimedia files: ``summaries/`` (CirrusSearch content dumps,
    # Hugging Face wikimedia/wikipedia Parquet shards or REST page-summary JSON Lines, one
    # partition per file) and ``views/`` (country_project_page daily files or page-views API JSON).
    wikipedia_path: str | None = None
    # The project whose page views count (country_project_page's ``project`` column).
    wikipedia_project: str = "en.wikipedia"
    # The draw of ``max_pages`` pages is not stated by the paper: uniform over the eligible
    # pages (0), or equal numbers from this many popularity quantiles.
    draw_strata: int = 0
    # The local Wikipedia page collection the search-grounded filter searches with BM25.
    search_pages_path: str = "data/wikiprofile/search_pages.jsonl"
    max_pages: int | None = 10000
    min_words: int = 50
    objects_per_page: int = 3
    downsample_to: int | None = 5000
    seed: int = 0
    # Profiling (notes, section 3): samples per question at this temperature, the grade
    # threshold and the strategy for ungradable questions.
    n_samples: int = 8
    temperature: float = 1.0
    tau: float = 0.5
    nan_strategy: str = "S2"
    # Resamples of the bootstrap of n (appendix D.4 uses 1,000).
    bootstrap_resamples: int = 1000

    def pages_uri(self) -> str:
        return project_path(self.pages_path)

    def wikipedia_folder(self, part: str) -> str:
        """``summaries`` or ``views`` under the deployment's Wikipedia folder; an error when none is set."""
        if not self.wikipedia_path:
            raise ValueError(
                "wikiprofile_settings.wikipedia_path is not set: the deployment names its folder of Wikimedia "
                "files (make run --wikipedia FOLDER)"
            )
        return os.path.join(project_path(self.wikipedia_path), part)

    def search_pages_uri(self) -> str:
        return project_path(self.search_pages_path)
