"""One stage of the scale probe (``bench/scale.py --child``), in its own process: the stage's
plan from the project's jobs, its run, and per step the wall time, CPU time, peak RSS and LLM
calls, sampled while it runs."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from bench.scale_inputs import RECOR_DOMAIN, ROOT

SAMPLE_EVERY = 0.1


class Sampler(threading.Thread):
    """Every ``every`` seconds: the process's CPU time (all its threads), the CPU time of the
    subprocesses it waited for (a batch runner: the model's side, as the stand-in server's is)
    and its peak RSS since the sample before: the high-water mark is reset after each read
    (``/proc/self/clear_refs`` 5), so a step's peak is the largest of the intervals it spans.
    Where the reset is refused, the current RSS is read instead."""

    def __init__(self, every: float = SAMPLE_EVERY):
        super().__init__(daemon=True)
        self.every, self.samples, self.halt = every, [], threading.Event()
        self.resets = self._reset()
        self.start_peak_kb = self._status("VmHWM")

    @staticmethod
    def _status(field: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def sample(self) -> None:
        t, times = time.time(), os.times()
        peak = self._status("VmHWM" if self.resets else "VmRSS")
        if self.resets:
            self._reset()
        self.samples.append((t, times.user + times.system, peak, times.children_user + times.children_system))

    def run(self) -> None:
        while not self.halt.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self.halt.set()
        self.join()
        self.sample()

    def cpu_at(self, t: float, field: int = 1) -> float:
        """CPU seconds at ``t``, interpolated: the process's own (``field`` 1) or its
        children's (3)."""
        s = self.samples
        if t <= s[0][0]:
            return s[0][field]
        for a, b in zip(s, s[1:]):
            if t <= b[0]:
                return a[field] + (b[field] - a[field]) * (t - a[0]) / max(b[0] - a[0], 1e-9)
        return s[-1][field]

    def peak_kb(self, start: float, end: float) -> int:
        """The largest interval peak of the intervals that overlap [start, end]."""
        peaks, before = [], None
        for t, _, p, _ in self.samples:
            if t >= start and (before is None or before < end):
                peaks.append(p)
            before = t
        return max(peaks, default=0)


def stage_plan(bench: str, stage: str, args: dict):
    """The selection, partition keys and run config of one stage, from the project's jobs."""
    import dagster as dg

    from assets.partitions import registered_keys
    from pipelines import jobs
    from pipelines.stages import release_config

    keys = registered_keys()
    name, _, part = stage.partition(":")
    if bench == "quit":
        statistics = jobs.select("quit", "statistics")
        plans = {
            "prepare": (jobs.QUIT_PREPARE, [None]),
            "parametric": (jobs.QUIT_PARAMETRIC, keys["quit_models"]),
            "passages": (jobs.QUIT_PASSAGES, [None]),
            "labeling": (jobs.QUIT_LABELING, [part]),
            "finalize": (jobs.QUIT_FINALIZE - statistics, [None]),
            "statistics": (statistics, [None]),
        }
        return (*plans[name], {})
    if bench == "recor":
        domains = args.get("domains", [RECOR_DOMAIN])
        if name == "source":
            return jobs.recor_eval_source_job.selection, domains, release_config("recor_eval_source", args["release"])
        if name == "queries":
            return jobs.recor_queries_job.selection, domains, {}
        if name == "retrieval":
            return (
                jobs.recor_retrieval_job.selection,
                [dg.MultiPartitionKey({"domain": d, "retriever": part}) for d in domains],
                {},
            )
        if name == "reteco":  # the retrieval side: the leaderboard waits for the judged generation, not probed
            return jobs.select("eval", "reteco_retrieval"), [None], {}
        return jobs.recor_retrieval_report_job.selection, [None], {}
    return jobs.wikiprofile_build_job.selection, [None], {}


def step_label(step_key: str, assets: list[str]) -> str:
    """The asset a step is named after: ``quit__statistics`` -> ``quit/statistics``; a
    multi-asset's op name under its outputs' prefix (``wikiprofile_direct_questions`` ->
    ``wikiprofile/direct_questions``, ``benchmark`` -> ``quit/benchmark``)."""
    label = step_key.replace("__", "/")
    if "/" in label or not assets:
        return label
    prefix = assets[0].split("/")[0]
    return f"{prefix}/{label.removeprefix(prefix + '_')}"


def child(bench: str, stage: str, args_path: str, out_path: str) -> int:
    """Run one stage of ``bench`` in this process and write its measurements to ``out_path``."""
    t_start = time.time()
    sampler = Sampler()
    import dagster as dg

    from assets.partitions import sync_partitions
    from assets.quit.settings import QuitSettings
    from assets.wikiprofile.settings import WikiProfileSettings
    from pipelines.definitions import build_defs
    from pipelines.stages import QUIET

    args = json.loads(Path(args_path).read_text())
    selection, partition_keys, config = stage_plan(bench, stage, args)
    overrides = {}
    if bench == "quit":
        overrides["quit_settings"] = QuitSettings(
            triviahg_path=args["triviahg"],
            wikihint_path=args["wikihint"],
            semantic_overlap_sample=args.get("semantic_overlap_sample"),
        )
    if bench == "wikiprofile":
        overrides["wikiprofile_settings"] = WikiProfileSettings(
            pages_path=args["pages"], search_pages_path=str(ROOT / "data/wikiprofile/search_pages.jsonl")
        )
    job = dg.define_asset_job("scale_probe", selection=selection)
    defs = dg.Definitions.merge(build_defs(**overrides), dg.Definitions(jobs=[job]))
    instance = dg.DagsterInstance.from_config(os.environ["DAGSTER_HOME"])
    sync_partitions(instance)
    resolved = defs.resolve_job_def("scale_probe")
    sampler.start()
    t_ready = time.time()
    runs, ok = [], True
    for key in partition_keys:
        result = resolved.execute_in_process(
            instance=instance, partition_key=key, raise_on_error=False, run_config={**QUIET, **config}
        )
        runs.append((str(key) if key is not None else None, result.run_id, result.success))
        if not result.success:
            ok = False
            for event in result.all_events:
                if event.is_failure:
                    print(event.message, file=sys.stderr)
            break
    sampler.stop()
    steps = step_measures(instance, runs, sampler)
    t_end, times = time.time(), os.times()
    Path(out_path).write_text(
        json.dumps(
            {
                "ok": ok,
                "setup_s": t_ready - t_start,
                "run_wall_s": t_end - t_ready,
                "cpu_self_s": times.user + times.system,
                "cpu_children_s": times.children_user + times.children_system,
                "peak_rss_mb": max(sampler.start_peak_kb, *(p for _, _, p, _ in sampler.samples)) / 1024,
                "rss_peak_resets": sampler.resets,
                "runs": [{"partition": p, "run_id": r, "ok": s} for p, r, s in runs],
                "steps": steps,
            }
        )
    )
    return 0 if ok else 1


def step_measures(instance, runs: list[tuple], sampler: Sampler) -> list[dict]:
    """Each step of each run, from the run's step events: its wall time, CPU time and peak RSS
    over its span, and the LLM calls its materializations report."""
    import dagster as dg

    steps = []
    wanted = {
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.STEP_FAILURE,
        dg.DagsterEventType.ASSET_MATERIALIZATION,
    }
    for partition, run_id, _ in runs:
        by_step: dict[str, dict] = {}
        for entry in instance.all_logs(run_id, of_type=wanted):
            if not entry.step_key:
                continue
            step = by_step.setdefault(entry.step_key, {"assets": {}})
            kind = entry.dagster_event.event_type
            if kind == dg.DagsterEventType.STEP_START:
                step["start"] = entry.timestamp
            elif kind == dg.DagsterEventType.ASSET_MATERIALIZATION:
                m = entry.asset_materialization
                step["assets"]["/".join(m.asset_key.path)] = {
                    k: v.value
                    for k, v in m.metadata.items()
                    if isinstance(getattr(v, "value", None), (int, float)) and not isinstance(v.value, bool)
                }
            else:
                step["end"], step["ok"] = entry.timestamp, kind == dg.DagsterEventType.STEP_SUCCESS
        for key, s in by_step.items():
            if "start" not in s or "end" not in s:
                continue
            metas = s["assets"].values()
            steps.append(
                {
                    "step": step_label(key, sorted(s["assets"])),
                    "partition": partition,
                    "ok": s["ok"],
                    # a step that materializes nothing runs asset checks (``checks/``)
                    "kind": "asset" if s["assets"] else "checks",
                    "assets": sorted(s["assets"]),
                    "wall_s": s["end"] - s["start"],
                    "cpu_s": sampler.cpu_at(s["end"]) - sampler.cpu_at(s["start"]),
                    "cpu_children_s": sampler.cpu_at(s["end"], 3) - sampler.cpu_at(s["start"], 3),
                    "peak_rss_mb": sampler.peak_kb(s["start"], s["end"]) / 1024,
                    # a multi-asset reports its step's calls on one of its outputs (or each): the largest
                    "llm_calls": max((m.get("llm/calls", 0) for m in metas), default=0),
                    "llm_sent": max((m.get("llm/sent_to_model", 0) for m in metas), default=0),
                    "metadata": s["assets"],
                }
            )
    return steps
