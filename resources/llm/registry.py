"""The model registry: aliases, the litellm model each names, its backend and thinking mode,
and the roles (labelers, judges, builders, subjects) that pick aliases for each step.

``BENCHFOUNDRY_MODELS`` points a deployment (or a test instance) at another registry file;
the LLM resource, the roles and the model partitions all read the same one.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Any

from resources.names import check_name
from resources.storage import read_yaml

REGISTRY_PATH = os.environ.get("BENCHFOUNDRY_MODELS") or str(Path(__file__).parents[1] / "models.yaml")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One registry entry: how to reach a model and how to sample from it."""

    alias: str
    model: str
    backend: str = "api"
    # "cot": no native switch, thinking is a chain-of-thought prompt variant;
    # "native": thinking_params switch it on; "none": the model cannot think.
    thinking: str = "cot"
    thinking_params: dict = dataclasses.field(default_factory=dict)
    sampling: dict = dataclasses.field(default_factory=dict)
    # The first endpoint; ``api_bases`` holds every replica of the model (the registry's
    # ``api_base`` may be one URL or a list: vLLM scales by servers, one per GPU).
    api_base: str | None = None
    api_bases: tuple[str, ...] = ()
    # "binding": the model's yes/no verdicts may reject records in construction pipelines;
    # "advisory": they are recorded beside the records and never decide on their own.
    verdicts: str = "binding"
    # Sent on every call that does not ask for thinking, for models that think unless told
    # not to (Qwen3 on vLLM: ``{chat_template_kwargs: {enable_thinking: false}}``).
    thinking_off_params: dict = dataclasses.field(default_factory=dict)
    # max_tokens by call kind (``thinking``, ``answer``, ``rating``, ...), replacing the cap a
    # step asks for: a reasoning model needs thousands of tokens where the small default
    # model is given dozens.
    budgets: dict = dataclasses.field(default_factory=dict)
    # Requests in flight at once; None: the backend's default (DEFAULT_CONCURRENCY).
    max_concurrency: int | None = None
    # How a ``vllm`` entry's calls reach the model: "http", its OpenAI server; "batch", the
    # calls the cache misses written as an OpenAI batch file and run by ``batch_command``
    # (vLLM's own batch runner: no HTTP round trip per call, the client's cost a line of
    # JSON each way), ``batch_size`` calls a file, each run given ``batch_timeout`` seconds.
    mode: str = "http"
    # The environment variable holding the key sent to this entry's api_base. An api entry
    # with its own api_base is sent this key or none, never the provider's key from the
    # environment (litellm would send OPENAI_API_KEY to whatever host api_base names).
    api_key_env: str | None = None
    batch_command: tuple[str, ...] = ()
    batch_size: int = 65536
    batch_timeout: float = 6 * 3600.0

    @property
    def concurrency(self) -> int:
        return max(1, self.max_concurrency or DEFAULT_CONCURRENCY[self.backend])


# A vLLM server batches hundreds of sequences; a hosted API rate-limits well before that;
# the embedded model answers one call at a time (its prompt-prefix reuse needs the order).
DEFAULT_CONCURRENCY = {"vllm": 256, "api": 16, "embedded": 1}


def load_registry(path: str = REGISTRY_PATH) -> dict[str, ModelSpec]:
    """The model registry file's entries; errors name the entry at fault. An alias names
    partitions and files (``resources.names``); the ``model`` it stands for may be any id."""
    return dict(_parsed(path, _stamp(path))[0])


def _stamp(path: str) -> tuple[int, int] | None:
    """What tells an edited registry file from the one parsed (a remote file: nothing)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=32)
def _parsed(path: str, stamp: tuple[int, int] | None) -> tuple[dict[str, ModelSpec], dict[str, Any], str | None]:
    """The registry's entries, its roles and what is wrong with them (raised by whatever reads
    a role), parsed once per path and version of the file: the pools, partitions and plans of
    every asset read it when the definitions load."""
    raw = read_yaml(path) or {}
    specs = _specs(path, raw)
    roles = raw.get("roles", {}) if isinstance(raw, dict) else {}
    for name, value in _flatten(roles):
        for alias in value if isinstance(value, list) else [value]:
            if alias not in specs:
                return specs, roles, f"{path}: role {name} names unknown model alias {alias!r}"
    return specs, roles, None


def _roles(path: str) -> tuple[dict[str, ModelSpec], dict[str, Any]]:
    specs, roles, problem = _parsed(path, _stamp(path))
    if problem:
        raise ValueError(problem)
    return specs, roles


def _specs(path: str, raw: Any) -> dict[str, ModelSpec]:
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict) or not models:
        raise ValueError(f"{path}: expected a non-empty 'models' mapping")
    specs = {}
    for alias, entry in models.items():
        check_name(alias, f"{path}: model alias")
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise ValueError(f"{path}: model alias {alias!r} needs a 'model' string")
        # api_bases is derived: a list of replicas is given as api_base
        unknown = set(entry) - ({f.name for f in dataclasses.fields(ModelSpec)} - {"api_bases"})
        if unknown:
            raise ValueError(f"{path}: model alias {alias!r} has unknown keys {sorted(unknown)}")
        if entry.get("thinking", "cot") not in {"cot", "native", "none"}:
            raise ValueError(f"{path}: model alias {alias!r}: thinking must be cot, native or none")
        if entry.get("backend", "api") not in DEFAULT_CONCURRENCY:
            raise ValueError(f"{path}: model alias {alias!r}: backend must be one of {sorted(DEFAULT_CONCURRENCY)}")
        if entry.get("backend") == "embedded" and entry.get("max_concurrency", 1) != 1:
            raise ValueError(f"{path}: model alias {alias!r}: the embedded model answers one call at a time")
        if entry.get("verdicts", "binding") not in {"binding", "advisory"}:
            raise ValueError(f"{path}: model alias {alias!r}: verdicts must be binding or advisory")
        _check_mode(path, alias, entry)
        key_env = entry.get("api_key_env")
        if key_env is not None and not (isinstance(key_env, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env)):
            raise ValueError(f"{path}: model alias {alias!r}: api_key_env must name an environment variable")
        if "batch_command" in entry:
            entry = {**entry, "batch_command": tuple(entry["batch_command"])}
        if entry.get("api_base") is not None:
            bases = _api_bases(path, alias, entry["api_base"])
            entry = {**entry, "api_base": bases[0], "api_bases": bases}
        specs[alias] = ModelSpec(alias=alias, **entry)
    return specs


def _api_bases(path: str, alias: str, value: Any) -> tuple[str, ...]:
    """An entry's endpoints: one URL, or a list of the model's replicas."""
    urls = value if isinstance(value, list) else [value]
    if not urls or not all(isinstance(u, str) and u.strip() for u in urls):
        raise ValueError(f"{path}: model alias {alias!r}: api_base must be a URL or a non-empty list of URLs")
    seen = [u.strip().rstrip("/") for u in urls]
    twice = sorted({u for u in seen if seen.count(u) > 1})
    if twice:
        raise ValueError(f"{path}: model alias {alias!r}: api_base lists {', '.join(twice)} more than once")
    return tuple(urls)


def _check_mode(path: str, alias: str, entry: dict) -> None:
    mode = entry.get("mode", "http")
    if mode not in {"http", "batch"}:
        raise ValueError(f"{path}: model alias {alias!r}: mode must be http or batch")
    if mode != "batch":
        return
    if entry.get("backend") != "vllm":
        raise ValueError(f"{path}: model alias {alias!r}: batch mode is for vllm entries (vLLM's batch runner)")
    command = entry.get("batch_command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ValueError(f"{path}: model alias {alias!r}: batch mode needs a batch_command list of strings")
    if not any("{input}" in c for c in command) or not any("{output}" in c for c in command):
        raise ValueError(f"{path}: model alias {alias!r}: batch_command must name {{input}} and {{output}}")
    size = entry.get("batch_size", 1)
    if not isinstance(size, int) or size < 1:
        raise ValueError(f"{path}: model alias {alias!r}: batch_size must be a positive integer")


def load_roles(path: str = REGISTRY_PATH) -> dict[str, Any]:
    """The ``roles`` section: which aliases act as labelers, readers, judges, subjects."""
    return copy.deepcopy(_roles(path)[1])


def role_aliases(role: str, path: str = REGISTRY_PATH) -> list[str]:
    """Aliases for a dotted role name such as ``quit.labelers``."""
    node: Any = _roles(path)[1]
    for part in role.split("."):
        node = node[part]
    return list(node) if isinstance(node, list) else [node]


def _flatten(node: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(node, dict):
        out = []
        for k, v in node.items():
            out.extend(_flatten(v, f"{prefix}{k}."))
        return out
    return [(prefix.rstrip("."), node)]


def llm_pool(*roles: str, path: str = REGISTRY_PATH) -> str:
    """The Dagster concurrency pool of a step asking these roles (``quit``, ``recor.judge``):
    ``llm_embedded`` when any of their models runs in process (one such step at a time: the
    embedded model uses every core), else ``llm_vllm`` or ``llm_api`` by backend, whose
    limits a deployment raises so partitions of different served models run side by side."""
    registry, all_roles = _roles(path)
    backends = set()
    for role in roles:
        node: Any = all_roles
        for part in role.split("."):
            node = node[part]
        backends |= {registry[a].backend for _, v in _flatten(node) for a in (v if isinstance(v, list) else [v])}
    for backend in ("embedded", "vllm", "api"):
        if backend in backends:
            return f"llm_{backend}"
    raise ValueError(f"roles {roles} name no model in {path}")
