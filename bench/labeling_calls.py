"""LLM calls per labeled passage, against the naive count, on the bundled sample.

Labels the 325 passages of N sample questions with the embedded model over a fresh cache
(the steps of the pipeline, without Dagster), then relabels them to show the cache.
Naive: every labeler generates once and the judge is asked once per passage and labeler;
the paper's setup has 3 labelers, so 3 x (generate + judge) = 6 calls per passage.

    .venv/bin/python bench/labeling_calls.py [--questions 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from assets.common.records import parse_json_list

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    import polars as pl

    from assets.quit import sources, steps
    from assets.quit.rules import passages_frame
    from assets.quit.settings import QuitSettings
    from resources.llm import CallStats, LLMResource

    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=2)
    args = parser.parse_args()
    s = QuitSettings()
    loaded = [
        (n, parse_json_list(open(p).read(), p))
        for n, p in (("triviahg", s.triviahg_path), ("wikihint", s.wikihint_path))
    ]
    qs = (
        sources.questions_frame(sources.ingest(loaded).rows).filter(pl.col("source") == "wikihint").head(args.questions)
    )
    qs = qs.with_columns(qs["hints"].list.head(5))
    ps = passages_frame(qs.select("question_id", "hints"))
    llm = LLMResource(cache_dir=tempfile.mkdtemp())
    labelers = llm.models("quit.labelers")
    judge = llm.model("quit.judge")
    for attempt in ("fresh cache", "rerun"):
        stats = CallStats()
        t = time.perf_counter()
        for labeler in labelers:
            steps.passage_answers(ps, qs, labeler, judge, stats)
        wall = time.perf_counter() - t
        sent = stats.calls - stats.cached
        print(
            f"{attempt}: {ps.height} passages x {len(labelers)} labeler(s): {stats.calls} calls "
            f"({sent} sent to the model, {stats.cached} from cache) in {wall:.0f}s; "
            f"{sent / ps.height:.2f} model calls per passage; naive with these labelers "
            f"{2 * len(labelers)}, the paper's 3 labelers {6}; {ps.height * len(labelers) / wall:.1f} passages/s"
        )


if __name__ == "__main__":
    main()
