"""Settings of the QUIT construction run (paths, sample sizes, seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from assets.common.settings import ProfiledSettings

DATA = Path(__file__).resolve().parents[2] / "data" / "quit"


class QuitSettings(ProfiledSettings):
    """Where QUIT's sources are and how much of the method to run.

    The defaults are the paper's configuration. Each passage of every question is labeled
    (3.2.2). Hint convergence uses 10 wrong candidates per question, as HintEval does. Each
    closed-book model answers every question three times (3.1.4), sampled at
    ``parametric_temperature``; the paper names no temperature, and 1.0 samples the model's
    own distribution. Train and test are sampled as 5,000 answerable and 2,000 non-answerable
    questions (3.1.4). Rerankers reorder the top 100 of each run (section 5). The paper's
    models go in the registry: three labelers, three readers and a judge with binding verdicts.

    ``profile: demo`` is the slice that runs in minutes on 2 CPU cores. It labels the
    passages of 3 questions, uses 3 wrong candidates and a test split of 12 questions, and
    each reranker reorders its own ``top_k`` from ``resources/rerankers.yaml``.
    """

    DEMO_SLICE: ClassVar[dict[str, Any]] = {"distractors": 3, "test_size": 12, "max_labeled_questions": 3, "rerank_depth": None}

    triviahg_path: str = str(DATA / "triviahg_sample.json")
    wikihint_path: str = str(DATA / "wikihint_sample.json")
    # Passages for reference-based difficulty; empty = the sources' own snippets.
    reference_path: str = ""
    reference_top_k: int = 10
    # Wrong candidate answers generated per question for convergence.
    distractors: int = 10
    parametric_repeats: int = 3
    parametric_temperature: float = 1.0
    train_size: int = 5000
    test_size: int = 2000
    seed: int = 13
    # How many questions get their 325 passages labeled; None labels every question.
    max_labeled_questions: int | None = None
    # How many of each labeled question's 325 passages are labeled (the same seeded sample
    # of hint orders for every question); None labels all of them. A pilot of a new labeler
    # can measure its cost and accuracy on a slice; the benchmark's corpus then holds only
    # the labeled passages.
    labeled_passages_per_question: int | None = None
    # Labeled passages left without a label (a labeler or judge call failed after its retries)
    # over all labeled passages, above which the labels' check fails; a rerun asks only those.
    max_label_error_rate: float = 0.01
    # Passages each reranker reorders at the head of a run; None: the reranker's own top_k.
    rerank_depth: int | None = 100
    # Where the released files go; empty = "<storage root>/quit/release".
    export_dir: str = ""
    # Human verification decisions (written by the verification page).
    decisions_path: str = ""
