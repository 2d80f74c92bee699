"""What a run may set of a resource, and nothing else.

Whoever may launch a run (the launchpad, the GraphQL API, a schedule's config) is not the
deployment's owner. A run may change what is computed (sizes, seeds, thresholds, sampling,
retries), never where the deployment's parts are (paths, URLs, endpoints, commands,
environment variable names, log files, registries, caches, storage roots).

Dagster offers every field of a ``ConfigurableResource`` to run config, and a run that sets
any field rebuilds the resource from its class defaults (the values the definitions gave it
are only the default of the whole config), so one retry count set in the launchpad used to
drop the deployment's answer cache and registry too. :func:`deployed` closes both: the
resource the definitions built is the deployment's, its config schema holds only the fields
named as run fields (each defaulting to the deployment's value), and a run's values are laid
over the deployment's resource, never over the class defaults.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import dagster as dg

# A value the definitions read from the environment when a run starts: ``dg.EnvVar`` and the
# integer kind ``dg.EnvVar.int`` makes (a class of its own, not an EnvVar).
ENV_VARS = (dg.EnvVar, type(dg.EnvVar.int("_")))


def deployed(resource: dg.ConfigurableResource, run_fields: Iterable[str] = ()) -> dg.ResourceDefinition:
    """``resource`` as the definitions built it, of which a run may set ``run_fields`` only.

    The config schema is those fields, each with the deployment's value as its default and
    the field's own description; every other field keeps the deployment's value whatever a
    run says (a run naming it is refused by Dagster's config validation, as any unknown
    field). Nested resources (a managed vLLM server) are set up and torn down with it, as
    Dagster does for the resource itself."""
    cls = type(resource)
    # a field the deployment gave as an EnvVar is the deployment's, whatever the allowlist says
    run_fields = [name for name in run_fields if not isinstance(getattr(resource, name, None), ENV_VARS)]
    unknown = sorted(set(run_fields) - set(cls.model_fields))
    if unknown:
        raise ValueError(f"{cls.__name__} has no field {', '.join(unknown)}: run fields name the resource's fields")
    fields = cls.to_fields_dict()
    schema = {
        name: dg.Field(
            fields[name].config_type,
            default_value=_plain(getattr(resource, name)),
            is_required=False,
            description=fields[name].description,
        )
        for name in run_fields
    }
    wiring = {name: getattr(resource, name) for name in cls.model_fields if name not in run_fields}

    def initialize(context: dg.InitResourceContext) -> Iterator[Any]:
        values = _set_values(cls, {**_resolved(wiring), **(context.resource_config or {})})
        with cls.from_resource_context_cm(context.replace_config(values)) as live:
            yield live

    return dg.ResourceDefinition(resource_fn=initialize, config_schema=schema, description=cls.__doc__)


def _resolved(values: dict) -> dict:
    """The values with each ``EnvVar`` read, when a run starts (as Dagster reads those it
    is given in config): a worker's environment, not the definitions' import, says them."""
    return {name: value.get_value() if isinstance(value, ENV_VARS) else value for name, value in values.items()}


def _set_values(cls: type[dg.ConfigurableResource], values: dict) -> dict:
    """The values that differ from the class's defaults: a resource is built from these alone,
    as Dagster builds one, so that a settings resource's profile still fills the knobs left at
    their defaults (``assets.common.settings``)."""
    fields = cls.model_fields
    return {name: value for name, value in values.items() if name not in fields or value != fields[name].default}


def _plain(value: Any) -> Any:
    """A field's value as config (a tuple as a list: Dagster's array config takes lists)."""
    return list(value) if isinstance(value, tuple) else value
