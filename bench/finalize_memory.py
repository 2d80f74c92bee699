"""Peak memory of the QUIT finalize steps (the ``quit_finalize`` job's assets after
labeling), extrapolated to the paper's 2,405,325 passages.

A synthetic QUIT-shaped build is written as the IO manager stores it (Parquet under a
storage root): selected questions with 5 hints of ~11.7 words, their 325 passages each
(``rules.passage_batches``), three labelers' judged answers per passage, splits, question
metadata and human verification decisions for every question. Each step then runs in its
own process, as a Dagster run's step does: its inputs loaded as the Parquet IO manager
loads them (the input's ``columns`` metadata included), the asset's own body, its tables
written as the IO manager writes them. The process's peak RSS (``ru_maxrss``), its RSS
after imports, wall and CPU time are printed per step and size, with a line through the
two largest sizes extrapolated to full size. ``--job`` adds the steps as the default run
executes them: the ``quit_finalize`` job in one process (``execute_in_process``), its
checks included, ``statistics`` left out (the encoder's step, measured elsewhere).

    .venv/bin/python bench/finalize_memory.py [--passages 200000 600000] [--steps benchmark ...] [--job]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FULL_PASSAGES = 2_405_325
LABELERS = ("labeler_a", "labeler_b", "labeler_c")
STEPS = ("passage_labels", "verification_candidates", "verified_labels", "benchmark", "release_files")
JOB = "quit_finalize job"
WRONG_PER_QUESTION = 40


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB


# --- the synthetic build ---------------------------------------------------------------------


def prepare(root: str, passages_wanted: int, seed: int = 7) -> dict:
    """Writes every input of the finalize steps under ``root``; returns what was made."""
    import polars as pl

    from assets.quit.rules import PASSAGES_PER_QUESTION
    from resources.storage import table_uri, write_parquet

    n, selected, metadata, passages = write_questions(root, passages_wanted, seed)
    ids = selected["question_id"].to_list()

    def uri(*key):
        return table_uri(root, ["quit", *key])

    write_parquet(uri("question_metadata"), metadata)
    pids = iter(pl.read_parquet(uri("passages"), columns=["passage_id"])["passage_id"].to_list())
    pids = [[next(pids) for _ in range(PASSAGES_PER_QUESTION)] for _ in ids]
    for li, model in enumerate(LABELERS):
        frame = labeler_answers(ids, pids, model, random.Random(seed * 100 + li))
        write_parquet(table_uri(root, ["quit", "passage_answers"], model), frame)
    with open(os.path.join(root, "decisions.json"), "w") as f:
        json.dump(verification_decisions(ids), f)
    return {"questions": n, "passages": passages}


def write_questions(root: str, passages_wanted: int, seed: int = 7) -> tuple:
    """The selected questions (enough for ``passages_wanted`` passages), their splits (every
    one labeled) and their passages, written under ``root`` as the IO manager stores them; returns
    the question count, the questions, their metadata (unwritten) and the passages written."""
    from assets.quit.rules import PASSAGES_PER_QUESTION, passage_batches
    from resources.storage import table_uri, write_parquet, write_parquet_batches

    n = max(1, round(passages_wanted / PASSAGES_PER_QUESTION))
    selected, splits, metadata = synthetic_questions(n, random.Random(seed))
    write_parquet(table_uri(root, ["quit", "selected_questions"]), selected)
    write_parquet(table_uri(root, ["quit", "splits"]), splits)
    batches = passage_batches(selected.select("question_id", "hints"))
    passages = write_parquet_batches(table_uri(root, ["quit", "passages"]), batches)
    return n, selected, metadata, passages


def synthetic_questions(n: int, rng: random.Random) -> tuple:
    """``n`` selected questions with five hints each, their splits and their metadata."""
    import polars as pl

    from assets.quit.sources import questions_frame

    vocab = [f"w{i}" for i in range(5000)]
    rows = []
    for i in range(n):
        qid = f"tqa_{i:05d}"
        rows.append(
            {
                "question_id": qid,
                "source": "triviahg",
                "source_id": qid,
                "question": f"Which thing number {i} is this?",
                "answer": f"Gold {i}",
                "aliases": [f"Gold {i}", f"The Gold {i}"],
                "hints": [" ".join(rng.choices(vocab, k=rng.randint(9, 14))) + "." for _ in range(5)],
                "hint_convergence": None,
                "candidate_answers": [],
                "major_type": "ENTY",
                "minor_type": "other",
                "difficulty": "medium",
                "popularity": None,
                "snippet": None,
            }
        )
    selected = questions_frame(rows).with_columns(
        pl.Series("hint_convergence", [[0.9, 0.8, 0.7, 0.6, 0.5]] * n, dtype=pl.List(pl.Float64))
    )
    ids = selected["question_id"].to_list()
    split = ["test" if i % 4 == 0 else "dev" if i % 4 == 1 else "train" for i in range(n)]
    splits = pl.DataFrame(
        {
            "question_id": ids,
            "parametric_answerable": [s == "train" for s in split],
            "split": split,
            "labeled": [True] * n,
        }
    )
    metadata = pl.DataFrame(
        {
            "question_id": ids,
            "question_type": ["ENTY:other"] * n,
            "type_origin": ["source"] * n,
            "type_raw": [None] * n,
            "difficulty": ["medium"] * n,
            "difficulty_origin": ["source"] * n,
            "reference_complexity": [None] * n,
            "references_with_answer": [0] * n,
            "references_retrieved": [0] * n,
        },
        schema_overrides={"type_raw": pl.String, "reference_complexity": pl.Float64},
    )
    return selected, splits, metadata


def labeler_answers(ids: list[str], pids: list[list[str]], model: str, lr: random.Random):
    """One labeler's answers per passage, as steps.passage_answers stores them: the gold or
    an alias (exact match), a paraphrase the judge accepted, one of the question's wrong
    answers, NO ANSWER, or (rarely) a failed call."""
    import polars as pl

    from assets.quit import steps

    cols = {c: [] for c in steps.ANSWER_SCHEMA}
    for qi, qid in enumerate(ids):
        for pid in pids[qi]:
            x = lr.random()
            answer, error, em, judge, correct = None, None, False, None, False
            if x < 0.40:
                answer, em, correct = lr.choice([f"Gold {qi}", f"the gold {qi}"]), True, True
            elif x < 0.48:
                answer, judge, correct = f"Paraphrase {lr.randrange(4)} of gold {qi}", True, True
            elif x < 0.85:
                answer, judge = f"Wrong answer {lr.randrange(WRONG_PER_QUESTION)} for {qi}", False
            elif x < 0.999:
                pass
            else:
                error, correct = "APIConnectionError: timed out", None
            cols["question_id"].append(qid)
            cols["model"].append(model)
            cols["item"].append(pid)
            cols["raw"].append(None if error else f"Answer: {answer or 'NO ANSWER'}")
            cols["answer"].append(answer)
            cols["error"].append(error)
            cols["exact_match"].append(em)
            cols["judge"].append(judge)
            cols["judge_error"].append(None)
            cols["correct"].append(correct)
    return pl.DataFrame(cols, schema=steps.ANSWER_SCHEMA).rename({"item": "passage_id"})


def verification_decisions(ids: list[str]) -> dict:
    """Decisions for every question: a paraphrase rejected, one accepted, and for one question
    in ten a wrong answer newly accepted (screened for leakage again)."""
    return {
        qid: {
            "accepted": [f"Gold {qi}", f"Paraphrase 0 of gold {qi}"]
            + ([f"Wrong answer 1 for {qi}"] if qi % 10 == 0 else []),
            "rejected": [f"Paraphrase 1 of gold {qi}", f"Wrong answer 2 for {qi}"],
        }
        for qi, qid in enumerate(ids)
    }


# --- one step in its own process -----------------------------------------------------------


class ScriptedJudge:
    """The LLM the verification step re-screens newly accepted answers with: no span leaks."""

    def role(self, name):
        return ["judge"]

    def binding(self, alias):
        return True

    def run(self, alias, requests, parse=None, stats=None, log=None):
        from resources.llm import LLMResult

        return [LLMResult(key=r.key, text="No", value=False) for r in requests]


def _load(asset, root: str) -> dict:
    """Each input as the Parquet IO manager loads it (every labeler partition, the input's
    ``columns`` metadata)."""
    from resources.storage import concat, read_parquet, table_uri

    loaded = {}
    for name, key in asset.keys_by_input_name.items():
        columns = asset.node_def.input_def_named(name).metadata.get("columns")
        if key.path[-1] == "passage_answers":
            loaded[name] = concat(read_parquet(table_uri(root, key.path, m), columns=columns) for m in LABELERS)
        else:
            loaded[name] = read_parquet(table_uri(root, key.path), columns=columns)
    return loaded


def _store(root: str, key: list[str], value) -> None:
    from resources.storage import Batches, table_uri, write_parquet, write_parquet_batches

    if isinstance(value, Batches):
        write_parquet_batches(table_uri(root, key), value.frames)
    else:
        write_parquet(table_uri(root, key), value)


def child(step: str, root: str) -> None:
    import dagster as dg

    from assets.quit import assets
    from assets.quit.settings import QuitSettings
    from resources.storage import StorageResource

    asset = getattr(assets, step)
    baseline = _rss_mib()
    t, cpu = time.perf_counter(), time.process_time()
    inputs = _load(asset, root)
    settings = QuitSettings(
        decisions_path=os.path.join(root, "decisions.json"), export_dir=os.path.join(root, "release")
    )
    resources = {"quit_settings": settings, "storage": StorageResource(root=root), "llm": ScriptedJudge()}
    fn = asset.op.compute_fn.decorated_fn
    params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    kwargs = {p: inputs[p] if p in inputs else resources[p] for p in params if p != "context"}
    if "context" in params:
        kwargs["context"] = dg.build_asset_context()
    result = fn(**kwargs)
    outputs = list(result) if not isinstance(result, dg.Output) else [result]
    for out in outputs:
        name = out.output_name if out.output_name != "result" else step
        _store(root, ["quit", name], out.value)
    del outputs, result, inputs, kwargs
    print(
        json.dumps(
            {
                "step": step,
                "wall_s": round(time.perf_counter() - t, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
                "baseline_mib": round(baseline, 1),
                "peak_rss_mib": round(_rss_mib(), 1),
            }
        )
    )


def job(root: str) -> None:
    """The steps as the default run executes them: the ``quit_finalize`` job in one process
    (``execute_in_process``), its checks included, ``statistics`` left out (the encoder's)."""
    import dagster as dg

    from assets.quit.settings import QuitSettings
    from pipelines.definitions import build_defs
    from pipelines.jobs import QUIT_FINALIZE
    from resources.llm import LLMResource
    from resources.storage import StorageResource
    from tests import scripted
    from tests.conftest import SCRIPTED_REGISTRY

    scripted.install()
    settings = QuitSettings(
        decisions_path=os.path.join(root, "decisions.json"), export_dir=os.path.join(root, "release")
    )
    full = build_defs(
        storage=StorageResource(root=root),
        quit_settings=settings,
        llm=LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=os.path.join(root, "llm-cache")),
    )
    finalize = dg.define_asset_job(
        "finalize", selection=QUIT_FINALIZE - dg.AssetSelection.assets(["quit", "statistics"])
    )
    defs = dg.Definitions(assets=full.assets, asset_checks=full.asset_checks, jobs=[finalize], resources=full.resources)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("quit_labelers", list(LABELERS))
    baseline = _rss_mib()
    t, cpu = time.perf_counter(), time.process_time()
    result = defs.resolve_job_def("finalize").execute_in_process(
        instance=instance,
        raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
    if not result.success or failed:
        raise SystemExit(f"the finalize job failed: {failed or [e.message for e in result.all_events if e.is_failure]}")
    print(
        json.dumps(
            {
                "step": JOB,
                "wall_s": round(time.perf_counter() - t, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
                "baseline_mib": round(baseline, 1),
                "peak_rss_mib": round(_rss_mib(), 1),
            }
        )
    )


def run_child(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, nargs="+", default=[200_000, 600_000])
    parser.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    parser.add_argument("--job", action="store_true", help="also run the steps as one quit_finalize job in one process")
    parser.add_argument("--child", choices=[*STEPS, "job"])
    parser.add_argument("--prepare", type=int)
    parser.add_argument("--root")
    parser.add_argument("--keep", action="store_true", help="leave the synthetic storage roots in place")
    args = parser.parse_args()
    if args.prepare:
        print(json.dumps(prepare(args.root, args.prepare)))
        return
    if args.child:
        if args.child == "job":
            job(args.root)
        else:
            child(args.child, args.root)
        return
    results: dict[int, dict[str, dict]] = {}
    for size in args.passages:
        root = tempfile.mkdtemp(prefix=f"finalize_{size}_")
        made = run_child("--prepare", str(size), "--root", root)
        results[made["passages"]] = {}
        for step in [*args.steps, *(["job"] if args.job else [])]:
            r = run_child("--child", step, "--root", root)
            step = r["step"]
            results[made["passages"]][step] = r
            print(
                f"{made['passages']:>9,} passages  {step:<24} peak {r['peak_rss_mib']:>8.1f} MiB  "
                f"(after imports {r['baseline_mib']:.1f})  wall {r['wall_s']:.1f} s  cpu {r['cpu_s']:.1f} s",
                flush=True,
            )
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    sizes = sorted(results)
    if len(sizes) < 2:
        return
    lo, hi = sizes[-2], sizes[-1]
    print(f"\nextrapolated to {FULL_PASSAGES:,} passages (line through {lo:,} and {hi:,}):")
    # CPU time rather than wall time: on a shared machine the wall clock measures the neighbours.
    print(f"{'step':<24} {'KiB/passage':>12} {'peak at full size':>18} {'CPU at full size':>17}")
    for step in results[hi]:
        a, b = results[lo][step], results[hi][step]
        slope = (b["peak_rss_mib"] - a["peak_rss_mib"]) / (hi - lo)
        full = b["peak_rss_mib"] + slope * (FULL_PASSAGES - hi)
        cpu = b["cpu_s"] + (b["cpu_s"] - a["cpu_s"]) / (hi - lo) * (FULL_PASSAGES - hi)
        print(f"{step:<24} {slope * 1024:>12.2f} {full / 1024:>15.2f} GiB {cpu / 60:>13.1f} min")


if __name__ == "__main__":
    main()
