"""WikiProfile's Wikimedia readers at Wikipedia's size: page summaries from a CirrusSearch
content dump, a month of ``country_project_page`` daily view files, and the join that
draws the pages, each in its own process (peak RSS is the process's ``ru_maxrss``).

Synthetic files in the real formats are written first: ``--pages`` page documents in
Elasticsearch bulk pairs (gzipped, about 12 KB each as English Wikipedia's are, leads of
20-160 words so that some are too short, 3% of another namespace), and ``--days`` daily TSV files (gzipped) of ``--rows`` rows each (page x
country rows of ``en.wikipedia`` and 15% of other projects, the count column of the 2023
era). For each reader the bench times plain gzip decompression of the same files in the same
run, so the ratio says what the reader adds to reading the bytes at all (the target: at
most 2x), and extrapolates to English Wikipedia (about 7M articles) and the paper's window
(29 months, 881 days). The join holds ids, titles and counts only (the target: peak RSS at
most 2 GB at any size).

    .venv/bin/python bench/wikipedia_sources.py [--pages 1000000] [--days 30] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import gzip
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

ENWIKI_ARTICLES = 7_000_000
WINDOW_DAYS = 881  # 2023-02-01 .. 2025-06-30
WORDS = "the of and in to was is for on as by with from at his an which that were are its first also".split()
COUNTRIES = ["US", "GB", "IN", "CA", "AU", "DE", "PH", "NG", "PK", "FR", "IE", "NZ", "ZA", "SG", "NL"]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- synthetic files in the real formats -------------------------------------------------------


def write_cirrus(path: str, pages: int, seed: int = 1) -> None:
    """Bulk pairs: an index action naming the page id, then the page document, of about the
    size of English Wikipedia's (the plain text, about 4 KB, and the wikitext, about 8 KB,
    taken from a pool of 500 random texts so that writing is quick; more than gzip's 32 KB
    window apart, so they compress as text does). Written at gzip level 1 (fast to write;
    decompression costs the same at any level)."""
    rng = random.Random(seed)
    pool = [" ".join(rng.choice(WORDS) + ("." if rng.random() < 0.06 else "") for _ in range(700)) for _ in range(500)]
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for pid in range(1, pages + 1):
            lead = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 160)))
            doc = {
                "namespace": 0 if rng.random() > 0.03 else 1,
                "title": f"Page {pid}",
                "opening_text": f"Page {pid} {lead}.",
                "text": f"Page {pid} {lead}. " + pool[pid % 500],
                "source_text": "'''Page {pid}'''" + f" {lead}. " + pool[(pid * 7) % 500] + " " + pool[(pid * 13) % 500],
                "category": ["Articles with short description", "Living people"][: rng.randint(0, 2)],
                "wikibase_item": f"Q{pid}",
                "popularity_score": rng.random() / 1e6,
            }
            out.write(json.dumps({"index": {"_type": "_doc", "_id": str(pid)}}) + "\n")
            out.write(json.dumps(doc) + "\n")


def write_days(folder: str, days: int, rows: int, pages: int, seed: int = 2) -> list[str]:
    """Daily country_project_page TSV files (gzipped) of ``rows`` rows, written by polars."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(seed)
    paths = []
    for day in range(days):
        # popular pages appear in many countries: page ids drawn with a heavy tail
        ids = np.minimum((rng.pareto(1.2, rows) * pages / 50).astype(np.int64) + 1, pages)
        other = rng.random(rows) < 0.15
        frame = pl.DataFrame(
            {
                "country": np.array(COUNTRIES)[rng.integers(0, len(COUNTRIES), rows)],
                "country_code": np.array(COUNTRIES)[rng.integers(0, len(COUNTRIES), rows)],
                "project": np.where(other, "de.wikipedia", "en.wikipedia"),
                "page_id": ids,
                "page_title": [f"Page_{i}" for i in ids],
                "wikidata_item": [f"Q{i}" for i in ids],
                "private_count": rng.integers(90, 50_000, rows),
            }
        )
        path = os.path.join(folder, f"2023-03-{day + 1:02d}.tsv.gz")
        with gzip.open(path, "wb", compresslevel=6) as out:
            frame.write_csv(out, separator="\t")
        paths.append(path)
    return paths


def gunzip_seconds(paths: list[str]) -> float:
    """Plain decompression of ``paths``, read in 1 MiB chunks and thrown away."""
    started = time.perf_counter()
    for path in paths:
        with gzip.open(path, "rb") as f:
            while f.read(1 << 20):
                pass
    return time.perf_counter() - started


# --- the parts, each in its own process --------------------------------------------------------


def part_summaries(path: str, out: str) -> dict:
    from assets.wikiprofile.sources.wikipedia import SummaryReader
    from resources.storage import write_parquet_batches

    started = time.perf_counter()
    reader = SummaryReader(path, 50)
    rows = write_parquet_batches(out, reader.batches())
    return {"seconds": time.perf_counter() - started, "kept": rows, "records": reader.counts.get("records", 0)}


def part_views(folder: str, out: str) -> dict:
    from assets.wikiprofile.sources.wikipedia import ViewReader
    from resources.storage import write_parquet

    paths = sorted(os.path.join(folder, n) for n in os.listdir(folder))
    started = time.perf_counter()
    reader = ViewReader("en.wikipedia")
    frame = reader.read_month(paths, "2023-03")
    write_parquet(out, frame)
    return {"seconds": time.perf_counter() - started, "pages": frame.height, "rows": reader.counts.get("rows", 0)}


def part_join(summaries: str, views: str) -> dict:
    import polars as pl

    from assets.wikiprofile.sources.wikipedia import WINDOW, ViewTotals, draw_pages, join_pages, window_months

    started = time.perf_counter()
    totals = ViewTotals(window_months(*WINDOW))
    totals.add(pl.read_parquet(views), "2023-03")
    ids = pl.read_parquet(summaries, columns=["page_id", "title", "words"])
    eligible, no_views = join_pages(ids, totals, 1)
    drawn = draw_pages(eligible, 10_000, 0)
    return {
        "seconds": time.perf_counter() - started,
        "eligible": eligible.height,
        "no_views": no_views.height,
        "drawn": drawn.height,
    }


def part_join_at_size(pages: str, viewed: str) -> dict:
    """The join at English Wikipedia's size without files: ``pages`` summaries' ids, titles and
    word counts, and the window's 29 months of ``viewed`` pages each (drawn at random), as the
    materialized tables would give them."""
    import numpy as np
    import polars as pl

    from assets.wikiprofile.sources.wikipedia import WINDOW, ViewTotals, draw_pages, join_pages, window_months

    n, m = int(pages), int(viewed)
    rng = np.random.default_rng(3)
    ids = pl.DataFrame(
        {
            "page_id": pl.int_range(1, n + 1, eager=True).cast(pl.String),
            "words": rng.integers(50, 400, n).astype(np.int32),
        }
    ).with_columns(title=pl.lit("Page ") + pl.col("page_id"))
    started = time.perf_counter()
    months = window_months(*WINDOW)
    totals = ViewTotals(months)
    for month in months:
        pid = pl.Series(rng.choice(n, m, replace=False) + 1).cast(pl.String)
        frame = pl.DataFrame({"page_id": pid, "views": rng.integers(90, 100_000, m)}).with_columns(
            title=pl.lit("Page ") + pl.col("page_id")
        )
        totals.add(frame.select("page_id", "title", "views"), month)
    eligible, no_views = join_pages(ids.select("page_id", "title", "words"), totals, len(months))
    drawn = draw_pages(eligible, 10_000, 0, 5)
    return {
        "seconds": time.perf_counter() - started,
        "eligible": eligible.height,
        "no_views": no_views.height,
        "drawn": drawn.height,
    }


PARTS = {"summaries": part_summaries, "views": part_views, "join": part_join, "join_at_size": part_join_at_size}


def child(name: str, *args: str) -> None:
    result = PARTS[name](*args)
    print(json.dumps({**result, "peak_rss_mib": _rss_mib()}))


def run_part(name: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, *args], capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise SystemExit(f"{name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per daily view file")
    parser.add_argument(
        "--viewed", type=int, default=2_000_000, help="pages with views in a month, for the join at 7M pages"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        cirrus = os.path.join(tmp, "enwiki-20250601-cirrussearch-content.json.gz")
        views = os.path.join(tmp, "views")
        os.makedirs(views)
        t = time.perf_counter()
        write_cirrus(cirrus, args.pages)
        day_paths = write_days(views, args.days, args.rows, args.pages)
        print(f"wrote {args.pages:,} pages and {args.days} days x {args.rows:,} rows in {time.perf_counter() - t:.0f}s")
        summaries_out, views_out = os.path.join(tmp, "summaries.parquet"), os.path.join(tmp, "views.parquet")
        gz_summaries = gunzip_seconds([cirrus])
        summaries = run_part("summaries", cirrus, summaries_out)
        gz_views = gunzip_seconds(day_paths)
        month = run_part("views", views, views_out)
        join = run_part("join", summaries_out, views_out)
    at_size = run_part("join_at_size", str(ENWIKI_ARTICLES), str(args.viewed))
    rows = args.days * args.rows
    table = [
        (
            "summaries (CirrusSearch)",
            f"{args.pages:,} pages",
            f"{args.pages / summaries['seconds']:,.0f} pages/s",
            f"{summaries['seconds'] / gz_summaries:.2f}x",
            f"{summaries['peak_rss_mib']:,.0f}",
            f"{summaries['seconds'] * ENWIKI_ARTICLES / args.pages / 60:,.0f} min for 7M articles",
        ),
        (
            "views (country_project_page)",
            f"{rows:,} rows",
            f"{rows / month['seconds']:,.0f} rows/s",
            f"{month['seconds'] / gz_views:.2f}x",
            f"{month['peak_rss_mib']:,.0f}",
            f"{month['seconds'] * WINDOW_DAYS / args.days / 3600:,.1f} h for 881 days",
        ),
        (
            "join and draw",
            f"{join['eligible'] + join['no_views']:,} pages",
            f"{join['seconds']:.1f} s",
            "-",
            f"{join['peak_rss_mib']:,.0f}",
            "ids and counts only",
        ),
        (
            "join and draw at size",
            f"{ENWIKI_ARTICLES:,} pages, 29 months x {args.viewed:,}",
            f"{at_size['seconds']:.1f} s",
            "-",
            f"{at_size['peak_rss_mib']:,.0f}",
            "measured at English Wikipedia's size",
        ),
    ]
    print("| part | size | rate | vs gunzip | peak RSS MiB | extrapolated |")
    print("|---|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")
    print(
        json.dumps(
            {
                "summaries": summaries,
                "views": month,
                "join": join,
                "at_size": at_size,
                "gunzip": [gz_summaries, gz_views],
            }
        )
    )


if __name__ == "__main__":
    main()
