"""Settings of the WikiProfile construction and profiling runs."""

from __future__ import annotations

import dagster as dg

from assets.common.records import project_path


class WikiProfileSettings(dg.ConfigurableResource):
    """Where the page summaries are, and the method's knobs.

    Defaults follow the paper (notes, section 2) except the sample sizes: the paper samples
    10,000 summaries and downsamples the verified objects to 5,000 facts; the default keeps
    every page of the source and every verified object (``max_pages=None``,
    ``downsample_to=None``). The paper's configuration: ``max_pages=10000``,
    ``downsample_to=5000``, and a strong model with binding verdicts in the registry's
    ``wikiprofile.builder`` and ``wikiprofile.grader`` roles. ``make run`` reads 18 pages and
    downsamples to 12 facts (its ``--wikiprofile-pages`` and ``--wikiprofile-facts``).
    """

    pages_path: str = "data/wikiprofile/pages.jsonl"
    # The local Wikipedia page collection the search-grounded filter searches with BM25.
    search_pages_path: str = "data/wikiprofile/search_pages.jsonl"
    max_pages: int | None = None
    min_words: int = 50
    objects_per_page: int = 3
    downsample_to: int | None = None
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

    def search_pages_uri(self) -> str:
        return project_path(self.search_pages_path)
