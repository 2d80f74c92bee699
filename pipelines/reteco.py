"""RECOR as RETECO (SemEval-2027 Task 1) Track 2 scores it, from the command line.

    python -m pipelines.reteco check --release DIR [--domain D ...] [--generation] FILE ...
    python -m pipelines.reteco score --release DIR [--domain D ...] [--out DIR] RUN ...
    python -m pipelines.reteco export --release DIR --out DIR [RUN ...]

``check`` validates run files (or, with ``--generation``, generation files) against a
release in the published layout (a folder or ``s3://`` prefix holding
``data/benchmark/<domain>_benchmark.jsonl`` and ``data/corpus/<domain>_documents.jsonl``):
every problem with its line, then what the scorer will do. ``score`` prints the official
table (binary nDCG@10 macro-averaged over the target turns, with MAP@10, Recall@10 and MRR),
the per-domain and per-depth tables, and writes them as CSV under ``--out``. ``export`` writes
the release's qrels and the given runs with the task's query ids. Exit status 1 when a file
is not scorable. The rules are ``assets/eval/reteco.py``'s.
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import polars as pl

from assets.eval import reteco
from resources.storage import read_bytes

SHOWN_PER_KIND = 10


def _print(*lines: str) -> None:
    print(*lines, sep="\n", flush=True)


def report(checked: reteco.Checked) -> str:
    """The problems of one file, at most ``SHOWN_PER_KIND`` per kind (the rest counted),
    then the summary."""
    by_kind = collections.defaultdict(list)
    for problem in checked.problems:
        by_kind[problem.kind].append(problem)
    lines = []
    for kind, problems in by_kind.items():
        lines += [f"{checked.source}: {p}" for p in problems[:SHOWN_PER_KIND]]
        if len(problems) > SHOWN_PER_KIND:
            lines.append(f"{checked.source}: ... {len(problems) - SHOWN_PER_KIND:,} more [{kind}]")
    return "\n".join([*lines, checked.summary()])


def _check(path: str, targets: reteco.Targets, generation: bool) -> reteco.Checked:
    data = read_bytes(path)
    return (reteco.check_generation if generation else reteco.check_run)(data, path, targets)


def _table(frame: pl.DataFrame) -> str:
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=4, tbl_hide_dataframe_shape=True,
                   tbl_hide_column_data_types=True, tbl_formatting="MARKDOWN"):
        return str(frame)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("check", "validate run or generation files"), ("score", "score run files"),
                       ("export", "write the qrels and runs with the task's query ids")):
        command = commands.add_parser(name, help=text)
        command.add_argument("--release", required=True, help="the release: a folder or s3:// prefix in the published layout")
        command.add_argument("--domain", action="append", help="a domain to check against (repeatable; default: every "
                                                                "domain the release holds)")
        if name == "check":
            command.add_argument("--generation", action="store_true", help="the files are generation files (JSONL)")
        if name in ("score", "export"):
            command.add_argument("--out", help="folder for the tables (score) or the files (export)")
        command.add_argument("files", nargs="*" if name == "export" else "+")
    args = parser.parse_args(argv)
    if args.command == "export" and not args.out:
        parser.error("export needs --out")

    targets = reteco.release_targets(args.release, args.domain, log=lambda line: print(line, file=sys.stderr))
    print(f"{targets.turns.height:,} target turns, {len(targets.documents):,} documents", file=sys.stderr)
    checked = [_check(path, targets, getattr(args, "generation", False)) for path in args.files]
    if args.command == "check" or any(not c.ok for c in checked):
        for c in checked:
            _print(report(c))
        return 0 if all(c.ok for c in checked) else 1

    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    if args.command == "export":
        (out / "qrels.txt").write_text(reteco.qrels_text(targets), encoding="utf-8")
        for c in checked:
            lines = [f"{reteco.to_task_qid(q)} Q0 {d} {rank} {1.0 / rank:.6f} {c.run_id}"
                     for q, docs in sorted(c.rankings.items()) for rank, d in enumerate(docs, start=1)]
            (out / Path(c.source).name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        _print(f"wrote {out / 'qrels.txt'} and {len(checked)} run files under {out}")
        return 0

    for c in checked:
        print(c.summary(), file=sys.stderr)
    scores = pl.concat([reteco.run_scores(c, targets) for c in checked])
    tables = {"official": reteco.official_table(scores), "by_domain": reteco.domain_table(scores),
              "by_depth": reteco.depth_table(scores)}
    _print("Official: binary nDCG@10 per target turn, macro-averaged over the turns (a missing turn scores 0)", "",
           _table(tables["official"]), "", "nDCG@10 per domain (diagnostic)", "", _table(tables["by_domain"]), "",
           "nDCG@10 by conversation depth (diagnostic)", "", _table(tables["by_depth"]))
    if out:
        for name, table in tables.items():
            table.write_csv(out / f"{name}.csv")
        scores.write_csv(out / "turn_scores.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
