"""What the data-quality checks cost a build: WikiProfile's construction over the bundled
sample with the scripted LLM (answers instantly, so the figure is the checks' share of the
pipeline's own work, an upper bound for a run with a real model), materialized with and
without its checks, alternating, ``--repeats`` times each in one process.

    .venv/bin/python bench/checks_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dagster as dg  # noqa: E402

from assets.wikiprofile.assets import wikiprofile_assets  # noqa: E402
from assets.wikiprofile.settings import WikiProfileSettings  # noqa: E402
from checks.factories import CheckSettings  # noqa: E402
from checks.wikiprofile import wikiprofile_checks  # noqa: E402
from resources.llm import LLMResource  # noqa: E402
from resources.search import DocumentSearchResource  # noqa: E402
from resources.storage import StorageResource, parquet_io_manager  # noqa: E402
from tests import scripted  # noqa: E402
from tests.conftest import SCRIPTED_REGISTRY  # noqa: E402


def build(with_checks: bool, scratch: Path) -> tuple[float, int]:
    resources = {
        "storage": StorageResource(root=str(scratch / "storage")),
        "io_manager": parquet_io_manager,
        "llm": LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=str(scratch / "llm"), backoff_seconds=0.01),
        "wikiprofile_settings": WikiProfileSettings(downsample_to=20),
        "search": DocumentSearchResource(),
        "check_settings": CheckSettings(),
    }
    started = time.perf_counter()
    result = dg.materialize(
        [*wikiprofile_assets, *(wikiprofile_checks if with_checks else [])],
        resources=resources,
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    return time.perf_counter() - started, len(result.get_asset_check_evaluations())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scripted.install()
    times: dict[bool, list[float]] = {False: [], True: []}
    checks = 0
    with tempfile.TemporaryDirectory() as tmp:
        build(False, Path(tmp) / "warmup")  # JVM, imports, the scripted provider
        for i in range(args.repeats):
            for with_checks in (False, True):
                seconds, n = build(with_checks, Path(tmp) / f"{i}-{with_checks}")
                times[with_checks].append(seconds)
                checks = max(checks, n)
    plain, checked = statistics.median(times[False]), statistics.median(times[True])
    print(
        f"WikiProfile construction, {len(wikiprofile_assets)} asset definitions, scripted LLM, median of {args.repeats}:"
    )
    print(f"  without checks  {plain:6.1f} s")
    print(
        f"  with {checks} checks {checked:6.1f} s   ratio {checked / plain:.2f}  ({(checked - plain) / checks * 1000:.0f} ms a check)"
    )


if __name__ == "__main__":
    main()
