"""The scale probe's inputs (``bench/scale.py``): the papers' sizes and models, the synthetic
source sets in the real input formats, and the registry, retrievers and rerankers that make
every model role an alias of the stand-in server."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The papers' sizes.
QUIT_QUESTIONS = 7_401
PASSAGES_PER_QUESTION = 325
RECOR_LARGEST_DOMAIN = 121_249  # earth_science
RECOR_DOCUMENTS = 507_141
RECOR_TURNS = 2_971
WIKIPROFILE_PAGES = 10_000
WIKIPROFILE_FACTS = 5_000
RECOR_DOMAIN = "earth_science"

# The sample records that exist to be rejected (data/quit/README.md, "Deliberate filter
# cases"): they join every source set once, so each filter's path runs; a duplicate only
# with the record it duplicates.
SELF_REJECTED = {"Q_sample_125", "Q_sample_126", "Q_sample_127", "Q_sample_128", "sample_13", "sample_14"}
DUPLICATES = {"Q_sample_129": "Q_sample_115"}  # and the second Q_sample_103, the file's last record

# The paper's models (QUIT 3.2.2 and 4; RECOR; WikiProfile), every one an alias of the stand-in.
LABELERS = ["gemma3-1b", "qwen3-4b", "llama3.1-8b"]
READERS = ["llama3.2-1b", "gemma3-4b", "qwen3-8b"]
JUDGE, BUILDER = "gpt-4o", "gemini-2.5-pro"
# The labeling client's batch mode: the registry chooses it per model (issue 27), and the
# stand-in batch runner answers the batch file as the stand-in server answers requests.
# ``{input}`` and ``{output}`` are the OpenAI batch files.
BATCH_COMMAND = [sys.executable, "-m", "tests.standin_batch", "-i", "{input}", "-o", "{output}"]


# --- synthetic source sets ------------------------------------------------------------------


def _tag(k: int) -> str:
    """A capitalised pseudo-word per copy (1 -> Be, 2 -> Bi, 70 -> Beba): a mark a tagger
    reads as part of a name, with no digits to pass for a date or a number."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    parts = []
    while True:
        k, s = divmod(k, len(syllables))
        parts.append(syllables[s])
        if not k:
            return "".join(reversed(parts)).capitalize()


def quit_sources(n: int, folder: Path) -> tuple[str, str]:
    """TriviaHG and WikiHint files holding ``n`` clean questions (the sample's 36, two
    TriviaHG to one WikiHint, copy k >= 1 with ids ``<id>_s<k>`` and `` (variant k)`` after
    the question) and the sample's deliberate rejects."""
    trivia = json.loads((ROOT / "data/quit/triviahg_sample.json").read_text())
    wiki = json.loads((ROOT / "data/quit/wikihint_sample.json").read_text())
    seen, clean_trivia = set(), []
    for r in trivia:
        if r["Q_ID"] not in SELF_REJECTED | set(DUPLICATES) and r["Q_ID"] not in seen:
            clean_trivia.append(r)
        seen.add(r["Q_ID"])
    clean_wiki = [r for r in wiki if r["id"] not in SELF_REJECTED]
    order = [r for i in range(len(clean_wiki)) for r in (*clean_trivia[2 * i : 2 * i + 2], clean_wiki[i])]
    order += clean_trivia[2 * len(clean_wiki) :]
    out_trivia, out_wiki = [], []
    for i in range(n):
        k, record = divmod(i, len(order))[0], json.loads(json.dumps(order[i % len(order)]))
        if "Q_ID" in record:
            if k:
                record["Q_ID"] += f"_s{k}"
                record["Question"] += f" (variant {k})"
            out_trivia.append(record)
        else:
            if k:
                record["id"] += f"_s{k}"
                record["question"]["question"] += f" (variant {k})"
            out_wiki.append(record)
    chosen = {r["Q_ID"] for r in out_trivia}
    out_trivia += [r for r in trivia if r["Q_ID"] in SELF_REJECTED]
    out_trivia += [r for r in trivia if DUPLICATES.get(r["Q_ID"]) in chosen]
    if trivia[-1]["Q_ID"] in chosen:
        out_trivia.append(trivia[-1])
    out_wiki += [r for r in wiki if r["id"] in SELF_REJECTED]
    paths = folder / "triviahg.json", folder / "wikihint.json"
    for path, records in zip(paths, (out_trivia, out_wiki)):
        path.write_text(json.dumps(records))
    return str(paths[0]), str(paths[1])


def recor_release(documents: int, turns: int, folder: Path) -> str:
    """A RECOR release of one domain in the published layout: the release sample's documents
    (both domains) copied to ``documents`` (copy k >= 1: id ``r<k>/<id>``, `` (r<k>)`` after the
    text), and its conversations copied until they hold ``turns`` turns, copy c's gold
    documents those of document copy c."""
    sample = ROOT / "data/releases/recor/data"
    docs = [
        json.loads(line)
        for f in sorted((sample / "corpus").glob("*_documents.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    conversations = [
        json.loads(line)
        for f in sorted((sample / "benchmark").glob("*_benchmark.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    copies = max(1, documents // len(docs))

    def doc_id(k: int, original: str) -> str:
        return f"r{k}/{original}" if k else original

    (folder / "data/corpus").mkdir(parents=True)
    (folder / "data/benchmark").mkdir(parents=True)
    with open(folder / "data/corpus" / f"{RECOR_DOMAIN}_documents.jsonl", "w") as f:
        for i in range(documents):
            k, d = divmod(i, len(docs))
            f.write(
                json.dumps(
                    {"doc_id": doc_id(k, docs[d]["doc_id"]), "content": docs[d]["content"] + (f" (r{k})" if k else "")}
                )
                + "\n"
            )
    written = 0
    with open(folder / "data/benchmark" / f"{RECOR_DOMAIN}_benchmark.jsonl", "w") as f:
        for c in itertools.count():
            for conv in conversations:
                if written >= turns:
                    return str(folder)
                conv = json.loads(json.dumps(conv))
                conv["id"] = f"{conv['id']}_c{c}" if c else conv["id"]
                conv["task"] = RECOR_DOMAIN
                for t in conv["turns"]:
                    t["gold_doc_ids"] = [doc_id(c % copies, g) for g in t["gold_doc_ids"]]
                f.write(json.dumps(conv) + "\n")
                written += len(conv["turns"])
    raise AssertionError("unreachable")


def wikiprofile_pages(n: int, folder: Path) -> str:
    """``n`` page summaries: the sample's 45, copy k >= 1 with a pseudo-word after the title,
    in the title and wherever the summary names it."""
    pages = [
        json.loads(line) for line in (ROOT / "data/wikiprofile/pages.jsonl").read_text().splitlines() if line.strip()
    ]
    path = folder / "pages.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            k, page = divmod(i, len(pages))[0], dict(pages[i % len(pages)])
            if k:
                title = f"{page['title']} {_tag(k)}"
                page["summary"] = page["summary"].replace(page["title"], title)
                page["title"] = title
            f.write(json.dumps(page) + "\n")
    return str(path)


# --- the registry ---------------------------------------------------------------------------


def registry_yaml(url: str, labelers: list[str], mode: str) -> str:
    """Every role's alias a ``vllm`` entry at the stand-in; the labelers in ``mode``."""

    def entry(alias: str) -> str:
        fields = [
            f"model: hosted_vllm/{alias}",
            "backend: vllm",
            f"api_base: '{url}'",
            "thinking: cot",
            "sampling: {temperature: 0.0, max_tokens: 64}",
        ]
        if mode == "batch" and alias in labelers:
            fields += ["mode: batch", f"batch_command: {json.dumps(BATCH_COMMAND)}"]
        return f"  {alias}: {{{', '.join(fields)}}}"

    models = [*labelers, *READERS, JUDGE, BUILDER]
    return (
        "\n".join(
            [
                "models:",
                *map(entry, models),
                "roles:",
                f"  quit: {{labelers: [{', '.join(labelers)}], readers: [{', '.join(READERS)}], judge: {JUDGE}}}",
                f"  recor: {{builder: {BUILDER}, judge: {JUDGE}, generators: [{READERS[-1]}]}}",
                f"  wikiprofile: {{builder: {BUILDER}, grader: {BUILDER}, subjects: [{READERS[-1]}]}}",
            ]
        )
        + "\n"
    )


def rerankers_yaml() -> str:
    """The project's rerankers, the LLM ones on the paper's largest reader: the registry
    must name every model a reranker asks (the rerankers are partitions, read at start-up)."""
    import yaml

    raw = yaml.safe_load((ROOT / "resources/rerankers.yaml").read_text())
    for spec in raw["rerankers"].values():
        if "model" in spec:
            spec["model"] = READERS[-1]
    return yaml.safe_dump(raw)


def retrievers_yaml(names: list[str]) -> str:
    specs = {
        "bm25": "{kind: bm25, k1: 0.9, b: 0.4}",
        "minilm": "{kind: dense, encoder: minilm}",
        "e5-small": "{kind: dense, encoder: e5-small}",
        "minilm-static": "{kind: dense, encoder: minilm-static}",
    }
    return "retrievers:\n" + "".join(f"  {n}: {specs[n]}\n" for n in names)
