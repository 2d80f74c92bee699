"""The scale probe (issue 27): what the project's own code costs per item, extrapolated to the
papers' sizes.

Each benchmark runs with its paper profile (the settings resources' defaults, what the web UI
runs with no config) over a synthetic source set: the bundled samples replicated with new ids
and a mark in each copy's text, written in the real input formats to a scratch folder the
settings point at, so that nothing dedupes and few prompts repeat (those that name no copy's
text, such as a leakage-span verdict, come from the LLM cache, as they would in a real run).
Every model role is an alias of a temporary registry (``BENCHFOUNDRY_MODELS``), a ``vllm``
entry whose ``api_base`` is one stand-in server (``bench/scale_standin.py``, its own process)
that answers at once with the scripted LLM's rules: every second measured is the client's.

- QUIT: the build at N labeled questions (default 10, 100, 500), with the paper's three
  labelers, three readers and a judge. Stages as a researcher runs them (``pipelines.jobs``):
  prepare (ingest to question metadata), parametric (every model), passages, labeling (one
  process per labeler), finalize (labels to release files) and statistics (Table 1).
- RECOR: the evaluation of one domain (earth_science, the largest) from a release-format
  source (``{domain}_benchmark.jsonl`` + ``_documents.jsonl``) at 10k, 50k and 121,249
  documents with a fixed number of turns: source, query strategies, one retrieval run per
  retriever (BM25, MiniLM), the retrieval report. Generation depends on the turns alone and is
  not probed. With ``--recor-release DIR`` it evaluates that release instead, every domain it
  holds (``bench/reteco_scale.py --write-only`` writes one at the full release's counts), and
  adds the RETECO report (``reteco_report``).
- WikiProfile: the construction (``wikiprofile_build``) at 100 and 1,000 pages.

Each stage runs in its own process (``--child``), which reports per step (an asset, or the
asset checks Dagster runs as steps of their own) its wall time (from the run's step events),
CPU time (user + system of all its threads; a subprocess's, such as a batch runner's, is
kept apart as the model's side), peak RSS (the process's high-water mark, reset every 0.1 s
through ``/proc/self/clear_refs`` so each step gets its own) and LLM calls (the step's
``llm/calls`` metadata: cache hits included); the parent adds each process's totals
(``wait4``, start-up included) and the requests the stand-in answered. The stand-in is no
child of a stage, so none of its CPU is counted.

Each metric is fit linearly in the size (``numpy.polyfit``; one size: proportionally) and
extrapolated to the papers' sizes: QUIT 7,401 questions (2,405,325 passages); RECOR 121,249
documents in one domain, 507,141 in all; WikiProfile 10,000 pages (the steps after the
balanced downsampling scale with the facts it keeps, up to 5,000). A metric the sizes do not
resolve (a slope at or below zero, a peak RSS that moved less than its noise) is shown flat:
its largest measured value. The issue's figures are printed beside the same measures, as
gains, with the other clock's figure: on a shared machine the wall stretches with the load
(printed), the CPU time much less.

    .venv/bin/python bench/scale.py [--only quit|recor|wikiprofile] [--sizes 10,100,500]
        [--recor-docs 10000,50000,121249] [--recor-turns 450] [--wikiprofile-pages 100,1000]
        [--recor-release DIR] [--recor-retrievers bm25,minilm]
        [--labelers 3] [--llm-mode http|batch] [--semantic-overlap-sample N] [--skip STAGE,...] [--quick] [--keep]
        [--out bench/scale_results.json]

``--quick`` runs tiny sizes (QUIT 2,5; RECOR 2000,5000 documents and 26 turns; WikiProfile
10,20 pages) as a smoke check of the whole probe.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scale_child import child  # noqa: E402
from bench.scale_inputs import (  # noqa: E402
    LABELERS,
    RECOR_LARGEST_DOMAIN,
    ROOT,
    quit_sources,
    recor_release,
    registry_yaml,
    rerankers_yaml,
    retrievers_yaml,
    wikiprofile_pages,
)
from bench.scale_report import _asset_meta, human, report  # noqa: E402

QUICK = {"sizes": "2,5", "recor_docs": "2000,5000", "recor_turns": 26, "wikiprofile_pages": "10,20"}


# --- the parent: sizes, stages, the stand-in ----------------------------------------------------


@dataclasses.dataclass
class StandInServer:
    proc: subprocess.Popen
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def count(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_count", timeout=30) as r:
            return json.loads(r.read())["requests"]

    @classmethod
    def start(cls, log: Path) -> StandInServer:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.scale_standin", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=open(log, "wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the stand-in exited with code {proc.returncode}: see {log}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5).close()
                return cls(proc, port)
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"the stand-in did not answer within 120 s: see {log}")

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)


def stages_of(bench: str, labelers: list[str], retrievers: list[str], release: str | None = None) -> list[str]:
    if bench == "quit":
        return ["prepare", "parametric", "passages", *(f"labeling:{a}" for a in labelers), "finalize", "statistics"]
    if bench == "recor":
        return [
            "source",
            "queries",
            *(f"retrieval:{r}" for r in retrievers),
            "report",
            *(["reteco"] if release else []),
        ]
    return ["build"]


def run_size(bench: str, size: int, opts, server: StandInServer, scratch: Path) -> dict:
    """Every stage of ``bench`` at ``size``, each in a fresh process, over a fresh instance,
    storage and LLM cache."""
    work = scratch / f"{bench}-{size}"
    labelers = LABELERS[: opts.labelers]
    env = prepare_work(bench, size, opts, server, work, labelers)
    out = {"size": size, "stages": []}
    skipped = set(filter(None, opts.skip.split(",")))
    for stage in (s for s in stages_of(bench, labelers, opts.recor_retrievers, opts.recor_release) if s not in skipped):
        label = f"{bench}:{stage}"
        record, log_path = run_stage(label, stage, work, env, server)
        out["stages"].append(record)
        exit_code = record["exit_code"]
        status = "ok" if record["ok"] and exit_code == 0 else f"FAILED (exit {exit_code}; log {log_path})"
        print(
            f"  {label} at {size:,}: {status} in {record['wall_s']:.0f}s, CPU {record['cpu_s']:.0f}s, "
            f"peak RSS {record.get('peak_rss_mb', 0):,.0f} MB, {record['requests_answered']:,} requests, "
            f"load {record['load_avg']:.1f}",
            flush=True,
        )
        if status != "ok":
            tail = log_path.read_text(errors="replace").splitlines()[-25:]
            print("\n".join("    | " + line for line in tail), flush=True)
            out["failed"] = stage
            break
    out["x"] = size_measured(bench, out) or size
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return out


def prepare_work(bench: str, size: int, opts, server: StandInServer, work: Path, labelers: list[str]) -> dict:
    """A fresh scratch folder for one size: the registries pointing at the stand-in, a Dagster
    home, the synthetic inputs (``args.json`` names them); returns the stages' environment."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "inputs").mkdir(parents=True)
    (work / "models.yaml").write_text(registry_yaml(server.url, labelers, opts.llm_mode))
    (work / "retrievers.yaml").write_text(retrievers_yaml(opts.recor_retrievers))
    (work / "rerankers.yaml").write_text(rerankers_yaml())
    (work / "home").mkdir()
    (work / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    inputs: dict = {}
    if bench == "quit":
        inputs["triviahg"], inputs["wikihint"] = quit_sources(size, work / "inputs")
        inputs["semantic_overlap_sample"] = opts.semantic_overlap_sample
    elif bench == "recor" and opts.recor_release:
        from assets.recor.published import release_domains

        inputs["release"] = opts.recor_release
        inputs["domains"] = release_domains(opts.recor_release)
    elif bench == "recor":
        inputs["release"] = recor_release(size, opts.recor_turns, work / "inputs" / "recor")
    else:
        inputs["pages"] = wikiprofile_pages(size, work / "inputs")
    (work / "args.json").write_text(json.dumps(inputs))
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "BENCHFOUNDRY_MODELS": str(work / "models.yaml"),
        "BENCHFOUNDRY_RETRIEVERS": str(work / "retrievers.yaml"),
        "BENCHFOUNDRY_RERANKERS": str(work / "rerankers.yaml"),
        "BENCHFOUNDRY_STORAGE": str(work / "storage"),
        "BENCHFOUNDRY_CACHE": str(work / "cache"),
        "DAGSTER_HOME": str(work / "home"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HUB_OFFLINE": "1",
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "not-used"),
    }


def run_stage(label: str, stage: str, work: Path, env: dict, server: StandInServer) -> tuple[dict, Path]:
    """One stage in its own process (``--child``): the steps it reported, with the process's
    totals and the requests the stand-in answered meanwhile; and the process's log."""
    result_path, log_path = work / f"{stage.replace(':', '_')}.json", work / f"{stage.replace(':', '_')}.log"
    before, load = server.count(), os.getloadavg()[0]
    t = time.time()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).resolve()),
                "--child",
                label,
                "--child-args",
                str(work / "args.json"),
                "--child-out",
                str(result_path),
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.time() - t
    record = json.loads(result_path.read_text()) if result_path.exists() else {"ok": False, "steps": []}
    # the process's own CPU: wait4 counts the subprocesses it waited for too (a batch runner)
    record.update(
        {
            "stage": stage,
            "exit_code": proc.returncode,
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime - record.get("cpu_children_s", 0.0),
            "requests_answered": server.count() - before,
            "load_avg": (load + os.getloadavg()[0]) / 2,
        }
    )
    return record, log_path


def size_measured(bench: str, run: dict) -> float | None:
    """What the size turned out to be: QUIT's labeled questions, RECOR's documents,
    WikiProfile's pages."""
    asset, field = {
        "quit": ("quit/splits", "labeled_questions"),
        "recor": ("eval/recor_corpus", "dagster/row_count"),
        "wikiprofile": ("wikiprofile/source_pages", "dagster/row_count"),
    }[bench]
    if bench == "recor":  # one partition per domain: the corpus is their sum
        counts = [
            step["metadata"][asset][field]
            for stage in run["stages"]
            for step in stage["steps"]
            if field in step["metadata"].get(asset, {})
        ]
        return sum(counts) or None
    return _asset_meta(run, asset, field)


def argument_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,100,500", help="QUIT: labeled questions")
    parser.add_argument(
        "--recor-docs", default=f"10000,50000,{RECOR_LARGEST_DOMAIN}", help="RECOR: documents in the domain"
    )
    parser.add_argument(
        "--recor-turns", type=int, default=450, help="RECOR: turns in the domain (issue 27's probe: 450)"
    )
    parser.add_argument(
        "--recor-retrievers",
        default="bm25,minilm",
        help="RECOR: retrievers to run (bm25, minilm, e5-small, minilm-static)",
    )
    parser.add_argument(
        "--recor-release",
        help="RECOR: evaluate this release (every domain) instead of a synthetic "
        "domain; --recor-docs is then the label of the one size",
    )
    parser.add_argument("--wikiprofile-pages", default="100,1000", help="WikiProfile: page summaries")
    parser.add_argument("--labelers", type=int, default=3, choices=(1, 2, 3), help="QUIT labelers (the paper: 3)")
    parser.add_argument(
        "--semantic-overlap-sample",
        type=int,
        help="QUIT: Table 1's semantic overlap from this many passages per question "
        "(QuitSettings.semantic_overlap_sample; default every passage)",
    )
    parser.add_argument("--only", choices=("quit", "recor", "wikiprofile"), help="one benchmark")
    parser.add_argument(
        "--llm-mode",
        choices=("http", "batch"),
        default="http",
        help="how the labelers are asked: the HTTP client, or the offline batch mode (registry mode: batch)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, a smoke check: " + ", ".join(f"{k.replace('_', '-')} {v}" for k, v in QUICK.items()),
    )
    parser.add_argument("--scratch", default="/tmp/benchfoundry_scale", help="where the inputs, storage and caches go")
    parser.add_argument(
        "--skip",
        default="",
        help="stages to leave out, comma separated (e.g. statistics): only the last "
        "stages, since each reads what the earlier ones stored",
    )
    parser.add_argument("--keep", action="store_true", help="keep each size's scratch folder (logs, storage)")
    parser.add_argument(
        "--out", default=str(ROOT / "bench" / "scale_results.json"), help="raw measurements and fits (JSON)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-args", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", help=argparse.SUPPRESS)
    return parser


def main() -> int:
    opts = argument_parser().parse_args()
    if opts.child:
        bench, _, stage = opts.child.partition(":")
        return child(bench, stage, opts.child_args, opts.child_out)
    if opts.quick:
        for k, v in QUICK.items():
            setattr(opts, k, v)
    opts.recor_retrievers = [r.strip() for r in opts.recor_retrievers.split(",") if r.strip()]
    sizes = {"quit": opts.sizes, "recor": opts.recor_docs, "wikiprofile": opts.wikiprofile_pages}
    sizes = {b: [int(s) for s in v.split(",") if s.strip()] for b, v in sizes.items()}
    benches = [opts.only] if opts.only else ["quit", "recor", "wikiprofile"]
    scratch = Path(opts.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    results = {
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "options": {k: v for k, v in vars(opts).items() if not k.startswith("child")},
        "benchmarks": {},
    }
    server = StandInServer.start(scratch / "standin.log")
    started = time.time()
    try:
        for bench in benches:
            print(f"{bench}: sizes {', '.join(f'{s:,}' for s in sizes[bench])}", flush=True)
            runs = results["benchmarks"].setdefault(bench, [])
            for size in sizes[bench]:
                runs.append(run_size(bench, size, opts, server, scratch))
                Path(opts.out).write_text(json.dumps(results, indent=1))
    finally:
        server.stop()
    results["wall_s"] = time.time() - started
    report(results, opts)
    Path(opts.out).write_text(json.dumps(results, indent=1))
    print(f"\nprobe took {human('wall_s', results['wall_s'])}; raw measurements and fits: {opts.out}")
    failed = [b for b, runs in results["benchmarks"].items() if any("failed" in r for r in runs)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
