"""``make run``: materialize the default QUIT, RECOR and WikiProfile builds and their
evaluations on the bundled samples, stage by stage,
into the project's Dagster instance (so the UI shows every materialization), then print
where everything is."""

from __future__ import annotations

import argparse
import os
import sys
import time

import dagster as dg
import polars as pl

from assets.eval.quit import rerank_partitions, retriever_partitions
from assets.eval.recor import recor_eval_partitions
from assets.partitions import QUIT_LABELERS, QUIT_MODELS, QUIT_READERS, recor_domain_partitions
from assets.quit.settings import QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.profile_assets import subject_partitions
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, RECOR_STAGES, WIKIPROFILE_STAGES
from resources.llm import role_aliases
from resources.storage import join, read_parquet, storage_root

PARTITIONS = {"models": QUIT_MODELS, "labelers": QUIT_LABELERS, "readers": QUIT_READERS,
              "retrievers": retriever_partitions.get_partition_keys(),
              "reranks": rerank_partitions.get_partition_keys(),
              "domains": recor_domain_partitions.get_partition_keys(),
              "recor_runs": recor_eval_partitions.get_partition_keys()}
# The default run builds RECOR from one source question per domain (the sample has two or
# three): the embedded model spends about a minute and a half per question.
RECOR_QUESTIONS = 1
# WikiProfile's default run reads this many of the sample's pages, keeps at most this many
# facts and samples each question this many times (the paper: 10,000 pages, 5,000 facts,
# 8 samples). The embedded model spends about 6 s of construction per page and 11 s of
# sampling per fact and sample.
WIKIPROFILE_PAGES = 12
WIKIPROFILE_FACTS = 8
WIKIPROFILE_SAMPLES = 4
BENCHMARKS = ("quit", "recor", "wikiprofile")
# Step events stay in the instance (the UI shows them); the terminal gets INFO and above.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def run_stages(defs: dg.Definitions, instance: dg.DagsterInstance, stages=QUIT_STAGES, log=print) -> bool:
    """Execute the stage jobs in order, each partitioned stage once per partition key."""
    for job_name, partitions in stages:
        job = defs.resolve_job_def(job_name)
        for key in PARTITIONS[partitions] if partitions else [None]:
            label = f"{job_name}[{key}]" if key else job_name
            t = time.monotonic()
            result = job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False, run_config=QUIET)
            log(f"{label}: {'ok' if result.success else 'FAILED'} in {time.monotonic() - t:.0f}s")
            if not result.success:
                for event in result.all_events:
                    if event.is_failure:
                        print(event.message, file=sys.stderr)
                return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-labeled-questions", type=int, default=QuitSettings().max_labeled_questions,
                        help="questions whose 325 passages are labeled (0 = all)")
    parser.add_argument("--recor-questions", type=int, default=RECOR_QUESTIONS,
                        help="source questions per RECOR domain to build conversations from (0 = all)")
    parser.add_argument("--wikiprofile-pages", type=int, default=WIKIPROFILE_PAGES,
                        help="WikiProfile page summaries to extract facts from (0 = all)")
    parser.add_argument("--wikiprofile-facts", type=int, default=WIKIPROFILE_FACTS,
                        help="WikiProfile facts kept by the balanced downsampling (0 = all)")
    parser.add_argument("--wikiprofile-samples", type=int, default=WIKIPROFILE_SAMPLES,
                        help="WikiProfile samples per question and thinking setting (a multiple of 4; the paper: 8)")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS),
                        help=f"comma-separated benchmarks to build and evaluate: {', '.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    wanted = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = set(wanted) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmarks {sorted(unknown)} ({', '.join(BENCHMARKS)})")
    limit = None if args.max_labeled_questions == 0 else args.max_labeled_questions
    settings = QuitSettings(max_labeled_questions=limit)
    recor = RecorSettings(max_questions=args.recor_questions or None)
    if args.wikiprofile_samples <= 0 or args.wikiprofile_samples % 4:
        parser.error("--wikiprofile-samples must be a positive multiple of 4 (the gold sits in each of 4 option slots equally often)")
    wikiprofile = WikiProfileSettings(max_pages=args.wikiprofile_pages or None, downsample_to=args.wikiprofile_facts or None,
                                      n_samples=args.wikiprofile_samples)
    defs = build_defs(quit_settings=settings, recor_settings=recor, wikiprofile_settings=wikiprofile)
    instance = dg.DagsterInstance.get()
    if "wikiprofile" in wanted:
        # The subject models of the registry are the profiling partitions (the sensor adds
        # them too when the daemon runs).
        PARTITIONS["subjects"] = role_aliases("wikiprofile.subjects")
        instance.add_dynamic_partitions(subject_partitions.name, PARTITIONS["subjects"])
    started = time.monotonic()
    if "wikiprofile" in wanted:
        print(f"note: WikiProfile reads {args.wikiprofile_pages or 'all'} pages, keeps {args.wikiprofile_facts or 'all'} facts and "
              f"samples each question {args.wikiprofile_samples} times; the paper's sizes are in README.md.")
    if "quit" in wanted and settings.max_labeled_questions is not None:
        print(f"note: labeling the passages of {settings.max_labeled_questions} questions (all 325 passages each); "
              "run `make run ARGS=--max-labeled-questions=0` to label every question.")
    stages = ((QUIT_STAGES if "quit" in wanted else []) + (RECOR_STAGES if "recor" in wanted else [])
              + (WIKIPROFILE_STAGES if "wikiprofile" in wanted else []))
    if not run_stages(defs, instance, stages):
        return 1
    root = storage_root()
    print(f"\nfinished in {time.monotonic() - started:.0f}s")
    print(f"asset tables (Parquet):   {os.path.abspath(root) if '://' not in root else root}")
    if "quit" in wanted:
        release = settings.export_dir or join(root, "quit", "release")
        table = read_parquet(join(root, "quit", "statistics.parquet"))
        with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
            print("\nQUIT statistics (Table 1 of the paper):")
            print(table)
        print(f"QUIT benchmark files:     {release}  (corpus.jsonl, train.json, dev.json, test.json, qrels.*.txt)")
        print(f"QUIT statistics table:    {join(root, 'quit', 'statistics.parquet')}")
        print(f"QUIT rejected records:    {join(root, 'quit', 'source_rejects.parquet')}, {join(root, 'quit', 'leakage_rejects.parquet')}")
    if "recor" in wanted:
        table = read_parquet(join(root, "recor", "statistics.parquet"))
        with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True):
            print("\nRECOR statistics (Table 2 of the paper):")
            print(table)
        print(f"RECOR benchmark files:    {join(root, 'recor', 'release')}  ({{domain}}_benchmark.jsonl, _documents.jsonl, _qrels.txt)")
        print("RECOR reports:            eval/recor_retrieval_metrics, eval/recor_generation_metrics, recor/quality_report (web UI)")
    if "wikiprofile" in wanted:
        table = read_parquet(join(root, "wikiprofile", "profile_report.parquet"))
        facts = read_parquet(join(root, "wikiprofile", "benchmark.parquet"))["fact_id"].n_unique()
        # one column per model: Table 2's thirteen measures do not fit a terminal's width as rows
        wide = table.with_columns(pl.exclude("model").cast(pl.Float64)).transpose(
            include_header=True, header_name="measure", column_names="model")
        with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, float_precision=1):
            print(f"\nWikiProfile: {facts} facts with ten tasks each; profiles (Table 2 of the paper, % of profiled facts):")
            print(wide)
        print(f"WikiProfile benchmark:    {join(root, 'wikiprofile', 'benchmark.parquet')}  (funnel: wikiprofile/benchmark in the web UI)")
        print("WikiProfile reports:      wikiprofile/profile_report, popularity_report, direction_report, thinking_report, "
              "robustness_report (web UI)")
    print("web UI:                   make ui   then open http://127.0.0.1:3000")
    print("human verification page:  make verify   then open http://127.0.0.1:8765")
    return 0


if __name__ == "__main__":
    sys.exit(main())
