"""Dagster resources: LLM access, model serving, indexes, encoders and storage."""
