"""Settings of the RECOR construction run: where the sources are, and the method's knobs."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from assets.common.records import ROOT, project_path  # noqa: F401  (ROOT: where relative paths start)
from assets.partitions import DOMAINS
from assets.recor.sources import Loaded, load_bright, load_stackexchange
from assets.recor.steps import Thresholds

SOURCES_PATH = str(Path(__file__).with_name("sources.yaml"))
# The fields of a source entry that name files.
FILE_FIELDS = ("examples", "documents", "questions", "pool")


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
            raise ValueError(f"{path}: domain {domain!r} needs kind bright (examples, documents) or stackexchange (questions[, pool])")
    return raw


class RecorSettings(dg.ConfigurableResource):
    """Where RECOR's sources are and the method's thresholds.

    Defaults follow the paper and its released configuration (document score threshold 4.0,
    at most 5 documents per turn, 3-12 turns, aspect overlap 0.8 and coverage 0.5, follow-ups
    with word overlap at most 0.58 and at least ``min_new_words`` new words) except where the
    embedded model needs room: at most 4 aspects per conversation and 2 facts per aspect, and
    follow-ups need 4 new words (the released configuration asks for 10). ``make run`` takes
    one source question per domain (its ``--recor-questions``). The paper's configuration:
    every question, ``max_aspects=12``, ``max_facts=5``, ``min_new_words=10``, and a strong
    model with binding verdicts in the registry's ``recor.builder`` role.
    """

    sources_path: str = SOURCES_PATH
    # Questions per domain to build conversations from; None takes every one.
    max_questions: int | None = None
    encoder: str = "minilm"
    max_aspects: int = 4
    max_facts: int = 2
    min_new_words: int = 4
    doc_threshold: float = 4.0
    max_docs_per_turn: int = 5
    # StackExchange hard-negative mining: LLM queries per question and hits kept per query.
    mining_queries: int = 3
    mining_hits: int = 10
    negative_overlap: float = 0.5

    def thresholds(self, binding_verdicts: bool = True) -> Thresholds:
        """The step knobs; ``binding_verdicts`` comes from the builder's registry entry."""
        return Thresholds(max_aspects=self.max_aspects, max_facts=self.max_facts, min_new_words=self.min_new_words,
                          doc_threshold=self.doc_threshold, max_docs_per_turn=self.max_docs_per_turn,
                          binding_verdicts=binding_verdicts)

    def build_thresholds(self, llm) -> Thresholds:
        """The knobs a build runs with: the builder's (``recor.builder`` in the LLM resource's
        registry) verdicts binding or advisory as its registry entry says."""
        return self.thresholds(binding_verdicts=llm.spec(llm.role("recor.builder")[0]).verdicts == "binding")

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
            loaded = load_stackexchange(domain, project_path(entry["questions"]), project_path(entry["pool"]) if entry.get("pool") else None)
        if self.max_questions is not None:
            loaded.questions = loaded.questions[: self.max_questions]
        return loaded
