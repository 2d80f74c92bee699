"""What a run may set: every job's run-config schema holds the allowlist and nothing else, an
allowed field never resets the deployment's wiring, and the launchpad probes of issue 44
(a program run, a secret sent, a file read, the wiring reset through run config) are refused
before any step runs."""

import http.server
import re
import threading
from pathlib import Path

import dagster as dg
import pytest

from assets.quit.settings import QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.resources import RUN_FIELDS, default_resources, deployment_resources
from resources.llm import LLMResource
from resources.search import DocumentSearchResource
from resources.storage import StorageResource
from tests.conftest import SCRIPTED_REGISTRY

# The op config a run may set: which benchmark source a stage reads and how much of it, the
# headline split, the reader's answer line, and the submitted RETECO files. ``release_path``
# and the submissions' ``path``/``run`` name a release or a file inside the deployment's own
# folders (data/releases and $BENCHFOUNDRY_RELEASES; the storage root's submissions/): a run
# picks one of them, and a path outside is refused when the step reads it (tests below).
OPS_FIELDS = {
    "source",
    "release_path",
    "splits",
    "max_questions",
    "max_conversations",
    "max_facts",
    "fact_ids",
    "split",
    "answer_line",
    "submissions.path",
    "submissions.subtrack",
    "submissions.run",
    "submissions.name",
}
LOGGER_FIELDS = {"log_level", "name"}
# Names of what only a deployment decides; no resource field a run sets may carry one, whatever
# the allowlist says (a second line of defence against a field added to it by mistake).
WIRING_NAME = re.compile(
    r"(^|_)(path|dir|root|url|uri|endpoint|command|env|log|registry|cache|secret|key|token|password|servers?|host|port"
    r"|base|encoder|model)(_|$)"
)


def leaves(config_type, prefix: str = "") -> list[tuple[str, object]]:
    """``(dotted path, config type)`` of every field a run config may hold under ``config_type``;
    a list's items are ``[]``. A permissive shape or an ``Any`` is a leaf of its own: it takes
    fields no schema names."""
    fields = getattr(config_type, "fields", None)
    if type(config_type).__name__ == "Any":
        return [(f"{prefix}<any field>", config_type)]
    if fields is not None:
        found = [(f"{prefix}<any field>", config_type)] if type(config_type).__name__ == "Permissive" else []
        for name, field in fields.items():
            found += leaves(field.config_type, f"{prefix}{name}.")
        return found
    inner = getattr(config_type, "inner_type", None)
    if inner is not None:
        suffix = "[]." if type(config_type).__name__ == "Array" else ""
        return leaves(inner, prefix[:-1] + suffix if suffix else prefix)
    return [(prefix[:-1], config_type)]


def run_config_fields(job: dg.JobDefinition) -> set[str]:
    return {path for path, _ in leaves(job.run_config_schema.config_type)}


def refused(path: str) -> str | None:
    """Why a run-config field is outside the allowlist (None: it is allowed)."""
    parts = path.replace("[]", "").split(".")
    if path in ("resources.<any field>", "ops.<any field>"):
        return None  # a key that names no resource or op of the job configures nothing
    if parts[0] == "resources":
        key, field = parts[1], ".".join(parts[3:])
        if field not in RUN_FIELDS.get(key, ()):
            return f"resource {key} field {field} is not in RUN_FIELDS"
        if WIRING_NAME.search(field):
            return f"resource {key} field {field} names wiring"
        return None
    if parts[0] == "ops":
        field = ".".join(parts[3:])
        if field == "<any field>":
            return None  # Dagster's config of an op that declares none: no code reads it
        return None if field in OPS_FIELDS else f"op {parts[1]} field {field} is not in the ops allowlist"
    if parts[0] == "loggers":
        return None if parts[-1] in LOGGER_FIELDS else f"logger field {path}"
    return f"{parts[0]} config ({path}) is the deployment's"


def test_every_jobs_run_config_holds_only_the_allowlist():
    from pipelines.definitions import defs

    jobs = list(defs.resolve_all_job_defs())
    assert len(jobs) > 80  # every job, the implicit asset job among them
    problems, seen = {}, set()
    for job in jobs:
        for path in run_config_fields(job):
            seen.add(path.replace("[]", ""))
            if reason := refused(path):
                problems.setdefault(reason, []).append(job.name)
    assert not problems, "\n".join(f"{r} (in {', '.join(sorted(j)[:3])})" for r, j in sorted(problems.items()))
    # the allowlist is reachable: a field named in it that no job takes would be a stale entry
    allowed = {f"resources.{k}.config.{f}" for k, fields in RUN_FIELDS.items() for f in fields}
    assert allowed <= seen, sorted(allowed - seen)
    assert {"resources.llm.config.max_retries", "resources.quit_settings.config.profile"} <= seen


def test_the_allowlist_walk_sees_a_wiring_field_an_op_field_and_an_executor():
    """The walk the allowlist test relies on finds each kind of field it must refuse."""

    class Leaky(dg.ConfigurableResource):
        cache_dir: str = "x"
        retries: int = 1

    class Cfg(dg.Config):
        path: str = "p"

    @dg.asset
    def a(config: Cfg, leaky: Leaky) -> None: ...

    job = dg.Definitions(
        assets=[a], resources={"leaky": Leaky()}, executor=dg.multiprocess_executor
    ).resolve_implicit_global_asset_job_def()
    reasons = {refused(p) for p in run_config_fields(job)} - {None}
    assert any("leaky field cache_dir" in r for r in reasons)
    assert any("op a field path" in r for r in reasons)
    assert any(r.startswith("execution config") for r in reasons)


@pytest.fixture
def wiring(tmp_path) -> dict:
    """A deployment's wiring, every part somewhere a run could not guess."""
    return {
        "storage": StorageResource(root=str(tmp_path / "root"), local_index_root=str(tmp_path / "indexes")),
        "llm": LLMResource(
            registry_path=SCRIPTED_REGISTRY,
            definitions_registry=SCRIPTED_REGISTRY,
            cache_type="postgres",
            cache_url="postgresql://team:pw@127.0.0.1:1/answers",
            cache_dir=str(tmp_path / "llm"),
        ),
        "search": DocumentSearchResource(kind="http", endpoint="http://127.0.0.1:1/search", api_key_env="TEAM_KEY"),
        "quit_settings": QuitSettings(triviahg_path=str(tmp_path / "t.json"), decisions_path=str(tmp_path / "d")),
        "recor_settings": RecorSettings(sources_path=str(tmp_path / "sources")),
        "wikiprofile_settings": WikiProfileSettings(pages_path=str(tmp_path / "p.jsonl")),
    }


WIRING_FIELDS = {
    "storage": ("root", "local_index_root"),
    "llm": ("registry_path", "definitions_registry", "cache_type", "cache_url", "cache_dir"),
    "search": ("kind", "endpoint", "api_key_env"),
    "quit_settings": ("triviahg_path", "decisions_path"),
    "recor_settings": ("sources_path",),
    "wikiprofile_settings": ("pages_path",),
}
# A value for every allowed field that differs from its default (and is valid).
SET = {
    "test": "student",
    "profile": "demo",
    "negatives": "random",
    "device": "cpu",
    "nan_strategy": "S1",
    "kind": "hnsw",
    "positives": [2, 3],
    "query_prefix": "q: ",
    "passage_prefix": "p: ",
    "use_gpu": False,
    "colbert_query_augmentation": False,
    "pages_source": "wikipedia",
    "wikipedia_project": "de.wikipedia",
    "precision": "bfloat16",
}


def value_for(resource, field: str):
    if field in SET:
        return SET[field]
    current = getattr(resource, field)
    if isinstance(current, bool):
        return not current
    if isinstance(current, float):
        return round(current * 0.5 + 0.01, 4)
    return (current or 1) + 1


def seen_by_a_run(resources: dict, run_config: dict) -> dict:
    seen = {}

    @dg.asset(required_resource_keys=set(resources) - {"io_manager"})
    def probe(context: dg.AssetExecutionContext) -> None:
        seen.update({key: dict(getattr(context.resources, key)) for key in resources if key != "io_manager"})

    job = dg.define_asset_job("probe_job", [probe])
    defs = dg.Definitions(assets=[probe], resources=resources, jobs=[job])
    assert defs.resolve_job_def("probe_job").execute_in_process(run_config=run_config).success
    return seen


def test_setting_every_allowed_field_keeps_the_deployments_wiring(wiring):
    plain = default_resources() | wiring
    resources = deployment_resources(plain)
    values = {
        key: {field: value_for(plain[key], field) for field in fields} for key, fields in RUN_FIELDS.items() if fields
    }
    seen = seen_by_a_run(resources, {"resources": {key: {"config": v} for key, v in values.items()}})
    for key, fields in WIRING_FIELDS.items():
        assert {f: seen[key][f] for f in fields} == {f: getattr(wiring[key], f) for f in fields}, key
    for key, chosen in values.items():
        assert {f: seen[key][f] for f in chosen} == chosen, key


@pytest.mark.parametrize("key", sorted(k for k, fields in RUN_FIELDS.items() if fields))
def test_one_allowed_field_alone_resets_nothing(wiring, key):
    """Issue 44's first finding: ``llm.max_retries: 1`` alone used to rebuild the resource from
    its class defaults (no registry guard, a disk cache under the run's directory)."""
    plain = default_resources() | wiring
    field = RUN_FIELDS[key][-1]
    seen = seen_by_a_run(
        deployment_resources(plain), {"resources": {key: {"config": {field: value_for(plain[key], field)}}}}
    )
    untouched = {f: getattr(plain[key], f) for f in type(plain[key]).model_fields if f != field}
    assert {f: seen[key][f] for f in untouched} == untouched


def test_wiring_given_as_environment_variables_is_read_when_the_run_starts(tmp_path, monkeypatch):
    """As a cluster's definitions give it (``dg.EnvVar``): each worker's environment says it,
    and a field the deployment gave that way is not offered to runs."""
    resources = deployment_resources(
        {
            "storage": StorageResource(root=dg.EnvVar("TEST_ROOT")),
            "llm": LLMResource(max_retries=dg.EnvVar.int("TRIES")),
        }
    )
    monkeypatch.setenv("TEST_ROOT", str(tmp_path / "from-env"))
    monkeypatch.setenv("TRIES", "7")
    seen = seen_by_a_run(resources, {"resources": {"llm": {"config": {"backoff_seconds": 0.5}}}})
    assert seen["storage"]["root"] == str(tmp_path / "from-env")
    assert seen["llm"]["max_retries"] == 7 and seen["llm"]["backoff_seconds"] == 0.5
    with pytest.raises(dg.DagsterInvalidConfigError, match="max_retries"):
        seen_by_a_run(resources, {"resources": {"llm": {"config": {"max_retries": 1}}}})


def test_a_run_without_config_gets_the_deployments_resource(wiring):
    plain = default_resources() | wiring
    seen = seen_by_a_run(deployment_resources(plain), {})
    for key in wiring:
        assert seen[key] == dict(plain[key]), key


class Listener:
    """A loopback HTTP server that records what reaches it."""

    def __init__(self):
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the handler's protocol
                owner.requests.append(self.path + " " + str(self.headers))
                self.send_response(500)
                self.end_headers()

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


def launch(job_name: str, run_config: dict, partition_key: str | None = None):
    from pipelines.definitions import defs

    return defs.resolve_job_def(job_name).execute_in_process(
        run_config=run_config, partition_key=partition_key, raise_on_error=False
    )


def test_run_config_cannot_run_a_program_through_a_registry_file(tmp_path):
    """Issue 44's second finding, on the real asset: a registry file the worker can read, whose
    entry is a batch runner, named in ``llm.registry_path``."""
    marker = tmp_path / "ran"
    registry = tmp_path / "models.yaml"
    registry.write_text(
        "models:\n  evil:\n    model: hosted_vllm/x\n    backend: vllm\n    mode: batch\n"
        f"    batch_command: [touch, {marker}]\nroles:\n  quit.parametric: [evil]\n"
    )
    with pytest.raises(dg.DagsterInvalidConfigError, match="registry_path"):
        launch("quit_parametric", {"resources": {"llm": {"config": {"registry_path": str(registry)}}}})
    assert not marker.exists()


def test_run_config_cannot_send_a_secret_to_a_host_it_names(listener, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-sent-anywhere")
    monkeypatch.setenv("VLLM_API_KEY", "never-sent-either")
    search = {"search": {"config": {"kind": "http", "endpoint": listener.url, "api_key_env": "AWS_SECRET_ACCESS_KEY"}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match="endpoint|api_key_env|kind"):
        launch("recor_build", {"resources": search}, "law")
    attach = {"llm": {"config": {"servers": [{"attach_url": listener.url, "aliases": ["smollm2-135m-instruct"]}]}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match="servers"):
        launch("quit_parametric", {"resources": attach})
    assert listener.requests == []


def test_run_config_cannot_append_to_or_read_a_file_through_a_server_log(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("the deployment's file\n")
    servers = [{"model": "m", "port": 1, "log_path": str(victim), "startup_timeout": 1}]
    with pytest.raises(dg.DagsterInvalidConfigError, match="servers"):
        launch("quit_parametric", {"resources": {"llm": {"config": {"servers": servers}}}})
    assert victim.read_text() == "the deployment's file\n"


@pytest.mark.parametrize(
    "resource,config",
    [
        ("storage", {"root": "/tmp/elsewhere"}),
        ("storage", {"local_index_root": "/tmp/elsewhere"}),
        ("llm", {"cache_type": "disk"}),
        ("llm", {"cache_url": "postgresql://x@127.0.0.1/y"}),
        ("llm", {"definitions_registry": None}),
        ("quit_settings", {"triviahg_path": "/etc/passwd"}),
        ("encoder", {"model": "/tmp/any-model"}),
    ],
)
def test_run_config_cannot_move_the_wiring(resource, config):
    """Validated as the launchpad validates a launch (the job of every asset: a run of it that
    got through would build everything)."""
    from pipelines.definitions import defs

    with pytest.raises(dg.DagsterInvalidConfigError, match="unexpected config entr"):
        dg.validate_run_config(defs.resolve_job_def("__ASSET_JOB"), {"resources": {resource: {"config": config}}})


def test_an_executor_takes_no_run_config():
    """As the launchpad and the daemon validate a run (``execute_in_process`` swaps in an
    executor of its own), for the local and the cluster definitions alike."""
    from pipelines.cluster import defs as cluster
    from pipelines.cluster_k8s import defs as k8s
    from pipelines.definitions import defs

    for definitions, config in [
        (defs, {"retries": {"enabled": {}}}),
        (cluster, {"broker": "redis://127.0.0.1:1/0"}),
        (k8s, {"env_vars": ["AWS_SECRET_ACCESS_KEY"], "image_pull_policy": "Always"}),
    ]:
        job = definitions.resolve_job_def("quit_parametric")
        with pytest.raises(dg.DagsterInvalidConfigError, match="unexpected config entr"):
            dg.validate_run_config(job, {"execution": {"config": config}})


def test_a_release_outside_the_deployments_release_folders_is_refused(tmp_path, monkeypatch, instance):
    from pipelines.definitions import defs

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = {"ops": {"eval_recor_source": {"config": {"source": "release", "release_path": str(elsewhere)}}}}
    monkeypatch.delenv("BENCHFOUNDRY_RELEASES", raising=False)
    job = defs.resolve_job_def("recor_eval_source")
    result = job.execute_in_process(run_config=config, partition_key="law", raise_on_error=False, instance=instance)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "not inside a release folder" in str(failure.step_failure_data.error.message)


def test_a_release_inside_a_folder_the_deployment_adds_is_read(tmp_path, monkeypatch):
    from assets.eval.sources import BUNDLED_RELEASES, release_location

    monkeypatch.setenv("BENCHFOUNDRY_RELEASES", str(tmp_path))
    (tmp_path / "mine").mkdir()
    assert release_location(str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert release_location("data/releases/recor") == str(Path(BUNDLED_RELEASES) / "recor")
    with pytest.raises(dg.Failure, match="not inside a release folder"):
        release_location(str(tmp_path / ".." / "x"))
