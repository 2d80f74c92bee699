"""Data-quality checks of the evaluation assets of the three benchmarks (``eval/*`` and
WikiProfile's profiling and analyses)."""

from __future__ import annotations

eval_checks: list = []
