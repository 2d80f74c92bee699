"""Code versions follow the prompts: every prompt file is followed by some asset's code
version, every prompt the code loads by name is declared, and a version bump changes it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from assets.common import prompts

ROOT = Path(__file__).resolve().parents[3]
ASSETS = ROOT / "assets"
# prompt names the code loads literally: recor_prompt("x"), load_prompt("b", "x"), ask_yes_no(model, "x")
LOADED = re.compile(r'(?:(?<!load)_prompt\(|load_prompt\("(\w+)", |ask_yes_no\(\s*[\w.]+,\s*)"(\w+)"')


def prompt_files() -> set[str]:
    return {f"{p.parent.parent.name}/{p.stem}" for p in ASSETS.glob("*/prompts/*.yaml")}


def test_every_prompt_file_is_followed_by_an_asset_code_version():
    import pipelines.definitions  # noqa: F401  (loading the assets declares their prompts)

    assert not sorted(prompt_files() - prompts.DECLARED), "prompt files no asset's code_version follows"
    assert not sorted(prompts.DECLARED - prompt_files()), "declared prompts without a file"


def test_every_prompt_the_code_loads_by_name_is_declared():
    import pipelines.definitions  # noqa: F401

    used = set()
    for module in ASSETS.rglob("*.py"):
        benchmark = module.relative_to(ASSETS).parts[0]
        for explicit, name in LOADED.findall(module.read_text(encoding="utf-8")):
            used.add(f"{explicit or benchmark}/{name}")
    assert used, "the pattern found no prompt loads"
    assert not sorted(used - prompts.DECLARED), "prompts loaded in code that no code_version follows"


def test_a_version_bump_changes_the_code_version(tmp_path, monkeypatch):
    folder = tmp_path / "demo" / "prompts"
    folder.mkdir(parents=True)
    path = folder / "ask.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "user": "{q}?"}))
    monkeypatch.setattr(prompts, "ROOT", tmp_path)
    prompts.load_prompt.cache_clear()
    before = prompts.code_version("1", "demo/ask")
    path.write_text(yaml.safe_dump({"version": 2, "user": "{q}?"}))
    prompts.load_prompt.cache_clear()
    after = prompts.code_version("1", "demo/ask")
    prompts.load_prompt.cache_clear()
    assert before != after and before.startswith("1-") and prompts.code_version("3") == "3"
