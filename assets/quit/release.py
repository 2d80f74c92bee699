"""Assembling the final benchmark, exporting it in the public release's format, and its
statistical summary (the paper's Table 1, by the release's definitions).

At the paper's size (2.4M passages) no step holds the corpus's texts twice: the corpus is cut
from the passages a batch at a time, each release file is written as it is encoded, and Table 1
reads the corpus a block at a time."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np
import polars as pl

from assets.common.text import english_stopwords, normalize, normalize_once
from resources.storage import FrameTable, StoredTable, as_table, join, open_output, write_bytes

SPLITS = ("train", "dev", "test")
CORPUS_COLUMNS = ("passage_id", "question_id", "num_hints", "hint_order", "text")
# Passages encoded or copied at a time: about 45 MB of text at the papers' ~58 words a passage.
BATCH_ROWS = 100_000


def assemble(
    selected, splits, metadata, passages, labels, pools, rejects
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Questions (labeled, in a split, not removed by verification), their corpus and qrels,
    each one frame (the ``benchmark`` asset streams the corpus: :func:`corpus_batches`)."""
    questions = benchmark_questions(selected, splits, metadata, pools, rejects)
    corpus = pl.concat(list(corpus_batches(passages, in_corpus(passages, questions, labels))))
    return questions, corpus, benchmark_qrels(questions, labels)


def benchmark_questions(selected, splits, metadata, pools, rejects) -> pl.DataFrame:
    """The labeled questions of a split that verification did not remove, with their pools."""
    removed = rejects["question_id"].to_list() if rejects.height else []
    return (
        selected.join(splits.filter(pl.col("labeled") & pl.col("split").is_in(SPLITS)), on="question_id")
        .filter(~pl.col("question_id").is_in(removed))
        .join(pools.select("question_id", pl.col("answer_pool").alias("answers")), on="question_id")
        .join(
            metadata.select("question_id", "question_type", "difficulty", "reference_complexity"),
            on="question_id",
            how="left",
        )
        .select(
            "question_id",
            "split",
            "question",
            "answer",
            "answers",
            "hints",
            "hint_convergence",
            "question_type",
            "difficulty",
            "reference_complexity",
            "source",
            "source_id",
            "parametric_answerable",
        )
        .sort("split", "question_id")
    )


def in_corpus(passages: pl.DataFrame, questions: pl.DataFrame, labels: pl.DataFrame) -> pl.Series:
    """Which passages are in the corpus: the labeled passages of the benchmark's questions. A
    run that labels a slice of each question's passages must not leave the rest in the
    corpus, where they would read as irrelevant (label 0)."""
    return passages.select(
        pl.col("question_id").is_in(questions["question_id"]) & pl.col("passage_id").is_in(labels["passage_id"])
    ).to_series()


def corpus_batches(passages: pl.DataFrame, keep: pl.Series, batch_rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
    """The corpus in passage order, cut from ``batch_rows`` passages at a time, so that only
    one batch's texts are copied; one empty frame when no passage is kept."""
    table = passages.select(CORPUS_COLUMNS)
    empty = True
    for start in range(0, table.height, batch_rows):
        batch = table.slice(start, batch_rows).filter(keep.slice(start, batch_rows))
        if batch.height:
            empty = False
            yield batch
    if empty:
        yield table.clear()


def benchmark_qrels(questions: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """The labels of the benchmark's questions, by question and passage."""
    return (
        labels.filter(pl.col("question_id").is_in(questions["question_id"]))
        .select("question_id", "passage_id", "label")
        .sort("question_id", "passage_id")
    )


def question_record(row: dict) -> dict:
    return {
        "id": row["question_id"],
        "question": row["question"],
        "answers": row["answers"],
        "hints": [{"hint": h, "convergence": c} for h, c in zip(row["hints"], row["hint_convergence"])],
        "question_type": row["question_type"],
        "difficulty": row["difficulty"],
        "source": row["source"],
    }


def export(
    questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, target: str, batch_rows: int = BATCH_ROWS
) -> pl.DataFrame:
    """Writes corpus.jsonl, {train,dev,test}.json and qrels.{split}.txt under ``target``
    (a local folder or an s3:// prefix); returns a manifest of what was written. The corpus
    and the qrels are written ``batch_rows`` lines at a time."""
    files = [("corpus.jsonl", _write_lines(join(target, "corpus.jsonl"), _corpus_lines(corpus, batch_rows)))]
    for split in SPLITS:
        part = questions.filter(pl.col("split") == split)
        records = [question_record(r) for r in part.iter_rows(named=True)]
        write_bytes(join(target, f"{split}.json"), json.dumps(records, ensure_ascii=False, indent=1).encode())
        files.append((f"{split}.json", len(records)))
        split_qrels = qrels.filter(pl.col("question_id").is_in(part["question_id"]))
        files.append(
            (
                f"qrels.{split}.txt",
                _write_lines(join(target, f"qrels.{split}.txt"), _qrel_lines(split_qrels, batch_rows)),
            )
        )
    return pl.DataFrame(
        {"file": [f for f, _ in files], "records": [n for _, n in files], "path": [join(target, f) for f, _ in files]}
    )


def _corpus_lines(corpus: pl.DataFrame, batch_rows: int) -> Iterator[list[str]]:
    """The release's corpus records, one JSON object a line (``json.dumps``'s spacing)."""
    for batch in corpus.iter_slices(batch_rows):
        yield [
            json.dumps({"id": p, "contents": t, "title": q}, ensure_ascii=False)
            for p, t, q in zip(batch["passage_id"].to_list(), batch["text"].to_list(), batch["question_id"].to_list())
        ]


def _qrel_lines(qrels: pl.DataFrame, batch_rows: int) -> Iterator[list[str]]:
    """TREC qrels lines: ``<question_id> 0 <passage_id> <label>``."""
    for batch in qrels.iter_slices(batch_rows):
        yield batch.select(pl.format("{} 0 {} {}", "question_id", "passage_id", "label")).to_series().to_list()


def _write_lines(uri: str, batches: Iterable[list[str]]) -> int:
    """Writes each line with its newline, a batch at a time; returns the line count."""
    written = 0
    with open_output(uri) as f:
        for lines in batches:
            if lines:
                f.write(("\n".join(lines) + "\n").encode())
                written += len(lines)
    return written


# Table 1 of the QUIT paper: the benchmark's statistical summary, with the definitions of the
# release's results/statistics/dataset_statistics.py. Its words are the pieces of a text split
# on single spaces (``str.split(" ")``), as written: no lower-casing, punctuation attached.

TABLE_1_SCHEMA = {
    "metric": pl.String,
    "value": pl.Float64,
    "definition": pl.String,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}
# The one row that may be estimated from a sample, with its interval (ci_low, ci_high).
SEMANTIC_OVERLAP = "Query-Passage Semantic Overlap"


def space_words(text: str) -> list[str]:
    """A text's words as the release counts them: split on each single space."""
    return text.split(" ")


def lexical_overlap(question: str, passage: str) -> float:
    """Jaccard overlap of the space-split word sets of question and passage, NLTK's English
    stop words removed, case kept ("The" is not the stop word "the"); 0 when both are only
    stop words (the release would divide by zero)."""
    stop = english_stopwords()
    q = {w for w in space_words(question) if w not in stop}
    p = {w for w in space_words(passage) if w not in stop}
    return len(q & p) / len(q | p) if q | p else 0.0


def contains_answer(passage: str, answers: list[str]) -> bool:
    """Whether any answer occurs in the passage as a substring, both lower-cased ("Paris"
    is contained in "Parisian"); blank answers are skipped (one would be in every passage)."""
    text = passage.lower()
    return any(a.strip() and a.lower() in text for a in answers)


class OverlapEstimate(NamedTuple):
    """Table 1's semantic overlap: the mean cosine, its 95% interval (None where every passage
    was encoded), and how many passages were encoded of how many."""

    value: float
    ci_low: float | None
    ci_high: float | None
    encoded: int
    passages: int


def overlap_sample_mask(question_ids: pl.Series, per_question: int | None, seed: int) -> np.ndarray | None:
    """Which passages (rows of ``question_ids``, in corpus order) the semantic overlap
    encodes: ``per_question`` of each question's, drawn with ``seed`` (a random key a row,
    each question's lowest ``per_question`` keys), so the cost grows with the questions, not
    the passages. None (every passage) where ``per_question`` is None."""
    if per_question is None:
        return None
    keys = np.random.default_rng(seed).random(question_ids.len())
    ranks = pl.DataFrame({"q": question_ids, "key": keys}).select(pl.col("key").rank("ordinal").over("q"))
    return (ranks.to_series() <= per_question).to_numpy()


def stratified_interval(
    sums: np.ndarray, squares: np.ndarray, sampled: np.ndarray, sizes: np.ndarray
) -> tuple[float, float, float]:
    """The stratified mean of a population cut into strata (questions), from each stratum's
    sum, sum of squares and count of its sampled values (at least one) and its size, with
    its 95% normal interval: estimate sum(N_q * ybar_q) / N; variance sum((N_q / N)^2 (1 - n_q / N_q)
    s_q^2 / n_q), s_q^2 the sample variance (ddof 1), the finite-population correction 0
    where a stratum is read whole. Analytic, not a bootstrap: resampling 2-4 values of a
    stratum shrinks its variance by (n_q - 1) / n_q."""
    from scipy.stats import norm

    sizes, n = sizes.astype(np.float64), sampled.astype(np.float64)
    weight = sizes / sizes.sum()
    mean = sums / n
    estimate = float((weight * mean).sum())
    # A stratum of one passage is read whole (its correction is 0): no variance to estimate.
    variance = np.divide(squares - n * mean**2, n - 1, out=np.zeros_like(mean), where=n > 1)
    half = norm.ppf(0.975) * np.sqrt((weight**2 * (1 - n / sizes) * np.maximum(variance, 0) / n).sum())
    return estimate, estimate - float(half), estimate + float(half)


class _SemanticOverlap:
    """The question-passage cosines, a block of passages at a time, summed by question (sum,
    sum of squares, count): each distinct question text is encoded once, and memory holds one
    block's vectors, not 2.4M of them. Blocks span many questions, so the encoder's
    length-sorted batches pad less than a call per question did; the model's arithmetic, not
    the calls, is most of the cost (bench/encoding_bench.py). With a ``sample`` mask
    (:func:`overlap_sample_mask`, over the corpus's rows) only its passages are encoded and
    the mean is :func:`stratified_interval`'s estimate, with its interval."""

    def __init__(self, question_texts: dict[str, str], question_ids: pl.Series, encode, sample=None):
        asked = question_ids.unique(maintain_order=True).to_list()
        missing = sorted(set(asked) - set(question_texts))
        if missing:
            raise ValueError(f"corpus passages of questions not in the benchmark questions: {missing[:5]}")
        # The distinct question texts, in the order asked (Table 1 counts and measures them).
        self.texts = texts = list(dict.fromkeys(question_texts[qid] for qid in asked))
        self.row = {text: i for i, text in enumerate(texts)}
        self.code = {qid: i for i, qid in enumerate(asked)}
        self.question_texts, self.encode, self.sample = question_texts, encode, sample
        counts = dict(question_ids.value_counts().iter_rows())
        self.sizes = np.array([counts[qid] for qid in asked], dtype=np.int64)
        self.sums, self.squares = np.zeros(len(asked)), np.zeros(len(asked))
        self.sampled = np.zeros(len(asked), dtype=np.int64)
        self.target = int(sample.sum()) if sample is not None else question_ids.len()
        self.question_vecs = np.asarray(encode(texts), dtype=np.float32) if texts else None
        self.read, self.done = 0, 0

    def add(self, question_ids: list[str], texts: list[str]) -> None:
        """The next block of the corpus's passages (those of the sample, where there is one)."""
        if self.sample is not None:
            keep = self.sample[self.read : self.read + len(texts)]
            question_ids = [q for q, k in zip(question_ids, keep) if k]
            texts = [t for t, k in zip(texts, keep) if k]
            self.read += len(keep)
        else:
            self.read += len(texts)
        if not texts:
            return
        passage_vecs = np.asarray(self.encode(texts), dtype=np.float32)
        paired = self.question_vecs[[self.row[self.question_texts[qid]] for qid in question_ids]]
        cosines = np.einsum("ij,ij->i", passage_vecs, paired).astype(np.float64)
        codes, size = np.array([self.code[qid] for qid in question_ids]), len(self.sizes)
        self.sums += np.bincount(codes, cosines, size)
        self.squares += np.bincount(codes, cosines**2, size)
        self.sampled += np.bincount(codes, minlength=size)
        self.done += len(texts)

    def estimate(self) -> OverlapEstimate:
        passages = int(self.sizes.sum())
        if not self.done:
            return OverlapEstimate(0.0, None, None, 0, passages)
        if self.sample is None:
            return OverlapEstimate(float(self.sums.sum() / self.done), None, None, self.done, passages)
        value, low, high = stratified_interval(self.sums, self.squares, self.sampled, self.sizes)
        return OverlapEstimate(value, low, high, self.done, passages)


def _semantic(
    question_texts: dict[str, str], corpus: StoredTable | FrameTable, encode, sample: int | None, seed: int
) -> _SemanticOverlap:
    """The semantic overlap's accumulator for ``corpus``: each passage's question id is read
    here and let go (2.4M of them at the paper's size); the counts by question and the
    sample's mask are kept."""
    ids = corpus.read("question_id")["question_id"]
    return _SemanticOverlap(question_texts, ids, encode, overlap_sample_mask(ids, sample, seed))


def semantic_overlap(
    question_texts: dict[str, str],
    corpus: pl.DataFrame | StoredTable | FrameTable,
    encode,
    block_size: int = 8192,
    log=None,
    sample: int | None = None,
    seed: int = 0,
) -> float:
    """Mean cosine of every corpus passage (``question_id``, ``text``: a frame, or a stored
    table read a block at a time) with its question's text, ``encode`` returning unit vectors
    (:class:`_SemanticOverlap`, blocks of ``block_size`` passages). With ``sample``, estimated
    from ``sample`` passages of each question drawn with ``seed`` (:func:`overlap_sample_mask`).
    ``log`` (a callable taking a line) hears the progress."""
    corpus = as_table(corpus)
    overlap = _semantic(question_texts, corpus, encode, sample, seed)
    for block in corpus.batches("question_id", "text", rows=block_size):
        overlap.add(block["question_id"].to_list(), block["text"].to_list())
        if log:
            log(f"semantic overlap: {overlap.done:,} of {overlap.target:,} passages encoded")
    return overlap.estimate().value


def table1(*args, **kwargs) -> pl.DataFrame:
    """Table 1 alone: :func:`table1_estimated`'s table (its arguments)."""
    return table1_estimated(*args, **kwargs)[0]


def table1_estimated(
    questions: pl.DataFrame,
    corpus: pl.DataFrame | StoredTable | FrameTable,
    qrels: pl.DataFrame,
    encode,
    block_size: int = 8192,
    log=None,
    sample: int | None = None,
    seed: int = 0,
    encoder: str = "",
) -> tuple[pl.DataFrame, OverlapEstimate]:
    """Table 1 over the (question, passage) pairs: every corpus passage with its question's
    text and answer pool (``answers``), as the release's statistics script reads them. The
    corpus is a frame or a stored table, read in one pass a block of ``block_size`` passages
    at a time (its texts are never held whole).

    - Total Questions: distinct question texts among the pairs (a question without passages
      is not counted; two ids with the same wording count once).
    - Total Passages: the pairs (corpus passages of the questions).
    - Avg. Question Length: space-split words per distinct question text.
    - Avg. Passage Length: space-split words per passage.
    - Avg. Answer Length: space-split words per answer string, every answer of a question's
      pool counted once for each of its passages.
    - Query-Passage Lexical Overlap: mean over the pairs of :func:`lexical_overlap`.
    - Answer Containment: share of the pairs whose passage contains an answer
      (:func:`contains_answer`, the release's lower-cased substring rule).
    - Query-Passage Semantic Overlap: mean over the pairs of the cosine similarity of
      question and passage embeddings (``encode`` returns unit vectors; :class:`_SemanticOverlap`;
      ``log`` hears the progress), every passage encoded; with ``sample``, estimated from that
      many passages of each question drawn with ``seed`` (:func:`overlap_sample_mask`), its
      95% interval in ``ci_low`` and ``ci_high`` (:func:`stratified_interval`), the only row
      with one. ``encoder`` (e.g. ``minilm, float32``) is named in the row's definition.

    Two rows are the project's: Answer Containment (whole words), the share with an answer
    on word boundaries after ``normalize`` (the rule hints are screened with, so 0 by
    construction), and the Label-2 / Label-1 passage counts of the qrels. Each row's
    ``definition`` says what it counts. Returned with the semantic overlap's estimate."""
    corpus = as_table(corpus)
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "answers").iter_rows(named=True)}
    semantic = _semantic({qid: r["question"] for qid, r in q.items()}, corpus, encode, sample, seed)
    sums = _pair_sums(q, corpus, semantic, block_size, log)
    overlap = semantic.estimate()
    rows = _table1_rows(sums, semantic.texts, qrels, overlap, _overlap_definition(overlap, sample, seed, encoder))
    table = pl.DataFrame(
        [(m, float(v), d) for m, v, d in rows],
        schema={k: TABLE_1_SCHEMA[k] for k in ("metric", "value", "definition")},
        orient="row",
    )
    semantic_row = pl.col("metric") == SEMANTIC_OVERLAP
    return table.with_columns(
        ci_low=pl.when(semantic_row).then(pl.lit(overlap.ci_low, pl.Float64)),
        ci_high=pl.when(semantic_row).then(pl.lit(overlap.ci_high, pl.Float64)),
    ), overlap


def _overlap_definition(overlap: OverlapEstimate, sample: int | None, seed: int, encoder: str) -> str:
    """The semantic overlap row's definition: how it was computed, with which encoder."""
    what = "mean cosine of question and passage embeddings"
    if sample is None or overlap.ci_low is None:
        how = "every passage"
    else:
        how = (
            f"estimated from a seeded sample of {sample} passages per question ({overlap.encoded:,} of "
            f"{overlap.passages:,}, seed {seed}), stratified by question; 95% interval "
            f"[{overlap.ci_low:.4f}, {overlap.ci_high:.4f}]"
        )
    return f"{what}, {how}" + (f"; {encoder}" if encoder else "")


def _pair_sums(
    q: dict[str, dict], corpus: StoredTable | FrameTable, semantic: _SemanticOverlap, block_size: int, log=None
) -> dict[str, float]:
    """Table 1's sums over the (question, passage) pairs of ``corpus``, ``q`` holding each
    question by id; each block's passages are encoded into ``semantic`` as they are read."""
    # Sums over the pairs, a block of passages at a time, not a list of every pair and of
    # each value (0.23 KB a passage more, about 0.55 GB at 2.4M; and 16% slower).
    sums = {
        "pairs": 0,
        "passage_words": 0,
        "answers": 0,
        "answer_words": 0,
        "lexical": 0.0,
        "contained": 0,
        "whole_words": 0,
    }
    pool_words = {
        qid: (len(r["answers"] or []), sum(len(space_words(a)) for a in r["answers"] or [])) for qid, r in q.items()
    }
    # Whole-word containment (contains_phrase) with each answer normalized once per question
    # and each passage once, uncached: a passage is read once.
    pool_phrases = {qid: [f" {p} " for p in (normalize(a) for a in r["answers"] or []) if p] for qid, r in q.items()}
    height = corpus.height
    for block in corpus.batches("question_id", "text", rows=block_size):
        question_ids, texts = block["question_id"].to_list(), block["text"].to_list()
        for qid, text in zip(question_ids, texts):
            question, pool = q[qid]["question"], q[qid]["answers"] or []
            sums["pairs"] += 1
            sums["passage_words"] += len(space_words(text))
            sums["answers"] += pool_words[qid][0]
            sums["answer_words"] += pool_words[qid][1]
            sums["lexical"] += lexical_overlap(question, text)
            sums["contained"] += contains_answer(text, pool)
            padded = f" {normalize_once(text)} " if pool_phrases[qid] else ""
            sums["whole_words"] += any(p in padded for p in pool_phrases[qid])
        semantic.add(question_ids, texts)
        if log:
            log(
                f"table 1: {semantic.read:,} of {height:,} passages read, {semantic.done:,} of {semantic.target:,} encoded"
            )
    return sums


def _avg(total: float, count: int) -> float:
    return float(total / count) if count else 0.0


def _table1_rows(
    sums: dict[str, float], texts: list[str], qrels: pl.DataFrame, overlap: OverlapEstimate, semantic: str
) -> list[tuple[str, float, str]]:
    """Table 1's rows, ``(metric, value, definition)``, from the pairs' sums, the distinct
    question ``texts``, the semantic overlap and its definition."""
    n = sums["pairs"]
    space = "split on single spaces"
    return [
        ("Total Questions", len(texts), "distinct question texts with passages"),
        ("Total Passages", n, "question-passage pairs"),
        (
            "Avg. Question Length (words)",
            _avg(sum(len(space_words(t)) for t in texts), len(texts)),
            f"per distinct question, {space}",
        ),
        ("Avg. Passage Length (words)", _avg(sums["passage_words"], n), f"per passage, {space}"),
        (
            "Avg. Answer Length (words)",
            _avg(sums["answer_words"], sums["answers"]),
            f"per pool answer, once per passage of its question, {space}",
        ),
        (
            "Query-Passage Lexical Overlap",
            _avg(sums["lexical"], n),
            f"Jaccard of word sets ({space}, case kept, NLTK English stop words removed)",
        ),
        (
            "Answer Containment",
            _avg(sums["contained"], n),
            "share of pairs with a pool answer as a lower-cased substring of the passage",
        ),
        (
            "Answer Containment (whole words)",
            _avg(sums["whole_words"], n),
            "share of pairs with a pool answer on word boundaries after normalize (project's rule)",
        ),
        (SEMANTIC_OVERLAP, overlap.value, semantic),
        (
            "Label-2 Passages",
            int((qrels["label"] == 2).sum()) if qrels.height else 0,
            "qrels with label 2 (project's row)",
        ),
        (
            "Label-1 Passages",
            int((qrels["label"] == 1).sum()) if qrels.height else 0,
            "qrels with label 1 (project's row)",
        ),
    ]


def hint_count_plot(corpus: pl.DataFrame | StoredTable | FrameTable, qrels: pl.DataFrame):
    """Share of label-2 passages by number of hints (the shape behind Figure 6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    joined = as_table(corpus).read("passage_id", "num_hints").join(qrels.select("passage_id", "label"), on="passage_id")
    by = (
        joined.group_by("num_hints")
        .agg(pl.len().alias("n"), (pl.col("label") == 2).mean().alias("share"))
        .sort("num_hints")
    )
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar(by["num_hints"].to_list(), by["share"].to_list(), color="#4c72b0")
    ax.set_xlabel("hints in passage")
    ax.set_ylabel("share labeled 2")
    ax.set_title("Fully relevant passages by number of hints")
    return fig
