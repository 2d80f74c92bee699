"""Structured outputs: what a prompt's answer must look like, sent to a vLLM server as a
constraint and read back into the free-text form the prompt's own parser already reads.

A declaration is either a list of ``choices`` (the reply is one of them, as written) or a
JSON ``schema`` (an object or an array) with how its JSON becomes text: ``each`` formats
every item of an array (an object item's fields by name, any other item as ``{item}``;
``{number}`` is its place from 1), joined by ``join``; ``text`` formats an object; with
neither, the JSON itself is the text (a JSON list of strings is also a Python list).

Only a ``vllm`` entry is asked to follow it: litellm's providers and the embedded model get
the prompt as written, so their requests, and the cache keys of their answers, are those of
a prompt without a declaration. A constrained reply that is not valid JSON or breaks the
schema (cut off by its token budget) is read by the free-text parser on its raw text.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from typing import Any

import jsonschema

# Where a rendered answer says how it was read: from a constrained reply, or as free text.
STRUCTURED, FREE_TEXT = "structured", "free_text"


@dataclasses.dataclass(frozen=True, eq=False)
class Output:
    choices: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None
    each: str | None = None
    join: str = "\n"
    text: str | None = None

    @classmethod
    def from_mapping(cls, raw: Any, where: str) -> Output:
        """A declaration from a prompt file's ``output:`` block; ``where`` names the file in
        errors."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{where}: output must be a mapping with choices or schema, got {raw!r}")
        unknown = set(raw) - {"choices", "schema", "each", "join", "text"}
        if unknown:
            raise ValueError(f"{where}: output has unknown keys {sorted(unknown)}")
        choices, schema = raw.get("choices"), raw.get("schema")
        if (choices is None) == (schema is None):
            raise ValueError(f"{where}: output needs exactly one of choices and schema")
        if choices is not None:
            if not choices or not all(isinstance(c, str) and c for c in choices):
                raise ValueError(f'{where}: output choices must be non-empty strings (quote numbers: "1")')
            if set(raw) - {"choices"}:
                raise ValueError(f"{where}: each, join and text format a schema's JSON, not choices")
            return cls(choices=tuple(choices))
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise ValueError(f"{where}: output schema is not a JSON schema: {e.message}") from e
        if raw.get("each") is not None and schema.get("type") != "array":
            raise ValueError(
                f"{where}: output each formats an array's items; the schema's type is {schema.get('type')!r}"
            )
        if raw.get("text") is not None and schema.get("type") != "object":
            raise ValueError(f"{where}: output text formats an object; the schema's type is {schema.get('type')!r}")
        return cls(schema=schema, each=raw.get("each"), join=raw.get("join", "\n"), text=raw.get("text"))

    @functools.cached_property
    def _validator(self) -> jsonschema.protocols.Validator:
        # built once: jsonschema.validate checks the schema itself again on every reply
        return jsonschema.Draft202012Validator(self.schema or {})

    def constraint(self) -> dict:
        """vLLM's ``structured_outputs`` request field (vLLM 0.10 and later)."""
        return {"choice": list(self.choices)} if self.choices else {"json": dict(self.schema or {})}

    def read(self, reply: str) -> str | None:
        """The text the prompt's parser reads, from a reply that follows the declaration;
        None when it does not (the reply is then read as free text)."""
        if self.choices:
            answer = reply.strip()
            return answer if answer in self.choices else None
        try:
            value = json.loads(reply)
        except (ValueError, RecursionError):
            return None
        if not self._validator.is_valid(value):
            return None
        try:
            if self.each is not None:
                return self.join.join(_format(self.each, item, n) for n, item in enumerate(value, start=1))
            if self.text is not None:
                return _format(self.text, value, None)
        except (KeyError, IndexError, ValueError):  # a field the schema does not require is missing
            return None
        return reply.strip()


def _format(template: str, value: Any, number: int | None) -> str:
    fields = dict(value) if isinstance(value, Mapping) else {"item": value}
    if number is not None:
        fields["number"] = number
    return template.format_map(fields)
