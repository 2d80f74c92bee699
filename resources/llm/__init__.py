"""LLM access through litellm: the model registry (``registry``), the embedded llama.cpp
provider (``embedded``), the response cache (``cache``), the Dagster resource (``resource``)
with its call path and retries (``calls``, ``faults``, ``client``), its requests and results
(``results``), call accounting (``accounting``) and the handle a step is given for one model
(``model``). The names every step uses are
re-exported here."""

from resources.llm.accounting import CallStats
from resources.llm.embedded import EmbeddedLlama, embedded_model_path, register_provider
from resources.llm.model import Model
from resources.llm.registry import (
    DEFAULT_CONCURRENCY,
    REGISTRY_PATH,
    ModelSpec,
    load_registry,
    load_roles,
    role_aliases,
)
from resources.llm.resource import LLMResource
from resources.llm.results import (
    LLMRequest,
    LLMResult,
    ParseError,
    ScoreRequest,
    continuation_from_echo,
    strip_thinking,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "CallStats",
    "EmbeddedLlama",
    "LLMRequest",
    "LLMResource",
    "LLMResult",
    "Model",
    "ModelSpec",
    "ParseError",
    "REGISTRY_PATH",
    "ScoreRequest",
    "continuation_from_echo",
    "embedded_model_path",
    "load_registry",
    "load_roles",
    "register_provider",
    "role_aliases",
    "strip_thinking",
]
