"""Settings of the QUIT construction run (paths, sample sizes, seeds)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

DATA = Path(__file__).resolve().parents[2] / "data" / "quit"


class QuitSettings(dg.ConfigurableResource):
    """Where QUIT's sources are and how much of the method to run.

    Defaults run the whole method on the bundled sample in minutes on 2 CPU cores: 3
    distractors per question for convergence, a test split of 12 questions, the passages of
    3 questions labeled. The paper's configuration: ``distractors=10``, ``train_size=5000``,
    ``test_size=2000``, ``max_labeled_questions=None`` (label every question), and three
    labelers and three readers in the model registry.
    """

    triviahg_path: str = str(DATA / "triviahg_sample.json")
    wikihint_path: str = str(DATA / "wikihint_sample.json")
    # Passages for reference-based difficulty; empty = the sources' own snippets.
    reference_path: str = ""
    reference_top_k: int = 10
    # Wrong candidate answers generated per question for convergence (HintEval uses 10).
    distractors: int = 3
    parametric_repeats: int = 3
    train_size: int = 5000
    test_size: int = 12
    seed: int = 13
    # How many questions get their 325 passages labeled; None labels every question.
    max_labeled_questions: int | None = 3
    # How many of each labeled question's 325 passages are labeled (the same seeded sample
    # of hint orders for every question); None labels all of them. A pilot of a new labeler
    # can measure its cost and accuracy on a slice; the benchmark's corpus then holds only
    # the labeled passages.
    labeled_passages_per_question: int | None = None
    # Where the released files go; empty = "<storage root>/quit/release".
    export_dir: str = ""
    # Human verification decisions (written by the verification page).
    decisions_path: str = ""
