"""What the intervals and tests (issue 48) add to each report step at the papers' sizes: each
report asset run on synthetic inputs of that size twice in one process, once as it is and once
with :func:`assets.eval.uncertainty.summarize` replaced by a stand-in that computes nothing,
the ratio of the two times (the target: at most 1.10).

- QUIT: 7,401 questions (5,000 train, 2,000 test, 401 dev) with 3 relevant passages each, 5
  retrievers' top-100 runs (3.7M run rows): ``eval/quit_retrieval_metrics``;
- RECOR: 11 domains x 270 turns (about the release's 2,971 turns), 5 retrievers x 7 query
  strategies, top-100 each: ``eval/recor_retrieval_metrics``;
- WikiProfile: 5,000 facts x 5 subject models: ``eval/wikiprofile_profile_report``;
- a BEIR-layout dataset: MS MARCO dev's 6,980 queries, 5 retrievers: ``eval/beir_retrieval_metrics``.

    .venv/bin/python bench/uncertainty_cost.py [--parts quit,recor,wikiprofile,beir] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import dagster as dg  # noqa: E402
import polars as pl  # noqa: E402

from assets.eval import uncertainty  # noqa: E402
from assets.eval.runs import RUN_SCHEMA  # noqa: E402

SYSTEMS = ("bm25", "e5", "minilm", "colbert", "tfidf")


def synthetic_run(qrels: pl.DataFrame, questions: list[str], documents: int, rng: random.Random) -> pl.DataFrame:
    """Each system's top 100 per question: some of its relevant passages high, some low, the
    rest drawn from the corpus."""
    gold = {q: g["passage_id"].to_list() for (q,), g in qrels.group_by("question_id")}
    rows = []
    for system in SYSTEMS:
        skill = SYSTEMS.index(system) * 0.1
        for q in questions:
            found = [d for d in gold.get(q, []) if rng.random() < 0.7 - skill]
            listed = list(dict.fromkeys(found + [f"p{rng.randrange(documents)}" for _ in range(100)]))[:100]
            rows += [(q, d, rank, 1.0 / rank, system) for rank, d in enumerate(listed, start=1)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


def timed(call) -> float:
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def compared(call) -> tuple[float, float]:
    """The best of two times of ``call`` as it is and without the intervals and tests, after
    one untimed call (imports, ranx's compiled metrics, caches)."""
    call()
    with_, without = [], []
    for _ in range(2):
        with_.append(timed(call))
        without.append(without_uncertainty(call))
    return min(with_), min(without)


def without_uncertainty(call) -> float:
    """``call``'s time with summarize computing nothing (an empty summary)."""
    real = uncertainty.summarize

    def nothing(scores, keys, *args, **kwargs):
        return pl.DataFrame(schema={**{k: scores.schema[k] for k in keys}, **uncertainty.LONG_COLUMNS})

    uncertainty.summarize = nothing
    try:
        return timed(call)
    finally:
        uncertainty.summarize = real


def settings_kwargs(asset: dg.AssetsDefinition) -> dict:
    """The uncertainty resource, where the report takes it."""
    return {"uncertainty": uncertainty.UncertaintySettings()} if "uncertainty" in asset.required_resource_keys else {}


def part_quit(scale: float) -> tuple[str, float, float]:
    from assets.eval.quit.assets import QuitReport, quit_retrieval_metrics

    rng = random.Random(1)
    sizes = {"train": int(5000 * scale), "test": int(2000 * scale), "dev": int(401 * scale)}
    questions = pl.DataFrame(
        [(f"q{s}{i}", s) for s, n in sizes.items() for i in range(n)], schema=["question_id", "split"], orient="row"
    )
    ids = questions["question_id"].to_list()
    qrels = pl.DataFrame(
        [(q, f"p{rng.randrange(2_400_000)}", rng.choice((1, 2))) for q in ids for _ in range(3)],
        schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
        orient="row",
    ).unique(["question_id", "passage_id"])
    runs = synthetic_run(qrels, ids, 2_400_000, rng)

    def call():
        quit_retrieval_metrics(
            dg.build_asset_context(),
            config=QuitReport(),
            quit_runs=runs,
            benchmark_qrels=qrels,
            benchmark_questions=questions,
            **settings_kwargs(quit_retrieval_metrics),
        )

    return (
        f"QUIT retrieval report, {len(ids):,} questions x {len(SYSTEMS)} retrievers",
        timed(call),
        without_uncertainty(call),
    )


def part_beir(scale: float) -> tuple[str, float, float]:
    from assets.eval.beir.assets import beir_retrieval_metrics

    rng = random.Random(2)
    ids = [f"q{i}" for i in range(int(6980 * scale))]
    qrels = pl.DataFrame(
        [("msmarco", q, f"p{rng.randrange(8_800_000)}", 1) for q in ids],
        schema={"dataset": pl.String, "question_id": pl.String, "passage_id": pl.String, "label": pl.Int64},
        orient="row",
    )
    runs = synthetic_run(qrels.drop("dataset"), ids, 8_800_000, rng).with_columns(pl.lit("msmarco").alias("dataset"))

    def call():
        beir_retrieval_metrics(
            dg.build_asset_context(), beir_runs=runs, beir_qrels=qrels, **settings_kwargs(beir_retrieval_metrics)
        )

    return (
        f"BEIR-layout report, {len(ids):,} queries x {len(SYSTEMS)} retrievers",
        timed(call),
        without_uncertainty(call),
    )


# Each profile's flags (encodes, knows, knows with thinking), as the profiling sets them.
FLAGS = {
    "encoding_failure": (False, False, False),
    "recall_failure": (True, False, False),
    "direct_recall": (True, True, True),
    "recall_with_thinking": (True, False, True),
    "inference_without_encoding": (False, False, True),
}


def part_wikiprofile(scale: float) -> tuple[str, float, float]:
    from assets.eval.wikiprofile.analysis import PROFILE_SCHEMA
    from assets.eval.wikiprofile.assets import wikiprofile_profile_report
    from assets.wikiprofile.settings import WikiProfileSettings

    rng = random.Random(3)
    facts = int(5000 * scale)
    rows = []
    for m, model in enumerate(SYSTEMS):
        for f in range(facts):
            profile = rng.choices(list(FLAGS), weights=[3, 2, 4 + m, 1, 1])[0]
            rows.append((model, f"f{f}", *FLAGS[profile], profile, "present"))
    profiles = pl.DataFrame(rows, schema=PROFILE_SCHEMA, orient="row")

    def call():
        # the graded responses left out: appendix D.4's stability is timed on its own (BENCHMARKS.md)
        wikiprofile_profile_report(
            dg.build_asset_context(),
            profiles=profiles,
            graded_responses=pl.DataFrame(),
            wikiprofile_settings=WikiProfileSettings(),
            **settings_kwargs(wikiprofile_profile_report),
        )

    return f"WikiProfile profile report, {facts:,} facts x {len(SYSTEMS)} models", *compared(call)


PARTS = {"quit": part_quit, "beir": part_beir, "wikiprofile": part_wikiprofile}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--scale", type=float, default=1.0, help="a share of the papers' sizes (quick looks)")
    args = parser.parse_args()
    from assets.eval.metrics import compile_metrics

    compile_metrics()
    print("| report step | with intervals and tests | without | ratio |")
    print("|---|---|---|---|")
    for name in args.parts.split(","):
        what, with_, without = PARTS[name](args.scale)
        print(f"| {what} | {with_:.1f} s | {without:.1f} s | **{with_ / without:.2f}x** |")


if __name__ == "__main__":
    main()
