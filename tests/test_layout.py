"""The layout holds: imports go one way (resources <- assets/common <- assets/<benchmark> <-
assets/eval <- checks <- pipelines), no benchmark imports another, and each benchmark package
has the same floor plan. The evaluation has the same floor plan inside: its shared stack at
the root <- one package per benchmark (assets/eval/<benchmark>/, which reads no other
benchmark's package, construction or evaluation) <- the leaderboard, which reads them all.
And every module outside tests/ reads in one sitting: at most 600 lines, no function over 80."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("resources", "assets", "checks", "pipelines")
BENCHMARKS = ("quit", "recor", "wikiprofile")
# ``export``: the built benchmark in the formats the community loads (assets.common.sharing).
FLOOR_PLAN = {"__init__", "assets", "steps", "rules", "sources", "settings", "release", "published", "export"}
# The evaluation's shared stack: what every benchmark's evaluation uses, and the leaderboard.
EVAL_ROOT = {
    "__init__",
    "sources",
    "runs",
    "metrics",
    "retrieve",
    "rerankers",
    "rankgpt",
    "reports",
    "leaderboard",
    "uncertainty",
}
# The leaderboard reads every benchmark's reports: it sits above the benchmark packages.
EVAL_SUMMIT = ("leaderboard",)
# Each evaluation package (a folder under assets/eval/), its modules named from the floor
# plan; a module whose role no floor-plan name fits is named here, with the reason.
EVAL_PACKAGES = {
    "quit": set(),
    "quit/finetune": {"report"},  # the fine-tuning report (Tables 10-12), an asset of its own
    "recor": set(),
    "recor/reteco": {"submissions"},  # checking and scoring participants' run and generation files
    "wikiprofile": {"analysis"},  # the analyses over profiled models (section 5, appendices B and D)
    "beir": set(),  # any dataset in BEIR's layout a deployment registers (issue 47)
}
# Evaluation packages beside the three benchmarks': a dataset family evaluated, not built.
EVALUATED = ("beir",)


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
            if len(parts) > 2 and parts[2] in (*BENCHMARKS, *EVALUATED):
                return 3.5, f"eval.{parts[2]}"
            if len(parts) > 2 and parts[2] in EVAL_SUMMIT:
                return 3.75, f"eval.{parts[2]}"
            return 3, "eval"
    if parts[0] == "checks":
        return 4, "checks"
    if parts[0] == "pipelines":
        return 5, "pipelines"
    raise ValueError(f"{module} is outside the layout")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def is_module(name: str) -> bool:
    path = ROOT / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def project_imports(path: Path) -> list[tuple[int, str]]:
    """Every import of a project module in the file, at any depth (function-level too)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            target = node.module
            # `from assets.quit import rules` imports the module assets.quit.rules
            if len(names) > 1 and all(is_module(n) for n in names[1:]):
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
        elif unit.startswith("eval.") and t_unit in BENCHMARKS and unit != f"eval.{t_unit}" and rank < 3.75:
            found.append(
                f"{path.relative_to(ROOT)}:{line} imports {target} (another benchmark's construction, from {unit})"
            )
    return found


def project_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_imports_go_one_way_only():
    problems = [v for p in project_files() for v in violations(p)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "importer, imported",
    [
        ("assets/recor/steps.py", "assets.quit.rules"),  # sideways across benchmarks
        ("assets/common/verdicts.py", "assets.eval.rerankers"),  # upward from common
        ("assets/eval/recor/assets/retrieval.py", "checks.recor"),  # evaluation reaching into checks
        ("resources/storage.py", "assets.common.records"),  # a resource importing an asset module
        ("assets/eval/metrics.py", "assets.eval.quit.assets"),  # the eval root reaching into a benchmark
        ("assets/eval/retrieve.py", "assets.eval.recor.reteco"),  # ... or into a nested package
        ("assets/eval/recor/steps.py", "assets.eval.wikiprofile.rules"),  # sideways across evaluation packages
        ("assets/eval/quit/finetune/rules.py", "assets.eval.recor.reteco.rules"),  # sideways from a nested package
        ("assets/eval/wikiprofile/analysis.py", "assets.recor.release"),  # into another benchmark's construction
        ("assets/eval/quit/assets.py", "assets.eval.leaderboard"),  # a benchmark reading the summit
    ],
)
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
    # a role grown past one file is a package of the role's name (recor's steps, a module per stage)
    modules = {p.stem for p in package.glob("*.py")} | {p.parent.name for p in package.glob("*/__init__.py")}
    assert modules == FLOOR_PLAN, (
        f"assets/{benchmark}: extra {sorted(modules - FLOOR_PLAN)}, missing {sorted(FLOOR_PLAN - modules)}"
    )
    assert (package / "prompts").is_dir() and any((package / "prompts").glob("*.yaml"))


def eval_floor_plan_problems(root: Path) -> list[str]:
    """How the evaluation folder departs from its floor plan: root modules outside the shared
    stack, packages other than the expected ones, modules named outside each package's plan."""
    problems = [
        f"{root.name}/{p.name}: not in the shared stack" for p in sorted(root.glob("*.py")) if p.stem not in EVAL_ROOT
    ]
    found = {p.parent.relative_to(root).as_posix() for p in root.rglob("__init__.py") if p.parent != root}
    # a role grown past one file is a package of the role's name (a module per stage), as in the construction packages
    found -= {
        name
        for name in found
        if (split := name.rpartition("/"))[0] in EVAL_PACKAGES and split[2] in FLOOR_PLAN | EVAL_PACKAGES[split[0]]
    }
    problems += [f"{root.name}/{name}: unexpected package" for name in sorted(found - set(EVAL_PACKAGES))]
    problems += [f"{root.name}/{name}: missing package" for name in sorted(set(EVAL_PACKAGES) - found)]
    for name in sorted(found & set(EVAL_PACKAGES)):
        allowed = FLOOR_PLAN | EVAL_PACKAGES[name]
        problems += [
            f"{root.name}/{name}/{p.name}: outside the floor plan"
            for p in sorted((root / name).glob("*.py"))
            if p.stem not in allowed
        ]
    return problems


def test_the_evaluation_has_the_floor_plan():
    problems = eval_floor_plan_problems(ROOT / "assets" / "eval")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stray", ["profiling.py", "quit/readers.py", "recor/reteco/judge.py", "scores/__init__.py"])
def test_a_module_against_the_eval_floor_plan_is_found(tmp_path, stray):
    root = tmp_path / "eval"
    for name in [
        *(f"{m}.py" for m in EVAL_ROOT),
        *(f"{p}/{m}.py" for p in EVAL_PACKAGES for m in ("__init__", "assets")),
    ]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    assert not eval_floor_plan_problems(root)
    (root / stray).parent.mkdir(parents=True, exist_ok=True)
    (root / stray).write_text("", encoding="utf-8")
    assert eval_floor_plan_problems(root), f"{stray} went unnoticed"


def test_a_role_grown_into_a_package_of_its_name_fits_the_eval_floor_plan(tmp_path):
    root = tmp_path / "eval"
    for name in [
        *(f"{m}.py" for m in EVAL_ROOT),
        *(f"{p}/__init__.py" for p in EVAL_PACKAGES),
        "recor/assets/__init__.py",
        "recor/assets/retrieval.py",
    ]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")
    assert not eval_floor_plan_problems(root)
    (root / "recor" / "readers").mkdir()
    (root / "recor" / "readers" / "__init__.py").write_text("", encoding="utf-8")
    assert eval_floor_plan_problems(root) == ["eval/recor/readers: unexpected package"]


def test_the_llm_resource_is_a_package():
    package = ROOT / "resources" / "llm"
    assert {p.stem for p in package.glob("*.py")} >= {"__init__", "registry", "embedded", "cache", "resource"}
    assert not (ROOT / "resources" / "llm.py").exists()


MAX_FILE_LINES, MAX_FUNCTION_LINES = 600, 80
SIZED = ("resources", "assets", "checks", "pipelines", "bench", "examples")


def size_problems(root: Path, dirs: tuple[str, ...] = SIZED) -> list[str]:
    """Modules over MAX_FILE_LINES and functions (methods, nested ones) over MAX_FUNCTION_LINES,
    counted as formatted, decorators excluded."""
    problems = []
    for path in sorted(p for d in dirs for p in (root / d).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root).as_posix()
        if (lines := len(text.splitlines())) > MAX_FILE_LINES:
            problems.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if (lines := node.end_lineno - node.lineno + 1) > MAX_FUNCTION_LINES:
                    problems.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    return problems


def test_every_module_and_function_is_within_its_size():
    assert not size_problems(ROOT)


def test_a_long_module_and_a_long_function_are_found(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "long.py").write_text(
        f"def fits():\n{body[: body.rfind(chr(10))]}\n\n\ndef too_long():\n{body}\n"
    )
    (tmp_path / "assets" / "big.py").write_text("x = 1\n" * (MAX_FILE_LINES + 1))
    assert size_problems(tmp_path, ("assets",)) == ["assets/big.py: 601 lines", "assets/long.py:83 too_long: 81 lines"]
