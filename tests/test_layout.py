"""The layout holds: imports go one way (resources <- assets/common <- assets/<benchmark> <-
assets/eval <- checks <- pipelines), no benchmark imports another, and each benchmark package
has the same floor plan."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("resources", "assets", "checks", "pipelines")
BENCHMARKS = ("quit", "recor", "wikiprofile")
FLOOR_PLAN = {"__init__", "assets", "steps", "rules", "sources", "settings", "release", "published"}


def layer(module: str) -> tuple[float, str]:
    """A module's rank in the import order and the unit within which it may import freely."""
    parts = module.split(".")
    if parts[0] == "resources":
        return 0, "resources"
    if parts[0] == "assets":
        if len(parts) == 1 or parts[1] == "common":
            return 1, "common"
        if parts[1] == "partitions":
            return 1.5, "partitions"
        if parts[1] in BENCHMARKS:
            return 2, parts[1]
        if parts[1] == "eval":
            return 3, "eval"
    if parts[0] == "checks":
        return 4, "checks"
    if parts[0] == "pipelines":
        return 5, "pipelines"
    raise ValueError(f"{module} is outside the layout")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def project_imports(path: Path) -> list[tuple[int, str]]:
    """Every import of a project module in the file, at any depth (function-level too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            target = node.module
            # `from assets.quit import rules` imports the module assets.quit.rules
            if len(names) > 1 and all((ROOT / (n.replace(".", "/") + ".py")).exists() for n in names[1:]):
                out.extend((node.lineno, n) for n in names[1:])
                continue
            out.append((node.lineno, target))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
    return [(line, m) for line, m in out if m.split(".")[0] in PACKAGES]


def violations(path: Path) -> list[str]:
    source = module_name(path)
    rank, unit = layer(source)
    found = []
    for line, target in project_imports(path):
        t_rank, t_unit = layer(target)
        if t_unit == unit:
            continue
        if t_rank >= rank:
            found.append(f"{path.relative_to(ROOT)}:{line} imports {target} ({t_unit} may not be imported from {unit})")
    return found


def project_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_imports_go_one_way_only():
    problems = [v for p in project_files() for v in violations(p)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("importer, imported", [
    ("assets/recor/steps.py", "assets.quit.rules"),     # sideways across benchmarks
    ("assets/common/verdicts.py", "assets.eval.rerankers"),  # upward from common
    ("assets/eval/recor.py", "checks.recor"),           # evaluation reaching into checks
    ("resources/storage.py", "assets.common.records"),  # a resource importing an asset module
])
def test_an_import_against_the_order_is_found(tmp_path, importer, imported):
    path = ROOT / importer
    fake = path.with_name("_layout_probe.py")
    fake.write_text(f"from {imported} import something\n", encoding="utf-8")
    try:
        assert violations(fake), f"{importer} importing {imported} went unnoticed"
    finally:
        fake.unlink()


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_each_benchmark_has_the_same_floor_plan(benchmark):
    package = ROOT / "assets" / benchmark
    modules = {p.stem for p in package.glob("*.py")}
    assert modules == FLOOR_PLAN, f"assets/{benchmark}: extra {sorted(modules - FLOOR_PLAN)}, missing {sorted(FLOOR_PLAN - modules)}"
    assert (package / "prompts").is_dir() and any((package / "prompts").glob("*.yaml"))


def test_the_llm_resource_is_a_package():
    package = ROOT / "resources" / "llm"
    assert {p.stem for p in package.glob("*.py")} >= {"__init__", "registry", "embedded", "cache", "resource"}
    assert not (ROOT / "resources" / "llm.py").exists()
