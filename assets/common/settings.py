"""The profile switch shared by the benchmarks' settings resources.

Every settings resource defaults to its paper's configuration, so a materialization launched
from the web UI with no config runs the method as published. ``profile: demo`` swaps in the
demo slice: the knobs sized so that every stage finishes in minutes on 2 CPU cores with the
embedded model. ``make run`` and the tests select it explicitly.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import dagster as dg
from pydantic import Field, model_validator

PAPER, DEMO = "paper", "demo"


class ProfiledSettings(dg.ConfigurableResource):
    """A settings resource with a ``profile``: ``paper`` (the default) or ``demo``.

    Under ``demo``, each knob named in :attr:`DEMO_SLICE` takes its demo value unless it is
    set to something else, which is kept. Dagster hands a resource only the values that
    differ from their defaults, so a knob set to its paper value reads as not set. For that
    reason ``demo`` with a knob set to its paper value is refused in code. In the launchpad
    it cannot be detected and the demo value is used. To get the demo slice with one knob
    at the paper's size, use ``paper`` and set the other knobs.
    """

    profile: Literal["paper", "demo"] = Field(
        default=PAPER,
        description="paper: the paper's configuration (every default shown here); demo: a slice that runs in "
        "minutes on 2 CPU cores, for every knob left at its paper default",
    )

    # The knobs the demo slice changes, with their demo values.
    DEMO_SLICE: ClassVar[dict[str, Any]] = {}

    @model_validator(mode="before")
    @classmethod
    def _apply_profile(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("profile") != DEMO:
            return data
        defaults = {name: cls.model_fields[name].default for name in cls.DEMO_SLICE}
        pinned = [name for name in cls.DEMO_SLICE if name in data and data[name] == defaults[name]]
        if pinned:
            raise ValueError(
                f"{cls.__name__}: profile demo with {', '.join(f'{n}={defaults[n]!r}' for n in pinned)}, the paper's "
                "value: a run would read it as not set and use the demo slice's; use profile paper and set the knobs to change"
            )
        return {**cls.DEMO_SLICE, **data}
