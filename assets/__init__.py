"""Dagster assets, one package per benchmark plus the shared retrieval/evaluation assets."""
