"""The README fits a screen or two and sends the reader into the documentation site; what it
held before issue 50 (1,450 lines) moved to the site's pages, section by section."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# Each section heading of the README before issue 50, and the page of docs/ it moved to (the
# checklist of the move: a heading dropped from its page fails here).
MOVED = {
    "Two commands": "getting-started.md",
    "The papers' configuration is the default; `make run` is the demo": "getting-started.md",
    "The QUIT build (paper sections 3.1-3.2)": "benchmarks/quit.md",
    "Your own system on the published benchmarks": "evaluate/your-system.md",
    "Evaluation on QUIT (paper sections 4-5)": "benchmarks/quit.md",
    "RECOR (conversational reasoning retrieval; paper sections 3-4)": "benchmarks/recor.md",
    "SemEval-2027 RETECO Track 2": "benchmarks/reteco.md",
    "WikiProfile (knowledge profiling; paper sections 2-5)": "benchmarks/wikiprofile.md",
    "WikiProfile from Wikipedia": "benchmarks/wikiprofile.md",
    "Operating it: web UI, backfills, sensors, schedules": "operate/operating.md",
    "Models": "models.md",
    "Storage": "operate/storage.md",
    "Sharing a build": "build/sharing.md",
    "Evaluating on another dataset": "evaluate/another-dataset.md",
    "Uncertainty": "evaluate/uncertainty.md",
    "Data-quality checks": "operate/checks.md",
    "From one machine to a cluster": "operate/cluster.md",
    "A deployment a team can share": "operate/cluster.md",
    "What a run may set, and what only the deployment sets": "operate/security.md",
    "Checking a GPU host": "operate/gpu-host.md",
    "Layout": "layout.md",
}


def headings(text: str) -> set[str]:
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def test_the_readme_fits_on_a_screen_or_two():
    assert len(README.read_text().splitlines()) < 150


def test_every_old_section_is_a_heading_of_the_page_it_moved_to():
    moved = [(h, page) for h, page in MOVED.items() if h not in headings((ROOT / "docs" / page).read_text())]
    assert not moved, f"sections no page holds any longer: {moved}"


def test_every_page_the_readme_links_exists_and_every_guide_is_linked():
    links = re.findall(r"\]\((docs/[^)#]+)", README.read_text())
    assert links and not [link for link in links if not (ROOT / link).is_file()]
    guides = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if "reference" not in p.parts}
    assert not guides - set(links) - {"docs/index.md"}, "a page the README does not send anyone to"


def test_the_readmes_test_command_is_what_ci_runs():
    assert "make test " in README.read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()[-1]
