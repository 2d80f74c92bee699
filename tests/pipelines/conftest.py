"""RECOR built and evaluated over all eleven bundled domains with the scripted LLM, real
Lucene and the bundled encoders, once for the package: the pipeline test reads its outputs
and the rerun test works on a copy of it."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.jobs import RECOR_STAGES

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "assets" / "recor" / "sources.yaml"


@dataclasses.dataclass(frozen=True)
class ScriptedRecor:
    """One build's folders: the instance, the Parquet root, caches, and the RECOR sources
    (a copy of data/recor with its own registry, so a test may edit a domain's files)."""

    base: Path

    home = property(lambda self: self.base / "dagster_home")
    storage = property(lambda self: self.base / "storage")
    data = property(lambda self: self.base / "recor")
    sources = property(lambda self: self.base / "sources.yaml")

    @property
    def env(self) -> dict[str, str]:
        return {"BENCHFOUNDRY_STORAGE": str(self.storage), "BENCHFOUNDRY_CACHE": str(self.base / "cache"), "BENCHFOUNDRY_RECOR_SOURCES": str(self.sources),
                "BENCHFOUNDRY_STAGE_HOME": str(self.home), "PYTHONPATH": str(ROOT)}

    def instance(self):
        import dagster as dg

        return dg.DagsterInstance.from_config(str(self.home))

    def copy(self, to: Path) -> ScriptedRecor:
        """The whole build, instance included, under ``to``, its registry pointing at its own files."""
        shutil.copytree(self.base, to, dirs_exist_ok=True)
        copied = ScriptedRecor(to)
        copied.sources.write_text(self.sources.read_text().replace(f"{self.data}/", f"{copied.data}/"))
        return copied


@pytest.fixture(scope="package")
def scripted_recor(tmp_path_factory) -> ScriptedRecor:
    build = ScriptedRecor(tmp_path_factory.mktemp("scripted_recor"))
    shutil.copytree(ROOT / "data" / "recor", build.data)
    build.sources.write_text(SOURCES.read_text().replace("data/recor/", f"{build.data}/"))
    build.home.mkdir()
    (build.home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    out = subprocess.run([sys.executable, "-m", "tests.pipelines.stage_runner", *[s for s, _ in RECOR_STAGES]], cwd=ROOT,
                         env={**os.environ, **build.env}, capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return build
