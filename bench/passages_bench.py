"""The passages step at full QUIT scale: 7,401 questions x 5 hints -> 2,405,325 passages
written to Parquet, against a naive Python loop doing the same, in one run.

Each variant runs in its own process so its peak RSS is its own. Hints are synthetic
(deterministic words, ~11.7 words each, so passages average ~58 words as in Table 1).

    .venv/bin/python bench/passages_bench.py [--questions 7401]
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


def synthetic_questions(n: int, seed: int = 7):
    import polars as pl

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(5000)]
    hints = [[" ".join(rng.choices(vocab, k=rng.randint(9, 14))) + "." for _ in range(5)] for _ in range(n)]
    return pl.DataFrame({"question_id": [f"Q_bench_{i}" for i in range(n)], "hints": hints})


def run_fast(questions, out: str) -> int:
    from assets.quit.rules import passage_batches
    from resources.storage import write_parquet_batches

    return write_parquet_batches(out, passage_batches(questions))


def run_naive(questions, out: str) -> int:
    from itertools import permutations

    import polars as pl

    rows = []
    for qid, hints in questions.iter_rows():
        for k in range(1, 6):
            for order in permutations(range(5), k):
                mask = "".join("1" if i in order else "0" for i in range(5))
                code = "".join(map(str, order))
                rows.append(
                    {
                        "passage_id": f"{qid}_{mask}_{code}",
                        "question_id": qid,
                        "hint_order": code,
                        "num_hints": k,
                        "text": " ".join(hints[i] for i in order),
                    }
                )
    pl.DataFrame(rows).write_parquet(out, compression="zstd")
    return len(rows)


def child(variant: str, n: int) -> None:
    import polars  # noqa: F401  (import cost is not part of the step)

    out = os.path.join(tempfile.mkdtemp(), "passages.parquet")
    questions = synthetic_questions(n)  # the step's input, made before the clock starts
    t = time.perf_counter()
    rows = (run_fast if variant == "pipeline" else run_naive)(questions, out)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB
    print(
        json.dumps(
            {
                "variant": variant,
                "rows": rows,
                "wall_s": round(wall, 2),
                "peak_rss_mib": round(rss, 1),
                "file_mib": round(os.path.getsize(out) / 2**20, 1),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=7401)
    parser.add_argument("--child", choices=["pipeline", "naive"])
    args = parser.parse_args()
    if args.child:
        child(args.child, args.questions)
        return
    results = {}
    for variant in ("pipeline", "naive"):
        out = subprocess.run(
            [sys.executable, __file__, "--child", variant, "--questions", str(args.questions)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        print(results[variant])
    fast, naive = results["pipeline"], results["naive"]
    print(f"wall: {fast['wall_s']} s vs {naive['wall_s']} s naive -> {naive['wall_s'] / fast['wall_s']:.1f}x faster")
    print(
        f"peak RSS: {fast['peak_rss_mib']} MiB vs {naive['peak_rss_mib']} MiB naive -> "
        f"{naive['peak_rss_mib'] / fast['peak_rss_mib']:.1f}x less"
    )


if __name__ == "__main__":
    main()
