"""Checking and scoring a SemEval-2027 RETECO Track 2 submission at the release's full size.

Writes a synthetic RECOR release in the published layout with the release's counts per
domain (11 domains, 2,971 turns, 507,141 documents; the bundled sample's conversations and
documents copied with new ids, their record shapes unchanged) and a run file of 100 documents
for every turn (its gold documents at seeded ranks among other documents of its domain, a
few duplicates and unknown documents, and 1% of the turns left out). Then runs the two
commands a participant runs, each in its own process, and reports wall time, CPU time and
peak RSS:

    python -m pipelines.reteco check --release R run.trec
    python -m pipelines.reteco score --release R run.trec

    .venv/bin/python bench/reteco_scale.py [--scale 1.0] [--scratch /tmp/reteco_scale] [--keep] [--write-only]

``--scale`` shrinks every domain's counts (0.1: a tenth) for a quick look.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The release's counts per domain (published split names): conversations, turns, documents.
COUNTS = {
    "biology": (85, 362, 57_359),
    "earth_science": (98, 454, 121_249),
    "economics": (74, 288, 50_220),
    "psychology": (84, 333, 52_835),
    "robotics": (68, 259, 61_961),
    "sustainable_living": (78, 319, 60_792),
    "Drones": (37, 142, 16_381),
    "hardware": (46, 188, 26_308),
    "law": (50, 230, 20_027),
    "medicalsciences": (44, 183, 23_297),
    "politics": (43, 213, 16_712),
}
RUN_DEPTH = 100


def sample() -> tuple[list[dict], list[dict]]:
    base = ROOT / "data/releases/recor/data"
    docs = [
        json.loads(line)
        for f in sorted((base / "corpus").glob("*_documents.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    conversations = [
        json.loads(line)
        for f in sorted((base / "benchmark").glob("*_benchmark.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip()
    ]
    return docs, conversations


def write_release(folder: Path, scale: float) -> dict[str, list[tuple[str, list[str]]]]:
    """The release under ``folder``; returns each domain's turns as (task query id, gold ids)."""
    docs, conversations = sample()
    (folder / "data/corpus").mkdir(parents=True)
    (folder / "data/benchmark").mkdir(parents=True)
    turns_of: dict[str, list[tuple[str, list[str]]]] = {}
    for domain, (_, turns, documents) in COUNTS.items():
        turns, documents = max(3, int(turns * scale)), max(len(docs), int(documents * scale))
        ids = []
        with open(folder / "data/corpus" / f"{domain}_documents.jsonl", "w") as f:
            for i in range(documents):
                k, d = divmod(i, len(docs))
                ids.append(f"{domain}/{k}/{docs[d]['doc_id']}")
                f.write(json.dumps({"doc_id": ids[-1], "content": f"{docs[d]['content']} ({domain} {k})"}) + "\n")
        written, out = 0, []
        with open(folder / "data/benchmark" / f"{domain}_benchmark.jsonl", "w") as f:
            for c in range(10**9):
                for conv in conversations:
                    if written >= turns:
                        break
                    conv = json.loads(json.dumps(conv))
                    conv["id"], conv["task"] = f"{domain}_{conv['id']}_{c}", domain
                    copy = c % (documents // len(docs))
                    for t in conv["turns"]:
                        t["gold_doc_ids"] = [f"{domain}/{copy}/{g}" for g in t["gold_doc_ids"]]
                        out.append((f"{conv['id']}#turn{t['turn_id']}", t["gold_doc_ids"]))
                    f.write(json.dumps(conv) + "\n")
                    written += len(conv["turns"])
                if written >= turns:
                    break
        turns_of[domain] = (out, ids)
    return turns_of


def write_run(path: Path, turns_of: dict, seed: int = 13) -> dict[str, int]:
    rng, counts = random.Random(seed), {"turns": 0, "left_out": 0, "lines": 0}
    with open(path, "w") as f:
        for domain, (turns, ids) in turns_of.items():
            for qid, gold in turns:
                counts["turns"] += 1
                if rng.random() < 0.01:
                    counts["left_out"] += 1
                    continue
                ranked = rng.sample(ids, RUN_DEPTH)
                for g in gold:
                    if g not in ranked:
                        ranked[rng.randrange(RUN_DEPTH)] = g
                if rng.random() < 0.02:
                    ranked.insert(5, ranked[2])  # a duplicate
                if rng.random() < 0.02:
                    ranked.insert(7, f"{domain}/elsewhere/unknown.txt")
                for rank, doc in enumerate(ranked, start=1):
                    f.write(f"{qid} Q0 {doc} {rank} {1000 - rank} bench\n")
                    counts["lines"] += 1
    return counts


def timed(command: list[str]) -> dict:
    """Wall and CPU seconds and peak RSS of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return {
        "status": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "output": output,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--scratch", default="/tmp/reteco_scale")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--write-only",
        action="store_true",
        help="write the release and the run file under --scratch and stop (for bench/scale.py --recor-release)",
    )
    args = parser.parse_args()
    scratch = Path(args.scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    t = time.perf_counter()
    turns_of = write_release(scratch / "release", args.scale)
    run = write_run(scratch / "bench.trec", turns_of)
    size = sum(f.stat().st_size for f in (scratch / "release").rglob("*.jsonl"))
    documents = sum(len(ids) for _, ids in turns_of.values())
    print(
        f"release: {len(turns_of)} domains, {run['turns']:,} turns, {documents:,} documents, {size / 2**20:,.0f} MiB "
        f"({time.perf_counter() - t:.0f}s to write); run: {run['lines']:,} lines, {run['left_out']} turns left out"
    )
    if args.write_only:
        print(f"release at {scratch / 'release'}, run file {scratch / 'bench.trec'}")
        return
    for command in ("check", "score"):
        result = timed(
            [
                sys.executable,
                "-m",
                "pipelines.reteco",
                command,
                "--release",
                str(scratch / "release"),
                str(scratch / "bench.trec"),
            ]
        )
        tail = "\n".join(result.pop("output").strip().splitlines()[-14:])
        print(f"{command}: {result}\n{tail}\n")
    print(f"this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
