"""``make run``: materialize the QUIT, RECOR and WikiProfile builds and their evaluations on
the bundled samples, stage by stage, into the project's Dagster instance (so the UI shows
every materialization), then print where everything is.

It runs the settings' demo profile, sliced further by a preset, unless ``--profile paper``
asks for the papers' configuration (what the web UI runs with no config). ``--reteco RELEASE``
is SemEval-2027 RETECO Track 2's profile: RECOR's retrieval evaluation alone, from a RECOR
release, up to the task's official table.

The run's first line names its log file: Dagster's step lines, Anserini's and Dagster's beta
warnings go there (:mod:`pipelines.console`); the terminal gets a line per stage run and the
summary. ``--verbose`` prints everything on the terminal."""

from __future__ import annotations

# first: the project's modules below raise Dagster's beta warnings as they are imported
from pipelines import console  # isort: split

import argparse
import contextlib
import dataclasses
import os
import sys
import time
from typing import TextIO

import dagster as dg

from assets.common.metadata import PROFILE_TAG
from assets.common.settings import ProfiledSettings
from assets.eval.sources import add_release_folder
from assets.partitions import DOMAINS, sync_partitions
from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.published import release_domains
from assets.recor.settings import RecorSettings
from assets.wikiprofile.assets.wikipedia import shard_files, view_files
from assets.wikiprofile.settings import WikiProfileSettings
from assets.wikiprofile.sources.wikipedia import WINDOW, window_months
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES, REGISTERING_STAGES
from pipelines.resources import cache_folder, default_resources
from pipelines.stages import (
    BEIR,
    BENCHMARKS,
    DEMO_EVALUATION,
    QUIET,
    REGISTERED_BY_TRAINING,
    RELEASE_SAMPLES,
    RELEASE_SLICES,
    RETECO_STAGES,
    demo_configs,
    release_configs,
    reteco_configs,
    run_plan,
    stage_partitions,
)
from pipelines.summary import announce, announce_log, named_splits, print_log, print_plan, summarize
from resources.datasets import DATASETS_PATH, load_datasets
from resources.storage import StorageResource

# ``make run`` runs every stage of all three benchmarks on a slice of the bundled samples: the
# settings' demo profile, and a preset on top of it. The quick preset is sized to finish in
# under 20 minutes on an idle 2-core machine (BENCHMARKS.md): the embedded model labels about
# 3.7 passages a second, builds a RECOR conversation in about 70 s and judges its generations
# in about 30 s a turn, and spends about 20 s of construction per WikiProfile page and 9 s of
# sampling per fact and sample.
PRESETS = {
    # QUIT: the first question of each source past the leakage screen goes on to hint
    # convergence (over 2 wrong candidates instead of 3, a quarter fewer verdicts), typing and
    # closed-book answers: converging all of the sample's questions took 136 s of a run that
    # labels one. 65 of that question's 325 passages are labeled (a seeded fifth of the hint
    # orders, the same for every question): labeling was the run's largest stage, 2 s a
    # passage beside the test suite on a 2-core AVX2 machine (BENCHMARKS.md). Every reranker
    # reorders the top 10 of each run (the tables' deepest cutoff), not its own 20. RECOR:
    # one StackExchange domain, whose hard negatives are mined from its pool, from one
    # source question, built and evaluated: every RECOR asset runs. (A BRIGHT domain differs
    # only in where its negatives come from; the test suite builds all eleven with a
    # scripted model, --preset full with this one.) WikiProfile: 6 pages drawn at random
    # (seeded), 2 facts (each costs about 45 s of profiling), 4 samples per question and
    # thinking setting.
    "quick": {
        "quit_questions": 1,
        "max_labeled_questions": 1,
        "labeled_passages": 65,
        "quit_distractors": 2,
        "quit_rerank_depth": 10,
        "recor_domains": "law",
        "recor_questions": 1,
        "wikiprofile_pages": 6,
        "wikiprofile_facts": 2,
        "wikiprofile_samples": 4,
    },
    # The demo profile as it is, measured at 51m31s (BENCHMARKS.md): every RECOR domain, the
    # passages of 3 QUIT questions, 12 pages and 8 facts. 0 on any flag takes every record
    # of the sample instead (hours with the embedded model).
    "full": {
        "quit_questions": 0,
        "max_labeled_questions": 3,
        "labeled_passages": 0,
        "quit_distractors": 3,
        "quit_rerank_depth": 0,
        "recor_domains": "all",
        "recor_questions": 1,
        "wikiprofile_pages": 12,
        "wikiprofile_facts": 8,
        "wikiprofile_samples": 4,
    },
}


def run_stages(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    stages=QUIT_STAGES,
    log=print,
    configs: dict[str, dict] | None = None,
    registries: dict[str, str] | None = None,
    tags: dict[str, str] | None = None,
    partitions: dict[str, list] | None = None,
    errors: TextIO | None = None,
) -> bool:
    """Execute the stage jobs in order, each partitioned stage once per key of its partitions
    (``partitions``; by default :func:`stage_partitions` of the project's registries), a stage
    with its entry of ``configs`` (run config) when it has one, every run with ``tags``
    (``make run`` names its profile in ``PROFILE_TAG``, as the profile jobs do). After a stage
    that registers trained models, the instance's partitions and QUIT's retriever and
    reranker keys are read again from the registries (``registries``: other registry files).
    Each run is a ``log`` line: how many of the runs are done, its stage and partition, its
    time and the time since the first; a failed run's errors go to ``errors`` (standard error)."""
    partitions = dict(partitions if partitions is not None else stage_partitions())
    started, done, total = time.monotonic(), 0, runs(stages, partitions)
    for i, (job_name, named) in enumerate(stages):
        job = defs.resolve_job_def(job_name)
        run_config = {**QUIET, **(configs or {}).get(job_name, {})}
        for key in partitions[named] if named else [None]:
            t = time.monotonic()
            result = job.execute_in_process(
                instance=instance, partition_key=key, raise_on_error=False, run_config=run_config, tags=tags
            )
            done += 1
            label = f"{job_name}[{key}]" if key else job_name
            took, elapsed = time.monotonic() - t, clock(time.monotonic() - started)
            log(f"[{done}/{total}] {label}: {'ok' if result.success else 'FAILED'} in {took:.0f}s, {elapsed} elapsed")
            if not result.success:
                for event in result.all_events:
                    if event.is_failure:
                        print(event.message, file=errors or sys.stderr)
                return False
        if job_name in REGISTERING_STAGES:
            sync_partitions(instance, **(registries or {}))
            retrained = stage_partitions(**(registries or {}))
            partitions.update({name: retrained[name] for name in REGISTERED_BY_TRAINING})
            # of the datasets, those this run evaluates
            partitions["beir_dataset_retrievers"] = [
                k
                for k in partitions["beir_dataset_retrievers"]
                if k.keys_by_dimension["dataset"] in partitions.get("beir_datasets", [])
            ]
            total = done + runs(stages[i + 1 :], partitions)
    return True


def runs(stages, partitions: dict[str, list]) -> int:
    """How many runs ``stages`` take: one a key of each partitioned stage's partitions, one each other stage."""
    return sum(len(partitions[named]) if named else 1 for _, named in stages)


def clock(seconds: float) -> str:
    """``seconds`` as minutes and seconds: 3m05s."""
    return f"{round(seconds) // 60}m{round(seconds) % 60:02d}s"


def profiled(cls: type[ProfiledSettings], profile: str, **flags: int | None) -> ProfiledSettings:
    """The settings of ``profile`` with the knobs a flag or the preset sets (0 = every
    record). A run cannot tell a demo knob set to its paper value from one left to the demo
    profile (``ProfiledSettings``), so that run is the paper profile with the demo slice's
    other knobs set, which a run keeps as they are."""
    knobs = {k: v or None for k, v in flags.items() if v is not None}
    at_paper_value = [k for k, v in knobs.items() if k in cls.DEMO_SLICE and v == cls.model_fields[k].default]
    if profile == "demo" and at_paper_value:
        return cls(**{**cls.DEMO_SLICE, **knobs})
    return cls(profile=profile, **knobs)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What ``make run`` was asked for (:func:`parse`): the flags checked and completed by the preset."""

    profile: str
    preset: str | None
    wanted: list[str]
    domains: list[str]
    from_release: bool
    reteco: str | None
    wikipedia: str | None  # the folder of Wikimedia files WikiProfile starts from (--wikipedia)
    beir: list[str]  # the registered BEIR-layout datasets evaluated (--beir)
    finetune: bool
    plan_only: bool
    verbose: bool
    quit: QuitSettings
    recor: RecorSettings
    wikiprofile: WikiProfileSettings
    evaluated: dict[str, dict]  # what a built demo evaluates of the release samples (DEMO_EVALUATION)
    slices: dict[str, dict]  # how a release run cuts the release samples (RELEASE_SLICES)


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What a run materializes (:func:`plan`): the stages, the keys of their partitions by name, their configs."""

    stages: list[tuple[str, str | None]]
    partitions: dict[str, list]
    configs: dict[str, dict]


def arguments() -> argparse.ArgumentParser:
    """``make run``'s flags."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--profile",
        choices=("demo", "paper"),
        default="demo",
        help="demo: the settings' demo slice, cut further by a preset; paper: the papers' configuration, "
        "what the web UI runs with no config (hours with the embedded model)",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="a slice of the demo profile. quick (the default): every stage on a slice (under 20 minutes); "
        "full: every RECOR domain, more QUIT questions and WikiProfile pages (about 52 minutes). "
        "Each flag of the slice overrides it",
    )
    slice_flags(parser.add_argument_group("the slice (each overrides the preset)"))
    parser.add_argument(
        "--benchmarks",
        help=f"comma-separated benchmarks to build and evaluate: {', '.join(BENCHMARKS)} (the default: all three), "
        f"and {BEIR}: the registered BEIR-layout datasets (--beir)",
    )
    parser.add_argument(
        "--from-release",
        action="store_true",
        help="evaluate on the published releases' bundled samples (data/releases/) instead of building "
        "the benchmarks: the evaluation stages alone, their source assets set to source: release",
    )
    parser.add_argument(
        "--reteco",
        metavar="RELEASE",
        help="SemEval-2027 RETECO Track 2: evaluate RECOR alone from the release at RELEASE (a folder or "
        "s3:// prefix holding data/benchmark/<domain>_benchmark.jsonl and data/corpus/<domain>_documents.jsonl; "
        "every conversation of every domain it holds, or of --recor-domains) with the registry's retrievers, "
        "score the runs by the task's rules and print the official table",
    )
    parser.add_argument(
        "--wikipedia",
        metavar="FOLDER",
        help="build WikiProfile from Wikimedia's own data in FOLDER: summaries/ (CirrusSearch content dumps, "
        "wikimedia/wikipedia Parquet shards or REST page-summary JSON Lines) and views/ (country_project_page "
        "daily files or page-views API JSON); docs/benchmarks/wikiprofile.md",
    )
    parser.add_argument(
        "--beir",
        metavar="NAMES",
        help="comma-separated datasets of the dataset registry (resources/datasets.yaml, or the file "
        "BENCHFOUNDRY_DATASETS names) to evaluate every retriever and reranker on, all or none. Default: every "
        "registered dataset, unless --benchmarks leaves out beir. Names only: the deployment's registry says "
        "where each dataset is (docs/evaluate/another-dataset.md)",
    )
    demo_quit = {preset: named_splits(evaluated["quit"]) for preset, evaluated in DEMO_EVALUATION.items()}
    parser.add_argument(
        "--finetune",
        action=argparse.BooleanOptionalAction,
        help="train QUIT's fine-tuned retriever and reranker on the train split before the evaluation, "
        "evaluate them and report them against the vanilla systems (Tables 10-12). Default: on with "
        "--from-release and --profile paper; off for a demo run, whose QUIT evaluation (the release "
        f"sample's {demo_quit['quick'].removeprefix('the ')} in the quick preset, "
        f"{demo_quit['full']} in the full one) holds no train question to train them on",
    )
    parser.add_argument(
        "--plan", action="store_true", help="print the stages and partitions the run would materialize, and stop"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="print Dagster's step lines, Lucene's, and Dagster's warnings on the APIs it marks beta or preview "
        "on the terminal as they come, and write no log file (by default they go to the log file the first line names)",
    )
    return parser


def slice_flags(group) -> None:
    """The flags that cut the demo profile further, each a knob of a preset (:data:`PRESETS`)."""
    group.add_argument(
        "--quit-questions",
        type=int,
        help="QUIT questions of each source (TriviaHG, WikiHint) taken past the leakage screen to hint "
        "convergence, the first in the source's order (0 = all)",
    )
    group.add_argument("--max-labeled-questions", type=int, help="questions whose passages are labeled (0 = all)")
    group.add_argument(
        "--labeled-passages",
        type=int,
        help="passages labeled of each labeled question's 325, a seeded sample of hint orders (0 = all 325)",
    )
    group.add_argument(
        "--quit-rerank-depth",
        type=int,
        help="passages each QUIT reranker reorders at the head of a run (0 = the reranker's own top_k)",
    )
    group.add_argument(
        "--quit-distractors",
        type=int,
        help="wrong candidates per TriviaHG question for hint convergence (HintEval: 10)",
    )
    group.add_argument(
        "--recor-domains", help=f"comma-separated RECOR domains to build and evaluate, or all ({', '.join(DOMAINS)})"
    )
    group.add_argument(
        "--recor-questions", type=int, help="source questions per RECOR domain to build conversations from (0 = all)"
    )
    group.add_argument(
        "--wikiprofile-pages", type=int, help="WikiProfile page summaries to extract facts from (0 = all)"
    )
    group.add_argument(
        "--wikiprofile-facts", type=int, help="WikiProfile facts kept by the balanced downsampling (0 = all)"
    )
    group.add_argument(
        "--wikiprofile-samples",
        type=int,
        help="WikiProfile samples per question and thinking setting (a multiple of 4; the paper: 8)",
    )


def parse(argv: list[str] | None = None) -> RunOptions:
    """``argv`` as :class:`RunOptions`; a flag that cannot be is an error (exit status 2)."""
    parser = arguments()
    args = parser.parse_args(argv)
    # --reteco evaluates every domain of its release unless the domains are named: not the preset's
    named_domains = args.recor_domains
    if args.reteco and args.from_release:
        parser.error("--reteco evaluates its own release; --from-release the bundled samples: give one")
    if args.reteco and args.benchmarks not in (None, "recor"):
        parser.error("--reteco evaluates RECOR alone: leave out --benchmarks")
    if args.profile == "paper" and args.preset:
        parser.error("--preset slices the demo profile; --profile paper runs the papers' configuration")
    if args.profile == "demo":
        args.preset = args.preset or "quick"
        for name, value in PRESETS[args.preset].items():
            if getattr(args, name) is None:
                setattr(args, name, value)
    wanted = [b.strip() for b in (args.benchmarks or ",".join(BENCHMARKS)).split(",") if b.strip()]
    if unknown := set(wanted) - {*BENCHMARKS, BEIR}:
        parser.error(f"unknown benchmarks {sorted(unknown)} ({', '.join(BENCHMARKS)}, {BEIR})")
    datasets = beir_datasets(parser, args, wanted)
    wanted = [b for b in wanted if b != BEIR]
    domains = recor_domains(parser, args, wanted, named_domains)
    if args.reteco:
        wanted = ["recor"]
    if args.wikipedia:
        args.wikipedia = wikipedia_folder(parser, args, wanted)
    if args.quit_distractors is not None and args.quit_distractors < 1:
        parser.error("--quit-distractors must be at least 1 (convergence is measured against wrong candidates)")
    if args.wikiprofile_samples is not None and (args.wikiprofile_samples <= 0 or args.wikiprofile_samples % 4):
        parser.error(
            "--wikiprofile-samples must be a positive multiple of 4 (the gold sits in each of 4 option slots equally often)"
        )
    return RunOptions(
        profile=args.profile,
        preset=args.preset,
        wanted=wanted,
        domains=domains,
        from_release=args.from_release,
        reteco=args.reteco,
        wikipedia=args.wikipedia,
        beir=datasets,
        plan_only=args.plan,
        verbose=args.verbose,
        finetune=args.finetune if args.finetune is not None else args.from_release or args.profile == "paper",
        quit=profiled(
            QuitSettings,
            args.profile,
            max_questions_per_source=args.quit_questions,
            max_labeled_questions=args.max_labeled_questions,
            labeled_passages_per_question=args.labeled_passages,
            distractors=args.quit_distractors,
            rerank_depth=args.quit_rerank_depth,
        ),
        recor=profiled(RecorSettings, args.profile, max_questions=args.recor_questions),
        wikiprofile=profiled(
            WikiProfileSettings,
            args.profile,
            max_pages=args.wikiprofile_pages,
            downsample_to=args.wikiprofile_facts,
            n_samples=args.wikiprofile_samples,
            **({"pages_source": "wikipedia", "wikipedia_path": args.wikipedia} if args.wikipedia else {}),
        ),
        evaluated=DEMO_EVALUATION[args.preset]
        if args.profile == "demo" and not (args.from_release or args.reteco)
        else {},
        slices=RELEASE_SLICES.get(args.preset, {}) if args.profile == "demo" else {},
    )


def recor_domains(
    parser: argparse.ArgumentParser, args: argparse.Namespace, wanted: list[str], named_domains: str | None
) -> list[str]:
    """The RECOR domains a run builds or evaluates: ``--recor-domains`` (the preset's, or all), of them those the
    release holds when it reads one (all it holds when ``--reteco`` names none). Makes ``args.reteco`` absolute."""
    args.recor_domains = args.recor_domains or "all"
    domains = (
        list(DOMAINS)
        if args.recor_domains == "all"
        else [d.strip() for d in args.recor_domains.split(",") if d.strip()]
    )
    if not domains or set(domains) - set(DOMAINS):
        parser.error(
            f"--recor-domains: unknown domains {sorted(set(domains) - set(DOMAINS))} (known: {', '.join(DOMAINS)}, or all)"
        )
    if args.from_release and "recor" in wanted:
        released = release_domains(RELEASE_SAMPLES["recor"])
        domains = [d for d in domains if d in released] if args.recor_domains != "all" else released
        if not domains:
            parser.error(f"--recor-domains: the bundled RECOR release holds {', '.join(released)} only")
    if args.reteco:
        args.reteco = args.reteco if "://" in args.reteco else os.path.abspath(os.path.expanduser(args.reteco))
        released = release_domains(args.reteco)
        if not released:
            parser.error(
                f"--reteco: no RECOR domain under {args.reteco} (expected data/benchmark/<domain>_benchmark.jsonl "
                "and data/corpus/<domain>_documents.jsonl)"
            )
        domains = [d for d in domains if d in released] if named_domains else released
        if not domains:
            parser.error(f"--recor-domains: the release at {args.reteco} holds {', '.join(released)} only")
    return domains


def beir_datasets(parser: argparse.ArgumentParser, args, wanted: list[str]) -> list[str]:
    """The registered datasets a run evaluates: ``--beir``'s names (all registered by default,
    none with ``none``, under ``--reteco`` or where ``--benchmarks`` leaves out beir while
    naming others). Names only: where a dataset is, the deployment's registry says."""
    registered = sorted(load_datasets())
    named = args.beir or ("all" if BEIR in wanted or args.benchmarks is None else "none")
    if args.reteco or named == "none":
        if args.beir not in (None, "none"):
            parser.error("--beir: --reteco evaluates RECOR alone")
        return []
    if named == "all":
        if BEIR in wanted and not registered:
            parser.error(f"--benchmarks beir: no dataset is registered in {DATASETS_PATH}")
        return registered
    names = [n.strip() for n in named.split(",") if n.strip()]
    if unknown := sorted(set(names) - set(registered)):
        parser.error(
            f"--beir: {', '.join(unknown)} not in the dataset registry {DATASETS_PATH} "
            f"(registered: {', '.join(registered) or 'none'}); the deployment adds datasets there"
        )
    return names


def wikipedia_folder(parser: argparse.ArgumentParser, args, wanted: list[str]) -> str:
    """``--wikipedia``'s folder, absolute (from the current directory), holding ``summaries/``
    and ``views/``; an error says what is missing."""
    if args.from_release or args.reteco or "wikiprofile" not in wanted:
        parser.error("--wikipedia builds WikiProfile: give it without --from-release and --reteco, with wikiprofile")
    folder = os.path.abspath(os.path.expanduser(args.wikipedia))
    if missing := [p for p in ("summaries", "views") if not os.path.isdir(os.path.join(folder, p))]:
        parser.error(f"--wikipedia: {folder} has no {' and no '.join(f'{p}/' for p in missing)} folder")
    return folder


def wikipedia_partitions(folder: str) -> dict[str, list[str]]:
    """The shards of ``folder``'s summaries and the months of the window its view files cover."""
    shards, _ = shard_files(os.path.join(folder, "summaries"))
    views = os.path.join(folder, "views")
    months = [m for m in window_months(*WINDOW) if view_files(views, m)[0]]
    return {"wikipedia_shards": list(shards), "wikipedia_months": [f"{m}-01" for m in months]}


def plan(options: RunOptions) -> RunPlan:
    """The stages of the run ``options`` asks for, the partitions of the registries and of
    the run's RECOR domains, and the source stages' configs."""
    partitions = stage_partitions()
    partitions["domains"] = options.domains
    partitions["beir_datasets"] = options.beir
    partitions["beir_dataset_retrievers"] = [
        k for k in partitions["beir_dataset_retrievers"] if k.keys_by_dimension["dataset"] in options.beir
    ]
    partitions["domain_retrievers"] = [
        k for k in partitions["domain_retrievers"] if k.keys_by_dimension["domain"] in options.domains
    ]
    if options.wikipedia:
        partitions.update(wikipedia_partitions(options.wikipedia))
    stages = (
        RETECO_STAGES
        if options.reteco
        else run_plan(
            options.wanted,
            options.from_release,
            options.finetune,
            wikipedia=bool(options.wikipedia),
            beir=bool(options.beir),
        )
    )
    configs = (
        reteco_configs(options.reteco)
        if options.reteco
        else release_configs(options.slices)
        if options.from_release
        else demo_configs(options.preset)
        if options.evaluated
        else {}
    )
    return RunPlan(stages, partitions, configs)


def run(options: RunOptions, planned: RunPlan, log: str | None = None) -> StorageResource | None:
    """Materializes ``planned`` into the project's instance; the storage it wrote to, or
    None when a stage failed. Everything but the project's lines goes to the file ``log``
    (:func:`console.quiet`), unless it is None."""
    with console.quiet(log) if log else contextlib.nullcontext(console.Terminal(sys.stdout, sys.stderr)) as terminal:
        return materialize(options, planned, terminal)


def materialize(options: RunOptions, planned: RunPlan, terminal: console.Terminal) -> StorageResource | None:
    """:func:`run`'s work, its lines on ``terminal``."""
    if options.reteco:
        # the operator named this release on the command line: a release folder of this run
        add_release_folder(options.reteco)
    storage = default_resources()["storage"]
    defs = build_defs(
        storage=storage,
        quit_settings=options.quit,
        recor_settings=options.recor,
        wikiprofile_settings=options.wikiprofile,
        finetune_settings=FinetuneSettings(profile=options.profile),
    )
    instance = dg.DagsterInstance.get()
    # The registries' aliases are the partitions (the registry sensor adds them too when the daemon runs).
    sync_partitions(instance)
    if shards := [
        k
        for k in planned.partitions.get("wikipedia_shards", [])
        if not instance.has_dynamic_partition("wikipedia_shards", k)
    ]:
        # the operator's folder of Wikimedia files: its shards are partitions of this instance
        instance.add_dynamic_partitions("wikipedia_shards", shards)
    started = time.monotonic()
    if not run_stages(
        defs,
        instance,
        planned.stages,
        configs=planned.configs,
        tags={PROFILE_TAG: options.profile},
        partitions=planned.partitions,
        log=lambda line: print(line, file=terminal.out),
        errors=terminal.err,
    ):
        return None
    print(f"\nfinished in {time.monotonic() - started:.0f}s", file=terminal.out)
    return storage


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    log = None
    if options.verbose:
        console.loud()
    elif not options.plan_only:
        log = console.log_path(cache_folder())
        announce_log(log)
    announce(options)
    planned = plan(options)
    if options.plan_only:
        print_plan(options, planned)
        return 0
    if (storage := run(options, planned, log)) is None:
        if log:
            print_log(log, file=sys.stderr)
        return 1
    summarize(options, storage)
    if log:
        print_log(log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
