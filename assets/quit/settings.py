"""Settings of the QUIT construction run (paths, sample sizes, seeds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from assets.common.settings import ProfiledSettings

DATA = Path(__file__).resolve().parents[2] / "data" / "quit"


class QuitSettings(ProfiledSettings):
    """Where QUIT's sources are and how much of the method to run.

    The defaults are the paper's configuration. Each passage of every question is labeled
    (3.2.2). Hint convergence uses 10 wrong candidates per question, as HintEval does. Each
    closed-book model answers every question three times (3.1.4), sampled at
    ``parametric_temperature``; the paper names no temperature, and 1.0 samples the model's
    own distribution. Train and test are sampled as 5,000 answerable and 2,000 non-answerable
    questions (3.1.4). Rerankers reorder the top 100 of each run (section 5). The paper's
    models go in the registry: three labelers, three readers and a judge with binding verdicts.

    ``profile: demo`` is the slice that runs in minutes on 2 CPU cores. It labels the
    passages of 3 questions, uses 3 wrong candidates and a test split of 12 questions, and
    each reranker reorders its own ``top_k`` from ``resources/rerankers.yaml``.
    """

    DEMO_SLICE: ClassVar[dict[str, Any]] = {
        "distractors": 3,
        "test_size": 12,
        "max_labeled_questions": 3,
        "rerank_depth": None,
    }

    triviahg_path: str = str(DATA / "triviahg_sample.json")
    wikihint_path: str = str(DATA / "wikihint_sample.json")
    # Passages for reference-based difficulty; empty = the sources' own snippets.
    reference_path: str = ""
    reference_top_k: int = 10
    # Wrong candidate answers generated per question for convergence.
    distractors: int = 10
    parametric_repeats: int = 3
    parametric_temperature: float = 1.0
    train_size: int = 5000
    test_size: int = 2000
    seed: int = 13
    # How many questions of each source (TriviaHG, WikiHint), the first in the source's order,
    # go on past the leakage screen to hint convergence and everything after it; None takes
    # every screened question. A demo slice: a run that labels one question's passages need
    # not converge the hints of every question (each TriviaHG hint costs LLM verdicts).
    max_questions_per_source: int | None = None
    # How many questions get their 325 passages labeled; None labels every question.
    max_labeled_questions: int | None = None
    # How many of each labeled question's 325 passages are labeled (the same seeded sample
    # of hint orders for every question); None labels all of them. A pilot of a new labeler
    # can measure its cost and accuracy on a slice; the benchmark's corpus then holds only
    # the labeled passages.
    labeled_passages_per_question: int | None = None
    # Labeled passages left without a label (a labeler or judge call failed after its retries)
    # over all labeled passages, above which the labels' check fails; a rerun asks only those.
    max_label_error_rate: float = 0.01
    # Passages each reranker reorders at the head of a run; None: the reranker's own top_k.
    rerank_depth: int | None = 100
    # Table 1's semantic overlap from this many passages of each question, drawn with ``seed``,
    # with its 95% interval (stratified by question); None encodes every passage, as the
    # release computes it (about 19 h of MiniLM on 2 CPU cores at the paper's 2.4M passages).
    # At least 2, so that each question's passages have a variance.
    semantic_overlap_sample: int | None = Field(None, ge=2)
    # Where the released files go; empty = "<storage root>/quit/release".
    export_dir: str = ""
    # Human verification decisions (written by the verification page).
    decisions_path: str = ""


class FinetuneSettings(ProfiledSettings):
    """QUIT's fine-tuning experiments (section 5, Tables 10-12): the training data drawn from
    the train split and how each model is trained.

    The defaults are the paper's sweep and the published training scripts: each model is
    trained once per count of positives per question, 1, 5, 10, 50, 100 and 200, with as many
    negatives (appendix A.2-A.3; the best were 10 for DPR and MonoT5, 50 for ColBERT), batch
    64, learning rate 1e-5, passages of 256 tokens, one epoch. The scripts cut queries at 64
    tokens; the bi-encoder and the cross-encoder have one limit for both (a
    sentence-transformers model has one), and QUIT's one-sentence questions stay far below 64
    tokens. The ColBERT-style model has its own query length, ``colbert_query_length`` (64, the
    ColBERT script's ``query_maxlen``; the released colbertv2.0 checkpoint's own is 32), and pads
    every question to it with [MASK] tokens whose vectors take part in MaxSim, as ColBERT's
    query augmentation does (``colbert_query_augmentation``; off: a question keeps its own
    tokens' vectors, still cut at that length).
    Negatives are BM25's top passages of other train questions (``bm25``); ``random`` takes
    a random passage of a random other train question, as the published scripts do.

    ``profile: demo`` trains one count, 10 positives, for a fixed small number of steps on a
    small batch, so a model trains in about a minute on 2 CPU cores.
    """

    DEMO_SLICE: ClassVar[dict[str, Any]] = {"positives": [10], "max_steps": 20, "batch_size": 8}

    # Positive passages per train question: one model of each kind per count, trained on each
    # question's first ``count`` pairs. With more than one count each alias names its count
    # (``ft-dpr-<base>-p<count>``); one count keeps the plain alias.
    positives: list[int] = [1, 5, 10, 50, 100, 200]
    negatives: str = "bm25"
    # BM25 hits searched per question for its hard negatives.
    bm25_depth: int = 100
    epochs: int = 1
    # Training steps; None: the epochs over the whole training data.
    max_steps: int | None = None
    batch_size: int = 64
    learning_rate: float = 1e-5
    passage_max_length: int = 256
    # The ColBERT-style model's question length in tokens, its markers included.
    colbert_query_length: int = 64
    # Pad every question to colbert_query_length with [MASK] tokens that MaxSim scores too.
    colbert_query_augmentation: bool = True
    seed: int = 42
    # auto: the GPU when there is one, else the CPU; cpu: always the CPU.
    device: str = "auto"

    @field_validator("positives")
    @classmethod
    def _counts(cls, counts: list[int]) -> list[int]:
        """A count names its model's alias, so each is used once; a model learns from at
        least one pair a question."""
        if not counts or min(counts) < 1 or len(set(counts)) != len(counts):
            raise ValueError(f"positives {counts}: give one or more different counts, each at least 1")
        return counts
