"""RECOR's rules as pure functions: the readers of the LLM's replies, document scoring and
selection, turn and conversation validation, segmenting, normalized entropy and the quality
report's labels (paper sections 3.2, 3.4, 4.1 and appendices C, D, G)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from assets.common.metadata import report_slice
from assets.common.parsing import parse_list
from assets.common.text import sentences, tokens
from resources.llm import ParseError

# Document score weights (appendix C.4): support, completeness, clarity, misleading.
SCORE_WEIGHTS = {"support": 0.5, "completeness": 0.3, "clarity": 0.15, "misleading": -0.05}
MIN_TURNS, MAX_TURNS = 3, 12

DEPENDENCY_TYPES = ["coreference", "ellipsis", "substitution", "continuation", "topic_shift", "self_contained"]
QUESTION_PATTERNS = ["why", "how", "what", "compare", "what_if", "confirm", "more_detail", "example", "effect"]


def document_score(support: float, completeness: float, clarity: float, misleading: float) -> float:
    """score = 0.5 S_s + 0.3 S_c + 0.15 S_l - 0.05 S_m, each criterion on 0-10."""
    for name, value in (
        ("support", support),
        ("completeness", completeness),
        ("clarity", clarity),
        ("misleading", misleading),
    ):
        if not 0 <= value <= 10:
            raise ValueError(f"{name} score {value} is outside 0-10")
    w = SCORE_WEIGHTS
    return (
        w["support"] * support
        + w["completeness"] * completeness
        + w["clarity"] * clarity
        + w["misleading"] * misleading
    )


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


def distinct_turn(
    question: str, earlier: Sequence[str], max_similarity: float = 0.58, min_new_words: int = 10
) -> tuple[bool, str]:
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


def conversation_problems(
    turn_docs: Sequence[Sequence[str]], min_turns: int = MIN_TURNS, max_turns: int = MAX_TURNS
) -> list[str]:
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
    gold = (
        turns.select("conversation_id", "turn_id", pl.col("gold_doc_ids").alias("doc_id"))
        .explode("doc_id")
        .drop_nulls()
    )
    return gold.join(corpus.select("doc_id"), on="doc_id", how="anti").with_columns(
        pl.format("{}#{}", "conversation_id", "turn_id").alias("turn")
    )


def turn_documents(
    scores: Mapping[str, dict], fact_docs: Sequence[str], threshold: float, max_docs: int, binding_verdicts: bool
) -> tuple[list[str], str]:
    """A turn's gold documents and, when there are none, why. With binding verdicts the
    rated documents scoring above the threshold; with advisory ones the documents that hold
    the turn's verified facts, best rated first."""
    if binding_verdicts:
        chosen = select_documents({d: s["score"] for d, s in scores.items()}, threshold, max_docs)
        return chosen, f"no document above {threshold}: {json.dumps(scores)}"
    held = {d: scores.get(d, {}).get("score", float("-inf")) for d in fact_docs}
    return select_documents(held, float("-inf"), max_docs), "no document holds a verified fact of the aspect"


# --- the LLM's replies ---------------------------------------------------------------------------


def parse_aspects(text: str, limit: int) -> list[tuple[str, str]]:
    """``Title: sentence`` lines; a line without a title is its own title."""
    out = []
    for item in parse_list(text, limit):
        title, _, body = item.partition(":")
        body = body.strip() or title.strip()
        if len(body.split()) >= 3:
            out.append((title.strip()[:80], body))
    if not out:
        raise ParseError(f"no aspects in {text[:80]!r}")
    return out


def parse_reasoning(text: str) -> dict:
    """``Target: ...`` / ``Relevant signals: a; b`` / ``Irrelevant signals: x; y``."""
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key.startswith("target"):
            fields["target"] = value.strip()
        elif key.startswith("relevan"):
            fields["relevance_signals"] = [s.strip() for s in re.split(r"[;,]", value) if s.strip()]
        elif key.startswith("irrelevan"):
            fields["irrelevance_signals"] = [s.strip() for s in re.split(r"[;,]", value) if s.strip()]
    if not fields.get("target"):
        raise ParseError(f"no Target line in {text[:80]!r}")
    return {
        "target": fields["target"],
        "relevance_signals": fields.get("relevance_signals", []),
        "irrelevance_signals": fields.get("irrelevance_signals", []),
    }


_QUESTION_STOPS = re.compile(r"([\"“”:?])")
_CAPITAL = re.compile(r"[A-Z]")


def parse_question(text: str) -> str:
    """The first question in the reply: a capitalised run of at least four words ending in a
    question mark, so that labels (``Question:``), lead-ins (``The person's next question
    is: "...?"``) and quotes fall away. A reply with no question mark has no question."""
    for line in text.splitlines():
        # The pieces between quotes, colons and question marks, each with the mark after it:
        # a question is the piece before a "?" from its first capital on. (A search for
        # ``[A-Z][^"“”:?]*\?`` rescanned a piece from each of its capitals: quadratic time.)
        pieces = _QUESTION_STOPS.split(line)
        for piece, stop in zip(pieces[::2], pieces[1::2]):
            capital = _CAPITAL.search(piece) if stop == "?" else None
            found = piece[capital.start() :] + "?" if capital else ""
            if len(found.split()) >= 4:
                return found.strip()
    raise ParseError(f"no question in {text[:80]!r}")


def parse_answer(text: str) -> str:
    answer = " ".join(text.split())
    if len(answer.split()) < 4:
        raise ParseError(f"answer too short: {text[:80]!r}")
    words = tokens(answer)
    # A model stuck in a loop repeats a phrase until the token limit.
    if len(words) >= 20 and len(set(words)) / len(words) < 0.4:
        raise ParseError(f"answer repeats itself: {text[:80]!r}")
    return answer


def usable_answer(answer: str, query: str, max_overlap: float = 0.6) -> bool:
    """An answer that mostly restates the question answers nothing."""
    return word_overlap(answer, query) <= max_overlap


def parse_label(text: str, labels: list[str]) -> str:
    """The first label named in the reply (spaces, hyphens and case ignored); of labels found
    at the same place the longest, since one may begin another (``what`` and ``what_if``)."""
    flat = re.sub(r"[\s\-]+", "_", text.strip().lower())
    found = [(flat.find(label), -len(label), label) for label in labels if label in flat]
    if not found:
        raise ParseError(f"no label of {labels} in {text[:60]!r}")
    return min(found)[2]


# --- segmenting ----------------------------------------------------------------------------------


def answer_segments(answer: str) -> list[str]:
    """The answer's paragraphs, or its sentences when it is one paragraph."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", answer) if p.strip()]
    return paragraphs if len(paragraphs) > 1 else sentences(answer)


def segment(text: str, words: int) -> list[str]:
    """Consecutive sentences grouped into passages of about ``words`` words (a passage ends
    at the sentence that reaches the length; a long last remainder is its own passage)."""
    out, current = [], []
    for s in sentences(text) or [text]:
        current.append(s)
        if sum(len(c.split()) for c in current) >= words:
            out.append(" ".join(current))
            current = []
    if current:
        tail = " ".join(current)
        if out and len(tail.split()) < words // 2:
            out[-1] = f"{out[-1]} {tail}"
        else:
            out.append(tail)
    return out


# --- the quality report's labels (paper appendix G) ----------------------------------------------

# What Tables 29 and 30 count: each label column, its name in the report, its entropy's
# column in Table 31 and its classes.
LABELS = {
    "dependency": ("dependency type", "DE", DEPENDENCY_TYPES),
    "pattern": ("question pattern", "QE", QUESTION_PATTERNS),
}


def label_counts(labels: pl.DataFrame, column: str) -> dict[str, int]:
    """How many turns have each label of ``column``, most frequent first."""
    counts = labels.drop_nulls(column).group_by(column).len().sort(["len", column], descending=[True, False])
    return dict(counts.iter_rows())


def label_entropy(labels: pl.DataFrame, column: str) -> float | None:
    """The normalized entropy of ``column``'s labels; None (n/a) when no turn has one."""
    return normalized_entropy(label_counts(labels, column), len(LABELS[column][2]))


def unlabeled_turns(labels: pl.DataFrame) -> dict[str, int]:
    """Turns without a dependency type, without a question pattern, and missing either:
    counts of turns (a turn missing both labels is one turn), never more than there are."""
    dependency, pattern = pl.col("dependency").is_null(), pl.col("pattern").is_null()
    row = labels.select(
        turns_without_dependency=dependency.sum(),
        turns_without_pattern=pattern.sum(),
        turns_missing_a_label=(dependency | pattern).sum(),
    ).row(0, named=True)
    return {name: int(n) for name, n in row.items()}


def _named_none(labels: pl.DataFrame) -> str:
    return f"{labels.height} turns, the judge's replies named none" if labels.height else "no turn to label"


def why_unlabelled(labels: pl.DataFrame, column: str) -> str | None:
    """Why no turn has a ``column`` label, in the words Table 29 or 30 shows instead of an
    empty table; None when some turn has one."""
    if labels.height == 0:
        return "no turn labelled: no domain has a conversation in the benchmark"
    missing = labels[column].null_count()
    if missing < labels.height:
        return None
    # A null label is a reply that named none of the classes, or a call that failed
    # (recor/turn_labels' llm_accounting check tells them apart).
    return (
        f"no turn labelled: the judge's replies named no {LABELS[column][0]} "
        f"({missing} of {labels.height} turns unparsable)"
    )


def not_applicable(table: pl.DataFrame, labels: pl.DataFrame) -> list[str]:
    """Why each entropy of the report is n/a: Table 31's DE or QE of a domain, and the
    entropies over all turns, where no turn has that label."""
    reasons = []
    for row in table.iter_rows(named=True):
        for what, short, _ in LABELS.values():
            if row[short] is None:
                reasons.append(
                    f"{row['domain']}: {short} n/a, no turn has a {what} "
                    f"({_named_none(labels.filter(pl.col('domain') == row['domain']))})"
                )
    for column, (what, _, _) in LABELS.items():
        if label_entropy(labels, column) is None:
            reasons.append(f"{column}_entropy n/a, no turn has a {what} ({_named_none(labels)})")
    return reasons


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def quality_slice(table: pl.DataFrame, profile: str | None, max_questions: int | None) -> str:
    """The slice a report covers: its domains, conversations and turns, the source questions
    per domain of the run's settings, and the run's profile (its tag; None without one)."""
    domains = table["domain"].to_list()
    named = f" ({', '.join(domains)})" if domains else ""
    questions = "every source question" if max_questions is None else _count(max_questions, "source question")
    return report_slice(
        f"{_count(len(domains), 'domain')}{named}, {_count(int(table['#C'].sum()), 'conversation')}, "
        f"{_count(int(table['#T'].sum()), 'turn')}, {questions} per domain (recor_settings of this run)",
        profile,
    )


def shown(table: pl.DataFrame) -> pl.DataFrame:
    """A report table as the UI shows it: numbers to 4 significant digits, and a value that
    is undefined (an entropy with no labelled turn) as n/a rather than a blank."""
    numbers = [name for name, dtype in table.schema.items() if dtype == pl.Float64]
    return table.with_columns(
        pl.col(name).map_elements(lambda v: f"{v:.4g}", return_dtype=pl.String).fill_null("n/a") for name in numbers
    )


# Table 2 of the paper: per-domain statistics of the benchmark.
STATISTICS_SCHEMA = {
    "domain": pl.String,
    "#Conv.": pl.Int64,
    "#Turns": pl.Int64,
    "Avg #T": pl.Float64,
    "Avg #A": pl.Float64,
    "Avg #D": pl.Float64,
    "positives": pl.Int64,
    "negatives": pl.Int64,
}
TABLE_2_DEFINITIONS = {
    "domain": "a RECOR domain (BRIGHT's)",
    "#Conv.": "valid conversations in the benchmark",
    "#Turns": "their turns",
    "Avg #T": "turns per conversation",
    "Avg #A": "aspects per conversation",
    "Avg #D": "gold documents per turn",
    "positives": "corpus documents that are a question's gold",
    "negatives": "corpus documents added as hard negatives",
}


def domain_statistics(
    benchmark: pl.DataFrame, aspects: pl.DataFrame, corpus: pl.DataFrame, domains: list[str]
) -> pl.DataFrame:
    """Table 2's row of each of ``domains``: conversations, turns, average turns per
    conversation, aspects per conversation and documents per turn, with corpus sizes (a domain
    that kept no conversation has a row of zeros)."""
    rows = []
    for domain in domains:
        b = benchmark.filter(pl.col("domain") == domain)
        convs = b["conversation_id"].unique().to_list()
        a = aspects.filter(pl.col("question_id").is_in(convs))
        c = corpus.filter(pl.col("domain") == domain)
        rows.append(
            {
                "domain": domain,
                "#Conv.": len(convs),
                "#Turns": b.height,
                "Avg #T": b.height / len(convs) if convs else None,
                "Avg #A": a.height / len(convs) if convs else None,
                "Avg #D": float(b["gold_doc_ids"].list.len().mean()) if b.height else None,
                "positives": c.filter(pl.col("role") == "positive").height,
                "negatives": c.filter(pl.col("role") == "negative").height,
            }
        )
    return pl.DataFrame(rows, schema=STATISTICS_SCHEMA)
