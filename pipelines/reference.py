"""The documentation site's reference (``docs/reference/``), written from the definitions so
that it cannot drift from them: every asset with its checks, every partitions set, job,
schedule and sensor, every resource's fields and every registry's fields.

``make reference`` writes the pages; ``tests/test_docs_reference.py`` writes them again into
a temporary folder and fails when the committed ones differ. The pages describe the project
as shipped: every ``BENCHFOUNDRY_`` variable names a deployment's choice (another registry
file, the schedules' cron and profile), so :func:`main` runs without them. Paths under the
checkout are written relative to it, so a page reads the same from any clone.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from pathlib import Path

import dagster as dg
import yaml

from pipelines.reference_fields import ROOT, cell, escaped, field_rows, registries_page, relative, table

OUT = ROOT / "docs" / "reference"
COMMAND = "make reference"
# The asset pages, one per key prefix, in the order the site lists them.
PREFIXES = ("quit", "wikiprofile", "recor", "eval")
NO_DESCRIPTION = "(no description)"


def anchor(*parts: str) -> str:
    """The id of a heading or a table cell: each part in lower case, runs of other characters
    than letters, digits and ``_`` as one dash, the parts joined by dashes."""
    return "-".join(re.sub(r"[^a-z0-9_]+", "-", p.lower()).strip("-") for p in parts)


def asset_link(key: dg.AssetKey, here: str) -> str:
    page = f"assets-{key.path[0]}.md"
    target = f"#{anchor(*key.path)}" if page == here else f"{page}#{anchor(*key.path)}"
    return f"[{key.to_user_string()}]({target})"


def partitions_names() -> dict[int, str]:
    from assets.partitions import NAMED

    return {id(p): name for name, p in NAMED.items()}


def partitions_text(pdef: dg.PartitionsDefinition | None, names: dict[int, str]) -> str:
    if pdef is None:
        return "none"
    name = names.get(id(pdef))
    if name is not None:
        return f"[{name}](partitions.md#{anchor(name)})"
    # a dimension of a product alone (``assets.partitions``: ``recor_retrievers``)
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return f"`{pdef.name}` (dynamic)"
    return f"`{type(pdef).__name__}`"


def asset_section(graph, key: dg.AssetKey, names: dict[int, str]) -> list[str]:
    """One asset: its description, what defines it and its checks."""
    node = graph.get(key)
    here = f"assets-{key.path[0]}.md"
    policy = node.backfill_policy
    rows = [
        ("group", f"`{node.group_name}`"),
        ("kind", "observation (a source's version)" if node.is_observable else "materialization"),
        ("kinds", ", ".join(f"`{k}`" for k in sorted(node.kinds)) or "none"),
        ("code version", f"`{node.code_version}`" if node.code_version else "none"),
        ("partitions", partitions_text(node.partitions_def, names)),
        ("pools", ", ".join(f"`{p}`" for p in sorted(node.pools)) or "none"),
        ("backfill", f"`{policy}`" if policy else "Dagster's default"),
        ("inputs", ", ".join(asset_link(k, here) for k in sorted(node.parent_keys)) or "none"),
        ("read by", ", ".join(asset_link(k, here) for k in sorted(node.child_keys)) or "none"),
    ]
    lines = [f"## {key.to_user_string()} {{#{anchor(*key.path)}}}", "", escaped(node.description or NO_DESCRIPTION), ""]
    lines += table(rows, ("", "")) + [""]
    checks = sorted((graph.get_check_spec(k) for k in node.check_keys), key=lambda spec: spec.name)
    if checks:
        lines += [f"Checks ({len(checks)}):", ""]
        lines += table(
            (
                (
                    f"`{spec.name}` {{#{anchor(*key.path, spec.name)}}}",
                    "yes" if spec.blocking else "no",
                    cell(spec.description),
                )
                for spec in checks
            ),
            ("check", "blocking", "what it checks"),
        )
        lines.append("")
    return lines


def asset_pages(defs: dg.Definitions) -> dict[str, str]:
    graph = defs.resolve_asset_graph()
    names = partitions_names()
    keys = sorted(graph.get_all_asset_keys())
    unknown = sorted({k.path[0] for k in keys} - set(PREFIXES))
    if unknown:
        raise ValueError(f"asset key prefixes {unknown} have no reference page: add them to PREFIXES and mkdocs.yml")
    pages = {}
    for prefix in PREFIXES:
        mine = [k for k in keys if k.path[0] == prefix]
        checks = sum(len(graph.get(k).check_keys) for k in mine)
        lines = [
            f"# Assets: {prefix}/",
            "",
            f"The {len(mine)} assets keyed `{prefix}/...` and their {checks} checks, as the definitions give them. "
            "When a blocking check fails with severity ERROR, the steps of its run that read the asset "
            "do not run; a WARN result, or a check that is not blocking, is recorded and stops nothing. "
            "Each check decides its severity when it runs.",
            "",
        ]
        for key in mine:
            lines += asset_section(graph, key, names)
        pages[f"assets-{prefix}.md"] = "\n".join(lines)
    return pages


def partitions_page(defs: dg.Definitions) -> str:
    """Each named set of partitions: what kind it is, its keys where the code fixes them, and
    the assets partitioned by it."""
    from assets.partitions import NAMED

    graph = defs.resolve_asset_graph()
    names = partitions_names()
    lines = [
        "# Partitions",
        "",
        "Every set of partitions an asset is partitioned by, by the name the jobs, the checks-only jobs and "
        "`make run` give it. A dynamic set's keys live in the Dagster instance: the registry sensor adds "
        "the aliases of the registries it follows, and whoever reads the deployment's Wikipedia folder adds its "
        "files.",
        "",
    ]
    for name in sorted(NAMED):
        pdef = NAMED[name]
        lines += [f"## {name} {{#{anchor(name)}}}", "", partitions_kind(pdef, names), ""]
        users = sorted(k for k in graph.get_all_asset_keys() if graph.get(k).partitions_def is pdef)
        lines += [f"Assets ({len(users)}): " + (", ".join(asset_link(k, "") for k in users) or "none"), ""]
    return "\n".join(lines)


def partitions_kind(pdef: dg.PartitionsDefinition, names: dict[int, str]) -> str:
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return f"Dynamic: its keys are the instance's, stored under the name `{pdef.name}`."
    if isinstance(pdef, dg.StaticPartitionsDefinition):
        keys = pdef.get_partition_keys()
        return f"Static, {len(keys)} keys: " + ", ".join(f"`{k}`" for k in keys) + "."
    if isinstance(pdef, dg.MultiPartitionsDefinition):
        dims = [f"`{d.name}` ({partitions_text(d.partitions_def, names)})" for d in pdef.partitions_defs]
        return "Two dimensions: " + " x ".join(dims) + "."
    if isinstance(pdef, dg.TimeWindowPartitionsDefinition):
        return f"Time windows, `{pdef.cron_schedule}` from {pdef.start:%Y-%m-%d} to {pdef.end:%Y-%m-%d} (end excluded)."
    return f"`{type(pdef).__name__}`"


def job_section(job, graph) -> list[str]:
    """One job: its description (with its profile's size and estimate), the assets and checks
    it selects, its tags and run config."""
    assets = sorted(job.selection.resolve(graph))
    checks = sorted(job.selection.resolve_checks(graph))
    lines = [f"## {job.name} {{#{anchor('job', job.name)}}}", "", escaped(job.description or NO_DESCRIPTION), ""]
    lines.append(f"Assets ({len(assets)}): " + (", ".join(asset_link(k, "") for k in assets) or "none"))
    lines.append("")
    if assets and all(c.asset_key in assets for c in checks):
        lines.append(f"Checks: the {len(checks)} checks of these assets.")
    else:
        lines.append(
            f"Checks ({len(checks)}): "
            + ", ".join(
                f"[{c.to_user_string()}](assets-{c.asset_key.path[0]}.md#{anchor(*c.asset_key.path, c.name)})"
                for c in checks
            )
        )
    lines.append("")
    if job.tags:
        lines += ["Tags: " + ", ".join(f"`{k}: {v}`" for k, v in sorted(job.tags.items())), ""]
    if job.config:
        lines += ["Run config:", "", "```yaml", yaml.safe_dump(job.config, sort_keys=True).rstrip(), "```", ""]
    return lines


def jobs_page(defs: dg.Definitions) -> str:
    graph = defs.resolve_asset_graph()
    jobs = sorted(defs.jobs, key=lambda j: j.name)
    lines = [
        "# Jobs, schedules and sensors",
        "",
        f"The {len(jobs)} jobs of the definitions. A job whose steps read a profiled settings resource also comes "
        "as `<job>_demo` and `<job>_paper`: their run config and tag name the profile, and their description "
        "gives its size and an estimate of the calls and time it asks. The job without a suffix runs the "
        "papers' configuration. The `*_checks*` jobs re-run stored tables' checks without materializing anything.",
        "",
    ]
    for job in jobs:
        lines += job_section(job, graph)
    lines += ["## Schedules", ""]
    lines += table(
        (
            (
                f"`{s.name}`",
                f"[{s.job_name}](#{anchor('job', s.job_name)})",
                f"`{s.cron_schedule}`",
                cell(s.description),
            )
            for s in sorted(defs.schedules, key=lambda s: s.name)
        ),
        ("schedule", "job", "cron", "what it does"),
    )
    lines += ["", "## Sensors", ""]
    lines += table(
        (
            (
                f"`{s.name}`",
                f"[{s.job_name}](#{anchor('job', s.job_name)})" if s.has_jobs else "none",
                f"{s.minimum_interval_seconds} s",
                s.default_status.value.lower(),
                cell(s.description),
            )
            for s in sorted(defs.sensors, key=lambda s: s.name)
        ),
        ("sensor", "job", "every", "starts", "what it does"),
    )
    return "\n".join(lines + [""])


def resources_page(defs: dg.Definitions) -> str:
    """Each resource of the definitions: its class's fields, which of them a run may set, and
    the demo profile's value where the profile changes one."""
    from pipelines.resources import RUN_FIELDS, default_resources

    wired = default_resources()
    lines = [
        "# Resources",
        "",
        f"The {len(defs.resources)} resources every job gets. Defaults are the classes' own; the deployment's "
        "wiring (`pipelines.resources`, from the environment) sets some of them. A run may set only the fields "
        "marked *run*; the others are the deployment's (`resources.run_config`).",
        "",
    ]
    for key in sorted(defs.resources):
        resource = wired.get(key)
        lines += [f"## {key} {{#{anchor('resource', key)}}}", ""]
        if not isinstance(resource, dg.ConfigurableResource):
            description = getattr(defs.resources[key], "description", None)
            lines += [escaped(description or NO_DESCRIPTION), "", "No fields.", ""]
            continue
        cls = type(resource)
        lines += [f"`{cls.__module__}.{cls.__name__}`", "", escaped(_doc(cls)), ""]
        lines += field_rows(cls, set(RUN_FIELDS.get(key, ()))) + [""]
    return "\n".join(lines)


def _doc(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or NO_DESCRIPTION)


def index_page(defs: dg.Definitions) -> str:
    graph = defs.resolve_asset_graph()
    keys = list(graph.get_all_asset_keys())
    lines = [
        "# Reference",
        "",
        f"Generated from the definitions by `{COMMAND}` (`pipelines/reference.py`); a test fails when these "
        "pages differ from what the definitions give, so they describe the code of this commit.",
        "",
        f"- Assets: {len(keys)}, with {len(graph.asset_check_keys)} checks: "
        + ", ".join(f"[{p}/](assets-{p}.md)" for p in PREFIXES),
        "- [Partitions](partitions.md)",
        f"- [Jobs](jobs.md): {len(defs.jobs)}, with {len(list(defs.schedules))} schedules and "
        f"{len(list(defs.sensors))} sensors",
        f"- [Resources](resources.md): {len(defs.resources)}",
        "- [Registries](registries.md): models, retrievers, rerankers, datasets and fine-tuning bases",
        "",
    ]
    return "\n".join(lines)


def pages(defs: dg.Definitions) -> dict[str, str]:
    """Every reference page, file name -> Markdown."""
    out = asset_pages(defs)
    out["partitions.md"] = partitions_page(defs)
    out["jobs.md"] = jobs_page(defs)
    out["resources.md"] = resources_page(defs)
    out["registries.md"] = registries_page()
    out["index.md"] = index_page(defs)
    return {name: text.rstrip("\n") + "\n" for name, text in sorted(out.items())}


def shipped_env(environ: dict[str, str]) -> dict[str, str]:
    """``environ`` without the deployment's choices (every ``BENCHFOUNDRY_`` variable)."""
    return {k: v for k, v in environ.items() if not k.startswith("BENCHFOUNDRY_")}


def write(out: Path) -> list[str]:
    """Writes the pages into ``out`` (removing pages the definitions no longer give); returns
    the file names."""
    from pipelines.definitions import defs

    written = pages(defs)
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(set(p.name for p in out.glob("*.md")) - set(written)):
        (out / stale).unlink()
    for name, text in written.items():
        (out / name).write_text(text, encoding="utf-8")
    return sorted(written)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(OUT), help="the folder to write the pages into (docs/reference)")
    args = parser.parse_args(argv)
    if shipped_env(dict(os.environ)) != dict(os.environ):
        # Before the definitions load: they read the variables when imported.
        argv = sys.argv[1:] if argv is None else argv
        options = [f"-W{w}" for w in sys.warnoptions]
        command = [sys.executable, *options, "-m", "pipelines.reference", *argv]
        os.execve(sys.executable, command, shipped_env(dict(os.environ)))
    names = write(Path(args.out))
    print(f"{len(names)} reference pages written to {relative(str(Path(args.out).resolve()))}")


if __name__ == "__main__":
    main()
