"""What the three benchmarks share: parsing, source records, rejects, verdicts, text, asset
wiring, metadata and prompts. Imports only resources/."""
