"""Reading a dataset in BEIR's layout at BEIR's sizes, and scoring its runs (issue 47).

Synthetic files in the real layout are written first: ``--docs`` documents (a title of 2-6
words and a text of 30-90, about BEIR's corpora's average of 60-80 words; every 50,000th with
a ``metadata`` object), ``--queries`` queries (one in 20 unjudged) and 3 judgments of each
judged query in ``qrels/test.tsv``. Each part runs in its own process (peak RSS is its
``ru_maxrss``):

- ``beir``: BEIR's own ``GenericDataLoader`` loading the split, the reference a reader of the
  layout is measured against (the target: the project's reader at most 1.5x its time, and
  no more memory);
- ``read``: :func:`assets.common.formats.beir.read_beir`, every line checked, rejects named;
- ``score``: :func:`assets.eval.beir.rules.per_query` of five systems' top-100 runs over every
  judged query (BEIR's seven metrics through ranx), then the metric table with each
  metric's interval and paired test (issue 48: the target, at most 10% of the report step).

Times are extrapolated linearly to MS MARCO (8.8M passages, 6,980 dev queries), BEIR's largest.

    .venv/bin/python bench/beir_scale.py [--docs 1000000] [--queries 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MSMARCO_DOCS, MSMARCO_QUERIES = 8_841_823, 6_980
WORDS = (
    "the of and in to was is for on as by with from at his an which that were are its first also "
    "protein cell river city music film species energy water court law election market patient"
).split()


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_dataset(folder: str, docs: int, queries: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    with open(os.path.join(folder, "corpus.jsonl"), "w", encoding="utf-8") as out:
        for i in range(docs):
            record = {
                "_id": f"d{i}",
                "title": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))),
                "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90))),
            }
            if i % 50_000 == 0:
                record["metadata"] = {"url": f"https://example.org/{i}"}
            out.write(json.dumps(record) + "\n")
    with open(os.path.join(folder, "queries.jsonl"), "w", encoding="utf-8") as out:
        for q in range(queries):
            out.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choice(WORDS) for _ in range(8))}) + "\n")
    with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for q in range(queries):
            if q % 20 == 19:
                continue
            for d in rng.sample(range(docs), 3):
                out.write(f"q{q}\td{d}\t{rng.choice((1, 1, 2))}\n")


def part_beir(folder: str) -> dict:
    from beir.datasets.data_loader import GenericDataLoader

    t = time.perf_counter()
    corpus, queries, qrels = GenericDataLoader(data_folder=folder).load(split="test")
    return {"seconds": time.perf_counter() - t, "documents": len(corpus), "queries": len(queries)}


def part_read(folder: str) -> dict:
    from assets.common.formats.beir import read_beir

    t = time.perf_counter()
    data = read_beir(folder)
    return {
        "seconds": time.perf_counter() - t,
        "documents": data.corpus.height,
        "queries": data.queries.height,
        "rejects": data.rejects.height,
    }


def part_score(folder: str) -> dict:
    import polars as pl

    from assets.common.formats.beir import read_beir
    from assets.eval.beir.assets import beir_tables
    from assets.eval.beir.rules import metric_table, per_query
    from assets.eval.runs import RUN_SCHEMA
    from assets.eval.uncertainty import UncertaintySettings

    data = read_beir(folder)
    _, queries, qrels = beir_tables(data, "synthetic")
    rng = random.Random(3)
    ids = data.corpus["_id"].to_list()
    gold = {q: g["passage_id"].to_list() for (q,), g in qrels.group_by("question_id")}
    rows = []
    for system in SYSTEMS:
        for q in queries["question_id"].to_list():
            # a run that finds some gold high, some low, most not at all
            found = [d for d in gold[q] if rng.random() < 0.5]
            listed = list(dict.fromkeys(found + rng.sample(ids, 100)))[:100]
            rng.shuffle(listed)
            rows += [(q, d, rank, 1.0 / rank, system) for rank, d in enumerate(listed, start=1)]
    run = pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row").with_columns(pl.lit("synthetic").alias("dataset"))
    t = time.perf_counter()
    scores = per_query(run, qrels)
    scored = time.perf_counter() - t
    t = time.perf_counter()
    metric_table(scores, lambda s: {"retriever": s}, {"retriever": pl.String}, UncertaintySettings())
    return {
        "seconds": scored,
        "uncertainty_seconds": time.perf_counter() - t,
        "queries": scores["question_id"].n_unique(),
        "run_rows": run.height,
    }


SYSTEMS = ("bm25", "e5", "minilm", "colbert", "tfidf")
PARTS = {"beir": part_beir, "read": part_read, "score": part_score}


def run_part(name: str, folder: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, folder], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, folder = args.child
        print(json.dumps({**PARTS[name](folder), "peak_rss_mib": _rss_mib()}))
        return
    with tempfile.TemporaryDirectory(prefix="beir-scale-") as folder:
        t = time.perf_counter()
        write_dataset(folder, args.docs, args.queries)
        size = os.path.getsize(os.path.join(folder, "corpus.jsonl")) / 2**20
        print(
            f"wrote {args.docs:,} documents ({size:,.0f} MiB), {args.queries:,} queries in {time.perf_counter() - t:.0f}s"
        )
        beir, read, score = (run_part(name, folder) for name in ("beir", "read", "score"))
    per_doc = read["seconds"] / args.docs
    print("| part | size | seconds | vs BEIR's loader | peak RSS MiB | extrapolated to MS MARCO |")
    print("|---|---|---|---|---|---|")
    print(
        f"| BEIR's GenericDataLoader | {args.docs:,} docs | {beir['seconds']:.1f} | 1.00x | "
        f"{beir['peak_rss_mib']:,.0f} | {beir['seconds'] / args.docs * MSMARCO_DOCS:,.0f} s |"
    )
    print(
        f"| read_beir (rejects named) | {args.docs:,} docs | {read['seconds']:.1f} | "
        f"{read['seconds'] / beir['seconds']:.2f}x | {read['peak_rss_mib']:,.0f} | {per_doc * MSMARCO_DOCS:,.0f} s, "
        f"{read['peak_rss_mib'] / args.docs * MSMARCO_DOCS / 1024:,.1f} GiB |"
    )
    systems = len(SYSTEMS)
    print(
        f"| per_query (7 metrics) | {systems} systems x {score['queries']:,} queries x 100 | {score['seconds']:.1f} | | "
        f"{score['peak_rss_mib']:,.0f} | {score['seconds'] / score['queries'] * MSMARCO_QUERIES / systems:,.1f} s a system |"
    )
    print(
        f"| intervals and tests (issue 48) | the same | {score['uncertainty_seconds']:.1f} | "
        f"**{score['uncertainty_seconds'] / score['seconds']:.2f}x** of per_query | | |"
    )


if __name__ == "__main__":
    main()
