"""What loading the definitions costs in model-registry reads (issue 33): every LLM-bound
asset asks the registry for its concurrency pool, its partitions and its plan when the code
location loads. Each repeat imports ``pipelines.definitions`` in a fresh process and counts
how often the registry file is parsed; ``--at COMMIT`` measures another checkout the same way
(``git worktree``), for the before/after ratio in one run.

    .venv/bin/python bench/definitions_load.py [--repeats 3] [--at COMMIT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in the measured checkout: counts the registry module's YAML reads during the import.
PROBE = """
import json, time
from resources.llm import registry
reads = []
read = registry.read_yaml
registry.read_yaml = lambda path: reads.append(path) or read(path)
start = time.perf_counter()
import pipelines.definitions  # noqa: F401
print(json.dumps({"seconds": time.perf_counter() - start, "parses": reads.count(registry.REGISTRY_PATH)}))
"""


def measure(checkout: Path, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", PROBE],
            cwd=checkout,
            env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {"parses": runs[0]["parses"], "seconds": statistics.median(r["seconds"] for r in runs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--at", help="another commit to measure beside the working tree")
    args = ap.parse_args()
    checkouts = {"working tree": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.at:
            other = Path(tmp) / "other"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(other), args.at], cwd=ROOT, check=True)
            checkouts = {args.at: other, **checkouts}
        try:
            for name, path in checkouts.items():
                got = measure(path, args.repeats)
                print(
                    f"{name}: {got['parses']} registry parses, import {got['seconds']:.1f} s (median of {args.repeats})"
                )
        finally:
            if args.at:
                subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, check=True)


if __name__ == "__main__":
    main()
