"""Settings of the RECOR construction run: where the sources are, and the method's knobs."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import yaml

from assets.common.records import ROOT, project_path  # noqa: F401  (ROOT: where relative paths start)
from assets.common.settings import ProfiledSettings
from assets.partitions import DOMAINS
from assets.recor.rules import MAX_TURNS, MIN_TURNS
from assets.recor.sources import Loaded, load_bright, load_stackexchange

SOURCES_PATH = str(Path(__file__).with_name("sources.yaml"))
# The fields of a source entry that name files.
FILE_FIELDS = ("examples", "documents", "questions", "pool")


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The method's knobs; defaults follow the paper and its released configuration."""

    # A gold document usually backs one part of the answer, so its coverage is the mean
    # similarity of the answer sentences it covers best (``alignment_top`` of them). With
    # MiniLM on the sample, positives score 0.63-0.82 (10th-90th percentile) and same-topic
    # negatives 0.26-0.53 (bench/recor_checks.py).
    alignment_min_coverage: float = 0.58
    alignment_top: int = 3
    aspect_overlap: float = 0.8
    aspect_min_coverage: float = 0.5
    max_aspects: int = 6
    aspect_rounds: int = 2
    max_facts: int = 3
    fact_accept: float = 0.70  # similarity at which a fact passes without asking the LLM
    fact_reject: float = 0.15  # similarity below which it fails without asking
    doc_threshold: float = 4.0
    max_docs_per_turn: int = 5
    max_similarity: float = 0.58
    min_new_words: int = 10
    min_turns: int = MIN_TURNS
    max_turns: int = MAX_TURNS
    # Further tries at a turn's question (the question the aspect answers) after the
    # first-turn or follow-up prompt gave an unusable or repeated one.
    question_tries: int = 3
    # Whether the builder's yes/no verdicts may reject (the registry's ``verdicts``). When
    # they are advisory the encoder's evidence decides alone: an answer-covered document is
    # aligned, a fact passes at ``fact_similarity``, a turn's gold documents are those that
    # hold its verified facts (rated, and ordered by their score). The short verdicts
    # (suitability, relevance, flow, coherence) are still asked and recorded; the two that
    # read a whole document (alignment, fact check) are not asked.
    binding_verdicts: bool = True
    fact_similarity: float = 0.5


def load_sources(path: str = SOURCES_PATH) -> dict[str, dict]:
    """The per-domain source entries; errors name the domain."""
    with open(path, encoding="utf-8") as f:
        raw = (yaml.safe_load(f) or {}).get("domains") or {}
    needs = {"bright": {"examples", "documents"}, "stackexchange": {"questions"}}
    for domain, entry in raw.items():
        if domain not in DOMAINS:
            raise ValueError(f"{path}: unknown RECOR domain {domain!r} (known: {', '.join(DOMAINS)})")
        kind = entry.get("kind") if isinstance(entry, dict) else None
        if kind not in needs or not needs[kind] <= set(entry):
            raise ValueError(
                f"{path}: domain {domain!r} needs kind bright (examples, documents) or stackexchange (questions[, pool])"
            )
    return raw


class RecorSettings(ProfiledSettings):
    """Where RECOR's sources are and the method's thresholds.

    The defaults are the paper's configuration and its released configuration. A
    conversation has at most 12 aspects, since conversations run 3 to 12 turns (3.2.3), and
    an aspect has at most 5 atomic facts. A document needs a score of 4.0 and a turn keeps at
    most 5 documents. Aspects are kept at overlap 0.8 and coverage 0.5. A follow-up may share
    at most 0.58 of its words with earlier turns and must bring 10 new words. Every source
    question of a domain is built. The registry's ``recor.builder`` role should name a strong
    model with binding verdicts (the paper uses GPT-4.1).

    ``profile: demo`` is sized for the embedded model: at most 4 aspects of 2 facts each,
    and follow-ups with 4 new words. ``make run`` also takes one source question per domain
    (its ``--recor-questions``).
    """

    DEMO_SLICE: ClassVar[dict[str, Any]] = {"max_aspects": 4, "max_facts": 2, "min_new_words": 4}

    sources_path: str = SOURCES_PATH
    # Questions per domain to build conversations from; None takes every one.
    max_questions: int | None = None
    encoder: str = "minilm"
    max_aspects: int = 12
    max_facts: int = 5
    min_new_words: int = 10
    doc_threshold: float = 4.0
    max_docs_per_turn: int = 5
    # StackExchange hard-negative mining: LLM queries per question and hits kept per query.
    mining_queries: int = 3
    mining_hits: int = 10
    negative_overlap: float = 0.5

    def thresholds(self, binding_verdicts: bool = True) -> Thresholds:
        """The step knobs; ``binding_verdicts`` comes from the builder's registry entry."""
        return Thresholds(
            max_aspects=self.max_aspects,
            max_facts=self.max_facts,
            min_new_words=self.min_new_words,
            doc_threshold=self.doc_threshold,
            max_docs_per_turn=self.max_docs_per_turn,
            binding_verdicts=binding_verdicts,
        )

    def build_thresholds(self, llm) -> Thresholds:
        """The knobs a build runs with: the builder's (``recor.builder`` in the LLM resource's
        registry) verdicts binding or advisory as its registry entry says."""
        return self.thresholds(binding_verdicts=llm.model("recor.builder").binding)

    def fingerprint(self, domain: str) -> str:
        """A hash of the domain's source entry and the bytes of its files: it changes when,
        and only when, that domain's sources change. Where the files lie is left out, so a
        copy of the sources in another folder (a deployment's bucket) has the same hash."""
        import hashlib
        import json

        from resources.storage import read_bytes

        entry = load_sources(self.sources_path)[domain]
        files = [field for field in FILE_FIELDS if entry.get(field)]
        digest = hashlib.sha256(json.dumps({k: v for k, v in entry.items() if k not in files}, sort_keys=True).encode())
        for field in files:
            digest.update(field.encode() + b"\0" + read_bytes(project_path(entry[field])))
        return digest.hexdigest()[:16]

    def load(self, domain: str) -> Loaded:
        entry = load_sources(self.sources_path).get(domain)
        if entry is None:
            raise ValueError(f"{self.sources_path}: no sources for domain {domain!r}")
        if entry["kind"] == "bright":
            loaded = load_bright(domain, project_path(entry["examples"]), project_path(entry["documents"]))
        else:
            loaded = load_stackexchange(
                domain, project_path(entry["questions"]), project_path(entry["pool"]) if entry.get("pool") else None
            )
        if self.max_questions is not None:
            loaded.questions = loaded.questions[: self.max_questions]
        return loaded
