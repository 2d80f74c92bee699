"""Table 1's semantic overlap from a seeded sample of each question's passages (issue 49):
how far the estimate strays, whether its interval covers, and what it costs at the paper's
size (7,401 questions x 325 passages), against encoding every passage (about 19 h of MiniLM
on 2 cores).

On the bundled QUIT sample (39 questions x 325 passages, ``bench/encoding_bench.py``'s):

- the exact mean cosine (every passage, MiniLM) in float32 and in bfloat16 (where
  ``bf16_unsupported`` finds no reason against it), each timed, and their difference;
- the within-question share of the cosines' variance (what sampling by question leaves);
- for each n: ``--draws`` seeded samples of n passages a question (the float32 cosines
  reused, nothing encoded again): the empirical SD of the estimate, the share of intervals
  covering the exact mean, the mean analytic half-width here, and the half-width at the
  paper's size from the sample's within-question variance;
- the encoder's time at the paper's size for n = 4 (each question and its 4 passages) at the
  measured texts per second, and the other Table 1 rows' time (every passage read in Python,
  timed with a stand-in encoder); question_metadata's encoder time is bounded above by every
  question with its 10 references, encoded at the passages' rate.

    .venv/bin/python bench/semantic_overlap.py [--sizes 2,4,8] [--draws 200] [--out bench/out/semantic_overlap.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from bench.encoding_bench import quit_sample  # noqa: E402

PAPER_QUESTIONS, PAPER_PASSAGES_PER_QUESTION = 7_401, 325
PAPER_PASSAGES = 2_405_325
REFERENCES = 10  # QuitSettings.reference_top_k
HALF_WIDTH_TARGET, HOURS_TARGET = 0.001, 1.0


def cosines(questions: pl.DataFrame, corpus: pl.DataFrame, precision: str) -> tuple[np.ndarray, float]:
    """Each passage's cosine with its question in ``precision``, and the texts encoded a second."""
    from resources.encoders import encode_texts

    text = dict(questions.select("question_id", "question").iter_rows())
    asked = corpus["question_id"].unique(maintain_order=True).to_list()
    encode_texts("minilm", corpus["text"].head(64).to_list(), precision=precision)  # warm up
    started = time.perf_counter()
    question_vecs = dict(zip(asked, encode_texts("minilm", [text[q] for q in asked], precision=precision)))
    passage_vecs = encode_texts("minilm", corpus["text"].to_list(), precision=precision)
    seconds = time.perf_counter() - started
    paired = np.stack([question_vecs[q] for q in corpus["question_id"].to_list()])
    return np.einsum("ij,ij->i", passage_vecs, paired).astype(np.float64), (len(asked) + corpus.height) / seconds


def draws(ids: pl.Series, values: np.ndarray, n: int, count: int) -> dict:
    """``count`` seeded samples of ``n`` passages a question, estimated as the statistics asset
    does (:func:`release.stratified_interval`), against the exact mean."""
    from assets.quit import release

    codes = ids.rank("dense").cast(pl.Int64).to_numpy() - 1
    strata = int(codes.max()) + 1
    sizes = np.bincount(codes, minlength=strata)
    exact = float(values.mean())
    estimates, covered, halves = [], [], []
    for seed in range(count):
        keep = release.overlap_sample_mask(ids, n, seed)
        c, y = codes[keep], values[keep]
        value, low, high = release.stratified_interval(
            np.bincount(c, y, strata), np.bincount(c, y**2, strata), np.bincount(c, minlength=strata), sizes
        )
        estimates.append(value)
        covered.append(low <= exact <= high)
        halves.append((high - low) / 2)
    return {
        "n": n,
        "sd": float(np.std(estimates, ddof=1)),
        "bias": float(np.mean(estimates) - exact),
        "coverage": float(np.mean(covered)),
        "half_width": float(np.mean(halves)),
    }


def paper_half_width(within: float, n: int) -> float:
    """The interval's half-width at 7,401 questions x 325 passages, each question's variance
    ``within``: every stratum weighs 1 / Q, so Var = (1 - n / 325) within / (n Q)."""
    from scipy.stats import norm

    fpc = 1 - n / PAPER_PASSAGES_PER_QUESTION
    return float(norm.ppf(0.975) * np.sqrt(fpc * within / (n * PAPER_QUESTIONS)))


def other_rows_rate(questions: pl.DataFrame, corpus: pl.DataFrame) -> float:
    """Passages a second Table 1 reads for its other rows: ``release.table1`` with a stand-in
    encoder (a constant unit vector), every passage read."""
    from assets.quit import release

    frame = questions.select("question_id", "question", pl.col("aliases").alias("answers"))
    qrels = corpus.select("question_id", "passage_id", pl.lit(1).alias("label"))
    started = time.perf_counter()
    release.table1(frame, corpus, qrels, lambda texts: np.tile([1.0, 0.0], (len(texts), 1)))
    return corpus.height / (time.perf_counter() - started)


def precisions(questions: pl.DataFrame, corpus: pl.DataFrame) -> tuple[np.ndarray, dict]:
    """The float32 cosines, and per precision the exact mean and texts a second."""
    from resources.encoders import bf16_unsupported

    values, rate = cosines(questions, corpus, "float32")
    found = {"exact": {"float32": float(values.mean())}, "texts_per_second": {"float32": rate}}
    found["bf16_skipped"] = skipped = bf16_unsupported("minilm", "cpu")
    if skipped:
        print(f"bfloat16 skipped: {skipped}", flush=True)
    else:
        bf16, found["texts_per_second"]["bfloat16"] = cosines(questions, corpus, "bfloat16")
        found["exact"]["bfloat16"] = float(bf16.mean())
        found["largest_pair_difference"] = float(np.max(np.abs(bf16 - values)))
    for p, mean in found["exact"].items():
        print(f"exact mean cosine, {p:<8}  {mean:.6f}   {found['texts_per_second'][p]:6.1f} texts/s", flush=True)
    found["bf16_minus_fp32"] = difference = (
        found["exact"]["bfloat16"] - found["exact"]["float32"] if not skipped else None
    )
    if difference is not None:
        print(
            f"bfloat16 - float32: {difference:+.6f} (mean cosine); largest |difference| of one pair "
            f"{found['largest_pair_difference']:.4f}",
            flush=True,
        )
    return values, found


def sampling(ids: pl.Series, values: np.ndarray, sizes: list[int], count: int) -> dict:
    """The variance split and, per size, the seeded samples' spread, coverage and half-widths."""
    by_question = pl.DataFrame({"q": ids, "y": values}).group_by("q").agg(pl.col("y").var(ddof=1))
    within, total = float(by_question["y"].mean()), float(np.var(values, ddof=1))
    print(
        f"variance: within questions {within:.6f} (SD {within**0.5:.4f}), total {total:.6f} (SD {total**0.5:.4f}), "
        f"within / total {within / total:.3f}",
        flush=True,
    )
    rows = [draws(ids, values, n, count) | {"paper_half_width": paper_half_width(within, n)} for n in sizes]
    print(f"\n{count} seeded samples a size; paper: {PAPER_QUESTIONS:,} questions x {PAPER_PASSAGES_PER_QUESTION}")
    print(f"{'n':>3} {'SD of estimate':>15} {'bias':>10} {'coverage':>9} {'half-width':>11} {'paper half-width':>17}")
    for r in rows:
        print(
            f"{r['n']:>3} {r['sd']:>15.5f} {r['bias']:>+10.5f} {r['coverage']:>9.3f} {r['half_width']:>11.5f} "
            f"{r['paper_half_width']:>17.5f}{'' if r['paper_half_width'] <= HALF_WIDTH_TARGET else '  over target'}"
        )
    return {"within_variance": within, "total_variance": total, "draws": count, "samples": rows}


def paper_costs(questions: pl.DataFrame, corpus: pl.DataFrame, rate: dict) -> dict:
    """statistics (n = 4) and question_metadata's encoder at the paper's size, per precision."""
    other = other_rows_rate(questions, corpus)
    texts = PAPER_QUESTIONS * 4 + PAPER_QUESTIONS
    references = PAPER_QUESTIONS * (1 + REFERENCES)
    print(
        f"\npaper size: the other Table 1 rows read {other:,.0f} passages/s: "
        f"{PAPER_PASSAGES / other / 60:.1f} min for {PAPER_PASSAGES:,}"
    )
    costs = {"other_rows_passages_per_second": other}
    for p, per_second in rate.items():
        c = costs[p] = {
            "semantic_overlap_n4_s": texts / per_second,
            "every_passage_s": (PAPER_PASSAGES + PAPER_QUESTIONS) / per_second,
            "question_metadata_bound_s": references / per_second,
        }
        hours = (c["semantic_overlap_n4_s"] + PAPER_PASSAGES / other + c["question_metadata_bound_s"]) / 3600
        c["statistics_and_question_metadata_h"] = hours
        print(
            f"  {p:<8} encoder, n = 4: {texts:,} texts in {c['semantic_overlap_n4_s'] / 60:.1f} min "
            f"(every passage: {c['every_passage_s'] / 3600:.1f} h); question_metadata at most "
            f"{references:,} texts in {c['question_metadata_bound_s'] / 60:.1f} min; "
            f"statistics + question_metadata {hours:.2f} h{'' if hours <= HOURS_TARGET else ' (over 1 h)'}"
        )
    return costs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=10_000, help="the sample's first questions (all: 39)")
    parser.add_argument("--sizes", default="2,4,8", help="passages per question to sample")
    parser.add_argument("--draws", type=int, default=200, help="seeded samples per size")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "semantic_overlap.json"))
    args = parser.parse_args()
    from assets.quit import rules

    questions = quit_sample(args.questions)
    corpus = rules.passages_frame(questions.select("question_id", "hints"))
    print(
        f"sample: {questions.height} questions, {corpus.height:,} passages; MiniLM on the CPU "
        f"({len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    values, found = precisions(questions, corpus)
    found |= sampling(corpus["question_id"], values, [int(n) for n in args.sizes.split(",")], args.draws)
    found["paper"] = paper_costs(questions, corpus, found["texts_per_second"])
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(
            {"questions": questions.height, "passages": corpus.height, "load": os.getloadavg(), **found}, f, indent=1
        )
    print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
