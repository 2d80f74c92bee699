"""Cross-encoder rerankers through sentence-transformers, from a local folder (a saved
``CrossEncoder``, such as the one ``eval/quit_rerank_model`` trains); nothing is downloaded.

A cross-encoder reads a question and a passage together and gives one relevance score.
"""

from __future__ import annotations

import functools
import os
import threading

_LOCK = threading.Lock()


# By folder: a trained model's folder is never rewritten (a new training gets a new one), so a
# cached model is never stale.
@functools.cache
def _model(path: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    return CrossEncoder(path, device="cpu", local_files_only=True)


def _load(path: str):
    # Threads asking for one folder at once load it once.
    with _LOCK:
        return _model(path)


def score(path: str, pairs: list[tuple[str, str]], batch_size: int = 16) -> list[float]:
    """One relevance score per ``(question, passage)``, the model's own (sigmoid of its logit
    for a one-label model)."""
    if not pairs:
        return []
    values = _load(path).predict(pairs, batch_size=batch_size, show_progress_bar=False)
    return [float(v) for v in values]
