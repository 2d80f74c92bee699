"""The fields of the reference (``pipelines.reference``): a resource's config fields and each
registry's entry fields, described by the field's own description or, where it has none, by
the comment written above it in its class."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
import typing
from collections.abc import Iterable
from pathlib import Path

import dagster as dg
import yaml
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = "required"
# The entry's name is its key in the registry file, not a field written inside it.
KEY_FIELDS = {"alias": "the entry's name: its key in the file", "name": "the entry's name: its key in the file"}


def relative(text: str) -> str:
    """``text`` with the checkout's absolute paths written from its root."""
    return text.replace(f"{ROOT}/", "").replace(str(ROOT), ".")


def escaped(text: str) -> str:
    """Markdown that shows ``text`` as written: outside code spans, ``<name>`` placeholders are
    escaped (a Markdown renderer would take them for HTML tags and drop them)."""
    parts = re.split(r"(`+[^`]*?`+)", relative(text))
    return "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)


def cell(text: str | None) -> str:
    """``text`` as one table cell: one line, pipes escaped."""
    return " ".join(escaped(text or "").split()).replace("|", "\\|")


def table(rows: Iterable[tuple[str, ...]], header: tuple[str, ...]) -> list[str]:
    """A Markdown table: ``header``, then a line per row (each cell already Markdown)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def comments(cls: type) -> dict[str, str]:
    """Field name -> the comment lines right above its annotation in ``cls``'s body (or at its
    line's end), for ``cls`` and the classes it inherits fields from."""
    found: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] not in ("assets", "resources", "checks", "pipelines"):
            continue
        source = textwrap.dedent(inspect.getsource(klass))
        lines = source.splitlines()
        body = ast.parse(source).body[0].body
        for node in body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found[node.target.id] = _comment_above(lines, node.lineno - 1) or _comment_after(lines[node.lineno - 1])
    return found


def _comment_above(lines: list[str], index: int) -> str:
    block = []
    while index > 0 and lines[index - 1].strip().startswith("#"):
        index -= 1
        block.insert(0, lines[index].strip().lstrip("#").strip())
    return " ".join(block)


def _comment_after(line: str) -> str:
    code, _, comment = line.partition("  # ")
    return comment.strip() if code.strip() and comment else ""


def type_name(annotation) -> str:
    """An annotation as a reader writes it: ``int | None``, ``Literal['paper', 'demo']``."""
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    text = str(annotation).replace("typing.", "")
    return _short_names(text)


def _short_names(text: str) -> str:
    return re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Z]\w*)", r"\1", text)


def code(value) -> str:
    """A default in a table cell: as code, unless the field has none."""
    text = shown(value)
    return text if text == REQUIRED else f"`{relative(text)}`"


def shown(value) -> str:
    """A default as YAML writes it (what a run config or a registry entry would say)."""
    if value is PydanticUndefined or value is dataclasses.MISSING:
        return REQUIRED
    if isinstance(value, tuple):
        value = list(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("...").strip()


def nested(annotation) -> list[type]:
    """The resource classes inside an annotation (``VLLMServerResource | None``, ``list[...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, dg.ConfigurableResource):
        return [annotation]
    return [c for arg in typing.get_args(annotation) for c in nested(arg)]


def field_rows(cls: type[dg.ConfigurableResource], run_fields: set[str]) -> list[str]:
    """A table of ``cls``'s fields (name, type, default, whether a run may set it, the demo
    profile's value where it has one, description), then one for each resource nested in it."""
    notes = comments(cls)
    demo = getattr(cls, "DEMO_SLICE", {}) or {}
    rows, inner = [], {}
    for name, info in cls.model_fields.items():
        default = info.get_default(call_default_factory=True) if info.default_factory else info.default
        row = [f"`{name}`", f"`{type_name(info.annotation)}`", code(default), "run" if name in run_fields else ""]
        if demo:
            row.append(code(demo[name]) if name in demo else "")
        rows.append((*row, cell(info.description or notes.get(name, ""))))
        for klass in nested(info.annotation):
            inner.setdefault(klass, []).append(name)
    lines = table(rows, ("field", "type", "default", "run", *(("demo",) if demo else ()), "description"))
    for klass, names in inner.items():
        used = " and ".join(f"`{n}`" for n in names)
        lines += ["", f"The class of {used}, `{klass.__module__}.{klass.__name__}`:", ""]
        lines += [escaped(inspect.cleandoc(klass.__doc__ or "")), ""]
        lines += field_rows(klass, set())
    return lines


def spec_rows(spec: type, derived: frozenset[str] = frozenset()) -> list[str]:
    """A table of a registry entry's fields (a dataclass), ``derived`` ones left out."""
    notes = comments(spec)
    rows = []
    for f in dataclasses.fields(spec):
        if f.name in derived:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if f.name in KEY_FIELDS and default is dataclasses.MISSING:
            shown_default, note = "the key", KEY_FIELDS[f.name]
        else:
            shown_default, note = code(default), notes.get(f.name, "")
        rows.append((f"`{f.name}`", f"`{type_name(f.type)}`", shown_default, cell(note)))
    return table(rows, ("field", "type", "default", "description"))


def header_comment(path: str) -> list[str]:
    """The comment block a registry file opens with, as a YAML block."""
    head = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        head.append(line)
    return ["```yaml", *head, "```"] if head else []


def registry_section(
    title: str,
    path: str,
    variable: str | None,
    spec: type | None,
    derived: frozenset[str] = frozenset(),
    kinds: Iterable[str] = (),
) -> list[str]:
    """A registry's file (and the variable naming another), the comment it opens with, its
    entries' fields and the kinds an entry may be."""
    where = f"`{relative(path)}`" + (f" (another file: `{variable}`)" if variable else "")
    lines = [f"## {title}", "", f"File: {where}.", "", "What the file says of its entries:", ""]
    lines += header_comment(path) + [""]
    if spec is not None:
        lines += [f"Fields of an entry (`{spec.__module__}.{spec.__name__}`):", ""]
        lines += spec_rows(spec, derived) + [""]
    if kinds:
        lines += ["Kinds: " + ", ".join(f"`{k}`" for k in sorted(kinds)) + ".", ""]
    return lines


def entries(rows: list[tuple[str, ...]], header: tuple[str, ...], what: str) -> list[str]:
    """The entries a registry file ships with, one row each, the name first."""
    if not rows:
        return [f"No {what} registered in the shipped file.", ""]
    return (
        [f"The {len(rows)} {what} of the shipped file:", ""]
        + table(([f"`{r[0]}`", *(cell(v) for v in r[1:])] for r in rows), header)
        + [""]
    )


def registries_page() -> str:
    """The model, retriever, reranker and dataset registries and the fine-tuning bases: each
    file, its fields and the entries it ships with (the trained models' registry left out)."""
    from resources.datasets import DATASETS_PATH, DatasetSpec, load_datasets
    from resources.finetuning import BASES_PATH
    from resources.llm import REGISTRY_PATH, load_registry, load_roles
    from resources.llm.registry import DEFAULT_CONCURRENCY, ModelSpec
    from resources.retrieval import (
        RERANKERS_PATH,
        RETRIEVERS_PATH,
        RerankerSpec,
        RetrieverSpec,
        load_rerankers,
        load_retrievers,
    )
    from resources.retrieval.registry import RERANKER_KINDS, RETRIEVER_KINDS

    lines = [
        "# Registries",
        "",
        "Every model, retriever, reranker and dataset is named once, in a registry file; partitions, roles "
        "and runs refer to its alias. Models the project trains itself are written to a second, signed "
        "registry under the storage root (`BENCHFOUNDRY_TRAINED`) and merged in; they are not listed here.",
        "",
    ]
    models = load_registry(REGISTRY_PATH)
    lines += registry_section(
        "Models", REGISTRY_PATH, "BENCHFOUNDRY_MODELS", ModelSpec, derived=frozenset({"api_bases"})
    )
    lines += ["Backends: " + ", ".join(f"`{b}`" for b in sorted(DEFAULT_CONCURRENCY)) + ".", ""]
    lines += entries(
        [(a, s.model, s.backend, s.thinking, s.verdicts) for a, s in sorted(models.items())],
        ("alias", "model", "backend", "thinking", "verdicts"),
        "models",
    )
    roles = yaml.safe_dump(load_roles(REGISTRY_PATH), sort_keys=True, default_flow_style=False).rstrip()
    lines += ["The roles, which pick aliases for each step:", "", "```yaml", roles, "```", ""]
    lines += registry_section(
        "Retrievers", RETRIEVERS_PATH, "BENCHFOUNDRY_RETRIEVERS", RetrieverSpec, kinds=RETRIEVER_KINDS
    )
    retrievers = load_retrievers(RETRIEVERS_PATH, trained=None)
    lines += entries(
        [(a, s.kind, s.encoder or s.path or s.function or "") for a, s in sorted(retrievers.items())],
        ("alias", "kind", "encoder, file or function"),
        "retrievers",
    )
    lines += registry_section("Rerankers", RERANKERS_PATH, "BENCHFOUNDRY_RERANKERS", RerankerSpec, kinds=RERANKER_KINDS)
    rerankers = load_rerankers(RERANKERS_PATH, trained=None)
    lines += entries(
        [(a, s.kind, s.model or s.path or s.function or "", str(s.top_k)) for a, s in sorted(rerankers.items())],
        ("alias", "kind", "model, file or function", "top_k"),
        "rerankers",
    )
    lines += registry_section("Datasets", DATASETS_PATH, "BENCHFOUNDRY_DATASETS", DatasetSpec)
    datasets = load_datasets(DATASETS_PATH)
    lines += entries(
        [(n, relative(s.path), s.split) for n, s in sorted(datasets.items())], ("name", "path", "split"), "datasets"
    )
    lines += registry_section("Fine-tuning bases", BASES_PATH, None, None)
    raw = yaml.safe_load(Path(BASES_PATH).read_text(encoding="utf-8")).get("bases") or {}
    lines += entries([(a, str(e.get("model", ""))) for a, e in sorted(raw.items())], ("alias", "model"), "bases")
    return "\n".join(lines)
