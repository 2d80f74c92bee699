"""Data-quality checks: great-expectations suites run as Dagster asset checks, plus plain
asset checks for the methods' own rules."""
