"""Data-quality checks of RECOR's construction assets."""

from __future__ import annotations

recor_checks: list = []
