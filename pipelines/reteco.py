"""RECOR as RETECO (SemEval-2027 Task 1) Track 2 scores it, from the command line.

    python -m pipelines.reteco check --release DIR [--domain D ...] [--generation] FILE ...
    python -m pipelines.reteco score --release DIR [--domain D ...] [--out DIR] RUN ...
    python -m pipelines.reteco export --release DIR --out DIR [RUN ...]
    python -m pipelines.reteco judge --release DIR --subtrack 2b|2c [--run RUN] [--judge ALIAS] [--out DIR] GEN ...

``check`` validates run files (or, with ``--generation``, generation files) against a
release in the published layout (a folder or ``s3://`` prefix holding
``data/benchmark/<domain>_benchmark.jsonl`` and ``data/corpus/<domain>_documents.jsonl``):
every problem with its line, then what the scorer will do. ``score`` prints the official
table (binary nDCG@10 macro-averaged over the target turns, with MAP@10, Recall@10 and MRR;
a row per file, named by its run id and, where two files share one, the file), each metric
per domain and per depth, and writes them as CSV under ``--out``. ``export`` writes
the release's qrels and the given runs with the task's query ids. ``judge`` rates generation
files on the task's five dimensions with an LLM judge (``assets/eval/recor/reteco/steps.py``): the
faithfulness prompt shows the turn's gold passages (2b) or the top five of ``--run`` (2c); it
prints the generation table (the five normalized dimensions, their macro average, ROUGE-L,
METEOR and BERTScore F1, turns judged, judge failures) and writes it, the per-turn scores and
every judgment as CSV under ``--out``. The judge is the registry's ``recor.judge`` (the
embedded model by default) or ``--judge``. Exit status 1 when a file is not scorable, 2 when
the release cannot be read as asked (the message says why and what to do). The rules are
``assets/eval/recor/reteco/rules.py``'s.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
from pathlib import Path

import polars as pl

from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from resources.llm import CallStats, LLMResource
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
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=200,
        float_precision=4,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_formatting="MARKDOWN",
    ):
        return str(frame)


def _system_names(checked: list[reteco.Checked]) -> list[str]:
    """Each generation file's name in the tables: its file name without the extension, or
    the whole path where two files share one."""
    stems = [Path(c.source).stem for c in checked]
    return stems if len(set(stems)) == len(stems) else [c.source for c in checked]


def _run_names(checked: list[reteco.Checked]) -> list[str]:
    """Each run file's name in the tables: its run id, with the file's name beside it where
    two files say one run id (the file's whole path where they share the name too)."""
    ids = [c.run_id or c.source for c in checked]
    shared = {i for i in ids if ids.count(i) > 1}
    names = [f"{i} ({Path(c.source).name})" if i in shared else i for i, c in zip(ids, checked)]
    if len(set(names)) < len(names):
        names = [f"{i} ({c.source})" if i in shared else i for i, c in zip(ids, checked)]
    return names


def _judge(
    args: argparse.Namespace,
    targets: reteco.Targets,
    checked: list[reteco.Checked],
    run: reteco.Checked | None,
    llm: LLMResource,
) -> int:
    """Judge each checked generation file, print the table and write the CSVs."""
    err = sys.stderr
    judge = llm.named(args.judge) if args.judge else llm.model("recor.judge")
    turns = reteco_judge.release_turns(args.release, targets)
    passages = reteco_judge.passage_ids(turns, args.subtrack, run.rankings if run else None)
    texts = reteco_judge.passage_texts(
        args.release, turns["domain"].unique(maintain_order=True), {d for ids in passages.values() for d in ids}
    )
    stats = CallStats()
    scores, judgments = [], []
    for c, system in zip(checked, _system_names(checked)):
        print(c.summary(), file=err)
        items = reteco_judge.judge_items(turns, c.answers, passages, texts)
        print(
            f"{system}: judging {len(items):,} answers on {len(reteco.DIMENSIONS)} dimensions with {judge.alias}",
            file=err,
        )
        judged = reteco_judge.judge(items, judge, stats, log=lambda line: print(line, file=err))
        diagnostic = None if args.no_diagnostics else reteco_judge.diagnostics(items)
        scores.append(
            reteco_judge.turn_scores(reteco_judge.judged_turns(judged), targets, system, args.subtrack, diagnostic)
        )
        judgments.append(judged.with_columns(pl.lit(system).alias("system")))
    scores, judgments = pl.concat(scores), pl.concat(judgments)
    table = reteco_judge.judge_table(scores)
    failed = judgments.filter(pl.col("score").is_null())
    for row in failed.head(SHOWN_PER_KIND).iter_rows(named=True):
        print(
            f"{row['system']}: {reteco.to_task_qid(row['qid'])} {row['dimension']}: no score ({row['reason']}); "
            "scored 0",
            file=err,
        )
    if failed.height > SHOWN_PER_KIND:
        print(f"... {failed.height - SHOWN_PER_KIND:,} more dimensions without a score", file=err)
    read = {where: judgments.filter(pl.col("read_from") == where).height for where in reteco_judge.READ_FROM}
    print(
        f"judge calls: {stats.calls:,} ({stats.cached:,} from the cache), {stats.parse_failures:,} unparsable "
        f"replies ({read['log-probs']:,} of them read from the log-probabilities), {stats.errors:,} failed calls",
        file=err,
    )
    evidence = (
        "the turn's gold passages"
        if args.subtrack == "2b"
        else f"the top {reteco_judge.TOP_K} passages of {run.source}"
    )
    _print(
        f"Sub-track {args.subtrack}: five judged dimensions, each 1-5 normalized as (s - 1) / 4 and averaged over "
        "the target turns (a turn without an answer, or a dimension without a score, is 0); macro: their mean. "
        f"Faithfulness to {evidence}.",
        "ROUGE-L, METEOR, BERTScore F1 against the reference answer: diagnostics"
        + (" (not computed: --no-diagnostics)" if args.no_diagnostics else " (a turn without an answer is 0)"),
        "",
        _table(table),
    )
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.write_csv(out / f"generation_{args.subtrack}.csv")
        scores.write_csv(out / f"generation_{args.subtrack}_turns.csv")
        judgments.write_csv(out / f"judgments_{args.subtrack}.csv")
    return 0


def default_llm() -> LLMResource:
    """The LLM resource the jobs get (``pipelines/resources.py``): the registry file named by
    ``BENCHFOUNDRY_MODELS`` (the project's by default) and the answer cache under
    ``BENCHFOUNDRY_CACHE``, so a judgment made in a job is not asked again here."""
    return LLMResource(cache_dir=os.path.join(os.environ.get("BENCHFOUNDRY_CACHE", ".cache"), "llm"))


def arguments() -> argparse.ArgumentParser:
    """The commands and their flags."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("check", "validate run or generation files"),
        ("score", "score run files"),
        ("export", "write the qrels and runs with the task's query ids"),
        ("judge", "judge generation files (sub-tracks 2b, 2c)"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument(
            "--release",
            required=True,
            help="the release: a folder (relative to the current one) or s3:// prefix in the published layout",
        )
        command.add_argument(
            "--domain",
            action="append",
            help="a domain to check against (repeatable; default: every domain the release holds, "
            "and a release file that no domain reads is an error)",
        )
        if name == "check":
            command.add_argument("--generation", action="store_true", help="the files are generation files (JSONL)")
        if name in ("score", "export", "judge"):
            command.add_argument("--out", help="folder for the tables (score, judge) or the files (export)")
        if name == "judge":
            command.add_argument(
                "--subtrack",
                required=True,
                choices=reteco_judge.SUBTRACKS,
                help="2b: faithfulness to the gold passages; 2c: to the top five of --run",
            )
            command.add_argument(
                "--run",
                help="2c: the system's run file (TREC), whose top five passages per turn "
                "the answers were generated from",
            )
            command.add_argument("--judge", help="model alias of the judge (default: the registry's recor.judge)")
            command.add_argument(
                "--no-diagnostics",
                action="store_true",
                help="skip ROUGE-L, METEOR and BERTScore (they load WordNet and an encoder)",
            )
        command.add_argument("files", nargs="*" if name == "export" else "+")
    return parser


def main(argv: list[str] | None = None, llm: LLMResource | None = None) -> int:
    parser = arguments()
    args = parser.parse_args(argv)
    if args.command == "export" and not args.out:
        parser.error("export needs --out")
    if args.command == "judge" and (args.subtrack == "2c") != bool(args.run):
        parser.error("sub-track 2c needs --run (the answers' top five passages); 2b takes none (gold passages)")

    # A relative path is the user's, from where the command runs (not the project's folder).
    args.release = args.release if "://" in args.release else os.path.abspath(os.path.expanduser(args.release))
    try:
        targets = reteco.release_targets(args.release, args.domain, log=lambda line: print(line, file=sys.stderr))
    except (OSError, ValueError) as e:
        print(f"reteco {args.command}: error: {e}", file=sys.stderr)
        return 2
    print(targets.coverage(), file=sys.stderr)
    judging = args.command == "judge"
    checked = [_check(path, targets, judging or getattr(args, "generation", False)) for path in args.files]
    run = _check(args.run, targets, False) if judging and args.run else None
    files = [*checked, *([run] if run else [])]
    if args.command == "check" or not all(c.ok for c in files):
        for c in files:
            _print(report(c))
        return 0 if all(c.ok for c in files) else 1
    if judging:
        if run:
            print(run.summary(), file=sys.stderr)
        return _judge(args, targets, checked, run, llm or default_llm())

    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    if args.command == "export":
        return _export(out, targets, checked)
    return _score(out, targets, checked)


def _export(out: Path, targets: reteco.Targets, checked: list[reteco.Checked]) -> int:
    """``export``: the qrels and the checked runs under ``out``, with the task's query ids."""
    (out / "qrels.txt").write_text(reteco.qrels_text(targets), encoding="utf-8")
    for c in checked:
        lines = [
            f"{reteco.to_task_qid(q)} Q0 {d} {rank} {1.0 / rank:.6f} {c.run_id}"
            for q, docs in sorted(c.rankings.items())
            for rank, d in enumerate(docs, start=1)
        ]
        (out / Path(c.source).name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    _print(f"wrote {out / 'qrels.txt'} and {len(checked)} run files under {out}")
    return 0


def _score(out: Path | None, targets: reteco.Targets, checked: list[reteco.Checked]) -> int:
    """``score``: the official and diagnostic tables of the checked runs, printed and, with ``out``, written there."""
    for c in checked:
        print(c.summary(), file=sys.stderr)
    try:
        scores = reteco.score_runs((name, c, targets) for name, c in zip(_run_names(checked), checked))
    except ValueError as e:  # one file given twice
        print(f"reteco score: error: {e}", file=sys.stderr)
        return 2
    breakdown = reteco.breakdown_tables(scores)
    tables = {"official": reteco.official_table(scores), **{name: table for name, (_, table) in breakdown.items()}}
    _print(
        "Official: binary nDCG@10 per target turn, macro-averaged over the turns (a missing turn scores 0)",
        "",
        _table(tables["official"]),
        *(line for title, table in breakdown.values() for line in ("", title, "", _table(table))),
    )
    if out:
        for name, table in tables.items():
            table.write_csv(out / f"{name}.csv")
        scores.write_csv(out / "turn_scores.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
