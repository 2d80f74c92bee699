"""Settings of the WikiProfile construction and profiling runs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parents[2]


def _resolve(path: str) -> str:
    return path if "://" in path or Path(path).is_absolute() else str(ROOT / path)


class WikiProfileSettings(dg.ConfigurableResource):
    """Where the page summaries are, and the method's knobs.

    Defaults follow the paper (notes, section 2) except the sample sizes: the paper samples
    10,000 summaries and downsamples the verified objects to 5,000 facts; the default keeps
    every page of the source and every verified object (``max_pages=None``,
    ``downsample_to=None``). The paper's configuration: ``max_pages=10000``,
    ``downsample_to=5000``, and a strong model with binding verdicts in the registry's
    ``wikiprofile.builder`` role.
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

    def pages_uri(self) -> str:
        return _resolve(self.pages_path)

    def search_pages_uri(self) -> str:
        return _resolve(self.search_pages_path)
