"""RECOR: conversational reasoning-retrieval benchmark, built and evaluated per domain."""
