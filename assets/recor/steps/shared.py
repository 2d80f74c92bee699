"""What RECOR's steps share: the rejects table's keys, the prompts, the output budgets, the
encoder's similarity and the yes/no questions put to the builder."""

from __future__ import annotations

import numpy as np
import polars as pl

from assets.common.prompts import load_prompt
from assets.common.rejects import Rejects
from assets.common.text import sentences
from assets.common.verdicts import VERDICT, verdict
from resources.llm import LLMRequest, Model

# What a step drops: the domain, the source question and the item (document, aspect, fact, turn).
REJECTS = Rejects(("domain", "question_id", "item"))

# Output budgets per kind of generation (the registry's default is sized for short answers).
LONG = {"max_tokens": 240}
MEDIUM = {"max_tokens": 120}
SHORT = {"max_tokens": 60}


def recor_prompt(name: str):
    return load_prompt("recor", name)


class Similarity:
    """Cosine similarity through an encoder function ``encode(texts) -> unit vectors``, with
    every text encoded once."""

    def __init__(self, encode):
        self._encode = encode
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for t, v in zip(todo, self._encode(todo)):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)

    @property
    def texts_encoded(self) -> int:
        """How many distinct texts went through the encoder (each once)."""
        return len(self._cache)

    def best(self, text: str, candidates: list[str]) -> tuple[float, int]:
        """The highest similarity of ``text`` to any candidate, and that candidate's index."""
        if not candidates:
            return 0.0, -1
        sims = self.vectors(candidates) @ self.vectors([text])[0]
        i = int(np.argmax(sims))
        return float(sims[i]), i


def doc_sentences(texts: list[str]) -> list[str]:
    return [s for t in texts for s in sentences(t)]


def ask_yes_no(model: Model, prompt_name: str, items: list[tuple[dict, dict]], stats, log) -> list[bool | None]:
    prompt = recor_prompt(prompt_name)
    reqs = [LLMRequest(f"{i}", prompt.messages(**fields), params=VERDICT) for i, (_, fields) in enumerate(items)]
    return [verdict(r) if r.ok else None for r in model.run(reqs, stats=stats, log=log)]


def history_text(turns: list[dict]) -> str:
    if not turns:
        return "No previous conversation."
    return "\n".join(f"Turn {t['turn_id']} - User: {t['query']}\nAssistant: {t['answer']}" for t in turns)


def kept_documents(aligned: pl.DataFrame) -> dict[str, list[str]]:
    """Each question's documents that survived the alignment."""
    return {
        q: aligned.filter((pl.col("question_id") == q) & pl.col("kept"))["doc_id"].to_list()
        for q in aligned["question_id"].unique()
    }
