"""RECOR's evaluation as SemEval-2027 RETECO Track 2 scores it: the retrieval runs read and
scored by the task's rules (2a), the answers judged as 2b and 2c systems beside submitted
generation files, and the task's leaderboard."""

import dagster as dg
import polars as pl

from assets.common import provenance
from assets.common.metadata import md_table, report_table, table_metadata
from assets.eval import sources as eval_sources
from assets.eval.recor import rules as conversational
from assets.eval.recor import steps as generation
from assets.eval.recor.assets import retrieval as retrieval_assets
from assets.eval.recor.assets.common import BENCHMARK, BY_DOMAIN, CORPUS, GROUP, PREFIX, wiring
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from assets.eval.runs import trec_run
from assets.eval.uncertainty import UncertaintySettings, attach
from assets.partitions import domain_partitions
from resources.llm import CallStats, LLMResource
from resources.llm.registry import llm_pool
from resources.storage import MATERIALIZED_PARTITIONS, StorageResource, inside_root, join, read_bytes

# Where participants' generation files are put for judging, under the storage root.
SUBMISSIONS = "submissions"
RUNS, TURNS, DOCUMENTS = (dg.AssetKey([PREFIX, name]) for name in ("recor_runs", "recor_turns", "recor_corpus"))
# What a report's row carries of the run that built its input: the Dagster run id and profile.
BUILT_BY = {"dagster_run": pl.String, "profile": pl.String}


def current_runs(
    context: dg.AssetExecutionContext, recor_runs: pl.DataFrame, benchmark: pl.DataFrame, corpus: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict]:
    """The runs, turns and documents of the partitions a report of this run's profile keeps
    (``assets/common/provenance.py``), and the metadata naming those it leaves out: a domain
    whose turns or documents are left out goes with all its runs; a run partition is judged
    beside the domain's documents and queries it was built from. The runs gain ``BUILT_BY``,
    the run that built their partition and its profile."""
    builds = provenance.Builds(context.instance)
    sources = {
        (key, domain): builds.latest(key, domain)
        for key, frame in ((TURNS, benchmark), (DOCUMENTS, corpus))
        for domain in sorted(set(frame["domain"]))
    }
    runs = {
        (domain, system): builds.latest(RUNS, str(dg.MultiPartitionKey({"domain": domain, "retriever": system})))
        for domain, system in recor_runs.select("domain", "system").unique().sort("domain", "system").iter_rows()
    }
    profile, said = provenance.report_profile(context, [*sources.values(), *runs.values()])
    left_out = {}
    # the turns and documents by their own run alone: what they are built from is the build's
    # recor/ tables, which a release source never reads
    for build in sources.values():
        if reason := builds.reason(build, eval_sources.recor_source, profile, upstream=False):
            left_out[build] = reason
    gone = sorted({domain for (_, domain), build in sources.items() if build in left_out})
    for (domain, _), build in runs.items():
        if domain in gone:
            left_out[build] = "its domain's turns or documents are left out"
        elif reason := builds.reason(build, retrieval_assets.recor_runs, profile):
            left_out[build] = reason
    kept = pl.DataFrame(
        [(d, s, b.run_id, b.profile) for (d, s), b in runs.items() if b not in left_out],
        schema={"domain": pl.String, "system": pl.String, **BUILT_BY},
        orient="row",
    )
    return (
        recor_runs.join(kept, on=["domain", "system"], how="inner", maintain_order="left"),
        benchmark.filter(~pl.col("domain").is_in(gone)),
        corpus.filter(~pl.col("domain").is_in(gone)),
        provenance.provenance_metadata(said, left_out),
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "recor_runs": wiring.materialized("recor_runs"),
        "benchmark": wiring.materialized("recor_turns"),
        "corpus": dg.AssetIn(
            key=[PREFIX, "recor_corpus"],
            partition_mapping=dg.AllPartitionMapping(),
            metadata={**MATERIALIZED_PARTITIONS, "columns": ["domain", "doc_id"]},
        ),
    },
    kinds={"ranx"},
    code_version="3",
)
def reteco_retrieval(
    context: dg.AssetExecutionContext,
    recor_runs: pl.DataFrame,
    benchmark: pl.DataFrame,
    corpus: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """RECOR's runs scored as SemEval-2027 RETECO Track 2 (sub-tracks 2a and 2c) scores a
    submission (``assets/eval/recor/reteco/rules.py``): each retriever x strategy of ``recor_runs`` is one
    run, written as a TREC file and read by the task's rules against its domain's turns and
    documents (a domain at a time). Per target turn: binary nDCG@10 (official), MAP@10, Recall@10 and MRR;
    the official table (macro over the turns), per domain and by depth T1..T4, T5+; the
    official and per-domain tables' intervals and tests (``official_uncertainty``,
    ``by_domain_uncertainty``: the bootstrap over the target turns and each run's paired test
    against the best, the method in the definitions; issue 48). The same rules as ``python -m
    pipelines.reteco score``. Reads the partitions built under the run's profile, by the
    current code and after what they were built from (``left_out`` names the others, with the
    reason); each row names the run that built its run partition (``dagster_run``) and its
    ``profile``."""
    recor_runs, benchmark, corpus, built = current_runs(context, recor_runs, benchmark, corpus)
    # One domain at a time: BRIGHT numbers its questions per domain, so two domains may hold one
    # conversation id, which a task query id cannot tell apart (the command refuses them together).
    frames, notes, turns, documents = [], {}, 0, 0
    domains = sorted(set(benchmark["domain"]))
    for domain in domains:
        targets = reteco.Targets.from_tables(
            benchmark.filter(pl.col("domain") == domain), corpus.filter(pl.col("domain") == domain)["doc_id"]
        )
        turns, documents = turns + targets.turns.height, documents + len(targets.documents)
        checked = []
        for (system, strategy), run in recor_runs.filter(pl.col("domain") == domain).group_by(
            ["system", "strategy"], maintain_order=True
        ):
            name = f"{system}/{strategy}"
            checked.append(
                (name, reteco.check_run(trec_run(task_ids(run)).encode(), f"{domain}: {name}", targets), targets)
            )
            notes[f"{domain}: {name}"] = checked[-1][1].summary()
        # a domain's runs scored together (a ranx call costs seconds before its first line), and
        # their rankings let go before the next domain's
        frames.append(reteco.score_runs(checked))
    scores = (pl.concat(frames) if frames else reteco.score_runs([])).with_columns(
        pl.col("run").str.extract(r"^(.*)/[^/]*$").alias("retriever"),
        pl.col("run").str.extract(r"/([^/]*)$").alias("strategy"),
    )
    by = recor_runs.select("domain", pl.col("system").alias("retriever"), *BUILT_BY).unique()
    scores = scores.join(by, on=["domain", "retriever"], how="left", maintain_order="left")
    slice_ = f"{turns} target turns of {len(domains)} domains ({', '.join(domains)}), {documents:,} documents"
    return dg.Output(
        scores,
        metadata={
            **table_metadata(scores, 5),
            "covers": slice_,
            "official": dg.MetadataValue.md(
                "Binary nDCG@10 per target turn, macro-averaged over the turns (a missing turn "
                f"scores 0); {slice_}\n\n{md_table(reteco.official_table(scores), 50)}"
            ),
            # by_domain, by_depth: every metric's table, nDCG@10's first
            **{name: dg.MetadataValue.md(text) for name, text in reteco.breakdown_markdown(scores).items()},
            **{
                f"{name}_uncertainty": report_table(long, definitions)
                for name, (long, definitions) in reteco.uncertainty_tables(scores, uncertainty).items()
            },
            "runs_read": dg.MetadataValue.md("\n\n".join(f"```\n{note}\n```" for note in notes.values()) or "none"),
            **built,
        },
    )


def task_ids(run: pl.DataFrame) -> pl.DataFrame:
    """A run of ``recor_runs`` with the task's query ids (``<conversation>#turn<n>``), as a
    participant would submit it; the project's own are read with a warning that the task's
    scorer does not read them."""
    return run.drop("strategy", "domain").with_columns(
        pl.col("question_id").str.replace(r"_turn_([1-9][0-9]*)$", "#turn$1")
    )


class ReTeCoSubmission(dg.Config):
    """A participant's generation file, judged beside the configured generators."""

    # JSONL (turn_id, answer), every domain's answers in one file: a name under the storage
    # root's submissions/ folder, where the deployment takes participants' files (a run names
    # which file, never where files are read from)
    path: str
    subtrack: str = "2b"  # 2b: judged faithful to the gold passages; 2c: to the run's top five
    run: str | None = None  # 2c: the TREC run file the answers were generated from, beside it
    name: str | None = None  # the row's name (default: the file's name)


class ReTeCoGeneration(dg.Config):
    submissions: list[ReTeCoSubmission] = []


def _submission(sub: ReTeCoSubmission, targets: reteco.Targets, domain: str, storage: StorageResource) -> tuple:
    """A submission as (system, sub-track, answers, checked run or None): each file read by the
    task's rules against the domain's turns (another domain's turns are the file's other
    answers, left to their partitions); an unscorable file fails the step with its problems."""
    if sub.subtrack not in reteco_judge.SUBTRACKS or (sub.subtrack == "2c") != bool(sub.run):
        raise dg.Failure(
            f"submission {sub.path}: sub-track {sub.subtrack!r} with run {sub.run!r}; 2b takes no run, "
            "2c needs the run file its answers came from"
        )
    try:
        folder = storage.path(SUBMISSIONS)
        path, run_path = (inside_root(folder, join(folder, name)) if name else None for name in (sub.path, sub.run))
    except ValueError as e:
        raise dg.Failure(f"submission {sub.path}: {e}; name a file under the storage root's {SUBMISSIONS}/") from None
    checked = reteco.check_generation(read_bytes(path), sub.path, targets)
    run = reteco.check_run(read_bytes(run_path), sub.run, targets) if run_path else None
    for c in filter(None, (checked, run)):
        if not c.ok:
            fatal = [str(p) for p in c.problems if p.fatal][:10]
            raise dg.Failure(f"{domain}: {c.summary()}", metadata={"problems": dg.MetadataValue.md("\n".join(fatal))})
    return sub.name or sub.path.rsplit("/", 1)[-1], sub.subtrack, checked.answers, run


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=domain_partitions,
    ins={
        "benchmark": BENCHMARK,
        "corpus": CORPUS,
        "recor_generation": wiring.input("recor_generation"),
        "recor_runs": dg.AssetIn(key=[PREFIX, "recor_runs"], partition_mapping=BY_DOMAIN),
        "recor_retrieval_metrics": wiring.input("recor_retrieval_metrics"),
    },
    kinds={"litellm"},
    pool=llm_pool("recor"),
    code_version=reteco_judge.CODE_VERSION,
)
def reteco_generation(
    context: dg.AssetExecutionContext,
    config: ReTeCoGeneration,
    benchmark: pl.DataFrame,
    corpus: pl.DataFrame,
    recor_generation: pl.DataFrame,
    recor_runs: pl.DataFrame,
    recor_retrieval_metrics: pl.DataFrame,
    llm: LLMResource,
    storage: StorageResource,
) -> dg.Output:
    """RECOR's answers judged as SemEval-2027 RETECO Track 2 judges them
    (``assets/eval/recor/reteco/steps.py``): each configured generator's Oracle answers as a 2b
    system (faithful to the gold passages) and its Retrieved answers as a 2c system (faithful
    to the top five of the best retrieval configuration, whose per-turn nDCG@10 it carries),
    plus the generation files the run config names (``submissions``, under the storage root's
    ``submissions/``). Five focused judge
    prompts, integer 1-5 scores normalized (s - 1) / 4; a turn without an answer, or a
    dimension the judge did not score, is 0. ROUGE-L, METEOR and BERTScore F1 as diagnostics
    (the generators' from ``eval/recor_generation``)."""
    domain = context.partition_key
    targets = reteco.Targets.from_tables(benchmark, corpus["doc_id"])
    turns = reteco_judge.table_turns(benchmark, targets)
    retriever, strategy = conversational.best_configuration(recor_retrieval_metrics)
    best = f"{retriever}/{strategy}"
    chosen = recor_runs.filter((pl.col("system") == retriever) & (pl.col("strategy") == strategy))
    best_run = reteco.check_run(trec_run(chosen.drop("strategy", "domain")).encode(), best, targets)
    systems, diagnostics = reteco_judge.generator_systems(recor_generation, best_run)
    systems += [_submission(sub, targets, domain, storage) for sub in config.submissions]

    stats = CallStats()
    text = dict(corpus.select("doc_id", "content").iter_rows())
    frames, judgments = reteco_judge.judge_systems(
        systems, diagnostics, turns, targets, text, llm.model("recor.judge"), stats, context.log.info
    )
    scores = pl.concat(frames) if frames else pl.DataFrame(schema=RETECO_GENERATION_SCHEMA)
    failed = judgments.filter(pl.col("score").is_null()) if judgments.height else judgments
    table = reteco_judge.judge_table(scores) if scores.height else pl.DataFrame()
    return dg.Output(
        scores.select(list(RETECO_GENERATION_SCHEMA)),
        metadata={
            **table_metadata(scores.select("qid", "system", "subtrack", *reteco.DIMENSIONS), 5),
            "covers": f"{domain}: {targets.turns.height} target turns, {len(systems)} systems "
            f"({len(config.submissions)} submitted); 2c generators answered from {best}",
            "generation": dg.MetadataValue.md(
                "Each dimension's judged 1-5 score normalized (s - 1) / 4, the mean over the "
                "target turns (a turn without an answer or a score is 0), and their macro "
                f"average; ROUGE-L, METEOR, BERTScore F1 are diagnostics\n\n{md_table(table, 40)}"
            ),
            "judge_failures": failed.height,
            # a weak judge (the embedded model) often writes no number: its log-probabilities say which it meant
            **{
                f"scores_read_from/{where}": judgments.filter(pl.col("read_from") == where).height
                if judgments.height
                else 0
                for where in reteco_judge.READ_FROM
            },
            "judge_failure_examples": dg.MetadataValue.md(
                md_table(failed.select("system", "subtrack", "qid", "dimension", "reason", "reply").head(10), 10)
                if failed.height
                else "none"
            ),
            **generation.reference_metric_definitions(),
            **stats.as_metadata(),
        },
    )


RETECO_GENERATION_SCHEMA = {
    **reteco.TURN_SCHEMA,
    "system": pl.String,
    "subtrack": pl.String,
    "run": pl.String,
    **{d: pl.Float64 for d in reteco.DIMENSIONS},
    "answered": pl.Boolean,
    "judge_failures": pl.UInt32,
    **{m: pl.Float64 for m in reteco_judge.DIAGNOSTICS},
    **{m: pl.Float64 for m in reteco.METRICS},
}
RETECO_RETRIEVAL, RETECO_GENERATION = (
    dg.AssetKey([PREFIX, name]) for name in ("reteco_retrieval", "reteco_generation")
)
# What a leaderboard's row carries of the runs that built the tables it came from.
BUILT_BY_RUNS = {"dagster_runs": pl.String, "profile": pl.String}
# The columns :func:`assets.eval.uncertainty.attach` adds beside a figure.
UNCERTAINTY_SUFFIXES = (" ci_low", " ci_high", " tied_best")


def current_results(
    context: dg.AssetExecutionContext, retrieval: pl.DataFrame, generation: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, dict]:
    """The 2a scores and the judged answers a leaderboard of this run's profile keeps:
    ``eval/reteco_retrieval`` and each domain's ``eval/reteco_generation``, each judged beside
    what it was built from as :func:`current_runs` judges a partition; who built each row
    (sub-track, run and ``BUILT_BY_RUNS``: the runs of the tables it came from); and the
    metadata naming what is left out."""
    builds = provenance.Builds(context.instance)
    scored = builds.latest(RETECO_RETRIEVAL)
    judged = {domain: builds.latest(RETECO_GENERATION, domain) for domain in sorted(set(generation["domain"]))}
    profile, said = provenance.report_profile(context, [scored, *judged.values()])
    left_out = {}
    for build, assets_def in ((scored, reteco_retrieval), *((b, reteco_generation) for b in judged.values())):
        if reason := builds.reason(build, assets_def, profile):
            left_out[build] = reason
    retrieval = retrieval.clear() if scored in left_out else retrieval
    kept = pl.DataFrame(
        [(d, b.run_id, b.profile) for d, b in judged.items() if b not in left_out],
        schema={"domain": pl.String, **BUILT_BY},
        orient="row",
    )
    generation = generation.join(kept, on="domain", how="inner", maintain_order="left")
    built = pl.concat(
        [
            retrieval.select(pl.lit("2a").alias("subtrack"), "run")
            .unique()
            .with_columns(
                pl.lit(scored.run_id, pl.String).alias("dagster_runs"),
                pl.lit(scored.profile, pl.String).alias("profile"),
            ),
            generation.group_by("subtrack", pl.col("system").alias("run")).agg(
                pl.col("dagster_run").unique().sort().str.join(", ").alias("dagster_runs"), pl.col("profile").first()
            ),
        ]
    )
    return retrieval, generation.drop(*BUILT_BY), built, provenance.provenance_metadata(said, left_out)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    ins={
        "reteco_retrieval": wiring.materialized("reteco_retrieval"),
        "reteco_generation": wiring.materialized("reteco_generation"),
    },
    kinds={"polars"},
    code_version="3",
)
def reteco_leaderboard(
    context: dg.AssetExecutionContext,
    reteco_retrieval: pl.DataFrame,
    reteco_generation: pl.DataFrame,
    uncertainty: UncertaintySettings,
) -> dg.Output:
    """RETECO Track 2's results, one row per sub-track and run: 2a each retrieval run
    (retriever / strategy) by nDCG@10 with MAP@10, Recall@10 and MRR; 2b and 2c each system
    by the macro average of its five normalized judge dimensions, 2c beside the retrieval
    figures of the run it answered from. Never combined into one number, as the task rules.
    Each sub-track's official figure (nDCG@10 for 2a, the macro for 2b and 2c) has its interval
    and ``tied_best`` beside it (``<figure> ci_low``, ``ci_high``, ``tied_best``: the bootstrap
    over the target turns, the runs of a sub-track compared with its best; issue 48), the
    method in ``<subtrack>_uncertainty``'s definitions.
    Reads the tables built under the run's profile, by the current code and after what they
    were built from (``left_out`` names the others, with the reason); each row names the runs
    of the tables it came from (``dagster_runs``) and their ``profile``."""
    reteco_retrieval, reteco_generation, built, left_out = current_results(context, reteco_retrieval, reteco_generation)
    keys = ["subtrack", "run"]
    intervals = reteco_judge.leaderboard_uncertainty(reteco_retrieval, reteco_generation, uncertainty)
    board = attach(
        reteco_judge.leaderboard(reteco_retrieval, reteco_generation).join(
            built, on=keys, how="left", maintain_order="left"
        ),
        intervals,
        keys,
    )
    turns = reteco_retrieval.select("domain", "qid").unique()
    covers = (
        f"{turns.height} target turns of {turns['domain'].n_unique()} domains "
        f"({', '.join(sorted(turns['domain'].unique()))})"
    )
    # a sub-track's table shows the interval of its own official figure, not another's
    others = {
        st: [c for c in board.columns if c.endswith(UNCERTAINTY_SUFFIXES) and not c.startswith(f"{figure} ")]
        for st, figure in reteco_judge.OFFICIAL_FIGURE.items()
    }
    tables = {
        f"subtrack_{st}": dg.MetadataValue.md(
            f"{what}; {covers}\n\n"
            f"{md_table(board.filter(pl.col('subtrack') == st).drop(*drop, *others[st], *BUILT_BY_RUNS), 60)}"
        )
        for st, what, drop in (
            (
                "2a",
                "Conversational retrieval, ranked by nDCG@10 (official)",
                ["subtrack", "retrieval_run", *reteco.DIMENSIONS, "macro"],
            ),
            (
                "2b",
                "Gold-passage generation, ranked by the macro average of the five dimensions",
                ["subtrack", "retrieval_run", *(reteco.METRIC_NAMES[m] for m in reteco.METRICS)],
            ),
            ("2c", "Full conversational RAG: the macro (ranking) beside its run's retrieval figures", ["subtrack"]),
        )
    }
    described = reteco_judge.leaderboard_uncertainty_definitions(uncertainty)
    tables |= {
        f"subtrack_{st}_uncertainty": report_table(intervals.filter(pl.col("subtrack") == st), described)
        for st in reteco_judge.OFFICIAL_FIGURE
    }
    return dg.Output(board, metadata={**table_metadata(board, 10), "covers": covers, **tables, **left_out})
