"""Peak memory of one QUIT labeling partition (``quit/passage_answers``) at the paper's
2,405,325 passages, measured directly rather than fit from small sizes (issue 49).

The fits disagreed: from 10 and 100 questions they gave 7.2 GB, from 10 to 400 they gave 3.6,
so neither settles the 6 GB target. Here the step runs once at full size, as a Dagster run of
the ``quit_labeling`` job runs it, in its own process (``bench/scale_child.py``: the project's
jobs, IO manager and registry, the step's peak RSS sampled every 0.1 s):

- the inputs the step reads are written as the IO manager stores them: the labeled questions
  with five hints of ~11.7 words (``bench/finalize_memory.synthetic_questions``), every one
  labeled in its split, and their 325 passages each (``rules.passage_batches``);
- the labeler and the judge are aliases of a registry pointing at the stand-in server
  (``bench/scale_standin.py``, its own process), which answers at once: every second measured
  is the client's, every byte the step's.

The labeler's calls (one a passage) and the judge's (an answer that is no exact match) go
through the LLM resource and its disk cache, as in a real run. At about 0.4 ms of client a
call and the stand-in on the other core, the full size takes 35-50 minutes on two cores.

    .venv/bin/python bench/labeling_memory.py [--passages 2405325] [--labeler gemma3-1b] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.finalize_memory import FULL_PASSAGES, write_questions  # noqa: E402
from bench.scale import StandInServer, prepare_work, run_stage  # noqa: E402
from bench.scale_inputs import LABELERS  # noqa: E402

TARGET_GB = 6.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=FULL_PASSAGES)
    parser.add_argument("--labeler", default=LABELERS[0], choices=LABELERS)
    parser.add_argument("--scratch", default=None, help="where the storage, cache and logs go (a new temp folder)")
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder in place")
    opts = parser.parse_args()
    scratch = Path(opts.scratch or tempfile.mkdtemp(prefix="labeling_memory_"))
    scratch.mkdir(parents=True, exist_ok=True)
    server = StandInServer.start(scratch / "standin.log")
    try:
        # the scale probe's registries and Dagster home; its QUIT sources are written but not read
        probe_opts = types.SimpleNamespace(llm_mode="http", recor_retrievers=["bm25"], semantic_overlap_sample=None)
        work = scratch / "work"
        env = prepare_work("quit", 2, probe_opts, server, work, [opts.labeler])
        t = time.time()
        # the tables passage_answers reads, as the IO manager stores them
        questions, _, _, passages = write_questions(env["BENCHFOUNDRY_STORAGE"], opts.passages)
        made = {"questions": questions, "passages": passages}
        print(f"inputs: {made['questions']:,} questions, {made['passages']:,} passages in {time.time() - t:.0f} s")
        record, log = run_stage(f"quit:labeling:{opts.labeler}", f"labeling:{opts.labeler}", work, env, server)
    finally:
        server.stop()
    step = next((s for s in record["steps"] if s["step"] == "quit/passage_answers"), None)
    if not record["ok"] or record["exit_code"] or step is None:
        print(f"the labeling run failed (exit {record['exit_code']}); log: {log}")
        print(log.read_text(errors="replace")[-4000:])
        return 1
    peak_gb = step["peak_rss_mb"] / 1000
    summary = {
        **made,
        "labeler": opts.labeler,
        "step_peak_rss_mb": round(step["peak_rss_mb"], 1),
        "process_peak_rss_mb": round(record["peak_rss_mb"], 1),
        "step_wall_s": round(step["wall_s"], 1),
        "step_cpu_s": round(step["cpu_s"], 1),
        "llm_calls": step["llm_calls"],
        "requests_answered": record["requests_answered"],
        "load_avg": round(record["load_avg"], 2),
        "target_gb": TARGET_GB,
        "met": peak_gb <= TARGET_GB,
    }
    print(json.dumps(summary, indent=1))
    print(
        f"\nquit/passage_answers ({opts.labeler}) at {made['passages']:,} passages: peak RSS "
        f"{step['peak_rss_mb']:,.0f} MB (target {TARGET_GB:.0f} GB: {'met' if summary['met'] else 'NOT met'}), "
        f"{step['llm_calls']:,} calls, wall {step['wall_s'] / 60:.1f} min, CPU {step['cpu_s'] / 60:.1f} min, "
        f"load {record['load_avg']:.1f}"
    )
    if not opts.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if summary["met"] else 2


if __name__ == "__main__":
    sys.exit(main())
