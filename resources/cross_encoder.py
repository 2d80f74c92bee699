"""Cross-encoder rerankers through sentence-transformers, from a local folder (a saved
``CrossEncoder``, such as the one ``eval/quit_rerank_model`` trains); nothing is downloaded.

A cross-encoder reads a question and a passage together and gives one relevance score.
"""

from __future__ import annotations

from resources.encoders import folder_model


def score(path: str, pairs: list[tuple[str, str]], batch_size: int = 16) -> list[float]:
    """One relevance score per ``(question, passage)``, the model's own (sigmoid of its logit
    for a one-label model)."""
    if not pairs:
        return []
    values = folder_model("CrossEncoder", path).predict(pairs, batch_size=batch_size, show_progress_bar=False)
    return [float(v) for v in values]
