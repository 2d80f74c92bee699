"""QUIT construction as Dagster assets (paper sections 3.1-3.2). Each asset is thin: the
rules live in :mod:`assets.quit.rules` and the LLM-driven steps in :mod:`assets.quit.steps`.

The assets by stage: :mod:`.construction` (3.1: the questions, their hints, type, difficulty
and split), :mod:`.labeling` (3.2: the passages, their labels and the human verification) and
:mod:`.release` (the benchmark, its release files and Table 1), sharing :mod:`.common`'s
wiring. Every asset is importable from here, and ``quit_assets`` lists them in graph order."""

from assets.quit.assets.common import wiring
from assets.quit.assets.construction import (
    hint_convergence,
    parametric_answers,
    question_metadata,
    reference_index,
    screened_questions,
    selected_questions,
    source_questions,
    splits,
)
from assets.quit.assets.export import quit_export
from assets.quit.assets.labeling import (
    passage_answers,
    passage_labels,
    passages,
    verification_candidates,
    verified_labels,
)
from assets.quit.assets.release import benchmark, release_files, statistics

quit_assets = [
    source_questions,
    screened_questions,
    hint_convergence,
    selected_questions,
    reference_index,
    question_metadata,
    parametric_answers,
    splits,
    passages,
    passage_answers,
    passage_labels,
    verification_candidates,
    verified_labels,
    benchmark,
    release_files,
    statistics,
    quit_export,
]

__all__ = [
    "quit_assets",
    "quit_export",
    "wiring",
    "source_questions",
    "screened_questions",
    "hint_convergence",
    "selected_questions",
    "reference_index",
    "question_metadata",
    "parametric_answers",
    "splits",
    "passages",
    "passage_answers",
    "passage_labels",
    "verification_candidates",
    "verified_labels",
    "benchmark",
    "release_files",
    "statistics",
]
