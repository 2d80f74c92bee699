"""Seq2seq rerankers (monoT5, RankT5) through transformers, from a local path or a cached
model name; nothing is downloaded at run time.

monoT5 reads ``Query: q Document: d Relevant:`` and answers ``true`` or ``false``; its score
is the softmax probability of ``true`` against ``false`` at the first decoder step. RankT5's
encoder-decoder variant is trained so that the logit of one token at that step is the score
(``score: logit`` with that token as ``true_token``). Quality needs the released weights; a
randomly initialised model only exercises the code path.
"""

from __future__ import annotations

import os
import threading

_MODELS: dict[str, tuple] = {}
_LOCK = threading.Lock()


def _load(path: str):
    with _LOCK:
        if path not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=True).eval()
            _MODELS[path] = (tokenizer, model)
        return _MODELS[path]


def token_id(tokenizer, token: str) -> int:
    """The vocabulary id of a single-token word such as ``true``; an error names the word
    when the tokenizer splits it."""
    ids = tokenizer.encode(token, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"{token!r} is not a single token for this tokenizer ({ids})")
    return ids[0]


def score(
    path: str,
    inputs: list[str],
    true_token: str = "true",
    false_token: str = "false",
    mode: str = "softmax",
    batch_size: int = 16,
    max_length: int = 512,
) -> list[float]:
    """One relevance score per input text (``mode``: ``softmax`` for monoT5, ``logit`` for
    RankT5)."""
    import torch

    if mode not in {"softmax", "logit"}:
        raise ValueError(f"seq2seq score mode must be softmax or logit, not {mode!r}")
    tokenizer, model = _load(path)
    yes = token_id(tokenizer, true_token)
    no = token_id(tokenizer, false_token) if mode == "softmax" else None
    start = model.config.decoder_start_token_id
    out: list[float] = []
    with torch.inference_mode():
        for i in range(0, len(inputs), batch_size):
            enc = tokenizer(
                inputs[i : i + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
            )
            decoder = torch.full((enc["input_ids"].shape[0], 1), start, dtype=torch.long)
            logits = model(**enc, decoder_input_ids=decoder).logits[:, 0, :]
            if mode == "softmax":
                scores = torch.log_softmax(logits[:, [yes, no]], dim=-1)[:, 0].exp()
            else:
                scores = logits[:, yes]
            out.extend(float(s) for s in scores)
    return out
