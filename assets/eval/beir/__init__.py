"""Evaluation on any dataset in BEIR's layout that the deployment registers
(``resources/datasets.yaml``): :mod:`.assets` (reading, runs, reranked runs, metric tables)
over :mod:`.rules` (what is indexed, the metrics, the leaderboard's columns)."""

from assets.eval.beir.assets import beir_eval_assets

__all__ = ["beir_eval_assets"]
