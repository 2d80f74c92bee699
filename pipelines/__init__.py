"""Wiring only: one Definitions object, jobs, schedules and sensors."""
