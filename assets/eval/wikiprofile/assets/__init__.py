"""Profiling subject models on the WikiProfile benchmark as Dagster assets, and the analyses
over every profiled model.

The assets by stage: :mod:`.profiles` (responses, grades, profiles and Table 2, partitioned
by subject model) and :mod:`.analyses` (the popularity, direction, thinking and robustness
reports), sharing :mod:`.common`'s wiring. ``wikiprofile_profile_assets`` and
``wikiprofile_analysis_assets`` list them."""

from assets.eval.wikiprofile.assets.analyses import (
    wikiprofile_analysis_assets,
    wikiprofile_direction_report,
    wikiprofile_popularity_report,
    wikiprofile_robustness_report,
    wikiprofile_thinking_report,
)
from assets.eval.wikiprofile.assets.profiles import (
    SAMPLE_SCHEMA,
    wikiprofile_graded_responses,
    wikiprofile_profile_assets,
    wikiprofile_profile_report,
    wikiprofile_profiles,
    wikiprofile_responses,
)

__all__ = [
    "SAMPLE_SCHEMA",
    "wikiprofile_analysis_assets",
    "wikiprofile_direction_report",
    "wikiprofile_graded_responses",
    "wikiprofile_popularity_report",
    "wikiprofile_profile_assets",
    "wikiprofile_profile_report",
    "wikiprofile_profiles",
    "wikiprofile_responses",
    "wikiprofile_robustness_report",
    "wikiprofile_thinking_report",
]
