"""What ``make run`` (:mod:`pipelines.run_default`) prints: what a run builds and evaluates
before it starts, its stages with ``--plan``, and where its tables and files are once it has
finished, with the tables a reader looks at first."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import polars as pl

from assets.eval import uncertainty
from assets.eval.quit.assets import HEADLINE_SPLIT
from assets.eval.quit.finetune.report import RETRIEVAL, wide
from assets.eval.recor import rules as conversational
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from assets.eval.uncertainty import PRINTED_NOTE, UncertaintySettings, formatted
from assets.partitions import DOMAINS
from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.stages import RELEASE_SAMPLES
from resources.storage import StorageResource, exists, read_parquet, table_uri

if TYPE_CHECKING:
    from pipelines.run_default import RunOptions, RunPlan


# Lines of the summary a run prints at its end, in more than one of its forms.
QUIT_REPORTS = (
    "QUIT reports:             eval/quit_retrieval_metrics, eval/quit_rerank_metrics, eval/quit_reader_metrics (web UI)"
)
WIKIPROFILE_REPORTS = (
    "WikiProfile reports:      eval/wikiprofile_profile_report, wikiprofile_popularity_report, wikiprofile_direction_report, "
    "wikiprofile_thinking_report, wikiprofile_robustness_report (web UI)"
)
WEB_UI = "web UI:                   make ui   then open http://127.0.0.1:3000"


def every(n: int | None, what: str, cap: str = "") -> str:
    """``n`` of ``what`` (a plural) in words: all of them for None, the singular for one."""
    return f"all {what}" if n is None else f"{cap}{n} {what}" if n != 1 else f"1 {what.removesuffix('s')}"


def named_splits(cut: dict) -> str:
    """A QUIT slice in words: the splits it keeps ("the test questions"), or its size."""
    splits = cut.get("splits")
    if not splits:
        return every(cut.get("max_questions"), "questions")
    return f"the {' and '.join(splits)} questions"


def named_facts(cut: dict) -> str:
    """A WikiProfile slice in words: the facts it names ("facts 0 and 8"), or its size."""
    ids = cut.get("fact_ids")
    if not ids:
        return every(cut.get("max_facts"), "facts")
    return f"fact {ids[0]}" if len(ids) == 1 else f"facts {', '.join(ids[:-1])} and {ids[-1]}"


def describe(
    quit: QuitSettings,
    recor: RecorSettings,
    wikiprofile: WikiProfileSettings,
    domains: list[str],
    wanted: list[str],
    evaluated: dict[str, dict] | None = None,
) -> list[str]:
    """What the run builds, one phrase per benchmark, for the line it prints first; and what
    it evaluates where that is a slice of a release sample (``evaluated``, as
    :data:`DEMO_EVALUATION` has it)."""
    evaluated = evaluated or {}
    parts = []
    if "quit" in wanted:
        per_source = quit.max_questions_per_source
        taken = "" if per_source is None else f"takes {every(per_source, 'questions')} of each source, "
        # the paper's depth (100) goes unsaid, as the paper profile's other settings do
        demo_depth = quit.rerank_depth if quit.profile == "demo" else None
        reranked = f"; rerankers reorder the top {demo_depth}" if demo_depth else ""
        labeled = quit.labeled_passages_per_question
        share = "the 325" if labeled is None or labeled >= 325 else f"{labeled} of the 325"
        parts.append(
            f"QUIT {taken}labels {share} passages of {every(quit.max_labeled_questions, 'questions')} "
            f"(convergence over {quit.distractors} wrong candidates{reranked})"
            + (
                f" and evaluates {named_splits(evaluated['quit'])} of the release sample "
                f"{RELEASE_SAMPLES['quit']} (passages of both labels; tables on the test split)"
                if "quit" in evaluated
                else ""
            )
        )
    if "recor" in wanted:
        named = "all 11 domains" if len(domains) == len(DOMAINS) else ", ".join(domains)
        parts.append(
            f"RECOR builds and evaluates {named} from {every(recor.max_questions, 'source questions')} each "
            f"(at most {recor.max_aspects} aspects of {recor.max_facts} facts)"
        )
    if "wikiprofile" in wanted:
        parts.append(
            f"WikiProfile reads {every(wikiprofile.max_pages, 'pages', 'up to ')}, keeps "
            f"{every(wikiprofile.downsample_to, 'facts', 'up to ')}"
            + (
                f", profiles {named_facts(evaluated['wikiprofile'])} of the release sample "
                f"{RELEASE_SAMPLES['wikiprofile']}"
                if "wikiprofile" in evaluated
                else ""
            )
            + f" and samples each question {wikiprofile.n_samples} times"
        )
    return parts


def announce_log(path: str) -> None:
    """A run's first line: its log file, and what goes there."""
    print(
        f"the log of this run: {path} (Dagster's step lines, Lucene's INFO lines, Dagster's warnings on the "
        'APIs it marks beta or preview; make run ARGS="--verbose" prints them here)'
    )


def print_log(path: str, file=None) -> None:
    """The summary's line that names the run's log file."""
    print(f"{'log of this run:':<26}{path}", file=file)


def announce(options: RunOptions) -> None:
    """The lines a run prints first: what it builds and evaluates, and how large."""
    built = "; ".join(
        describe(options.quit, options.recor, options.wikiprofile, options.domains, options.wanted, options.evaluated)
    )
    if options.from_release:
        cut = options.slices
        sizes = {
            "quit": f"QUIT {named_splits(cut['quit'])} (tables on the test split)"
            if "quit" in cut
            else "QUIT every question (tables on the test split)",
            "recor": (
                f"RECOR {cut['recor']['max_conversations']} conversation"
                if "recor" in cut
                else "RECOR every conversation"
            )
            + f" of {', '.join(options.domains)}",
            "wikiprofile": f"WikiProfile {cut['wikiprofile']['max_facts']} facts"
            if "wikiprofile" in cut
            else "WikiProfile every fact",
        }
        built = f"the evaluation alone, on the published releases' samples in data/releases/: {'; '.join(sizes[b] for b in options.wanted)}"
    if options.reteco:
        print(
            f"make run --reteco: RECOR as SemEval-2027 RETECO Track 2 scores it, from the release at {options.reteco} "
            f"(every conversation of {', '.join(options.domains)}): every retriever of the registry under each query strategy, "
            "then the official table (binary nDCG@10 macro-averaged over the target turns)."
        )
        print(
            "  the full published release takes hours on CPU: each turn's queries are rewritten by the LLM, and the dense "
            "retrievers encode every document"
        )
    elif options.profile == "demo":
        print(
            f'make run, the demo slice (preset {options.preset}; the papers\' configuration: make run ARGS="--profile paper", '
            f"or materialize from the web UI with no config): {built}."
        )
    else:
        print(f"make run, the papers' configuration (hours with the embedded model): {built}.")
    if options.preset == "quick" and not options.reteco:
        print(
            '  a larger demo: make run ARGS="--preset full" (about 52 minutes for all three; docs/getting-started.md says what it '
            "builds and what each flag does)"
        )
    if options.beir:
        print(
            f"  BEIR-layout datasets of the dataset registry: {', '.join(options.beir)}, each evaluated by every "
            "registered retriever and reranker (eval/beir_*)"
        )
    if options.finetune and "quit" in options.wanted:
        counts = FinetuneSettings(profile=options.profile).positives
        print(
            "  QUIT fine-tuning: two retrievers (DPR- and ColBERT-style) and a reranker trained on the train split "
            f"with {', '.join(map(str, counts))} positives a question ({len(counts)} of each), evaluated beside the "
            "vanilla ones on the held-out splits (eval/quit_finetune_report)"
        )


def print_plan(options: RunOptions, planned: RunPlan) -> None:
    """``--plan``: each stage, with the keys of its partitions."""
    for job_name, named in planned.stages:
        keys = planned.partitions[named] if named else []
        print(f"{job_name}" + (f" x {len(keys)}: {', '.join(map(str, keys))}" if named else ""))
    if options.finetune and "quit" in options.wanted:
        print("(quit_retrieval and quit_rerank also run the retriever and reranker that quit_finetune registers)")


# What every export folder holds (assets.common.sharing); docs/build/sharing.md.
EXPORT_FORMATS = "(hf/: README.md card, data/, croissant.json)"


def summarize(options: RunOptions, storage: StorageResource) -> None:
    """Where a finished run's tables and files are, with the tables a reader looks at first."""
    root = storage.root
    print(f"asset tables (Parquet):   {os.path.abspath(root) if '://' not in root else root}")
    if options.reteco:
        print_reteco(storage, options.reteco, options.domains)
        return
    if options.beir:
        print_beir(storage, options.beir)
    if options.from_release:
        print_evaluation(storage, options.wanted)
        return
    if "quit" in options.wanted:
        print_quit_build(storage, options.quit, "quit" in options.evaluated)
    if "recor" in options.wanted:
        print_recor_build(storage)
    if "wikiprofile" in options.wanted:
        print_wikiprofile_build(storage, "wikiprofile" in options.evaluated)
    print(f"leaderboard:              {storage.path('eval', 'leaderboard.csv')}  (eval/leaderboard in the web UI)")
    print(WEB_UI)
    print("human verification page:  make verify   then open http://127.0.0.1:8765")


BEIR_SHOWN = ("ndcg@10", "recall@100")


def print_beir(storage: StorageResource, datasets: list[str]) -> None:
    """The registered datasets' retrieval table (nDCG@10, Recall@100 per retriever) and where
    their runs and reports are."""
    metrics = table_uri(storage.root, ["eval", "beir_retrieval_metrics"])
    if exists(metrics):
        table = read_parquet(metrics).filter(pl.col("dataset").is_in(datasets))
        with pl.Config(tbl_rows=40, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
            print("\nBEIR-layout datasets, retrieval (nDCG@10, Recall@100):")
            keys = ["dataset", "retriever", "queries"]
            long = uncertainty.detached(table, keys, BEIR_SHOWN)
            # a table stored without intervals prints its values alone
            print(
                formatted(long, keys) if long.height else table.select(*keys, *(pl.col(m).round(3) for m in BEIR_SHOWN))
            )
            print(PRINTED_NOTE)
    for name in datasets:
        print(f"{name + ' runs (TREC):':<26}{storage.path('eval', 'runs', 'beir', name)}")
    print(
        "BEIR-layout reports:      eval/beir_retrieval_metrics, eval/beir_rerank_metrics; eval/beir_source_rejects "
        "holds the lines the reader refused (web UI)"
    )


def print_quit_build(storage: StorageResource, settings: QuitSettings, sample_evaluated: bool) -> None:
    """QUIT's statistics, retrieval table and files, after a build."""
    root = storage.root
    release = settings.export_dir or storage.path("quit", "release")
    statistics = table_uri(root, ["quit", "statistics"])
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
        print("\nQUIT statistics (Table 1 of the paper):")
        print(table_1_printed(read_parquet(statistics)))
    print(f"QUIT benchmark files:     {release}  (corpus.jsonl, train.json, dev.json, test.json, qrels.*.txt)")
    print(f"QUIT export:              {storage.path('quit', 'export')}  {EXPORT_FORMATS}, beir/")
    print(f"QUIT statistics table:    {statistics}")
    print(
        f"QUIT rejected records:    {table_uri(root, ['quit', 'source_rejects'])}, {table_uri(root, ['quit', 'leakage_rejects'])}"
    )
    sample = f"the release sample {RELEASE_SAMPLES['quit']}" if sample_evaluated else "the built questions"
    print_quit_retrieval(storage, f"QUIT retrieval (Table 2 of the paper), {HEADLINE_SPLIT} split, {sample}:")
    print(QUIT_REPORTS)


def table_1_printed(table: pl.DataFrame) -> pl.DataFrame:
    """QUIT's Table 1 as printed: each value to 4 decimals, a row estimated from a sample (the
    semantic overlap) as ``value [low, high]``, its 95% interval, as the printed reports show
    theirs."""
    value = pl.col("value").round(4)
    interval = pl.format("{} [{}, {}]", value, pl.col("ci_low").round(4), pl.col("ci_high").round(4))
    cell = pl.when(pl.col("ci_low").is_not_null()).then(interval).otherwise(value.cast(pl.String))
    return table.select("metric", cell.alias("value"), "definition")


def print_recor_build(storage: StorageResource) -> None:
    """RECOR's statistics, its retrieval table (Table 3, each score with its interval and mark)
    and files, after a build."""
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True):
        print("\nRECOR statistics (Table 2 of the paper):")
        print(read_parquet(table_uri(storage.root, ["recor", "statistics"])))
    metrics = table_uri(storage.root, ["eval", "recor_retrieval_metrics"])
    # make run configures no uncertainty: the defaults are the intervals the report's metadata holds
    long = (
        conversational.strategy_uncertainty(read_parquet(metrics), UncertaintySettings())[0]
        if exists(metrics)
        else pl.DataFrame()
    )
    if long.height:
        cells = formatted(long, ["retriever", "strategy"]).pivot(on="strategy", index="retriever", values="ndcg@10")
        strategies = [conversational.SHORT[s] for s in conversational.STRATEGIES]
        cells = cells.select("retriever", *[s for s in strategies if s in cells.columns])
        with pl.Config(
            tbl_rows=20,
            tbl_cols=20,
            tbl_width_chars=250,
            fmt_str_lengths=40,
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
            tbl_formatting="MARKDOWN",
        ):
            print(
                "\nRECOR retrieval (Table 3 of the paper), nDCG@10 by retriever and query strategy, turn -> domain -> "
                f"macro; each retriever's strategies against its best ({PRINTED_NOTE}):"
            )
            print(cells)
    print(
        f"RECOR benchmark files:    {storage.path('recor', 'release')}  ({{domain}}_benchmark.jsonl, _documents.jsonl, _qrels.txt)"
    )
    print(
        f"RECOR export:             {storage.path('recor', 'export')}/{{domain,all}}  {EXPORT_FORMATS}, "
        "beir/<domain>/<strategy>/"
    )
    print(
        "RECOR reports:            eval/recor_retrieval_metrics, eval/reteco_retrieval, "
        "eval/recor_generation_metrics, recor/quality_report (web UI)"
    )


def print_wikiprofile_build(storage: StorageResource, sample_evaluated: bool) -> None:
    """WikiProfile's profiles (Table 2) and files, after a build."""
    table = read_parquet(table_uri(storage.root, ["eval", "wikiprofile_profile_report"]))
    facts = read_parquet(table_uri(storage.root, ["eval", "wikiprofile_tasks"]))["fact_id"].n_unique()
    sample = f" of the release sample {RELEASE_SAMPLES['wikiprofile']}" if sample_evaluated else ""
    # Encodes, Knows and Knows(+Think) print as "value [low, high]*" from the stored intervals
    # (a table stored before them prints its values alone)
    long = uncertainty.detached(table, ["model"], ("encodes", "knows", "knows_thinking"))
    cells = formatted(long.drop_nulls("ci_low"), ["model"]) if long.height else table.select("model")
    # one column per model: Table 2's thirteen measures do not fit a terminal's width as rows
    measures = [c for c, t in table.schema.items() if t.is_numeric() and not c.endswith((" ci_low", " ci_high"))]
    text = table.select(
        "model", *[(pl.col(c).round(3) if table.schema[c].is_float() else pl.col(c)).cast(pl.String) for c in measures]
    ).join(cells, on="model", how="left", suffix=" cell")
    text = text.with_columns(pl.coalesce(f"{c} cell", c).alias(c) for c in cells.columns if c != "model")
    by_model = text.select("model", *measures).transpose(
        include_header=True, header_name="measure", column_names="model"
    )
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, fmt_str_lengths=40):
        print(
            f"\nWikiProfile: {facts} facts{sample} with ten tasks each; profiles (Table 2 of the paper, "
            "shares; Knows includes direct inference):"
        )
        print(by_model)
        if cells.width > 1:
            print(PRINTED_NOTE)
    print(
        f"WikiProfile benchmark:    {table_uri(storage.root, ['wikiprofile', 'benchmark'])}  (funnel: wikiprofile/benchmark in the web UI)"
    )
    print(f"WikiProfile export:       {storage.path('wikiprofile', 'export')}  {EXPORT_FORMATS}")
    print(WIKIPROFILE_REPORTS)


def print_finetuning(report: pl.DataFrame) -> None:
    """The fine-tuning report's retrievers, vanilla and fine-tuned, on the held-out questions."""
    retrieval = wide(report, RETRIEVAL, "system")
    if retrieval.is_empty():
        return
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, float_precision=3):
        print("\nQUIT fine-tuning (Tables 10-11), held-out questions only:")
        print(retrieval.select("split", "system", "fine_tuned", "hit_rate@1", "hit_rate@5", "mrr", "ndcg_burges@10"))
    print("QUIT fine-tuning report:  eval/quit_finetune_report (rerankers, Table 12, and the reader's EM: web UI)")


def print_reteco(storage: StorageResource, release: str, domains: list[str]) -> None:
    """Where the task's tables are, then the official table of the release's domains (the
    materialized table may hold domains an earlier run evaluated: they are left out here)."""
    retrieval = table_uri(storage.root, ["eval", "reteco_retrieval"])
    scores = read_parquet(retrieval).filter(pl.col("domain").is_in(domains))
    print(
        "RETECO tables:            eval/reteco_retrieval in the web UI (official, by_domain, by_depth, runs_read); "
        f"per-turn scores {retrieval}"
    )
    print(
        f"run files:                {storage.path('eval', 'runs', 'recor')}/<domain>/<retriever>.<strategy>.trec  "
        f"(python -m pipelines.reteco score --release {release} FILE ...)"
    )
    print(WEB_UI)
    with pl.Config(
        tbl_rows=50,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        float_precision=4,
        tbl_formatting="MARKDOWN",
    ):
        print(
            f"\nRETECO Track 2 official table, {scores.select('domain', 'qid').n_unique()} target turns of {', '.join(domains)} "
            "(nDCG@10 official; MAP@10, Recall@10, MRR diagnostic):"
        )
        official = reteco.official_table(scores)
        print(official)
        # make run configures no uncertainty: the defaults are the intervals the reports' metadata holds
        settings = UncertaintySettings()
        long, _ = reteco.official_uncertainty(scores, settings)
        print(f"\nThe official table's intervals, each run against the best ({PRINTED_NOTE}):")
        print(official.select("run").join(formatted(long, ["run"], 4), on="run", maintain_order="left"))
        judged = pl.concat([read_parquet(table_uri(storage.root, ["eval", "reteco_generation"], d)) for d in domains])
        board = reteco_judge.leaderboard(scores, judged)
        print(
            "\nRETECO Track 2 leaderboard, one row per sub-track and run (2b, 2c ranked by the macro average of the "
            "five judge dimensions; eval/reteco_leaderboard in the web UI):"
        )
        judged_board = board.filter(pl.col("subtrack") != "2a")
        print(judged_board.drop("turns", "MAP@10", "Recall@10", "MRR"))
        macro = reteco_judge.judged_uncertainty(judged, settings)
        if macro.height:
            keys = ["subtrack", "run"]
            print(f"\nThe macro's intervals, each run against the best of its sub-track ({PRINTED_NOTE}):")
            print(judged_board.select(keys).join(formatted(macro, keys, 4), on=keys, maintain_order="left"))


def print_quit_retrieval(storage: StorageResource, title: str) -> None:
    """QUIT's retrieval table on the test split (the headline tables'), under ``title``: each
    value with its interval and its mark against the best retriever (issue 48), as the
    report stored them."""
    table = read_parquet(table_uri(storage.root, ["eval", "quit_retrieval_metrics"])).filter(
        pl.col("split") == HEADLINE_SPLIT
    )
    metrics = ["hit_rate@1", "hit_rate@10", "mrr", "ndcg_burges@10"]
    long = uncertainty.detached(table, ["retriever", "questions"], metrics)
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, tbl_width_chars=160, fmt_str_lengths=40):
        print(f"\n{title}")
        # a column per metric in the order above; none where the split has no retriever's row
        print(formatted(long, ["retriever", "questions"]))
        print(PRINTED_NOTE)


def print_evaluation(storage: StorageResource, wanted: list[str]) -> None:
    """Where a release evaluation's reports are, with QUIT's retrieval table and its fine-tuning report's."""
    if "quit" in wanted:
        print_quit_retrieval(storage, f"QUIT release sample, retrieval (Table 2 of the paper), {HEADLINE_SPLIT} split:")
        print(QUIT_REPORTS)
        finetuning = table_uri(storage.root, ["eval", "quit_finetune_report"])
        if exists(finetuning):
            print_finetuning(read_parquet(finetuning))
    if "recor" in wanted:
        print(
            "RECOR reports:            eval/recor_retrieval_metrics, eval/reteco_retrieval, eval/recor_generation_metrics (web UI)"
        )
    if "wikiprofile" in wanted:
        print(WIKIPROFILE_REPORTS)
    print(
        "sources:                  eval/quit_questions, eval/recor_turns, eval/wikiprofile_tasks name the release they read; "
        "their *_source_rejects hold what the loaders refused"
    )
    print(f"leaderboard:              {storage.path('eval', 'leaderboard.csv')}  (eval/leaderboard in the web UI)")
    print(WEB_UI)
