"""Jobs. Partitioned and unpartitioned assets cannot share a run, so the QUIT build is a
sequence of stages; ``pipelines.run_default`` runs them in order, and the UI's
"Materialize all" launches the same graph as a backfill."""

import dagster as dg

from assets.common.metadata import PROFILE_TAG
from assets.common.settings import DEMO, PAPER
from pipelines.plan import estimate, profile_plan


def select(prefix: str, *names: str) -> dg.AssetSelection:
    """The assets keyed ``prefix/<name>`` for each of ``names``."""
    return dg.AssetSelection.assets(*([prefix, n] for n in names))


QUIT_PREPARE = select(
    "quit",
    "source_questions",
    "source_rejects",
    "screened_questions",
    "leakage_rejects",
    "reference_index",
    "hint_convergence",
    "selected_questions",
    "question_metadata",
)
QUIT_PARAMETRIC = select("quit", "parametric_answers")
QUIT_PASSAGES = select("quit", "splits", "passages")
QUIT_LABELING = select("quit", "passage_answers")
QUIT_FINALIZE = dg.AssetSelection.groups("quit") - QUIT_PREPARE - QUIT_PARAMETRIC - QUIT_PASSAGES - QUIT_LABELING

quit_prepare_job = dg.define_asset_job(
    "quit_prepare",
    selection=QUIT_PREPARE,
    description="QUIT 3.1: ingest, leakage filter, hint convergence and selection, type and difficulty.",
)
quit_parametric_job = dg.define_asset_job(
    "quit_parametric", selection=QUIT_PARAMETRIC, description="Closed-book answers of one model (partition = alias)."
)
quit_passages_job = dg.define_asset_job(
    "quit_passages", selection=QUIT_PASSAGES, description="Splits and the 325 hint-permutation passages per question."
)
quit_labeling_job = dg.define_asset_job(
    "quit_labeling",
    selection=QUIT_LABELING,
    description="One labeler's answers from every passage (partition = alias).",
)
quit_finalize_job = dg.define_asset_job(
    "quit_finalize",
    selection=QUIT_FINALIZE,
    description="Labels, human verification update, final benchmark, release files and statistics.",
)

# The benchmark each evaluation reads, built or released (assets.eval.sources): its own
# stage, so that an evaluation of a release runs these and the evaluation stages alone.
quit_eval_source_job = dg.define_asset_job(
    "quit_eval_source",
    selection=select("eval", "quit_questions", "quit_corpus", "quit_qrels", "quit_source_rejects"),
    description=(
        "The QUIT questions, corpus and qrels the evaluation reads: the build's (default) or a "
        "published release's (config source)."
    ),
)
quit_retrieval_job = dg.define_asset_job(
    "quit_retrieval",
    selection=select("eval", "quit_index", "quit_runs"),
    description="Index the QUIT corpus and retrieve the top-100 passages per question (partition = retriever alias).",
)
quit_rerank_job = dg.define_asset_job(
    "quit_rerank",
    selection=select("eval", "quit_reranked_runs"),
    description="One retriever's run reranked by one reranker (partition = retriever x reranker).",
)
quit_readers_job = dg.define_asset_job(
    "quit_readers",
    selection=select("eval", "quit_reader_answers"),
    description="One reader's answers from the top-k passages of every run (partition = model alias).",
)
quit_eval_report_job = dg.define_asset_job(
    "quit_eval_report",
    selection=select("eval", "quit_retrieval_metrics", "quit_rerank_metrics", "quit_reader_metrics"),
    description="Retrieval and reader metrics with the report tables and plots.",
)
quit_verification_job = dg.define_asset_job(
    "quit_verification",
    # the QUIT assets only: the evaluation is partitioned and is rerun through its own jobs
    selection=select("quit", "verified_labels").required_multi_asset_neighbors().downstream()
    & dg.AssetSelection.groups("quit"),
    description="Re-applies human verification decisions and rebuilds what depends on them.",
)

# A stage is a job and the name of the partitions it runs over (``assets.partitions.NAMED``;
# ``make run`` runs it once per key), or None for a job run once (recor_observe observes
# every domain in one run).
QUIT_BUILD_STAGES = [
    ("quit_prepare", None),
    ("quit_parametric", "quit_models"),
    ("quit_passages", None),
    ("quit_labeling", "quit_labelers"),
    ("quit_finalize", None),
]
QUIT_EVAL_STAGES = [
    ("quit_eval_source", None),
    ("quit_retrieval", "retrievers"),
    ("quit_rerank", "retriever_rerankers"),
    ("quit_readers", "quit_readers"),
    ("quit_eval_report", None),
]
QUIT_STAGES = QUIT_BUILD_STAGES + QUIT_EVAL_STAGES
# What the fine-tuning stage trains, one model of each per base.
FINETUNED_MODELS = ("quit_dense_model", "quit_colbert_model", "quit_rerank_model")

# QUIT's fine-tuning (section 5): the training pairs of the train split, then the models of one
# base (partition = base model alias), which register as a retriever and a reranker; the
# evaluation stages after them evaluate those like any other, and the report compares them.
quit_finetune_data_job = dg.define_asset_job(
    "quit_finetune_data",
    selection=select("eval", "quit_finetune_data", "quit_finetune_rejects"),
    description="QUIT's fine-tuning data: (question, positive, negative) pairs of the train split, hard negatives from BM25.",
)
quit_finetune_job = dg.define_asset_job(
    "quit_finetune",
    selection=select("eval", *FINETUNED_MODELS),
    description="A bi-encoder and a late-interaction (ColBERT-style) retriever and a cross-encoder reranker fine-tuned on "
    "QUIT's train pairs from one base model (partition = base), one of each per count of positives, "
    "registered as retrievers and a reranker.",
)
quit_finetune_report_job = dg.define_asset_job(
    "quit_finetune_report",
    selection=select("eval", "quit_finetune_report"),
    description="Vanilla against fine-tuned retrievers, rerankers and reader contexts on the held-out questions (Tables 10-12).",
)
QUIT_FINETUNE_STAGES = [("quit_finetune_data", None), ("quit_finetune", "finetune_bases")]
# The stages after which the registries name new aliases (trained models): a run reads the
# partitions of the later stages again.
REGISTERING_STAGES = {"quit_finetune"}


def quit_eval_stages(finetune: bool) -> list[tuple[str, str | None]]:
    """QUIT's evaluation stages; with ``finetune``, the models trained on the train split
    first (the later stages evaluate them) and the fine-tuning report last."""
    if not finetune:
        return QUIT_EVAL_STAGES
    return [*QUIT_EVAL_STAGES[:1], *QUIT_FINETUNE_STAGES, *QUIT_EVAL_STAGES[1:], ("quit_finetune_report", None)]


# What reads every domain: run once after the domains are built (export_all: all domains as one dataset).
RECOR_REPORTS = select("recor", "quality_report", "statistics", "export_all")
recor_observe_job = dg.define_asset_job(
    "recor_observe",
    selection=select("recor", "source_files"),
    description="Observe every domain's source files (a content hash per domain), as the UI's Observe button does: "
    "a build records the hash it read, so editing a domain's files later marks only its partitions stale.",
)
recor_build_job = dg.define_asset_job(
    "recor_build",
    selection=dg.AssetSelection.groups("recor") - RECOR_REPORTS,
    description="RECOR construction and quality analysis of one domain (partition = domain).",
)
recor_report_job = dg.define_asset_job(
    "recor_report",
    selection=RECOR_REPORTS,
    description="RECOR statistics (Table 2), quality report (Table 31) and the export of every built domain.",
)
recor_eval_source_job = dg.define_asset_job(
    "recor_eval_source",
    selection=select("eval", "recor_turns", "recor_corpus", "recor_source_rejects"),
    description="One domain's turns and corpus the evaluation reads: the build's (default) or a published release's (config source).",
)
recor_queries_job = dg.define_asset_job(
    "recor_queries",
    selection=select("eval", "recor_queries"),
    description="The five query strategies for one domain's turns.",
)
recor_retrieval_job = dg.define_asset_job(
    "recor_retrieval",
    selection=select("eval", "recor_runs"),
    description="One domain's corpus indexed and searched by one retriever (partition = domain x retriever).",
)
recor_retrieval_report_job = dg.define_asset_job(
    "recor_retrieval_report",
    selection=select("eval", "recor_retrieval_metrics"),
    description="RECOR retrieval metrics: Tables 3, 4, 17-20 and Figure 2.",
)
reteco_generation_job = dg.define_asset_job(
    "reteco_generation",
    selection=select("eval", "reteco_generation"),
    description="One domain's answers judged as SemEval-2027 RETECO Track 2 judges them: the generators' Oracle answers "
    "as 2b, their Retrieved answers as 2c, and any generation files in the run config (submissions); five "
    "focused prompts, integer 1-5 scores normalized (s - 1) / 4 (partition = domain).",
)
reteco_report_job = dg.define_asset_job(
    "reteco_report",
    selection=select("eval", "reteco_retrieval", "reteco_leaderboard"),
    description="RECOR's runs scored as SemEval-2027 RETECO Track 2 scores a submission: binary nDCG@10 macro-averaged "
    "over the target turns (official), MAP@10, Recall@10, MRR, per domain and by depth T1-T4, T5+; and the "
    "leaderboard, one row per sub-track (2a, 2b, 2c) and run. "
    "Participants' files: python -m pipelines.reteco check/score/judge (docs/benchmarks/reteco.md).",
)
recor_generation_job = dg.define_asset_job(
    "recor_generation",
    selection=select("eval", "recor_generation"),
    description="RAG generation in three modes for one domain, judged (partition = domain).",
)
recor_generation_report_job = dg.define_asset_job(
    "recor_generation_report",
    selection=select("eval", "recor_generation_metrics"),
    description="RECOR generation quality: Tables 7, 8, 21-23.",
)

WIKIPROFILE_PROFILING = select("eval", "wikiprofile_responses", "wikiprofile_graded_responses", "wikiprofile_profiles")
WIKIPROFILE_REPORTS = select(
    "eval",
    "wikiprofile_profile_report",
    "wikiprofile_popularity_report",
    "wikiprofile_direction_report",
    "wikiprofile_thinking_report",
    "wikiprofile_robustness_report",
)
wikiprofile_build_job = dg.define_asset_job(
    "wikiprofile_build",
    selection=dg.AssetSelection.groups("wikiprofile") - WIKIPROFILE_PROFILING - WIKIPROFILE_REPORTS,
    description="WikiProfile construction: facts from page summaries, ten tasks each (steps 1-19).",
)
wikiprofile_profile_job = dg.define_asset_job(
    "wikiprofile_profile",
    selection=WIKIPROFILE_PROFILING,
    description="One subject model profiled: sampled responses, autorater grades, profiles (partition = model alias).",
)
wikiprofile_report_job = dg.define_asset_job(
    "wikiprofile_report", selection=WIKIPROFILE_REPORTS, description="WikiProfile Table 2 over every profiled model."
)
wikiprofile_eval_source_job = dg.define_asset_job(
    "wikiprofile_eval_source",
    selection=select("eval", "wikiprofile_tasks", "wikiprofile_pages", "wikiprofile_source_rejects"),
    description="The WikiProfile tasks and pages the profiling reads: the build's (default) or a published release's (config source).",
)
wikipedia_summaries_job = dg.define_asset_job(
    "wikipedia_summaries",
    selection=select("wikiprofile", "wikipedia_summaries", "wikipedia_summary_rejects"),
    description="One summary file of the deployment's Wikipedia folder read into page leads (partition = file name).",
)
wikipedia_views_job = dg.define_asset_job(
    "wikipedia_views",
    selection=select("wikiprofile", "wikipedia_views", "wikipedia_view_rejects"),
    description="One month of page views of the deployment's Wikipedia folder, summed per page (partition = month).",
)
# Before the build when WikiProfile starts from Wikimedia's data (make run --wikipedia).
WIKIPEDIA_STAGES = [("wikipedia_summaries", "wikipedia_shards"), ("wikipedia_views", "wikipedia_months")]
WIKIPROFILE_BUILD_STAGES = [("wikiprofile_build", None)]
WIKIPROFILE_EVAL_STAGES = [
    ("wikiprofile_eval_source", None),
    ("wikiprofile_profile", "subjects"),
    ("wikiprofile_report", None),
]
WIKIPROFILE_STAGES = WIKIPROFILE_BUILD_STAGES + WIKIPROFILE_EVAL_STAGES

# Datasets in BEIR's layout the deployment registers (resources/datasets.yaml).
beir_eval_source_job = dg.define_asset_job(
    "beir_eval_source",
    selection=select("eval", "beir_corpus", "beir_queries", "beir_qrels", "beir_source_rejects"),
    description="One registered dataset in BEIR's layout read, with named rejects (partition = dataset).",
)
beir_retrieval_job = dg.define_asset_job(
    "beir_retrieval",
    selection=select("eval", "beir_runs"),
    description="One dataset indexed and searched by one retriever (partition = dataset x retriever).",
)
beir_rerank_job = dg.define_asset_job(
    "beir_rerank",
    selection=select("eval", "beir_reranked_runs"),
    description="One retriever's run on one dataset reranked by every registered reranker (partition = dataset x "
    "retriever).",
)
beir_report_job = dg.define_asset_job(
    "beir_report",
    selection=select("eval", "beir_retrieval_metrics", "beir_rerank_metrics"),
    description="BEIR's metrics (nDCG@10 and @100, MAP@100, Recall@10 and @100, P@10, MRR@10) per dataset and system.",
)
BEIR_STAGES = [
    ("beir_eval_source", "beir_datasets"),
    ("beir_retrieval", "beir_dataset_retrievers"),
    ("beir_rerank", "beir_dataset_retrievers"),
    ("beir_report", None),
]

RECOR_BUILD_STAGES = [("recor_observe", None), ("recor_build", "domains"), ("recor_report", None)]
RECOR_EVAL_STAGES = [
    ("recor_eval_source", "domains"),
    ("recor_queries", "domains"),
    ("recor_retrieval", "domain_retrievers"),
    ("recor_retrieval_report", None),
    ("recor_generation", "domains"),
    ("recor_generation_report", None),
    ("reteco_generation", "domains"),
    ("reteco_report", None),
]
RECOR_STAGES = RECOR_BUILD_STAGES + RECOR_EVAL_STAGES

jobs = [
    quit_prepare_job,
    quit_parametric_job,
    quit_passages_job,
    quit_labeling_job,
    quit_finalize_job,
    quit_eval_source_job,
    quit_finetune_data_job,
    quit_finetune_job,
    quit_finetune_report_job,
    quit_retrieval_job,
    quit_rerank_job,
    quit_readers_job,
    quit_eval_report_job,
    quit_verification_job,
    recor_observe_job,
    recor_build_job,
    recor_report_job,
    recor_eval_source_job,
    recor_queries_job,
    recor_retrieval_job,
    recor_retrieval_report_job,
    recor_generation_job,
    reteco_generation_job,
    reteco_report_job,
    recor_generation_report_job,
    wikipedia_summaries_job,
    wikipedia_views_job,
    wikiprofile_build_job,
    wikiprofile_eval_source_job,
    wikiprofile_profile_job,
    wikiprofile_report_job,
    beir_eval_source_job,
    beir_retrieval_job,
    beir_rerank_job,
    beir_report_job,
]


# The checks-only job of the retriever x reranker partitions keeps the name it was given when
# they were named ``rerankers`` (since a dimension's name): schedules, bookmarks and run history
# name a job.
RECHECK_SUFFIXES = {"retriever_rerankers": "rerankers"}


def recheck_jobs(checks: list[dg.AssetChecksDefinition], partitions: dict[str, dg.PartitionsDefinition]) -> list:
    """Checks-only jobs: the checks of one key prefix (``quit``, ``recor``, ``wikiprofile``,
    ``eval``) and one partitioning, run over the stored tables without materializing anything,
    so that a changed threshold (``CheckSettings``) re-judges a build without asking any model
    again. ``<prefix>_checks`` for unpartitioned assets, ``<prefix>_checks_<partitions>`` for
    the others (``partitions`` names each partitions definition; :data:`RECHECK_SUFFIXES` keeps
    an older name). A run of a partitioned one checks the partition in its ``dagster/partition``
    tag (the launchpad's tags). A group whose checks read a profiled settings resource also
    comes as ``_demo`` and ``_paper`` jobs."""
    named = {id(p): RECHECK_SUFFIXES.get(name, name) for name, p in partitions.items()}
    groups: dict[str, list[dg.AssetChecksDefinition]] = {}
    for check in checks:
        prefix = next(iter(check.check_keys)).asset_key.path[0]
        pdef = check.partitions_def
        if pdef is not None and id(pdef) not in named:
            raise ValueError(f"{sorted(k.to_user_string() for k in check.check_keys)}: its partitions have no name")
        name = f"{prefix}_checks" + (f"_{named[id(pdef)]}" if pdef is not None else "")
        groups.setdefault(name, []).append(check)
    rechecks = []
    for name, group in sorted(groups.items()):
        job = dg.define_asset_job(
            name,
            selection=dg.AssetSelection.checks(*group),
            description=f"Re-runs {sum(len(c.check_keys) for c in group)} checks on the stored "
            "tables (no materialization, no model asked).",
        )
        rechecks.append(job)
        # checks that compare a table with the settings (RECOR's thresholds, the facts kept)
        # judge a build by the profile it was made with
        if any(set(check.required_resource_keys) & set(PROFILED_SETTINGS) for check in group):
            rechecks += profile_variants(
                job,
                {
                    p: f"the checks read the {p} profile's settings; pick the profile the tables were built with."
                    for p in (DEMO, PAPER)
                },
            )
    return rechecks


# The leaderboard reads whichever report tables are stored, so it runs after the report
# stages of any benchmark (or of none: it then names every benchmark as not evaluated).
eval_leaderboard_job = dg.define_asset_job(
    "eval_leaderboard",
    selection=select("eval", "leaderboard"),
    description="Every evaluated system on every benchmark it was run on, one row per system, as a table, CSV and plot.",
)
LEADERBOARD_STAGES = [("eval_leaderboard", None)]
jobs.append(eval_leaderboard_job)


# Launching is explicit about size. The settings resources default to the papers'
# configuration, so a job launched with no config may run for hours. Each job whose steps read
# a profiled settings resource also comes as ``<job>_demo`` and ``<job>_paper``: the run
# config names the profile (editable in the launchpad), the tag (``PROFILE_TAG``, which the
# reports' ``slice`` states) and the job name put it on every run, and the description says
# what that profile builds and roughly how long it takes.
PROFILED_SETTINGS = ("quit_settings", "finetune_settings", "recor_settings", "wikiprofile_settings")


def profile_config(profile: str) -> dict:
    """Run config that sets ``profile`` on every profiled settings resource: a run has one
    profile, whichever benchmark's settings its steps read."""
    if profile not in (DEMO, PAPER):
        raise ValueError(f"profile {profile!r}: use {DEMO} or {PAPER}")
    return {"resources": {key: {"config": {"profile": profile}} for key in PROFILED_SETTINGS}}


# What each profile builds, by the settings the job reads (the numbers are the settings'
# defaults and demo slices; the times are BENCHMARKS.md's, on 2 CPU cores for the demo).
PROFILE_SIZES = {
    "quit": {
        DEMO: "the sources' questions (the bundled sample: 30 TriviaHG and 14 WikiHint questions), 3 wrong candidates "
        "each, a test split of 12, the 325 passages of 3 questions labeled, each reranker at its own top_k; a few "
        "minutes a stage on 2 CPU cores with the embedded model.",
        PAPER: "every question of the sources, 10 wrong candidates each, train and test splits of 5,000 and 2,000, every "
        "passage labeled by every labeler, the top 100 reranked; at the paper's 7,401 questions (2.4M passages) "
        "about 7.2M labeling calls and a day of CPU besides the models' time.",
    },
    "finetune": {
        DEMO: "one model of each kind trained on 10 positives a question, 20 training steps of batch 8: about a minute "
        "each on 2 CPU cores.",
        PAPER: "one model of each kind per count of the paper's sweep, 1, 5, 10, 50, 100 and 200 positives and as many "
        "BM25 negatives per train question, one epoch of batch 64 each: a GPU's work at the paper's 5,000 train "
        "questions.",
    },
    "recor": {
        DEMO: "every source question of the domain (the bundled sample: 2 a domain), at most 4 aspects of 2 facts, "
        "follow-ups with 4 new words; a few minutes a domain on 2 CPU cores.",
        PAPER: "every source question of the domain, up to 12 aspects of 5 facts, follow-ups with 10 new words; many "
        "builder calls a question, hours a domain at BRIGHT's size.",
    },
    "wikiprofile": {
        DEMO: "12 pages (the bundled sample has 45), 8 facts kept, each question sampled 4 times (320 calls a subject "
        "model); about a minute and a half a stage on 2 CPU cores.",
        PAPER: "up to 10,000 pages, 5,000 facts kept, each question sampled 8 times (400,000 calls a subject model, "
        "then as many grades).",
    },
}
# Each profile's LLM calls (training steps) and wall time per stage and partition, from the
# settings and the registries as they are when the definitions load (a UI reload recomputes them).
PLANS = {profile: profile_plan(profile) for profile in (DEMO, PAPER)}


# The jobs whose steps read a profiled settings resource (a test checks the list against the
# graph), with the sizes their descriptions quote.
PROFILED_JOBS = [
    (quit_prepare_job, "quit"),
    (quit_parametric_job, "quit"),
    (quit_passages_job, "quit"),
    (quit_labeling_job, "quit"),
    (quit_finalize_job, "quit"),
    (quit_rerank_job, "quit"),
    (quit_verification_job, "quit"),
    (quit_finetune_data_job, "finetune"),
    (quit_finetune_job, "finetune"),
    (recor_observe_job, "recor"),
    (recor_build_job, "recor"),
    (recor_report_job, "recor"),
    (wikiprofile_build_job, "wikiprofile"),
    (wikiprofile_profile_job, "wikiprofile"),
    (wikiprofile_report_job, "wikiprofile"),
]

# Jobs whose steps read a profiled settings resource only for what no profile changes (the
# deployment's Wikipedia folder, the project whose views count, the words a lead needs): a
# demo and a paper run would read the same files into the same tables, so no variants.
PROFILE_FREE_JOBS = [wikipedia_summaries_job, wikipedia_views_job]


def profile_variants(job, sizes: dict[str, str]) -> list:
    """``<job>_demo`` and ``<job>_paper``: the job's selection with the profile in its run
    config and tags, and its size and estimate (``PLANS``) in the description."""
    return [
        dg.define_asset_job(
            f"{job.name}_{profile}",
            selection=job.selection,
            config=profile_config(profile),
            tags={PROFILE_TAG: profile},
            description=f"{job.description} Profile {profile}: {sizes[profile]}"
            f"{estimate(PLANS[profile], job.name, profile)}",
        )
        for profile in (DEMO, PAPER)
    ]


profile_jobs = [variant for job, sizes in PROFILED_JOBS for variant in profile_variants(job, PROFILE_SIZES[sizes])]
jobs.extend(profile_jobs)
