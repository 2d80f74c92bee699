"""The fault matrix (issue 28): what a step does when its model server breaks, at the LLM
resource's defaults.

For each way a server fails, a stand-in (``tests/standin.py --always KIND``, its own process)
fails every request that way, or nothing listens on the port ("dead"); one Dagster asset asks
it ``--items`` labeling calls (64-token budget, as a labeler's) through ``LLMResource()`` with
its default retries, timeouts and circuit breaker, and its ``llm_accounting`` check runs with
the default ``CheckSettings``. Printed per fault: requests the server saw per item, seconds
until the step ended, what the step did (materialized, or failed and with what) and what the
check said.

    .venv/bin/python bench/fault_matrix.py [--items 300] [--faults dead,hang,500,429,400,garbage,close,empty]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dagster as dg  # noqa: E402
import polars as pl  # noqa: E402

from checks.factories import CheckSettings, llm_accounting_check  # noqa: E402
from resources.llm import CallStats, LLMRequest, LLMResource  # noqa: E402
from tests.servers import free_port  # noqa: E402
from tests.standin import ALWAYS, Server  # noqa: E402


def labeling_asset(items: int):
    @dg.asset(key=["bench", "labels"])
    def labels(llm: LLMResource) -> dg.Output:
        stats = CallStats()
        reqs = [
            LLMRequest(
                f"passage {i}",
                [{"role": "user", "content": f"Does passage {i} name the answer?"}],
                params={"max_tokens": 64},
            )
            for i in range(items)
        ]
        out = llm.run("labeler", reqs, stats=stats)
        frame = pl.DataFrame({"item": [r.key for r in out], "error": [r.error for r in out]})
        return dg.Output(frame, metadata=stats.as_metadata())

    return labels


def one(fault: str, items: int, scratch: Path) -> dict:
    server = None if fault == "dead" else Server(free_port(), name=fault, always=fault, log=scratch / f"{fault}.log")
    url = server.url if server else f"http://127.0.0.1:{free_port()}/v1"
    registry = scratch / f"{fault}.yaml"
    registry.write_text(f"models:\n  labeler: {{model: hosted_vllm/labeler, backend: vllm, api_base: '{url}'}}\n")
    llm = LLMResource(registry_path=str(registry), cache_dir=str(scratch / f"cache-{fault}"))
    start = time.monotonic()
    try:
        result = dg.materialize(
            [labeling_asset(items), llm_accounting_check("bench/labels")],
            raise_on_error=False,
            resources={"llm": llm, "check_settings": CheckSettings(), "io_manager": dg.mem_io_manager},
        )
        took = time.monotonic() - start
        asked = sum(server.seen()["asked"].values()) if server else None
    finally:
        if server:
            server.stop()
    failure = next((e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE), None)
    if failure is not None:
        error = failure.step_failure_data.error
        cause = error.cause or error
        step = f"failed: {cause.cls_name}: {cause.message.strip().splitlines()[0].split(': ', 1)[-1][:160]}"
    else:
        step = "materialized"
    checks = result.get_asset_check_evaluations()
    check = (
        "not run (no table)"
        if not checks
        else "passed"
        if checks[0].passed
        else f"{checks[0].severity.value}: error rate {checks[0].metadata['error_rate'].value}, "
        f"failure rate {checks[0].metadata['failure_rate'].value}"
    )
    return {
        "fault": fault,
        "per_item": None if asked is None else asked / items,
        "seconds": took,
        "step": step,
        "check": check,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--faults", default=",".join(("dead", *ALWAYS)))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fault-matrix-") as scratch:
        for fault in args.faults.split(","):
            rows.append(one(fault, args.items, Path(scratch)))
            r = rows[-1]
            print(f"{r['fault']}: {r['seconds']:.1f}s", flush=True)
    print(f"\n{args.items} labeling calls (64-token budget), LLMResource defaults\n")
    print("| fault | requests per item | time to the step's end | the step | its llm_accounting check |")
    print("|---|---|---|---|---|")
    for r in rows:
        per = "-" if r["per_item"] is None else f"{r['per_item']:.2f}"
        print(f"| {r['fault']} | {per} | {r['seconds']:.1f} s | {r['step']} | {r['check']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
