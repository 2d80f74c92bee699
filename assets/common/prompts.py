"""Prompts are data: one YAML file per prompt, versioned, rendered into chat messages.

A prompt file holds ``version``, an optional ``system`` message, optional few-shot ``shots``
(each a mapping of template fields plus ``answer``) and a ``user`` template using
``{field}`` placeholders, and, for prompts whose continuation is scored rather than
generated, a ``continuation`` template. Bump ``version`` when a prompt changes: the
code version of every asset that uses it follows (:func:`code_version`), so cached answers
and stale assets are told apart.

A prompt that asks for a list, an object or one of a fixed set of answers declares it in an
``output`` block (``choices``, or a JSON ``schema`` and how its JSON becomes the text the
step's parser reads: ``resources/llm/structured.py``); a ``vllm`` model is asked to follow
it, other backends read the reply as free text. The declaration is not the prompt's
``version``: like the registry's sampling parameters it decides how a model decodes, not
what it is asked, and it travels in the request's parameters, so a constrained request has
a cache key of its own while the embedded model's and the APIs' answers stay cached.
"""

from __future__ import annotations

import dataclasses
import hashlib
from functools import cache
from pathlib import Path

import yaml

from resources.llm.structured import Output

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
    # What the answer must look like, where the prompt fixes it (choices, a JSON schema).
    output: Output | None = None

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
        output=Output.from_mapping(raw["output"], str(path)) if raw.get("output") is not None else None,
    )


# Every prompt some asset's code version follows (a test checks that none is left out).
DECLARED: set[str] = set()


def code_version(rules: str, *prompts: str) -> str:
    """An asset's ``code_version`` from the version of its rules and of every prompt file it
    uses (``"recor/facts"``, ``"eval/rag_judge"``, ...): bumping a prompt's ``version`` marks
    exactly the assets that use it stale in the UI. A short digest keeps the string readable."""
    DECLARED.update(prompts)
    if not prompts:
        return rules
    versions = ",".join(f"{p}={load_prompt(*p.split('/')).version}" for p in sorted(set(prompts)))
    return f"{rules}-{hashlib.sha1(versions.encode()).hexdigest()[:8]}"
