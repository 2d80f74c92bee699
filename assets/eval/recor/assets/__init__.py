"""Evaluation on RECOR (paper section 4): query strategies, retrieval runs per domain x
retriever, the retrieval report, and RAG generation judged on five dimensions.

The assets by stage: :mod:`.retrieval` (queries, runs, the retrieval report),
:mod:`.generation` (answers in three modes, judged, and their report) and :mod:`.reteco`
(SemEval-2027 RETECO Track 2's scoring, judging and leaderboard), sharing :mod:`.common`'s
wiring. ``recor_eval_assets`` lists them."""

from assets.eval.recor.assets.common import BY_DOMAIN
from assets.eval.recor.assets.generation import recor_generation, recor_generation_metrics
from assets.eval.recor.assets.reteco import (
    RETECO_GENERATION_SCHEMA,
    ReTeCoGeneration,
    ReTeCoSubmission,
    reteco_generation,
    reteco_leaderboard,
    reteco_retrieval,
)
from assets.eval.recor.assets.retrieval import (
    qrels_frame,
    recor_queries,
    recor_retrieval_metrics,
    recor_runs,
    truncated,
)

recor_eval_assets = [
    recor_queries,
    recor_runs,
    recor_retrieval_metrics,
    recor_generation,
    recor_generation_metrics,
    reteco_retrieval,
    reteco_generation,
    reteco_leaderboard,
]

__all__ = [
    "BY_DOMAIN",
    "RETECO_GENERATION_SCHEMA",
    "ReTeCoGeneration",
    "ReTeCoSubmission",
    "qrels_frame",
    "recor_eval_assets",
    "recor_generation",
    "recor_generation_metrics",
    "recor_queries",
    "recor_retrieval_metrics",
    "recor_runs",
    "reteco_generation",
    "reteco_leaderboard",
    "reteco_retrieval",
    "truncated",
]
