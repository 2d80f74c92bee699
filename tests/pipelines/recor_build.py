"""RECOR built and evaluated over all eleven bundled domains with the scripted LLM, real
Lucene and the bundled encoders, once a session in the background (``tests.background``):
the pipeline test reads its outputs and the rerun test works on a copy of it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pipelines.jobs import RECOR_STAGES
from tests.background import Build, BuildFolder, environment

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "assets" / "recor" / "sources.yaml"
# BM25 and MiniLM: e5-small is left out. Encoding the eleven domains' documents with it took
# 250 s of the build's 800 beside the rest of the suite (about 23 passages a second), and the
# default run retrieves RECOR with it.
RETRIEVERS = """retrievers:
  bm25: {kind: bm25, k1: 0.9, b: 0.4}
  minilm: {kind: dense, encoder: minilm}
  oracle: {kind: oracle}
"""


class ScriptedRecor(BuildFolder):
    """One build's folders: the instance, the Parquet root, caches, and the RECOR sources
    (a copy of data/recor with its own registry, so a test may edit a domain's files)."""

    data = property(lambda self: self.base / "recor")
    sources = property(lambda self: self.base / "sources.yaml")
    retrievers = property(lambda self: self.base / "retrievers.yaml")

    @property
    def env(self) -> dict[str, str]:
        return {
            "BENCHFOUNDRY_STORAGE": str(self.storage),
            "BENCHFOUNDRY_CACHE": str(self.base / "cache"),
            "BENCHFOUNDRY_RECOR_SOURCES": str(self.sources),
            "BENCHFOUNDRY_RETRIEVERS": str(self.retrievers),
            "BENCHFOUNDRY_STAGE_HOME": str(self.home),
            "PYTHONPATH": str(ROOT),
        }

    def copy(self, to: Path) -> ScriptedRecor:
        """The whole build, instance included, under ``to``, its registry pointing at its own files."""
        shutil.copytree(self.base, to, dirs_exist_ok=True)
        copied = ScriptedRecor(to)
        copied.sources.write_text(self.sources.read_text().replace(f"{self.data}/", f"{copied.data}/"))
        return copied


def start_scripted_recor(base: Path) -> Build:
    """Every RECOR stage over a copy of the bundled domains, in ``base``."""
    build = ScriptedRecor(base)
    shutil.copytree(ROOT / "data" / "recor", build.data)
    build.sources.write_text(SOURCES.read_text().replace("data/recor/", f"{build.data}/"))
    build.retrievers.write_text(RETRIEVERS)
    build.make_instance_home()
    return Build(
        "scripted_recor",
        [sys.executable, "-m", "tests.pipelines.stage_runner", *[s for s, _ in RECOR_STAGES]],
        environment(**build.env),
        ROOT,
        base / "build.log",
        timeout=1800,
    ).start()
