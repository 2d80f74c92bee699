"""RECOR's rules as pure functions: document scoring and selection, turn and conversation
validation, normalized entropy, macro-averaging and paired t-tests (paper sections 3.2, 4.1
and appendices C, D, G)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from assets.common.text import tokens

# Document score weights (appendix C.4): support, completeness, clarity, misleading.
SCORE_WEIGHTS = {"support": 0.5, "completeness": 0.3, "clarity": 0.15, "misleading": -0.05}
MIN_TURNS, MAX_TURNS = 3, 12

DEPENDENCY_TYPES = ["coreference", "ellipsis", "substitution", "continuation", "topic_shift", "self_contained"]
QUESTION_PATTERNS = ["why", "how", "what", "compare", "what_if", "confirm", "more_detail", "example", "effect"]


def document_score(support: float, completeness: float, clarity: float, misleading: float) -> float:
    """score = 0.5 S_s + 0.3 S_c + 0.15 S_l - 0.05 S_m, each criterion on 0-10."""
    for name, value in (("support", support), ("completeness", completeness), ("clarity", clarity), ("misleading", misleading)):
        if not 0 <= value <= 10:
            raise ValueError(f"{name} score {value} is outside 0-10")
    w = SCORE_WEIGHTS
    return w["support"] * support + w["completeness"] * completeness + w["clarity"] * clarity + w["misleading"] * misleading


def select_documents(scores: Mapping[str, float], threshold: float, max_docs: int) -> list[str]:
    """Documents scoring above the threshold, best first (ties by id), at most ``max_docs``."""
    ranked = sorted(((s, d) for d, s in scores.items() if s > threshold), key=lambda t: (-t[0], t[1]))
    return [d for _, d in ranked[:max_docs]]


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' word sets."""
    x, y = set(tokens(a)), set(tokens(b))
    return len(x & y) / len(x | y) if x | y else 0.0


def new_words(question: str, earlier: Iterable[str]) -> int:
    """How many of the question's words no earlier question used."""
    seen = {w for q in earlier for w in tokens(q)}
    return len(set(tokens(question)) - seen)


def distinct_turn(question: str, earlier: Sequence[str], max_similarity: float = 0.58, min_new_words: int = 10) -> tuple[bool, str]:
    """A follow-up must differ from every earlier question (word overlap at most
    ``max_similarity``) and bring new words; the first question always passes."""
    if not earlier:
        return True, ""
    closest = max(word_overlap(question, q) for q in earlier)
    if closest > max_similarity:
        return False, f"overlap {closest:.2f} with an earlier question exceeds {max_similarity}"
    fresh = new_words(question, earlier)
    if fresh < min_new_words:
        return False, f"only {fresh} new words (needs {min_new_words})"
    return True, ""


def conversation_problems(turn_docs: Sequence[Sequence[str]], min_turns: int = MIN_TURNS, max_turns: int = MAX_TURNS) -> list[str]:
    """Rule checks of a whole conversation: length within 3-12 turns, every turn grounded in
    at least one document, and document diversity (not every turn on the same documents)."""
    problems = []
    n = len(turn_docs)
    if not min_turns <= n <= max_turns:
        problems.append(f"{n} turns (needs {min_turns}-{max_turns})")
    if any(not docs for docs in turn_docs):
        problems.append("a turn has no selected document")
    if n > 1 and len({tuple(sorted(d)) for d in turn_docs}) == 1:
        problems.append("every turn uses the same documents")
    return problems


def normalized_entropy(counts: Mapping[str, int], n_classes: int) -> float | None:
    """Shannon entropy of the label distribution divided by log(n_classes): 0 when one
    label takes everything, 1 when all classes are equally frequent, None when nothing was
    labelled (an empty distribution has no entropy; a report shows it as n/a, not as 0)."""
    total = sum(counts.values())
    if total == 0:
        return None
    if n_classes < 2:
        return 0.0
    h = sum((c / total) * math.log(total / c) for c in counts.values() if c)
    return h / math.log(n_classes)


def gold_outside(turns: pl.DataFrame, corpus: pl.DataFrame) -> pl.DataFrame:
    """The turns naming a gold document that is not in the corpus, with that document."""
    gold = turns.select("conversation_id", "turn_id", pl.col("gold_doc_ids").alias("doc_id")).explode("doc_id").drop_nulls()
    return gold.join(corpus.select("doc_id"), on="doc_id", how="anti").with_columns(pl.format("{}#{}", "conversation_id", "turn_id").alias("turn"))


# Table 2 of the paper: per-domain statistics of the benchmark.
STATISTICS_SCHEMA = {"domain": pl.String, "#Conv.": pl.Int64, "#Turns": pl.Int64, "Avg #T": pl.Float64, "Avg #A": pl.Float64,
                     "Avg #D": pl.Float64, "positives": pl.Int64, "negatives": pl.Int64}
TABLE_2_DEFINITIONS = {"domain": "a RECOR domain (BRIGHT's)", "#Conv.": "valid conversations in the benchmark",
                       "#Turns": "their turns", "Avg #T": "turns per conversation", "Avg #A": "aspects per conversation",
                       "Avg #D": "gold documents per turn", "positives": "corpus documents that are a question's gold",
                       "negatives": "corpus documents added as hard negatives"}


def domain_statistics(benchmark: pl.DataFrame, aspects: pl.DataFrame, corpus: pl.DataFrame, domains: list[str]) -> pl.DataFrame:
    """Table 2's row of each of ``domains``: conversations, turns, average turns per
    conversation, aspects per conversation and documents per turn, with corpus sizes (a domain
    that kept no conversation has a row of zeros)."""
    rows = []
    for domain in domains:
        b = benchmark.filter(pl.col("domain") == domain)
        convs = b["conversation_id"].unique().to_list()
        a = aspects.filter(pl.col("question_id").is_in(convs))
        c = corpus.filter(pl.col("domain") == domain)
        rows.append({"domain": domain, "#Conv.": len(convs), "#Turns": b.height,
                     "Avg #T": b.height / len(convs) if convs else None,
                     "Avg #A": a.height / len(convs) if convs else None,
                     "Avg #D": float(b["gold_doc_ids"].list.len().mean()) if b.height else None,
                     "positives": c.filter(pl.col("role") == "positive").height,
                     "negatives": c.filter(pl.col("role") == "negative").height})
    return pl.DataFrame(rows, schema=STATISTICS_SCHEMA)
