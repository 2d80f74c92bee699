import atexit
import os
import secrets
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread each for torch's OpenMP and MKL, for numba and for the embedded model (llama.cpp),
# in this process and the builds, servers and run processes it starts, the end-to-end run
# included: on two cores something else (a background build, a daemon's run) nearly always
# holds one, and a second thread that waits at every barrier for a busy core made a training
# four times slower than one thread does (BENCHMARKS.md).
SINGLE_THREADED = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "BENCHFOUNDRY_LLM_THREADS")
for variable in SINGLE_THREADED:
    os.environ.setdefault(variable, "1")
# The trained models' registry (resources.retrieval.TRAINED_DIR), empty and this process's
# own: a developer's ./storage/models/registry never leaks into the registry tests.
os.environ["BENCHFOUNDRY_TRAINED"] = tempfile.mkdtemp(prefix="benchfoundry-trained-")
atexit.register(shutil.rmtree, os.environ["BENCHFOUNDRY_TRAINED"], True)
# The key trained-registry files are signed with (resources.signing), this session's own: a
# build started by a test inherits it, and no key file is written into the checkout.
os.environ["BENCHFOUNDRY_SIGNING_KEY"] = secrets.token_hex(32)

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# The property tests (issue 28) draw the same inputs on every run, so that a failure in CI
# is the one a developer reproduces, and write no example database into the checkout.
settings.register_profile("benchfoundry", derandomize=True, database=None)
settings.load_profile("benchfoundry")

FIXTURES = Path(__file__).parent / "fixtures"
# The most the suite holds in temporary files at once, rounded up: about 2.8 GB, sampling `df`
# through a fresh-clone `.ci/run` (BENCHMARKS.md, "The test suite", f976979).
LOW_DISK_GIB = 4
SCRIPTED_REGISTRY = str(FIXTURES / "models_scripted.yaml")

pytest_plugins = ["tests.servers", "tests.background"]


@pytest.fixture
def scripted_llm(tmp_path):
    """The LLM resource with every alias answered by the scripted provider."""
    from resources.llm import LLMResource
    from tests import scripted

    scripted.install()
    llm = LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=str(tmp_path / "llm-cache"), backoff_seconds=0.01)
    scripted.install()
    return llm


@pytest.fixture
def instance():
    """An ephemeral Dagster instance whose dynamic partitions are the registries' aliases, as
    the registry sensor keeps a deployment's: where a test materializes a partitioned asset."""
    import dagster as dg

    from assets.partitions import sync_partitions

    instance = dg.DagsterInstance.ephemeral()
    sync_partitions(instance)
    return instance


def pytest_sessionstart(session):
    """The free disk beside the temporary folders, first in every log (`-q` hides the report
    header): the machines' disk is shared, and a suite that fails part-way for want of it
    should say so at the top."""
    free_gib = shutil.disk_usage(tempfile.gettempdir()).free / 2**30
    line = f"free disk under {tempfile.gettempdir()}: {free_gib:.1f} GiB"
    if free_gib < LOW_DISK_GIB:
        line += f": LOW, the suite holds up to {LOW_DISK_GIB} GiB there at once"
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)
