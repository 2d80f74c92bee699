"""QUIT: questions whose answers must be inferred from hints (inferential QA)."""
