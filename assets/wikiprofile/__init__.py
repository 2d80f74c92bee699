"""WikiProfile: facts from Wikipedia summaries, ten questions each, and the knowledge profiles of models."""
