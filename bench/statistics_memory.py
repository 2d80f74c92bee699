"""Peak memory of ``quit/statistics`` (Table 1) as the corpus grows, in two parts, each size in
its own process.

- ``table1``: ``release.table1`` over a stored corpus of N synthetic questions x 325 passages
  (80-word texts, read from Parquet a block at a time as the asset reads it) with a stand-in
  encoder (constant unit vectors), so that only the step's own Python and the reading are
  measured: its peak RSS should not grow with N.
- ``encoder``: the bundled MiniLM encoding synthetic passages of 40-100 words block by block
  (``resources.encoders.encode_blocks``, the block size Table 1 uses): resident and peak
  memory after each block, which should stop growing once the first block's shapes are
  allocated.

    .venv/bin/python bench/statistics_memory.py [--part table1|encoder] [--questions 200,800,2000] [--blocks 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def peak_mb() -> int:
    """The process's resident high-water mark (VmHWM), in MB."""
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmHWM")).split()[1]) // 1024


def resident_mb() -> int:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def table1_child(questions: int) -> dict:
    import numpy as np
    import polars as pl

    from assets.quit import release
    from resources.storage import StoredTable, write_parquet_batches

    uri = os.path.join(tempfile.mkdtemp(), "corpus.parquet")

    def frames():
        for start in range(0, questions, 200):
            rows = [
                (f"q{q}_{p}", f"q{q}", " ".join(WORDS[(q + p + i) % len(WORDS)] for i in range(80)) + f" {q}-{p}", 3)
                for q in range(start, min(questions, start + 200))
                for p in range(325)
            ]
            yield pl.DataFrame(rows, schema=["passage_id", "question_id", "text", "num_hints"], orient="row")

    write_parquet_batches(uri, frames())
    qs = pl.DataFrame(
        {
            "question_id": [f"q{q}" for q in range(questions)],
            "question": [f"Which {WORDS[q % len(WORDS)]} is {q}?" for q in range(questions)],
            "answers": [[f"answer {q}", "Alpha"] for q in range(questions)],
        }
    )
    # The high-water mark from here on: writing the corpus is the bench's, not the step's.
    Path(f"/proc/{os.getpid()}/clear_refs").write_text("5")
    start = time.perf_counter()
    release.table1(
        qs,
        StoredTable((uri,)),
        pl.DataFrame({"label": [1]}),
        lambda texts: np.full((len(texts), 384), 384**-0.5, dtype=np.float32),
    )
    os.remove(uri)
    return {
        "questions": questions,
        "passages": questions * 325,
        "seconds": round(time.perf_counter() - start, 1),
        "peak_rss_mb": peak_mb(),
    }


def encoder(blocks: int) -> None:
    from resources.encoders import BLOCK_SIZE, encode_blocks

    texts = (" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(40 + i % 60)) for i in range(BLOCK_SIZE * blocks))
    start = time.perf_counter()
    for n, _ in enumerate(encode_blocks("minilm", texts, block_size=BLOCK_SIZE), start=1):
        print(
            json.dumps(
                {
                    "block": n,
                    "texts": n * BLOCK_SIZE,
                    "rss_mb": resident_mb(),
                    "peak_rss_mb": peak_mb(),
                    "texts_per_s": round(n * BLOCK_SIZE / (time.perf_counter() - start)),
                }
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("table1", "encoder"), default="table1")
    parser.add_argument("--questions", default="200,800,2000")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(table1_child(args.child)))
    elif args.part == "encoder":
        encoder(args.blocks)
    else:
        for n in map(int, args.questions.split(",")):
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(n)], capture_output=True, text=True, cwd=ROOT
            )
            print(out.stdout.strip() or out.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
