"""``make run``: materialize the default QUIT and RECOR builds and their evaluations on the
bundled samples, stage by stage,
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
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, RECOR_STAGES
from resources.storage import join, read_parquet, storage_root

PARTITIONS = {"models": QUIT_MODELS, "labelers": QUIT_LABELERS, "readers": QUIT_READERS,
              "retrievers": retriever_partitions.get_partition_keys(),
              "reranks": rerank_partitions.get_partition_keys(),
              "domains": recor_domain_partitions.get_partition_keys(),
              "recor_runs": recor_eval_partitions.get_partition_keys()}
# The default run builds RECOR from one source question per domain (the sample has two or
# three): the embedded model spends about a minute and a half per question.
RECOR_QUESTIONS = 1
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
    parser.add_argument("--benchmarks", default="quit,recor",
                        help="comma-separated benchmarks to build and evaluate: quit, recor")
    args = parser.parse_args(argv)
    wanted = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = set(wanted) - {"quit", "recor"}
    if unknown:
        parser.error(f"unknown benchmarks {sorted(unknown)} (quit, recor)")
    limit = None if args.max_labeled_questions == 0 else args.max_labeled_questions
    settings = QuitSettings(max_labeled_questions=limit)
    recor = RecorSettings(max_questions=args.recor_questions or None)
    defs = build_defs(quit_settings=settings, recor_settings=recor)
    instance = dg.DagsterInstance.get()
    started = time.monotonic()
    if "quit" in wanted and settings.max_labeled_questions is not None:
        print(f"note: labeling the passages of {settings.max_labeled_questions} questions (all 325 passages each); "
              "run `make run ARGS=--max-labeled-questions=0` to label every question.")
    stages = (QUIT_STAGES if "quit" in wanted else []) + (RECOR_STAGES if "recor" in wanted else [])
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
    print("web UI:                   make ui   then open http://127.0.0.1:3000")
    print("human verification page:  make verify   then open http://127.0.0.1:8765")
    return 0


if __name__ == "__main__":
    sys.exit(main())
