"""Prompts are data: one YAML file per prompt, versioned, rendered into chat messages.

A prompt file holds ``version``, an optional ``system`` message, optional few-shot ``shots``
(each a mapping of template fields plus ``answer``) and a ``user`` template using
``{field}`` placeholders, and, for prompts whose continuation is scored rather than
generated, a ``continuation`` template. Bump ``version`` (and the asset's ``code_version``) when a prompt
changes, so cached answers and stale assets are told apart.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]


@dataclasses.dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    user: str
    system: str | None = None
    shots: tuple[dict, ...] = ()
    # Text scored after the prompt rather than generated (UPR's question).
    continuation: str | None = None

    def messages(self, **fields: str) -> list[dict]:
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        for shot in self.shots:
            msgs.append({"role": "user", "content": self.user.format(**shot)})
            msgs.append({"role": "assistant", "content": shot["answer"]})
        msgs.append({"role": "user", "content": self.user.format(**fields)})
        return msgs


@cache
def load_prompt(benchmark: str, name: str) -> Prompt:
    path = ROOT / benchmark / "prompts" / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    missing = {"version", "user"} - set(raw)
    if missing:
        raise ValueError(f"prompt {path} lacks {sorted(missing)}")
    return Prompt(
        name=name,
        version=str(raw["version"]),
        user=raw["user"],
        system=raw.get("system"),
        shots=tuple(raw.get("shots") or ()),
        continuation=raw.get("continuation"),
    )
