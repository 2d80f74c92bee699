"""``make run``: materialize the QUIT, RECOR and WikiProfile builds and their evaluations on
the bundled samples, stage by stage, into the project's Dagster instance (so the UI shows
every materialization), then print where everything is.

It runs the settings' demo profile, sliced further by a preset, unless ``--profile paper``
asks for the papers' configuration (what the web UI runs with no config). ``--reteco RELEASE``
is SemEval-2027 RETECO Track 2's profile: RECOR's retrieval evaluation alone, from a RECOR
release, up to the task's official table."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import dagster as dg
import polars as pl

from assets.common.metadata import PROFILE_TAG
from assets.common.settings import ProfiledSettings
from assets.eval.quit.assets import HEADLINE_SPLIT
from assets.eval.quit.finetune.report import RETRIEVAL, wide
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as reteco_judge
from assets.partitions import DOMAINS, registered_keys, sync_partitions
from assets.quit.settings import FinetuneSettings, QuitSettings
from assets.recor.published import release_domains
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings
from pipelines.definitions import build_defs
from pipelines.jobs import (
    LEADERBOARD_STAGES,
    QUIT_BUILD_STAGES,
    QUIT_STAGES,
    RECOR_EVAL_STAGES,
    REGISTERING_STAGES,
    RECOR_STAGES,
    WIKIPROFILE_EVAL_STAGES,
    WIKIPROFILE_STAGES,
    quit_eval_stages,
)
from resources.storage import StorageResource, exists, read_parquet, table_uri


def stage_partitions(**registries: str) -> dict[str, list]:
    """The keys of each set of partitions a stage runs over, by its name
    (:data:`assets.partitions.NAMED`): the registries' aliases (``registries`` names other
    registry files, as :func:`assets.partitions.registered_keys` takes them), which
    ``sync_partitions`` adds to the instance before the stages run, and RECOR's domains."""
    registered = registered_keys(**registries)
    return {"quit_models": registered["quit_models"], "quit_labelers": registered["quit_labelers"],
            "quit_readers": registered["quit_readers"], "retrievers": registered["retrievers"],
            "retriever_rerankers": [dg.MultiPartitionKey({"retriever": r, "reranker": k})
                                    for r in registered["retrievers"] for k in registered["rerankers"]],
            "finetune_bases": registered["finetune_bases"],
            "domains": DOMAINS,
            "domain_retrievers": [dg.MultiPartitionKey({"domain": d, "retriever": r})
                                  for d in DOMAINS for r in registered["recor_retrievers"]],
            "subjects": registered["wikiprofile_subjects"]}


# What a stage that registers trained models changes: QUIT's retrievers and rerankers (a
# model trained on QUIT is left out of RECOR's retrievers).
REGISTERED_BY_TRAINING = ("retrievers", "retriever_rerankers")
# ``make run`` runs every stage of all three benchmarks on a slice of the bundled samples: the
# settings' demo profile, and a preset on top of it. The quick preset is sized to finish in
# under 20 minutes on an idle 2-core machine (BENCHMARKS.md): the embedded model labels about
# 3.7 passages a second, builds a RECOR conversation in about 70 s and judges its generations
# in about 30 s a turn, and spends about 20 s of construction per WikiProfile page and 9 s of
# sampling per fact and sample.
PRESETS = {
    # QUIT: one question's 325 passages labeled; hint convergence over 2 wrong candidates
    # per question instead of 3, a quarter fewer verdicts (it is the longest step). RECOR:
    # one StackExchange domain, whose hard negatives are mined from its pool, from one
    # source question, built and evaluated: every RECOR asset runs. (A BRIGHT domain differs
    # only in where its negatives come from; the test suite builds all eleven with a
    # scripted model, --preset full with this one.) WikiProfile: 6 pages drawn at random
    # (seeded), 2 facts (each costs about 45 s of profiling), 4 samples per question and
    # thinking setting.
    "quick": {"max_labeled_questions": 1, "quit_distractors": 2, "recor_domains": "law", "recor_questions": 1,
              "wikiprofile_pages": 6, "wikiprofile_facts": 2, "wikiprofile_samples": 4},
    # The demo profile as it is, measured at 51m31s (BENCHMARKS.md): every RECOR domain, the
    # passages of 3 QUIT questions, 12 pages and 8 facts. 0 on any flag takes every record
    # of the sample instead (hours with the embedded model).
    "full": {"max_labeled_questions": 3, "quit_distractors": 3, "recor_domains": "all", "recor_questions": 1,
             "wikiprofile_pages": 12, "wikiprofile_facts": 8, "wikiprofile_samples": 4},
}
BENCHMARKS = ("quit", "recor", "wikiprofile")
# The bundled samples of the published releases, in their published formats.
RELEASE_SAMPLES = {"quit": "data/releases/quit", "recor": "data/releases/recor", "wikiprofile": "data/releases/wikiprofile"}
# --from-release on the quick preset evaluates a slice of each sample, sized as the built
# slice is: without the build, the reader's Optimal bound asks about every relevant passage
# (about 300 a question, 80 s with the embedded model), and each RECOR turn's generations
# are judged (about 30 s a turn). QUIT keeps the sample's 2 train questions (the fine-tuned
# models learn from them: a train split of one has no negative to draw) and its 2 test
# questions, which the tables score (the test split, as the paper's). The full preset
# evaluates the samples whole.
RELEASE_SLICES = {"quick": {"quit": {"splits": ["train", "test"]}, "recor": {"max_conversations": 1},
                            "wikiprofile": {"max_facts": 2}},
                  "full": {}}
# A demo run builds all three benchmarks, but evaluates QUIT on a slice of its bundled
# sample: the embedded model labels every passage it builds 1, so every retriever and
# reranker would score 100%. The quick preset evaluates the sample's 2 test questions, which
# QUIT's tables score (both labels in each: 126 and 143 of their 325 passages label 1, the
# rest 2), searched in the whole 1,950-passage corpus. The full preset adds the 2 dev
# questions (a dev split to report on request). WikiProfile is profiled on the sample too: the embedded model knew
# none of the facts of the measured demo builds (Knows 0.0), nor the sample's first eight (it
# answers some reverse questions, never all four). The quick preset profiles fact 0 (not
# known) and fact 8, the capital of Japan, which it knows (3 or 4 of the 4 samples right on
# each of the four questions), at the cost of the 2 built facts they replace; the full preset
# profiles the whole sample. RECOR evaluates its build.
DEMO_EVALUATION = {"quick": {"quit": {"splits": ["test"]}, "wikiprofile": {"fact_ids": ["0", "8"]}},
                   "full": {"quit": {"splits": ["dev", "test"]}, "wikiprofile": {}}}
# make run --reteco: RECOR's evaluation from a release up to the task's tables: retrieval (2a),
# the generators' answers judged as 2b and 2c, and the task's leaderboard. The leaderboard of
# every benchmark is left out.
RETECO_STAGES = list(RECOR_EVAL_STAGES)
# Lines of the summary a run prints at its end, in more than one of its forms.
QUIT_REPORTS = "QUIT reports:             eval/quit_retrieval_metrics, eval/quit_rerank_metrics, eval/quit_reader_metrics (web UI)"
WIKIPROFILE_REPORTS = ("WikiProfile reports:      eval/wikiprofile_profile_report, wikiprofile_popularity_report, wikiprofile_direction_report, "
                       "wikiprofile_thinking_report, wikiprofile_robustness_report (web UI)")
WEB_UI = "web UI:                   make ui   then open http://127.0.0.1:3000"
# Step events stay in the instance (the UI shows them); the terminal gets INFO and above.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}

# The stages of the evaluation's source assets (assets.eval.sources) and the step each runs.
SOURCE_STAGES = {"quit_eval_source": "eval_quit_source", "recor_eval_source": "eval_recor_source",
                 "wikiprofile_eval_source": "eval_wikiprofile_source"}


def release_config(job_name: str, path: str | None = None, **slice_: int | list[str]) -> dict:
    """The run config that points a source stage at a published release (the bundled sample
    unless ``path``), sliced by ``slice_`` (the source's ``max_*`` fields, or WikiProfile's
    ``fact_ids``); empty for the other stages."""
    if job_name not in SOURCE_STAGES:
        return {}
    return {"ops": {SOURCE_STAGES[job_name]: {"config": {"source": "release", **({"release_path": path} if path else {}), **slice_}}}}


def reteco_configs(release: str) -> dict[str, dict]:
    """The run config of ``--reteco``: RECOR's source stage pointed at the whole release."""
    return {"recor_eval_source": release_config("recor_eval_source", release)}


def release_configs(slices: dict[str, dict], benchmarks=BENCHMARKS) -> dict[str, dict]:
    """The run config of the source stages of ``benchmarks`` (every one by default), each
    pointed at its benchmark's bundled release sample and sliced by ``slices`` (by benchmark,
    as :data:`RELEASE_SLICES` has them)."""
    return {job: release_config(job, RELEASE_SAMPLES[job.split("_")[0]], **slices.get(job.split("_")[0], {}))
            for job in SOURCE_STAGES if job.split("_")[0] in benchmarks}


def demo_configs(preset: str) -> dict[str, dict]:
    """The run config of a built demo run: the evaluations :data:`DEMO_EVALUATION` names on
    their release samples, sliced as it says; the others on their builds."""
    return release_configs(DEMO_EVALUATION[preset], DEMO_EVALUATION[preset])


def run_stages(defs: dg.Definitions, instance: dg.DagsterInstance, stages=QUIT_STAGES, log=print,
               configs: dict[str, dict] | None = None, registries: dict[str, str] | None = None,
               tags: dict[str, str] | None = None, partitions: dict[str, list] | None = None) -> bool:
    """Execute the stage jobs in order, each partitioned stage once per key of its partitions
    (``partitions``; by default :func:`stage_partitions` of the project's registries), a stage
    with its entry of ``configs`` (run config) when it has one, every run with ``tags``
    (``make run`` names its profile in ``PROFILE_TAG``, as the profile jobs do). After a stage
    that registers trained models, the instance's partitions and QUIT's retriever and
    reranker keys are read again from the registries (``registries``: other registry files)."""
    partitions = dict(partitions if partitions is not None else stage_partitions())
    for job_name, named in stages:
        job = defs.resolve_job_def(job_name)
        run_config = {**QUIET, **(configs or {}).get(job_name, {})}
        for key in partitions[named] if named else [None]:
            label = f"{job_name}[{key}]" if key else job_name
            t = time.monotonic()
            result = job.execute_in_process(instance=instance, partition_key=key, raise_on_error=False, run_config=run_config,
                                            tags=tags)
            log(f"{label}: {'ok' if result.success else 'FAILED'} in {time.monotonic() - t:.0f}s")
            if not result.success:
                for event in result.all_events:
                    if event.is_failure:
                        print(event.message, file=sys.stderr)
                return False
        if job_name in REGISTERING_STAGES:
            sync_partitions(instance, **(registries or {}))
            retrained = stage_partitions(**(registries or {}))
            partitions.update({name: retrained[name] for name in REGISTERED_BY_TRAINING})
    return True


def run_plan(wanted=BENCHMARKS, from_release: bool = False, finetune: bool = False) -> list[tuple[str, str | None]]:
    """The stages of a run of the ``wanted`` benchmarks: each one's build and evaluation, or
    with ``from_release`` its evaluation alone; QUIT's fine-tuning with ``finetune``; the
    leaderboard last, over every system on every benchmark the run evaluated. ``run_plan()``
    is the default ``make run``."""
    quit = quit_eval_stages(finetune) if from_release else QUIT_BUILD_STAGES + quit_eval_stages(finetune)
    per_benchmark = {"quit": quit, "recor": RECOR_EVAL_STAGES if from_release else RECOR_STAGES,
                     "wikiprofile": WIKIPROFILE_EVAL_STAGES if from_release else WIKIPROFILE_STAGES}
    return [stage for b in BENCHMARKS if b in wanted for stage in per_benchmark[b]] + LEADERBOARD_STAGES


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


def describe(quit: QuitSettings, recor: RecorSettings, wikiprofile: WikiProfileSettings, domains: list[str],
             wanted: list[str], evaluated: dict[str, dict] | None = None) -> list[str]:
    """What the run builds, one phrase per benchmark, for the line it prints first; and what
    it evaluates where that is a slice of a release sample (``evaluated``, as
    :data:`DEMO_EVALUATION` has it)."""
    evaluated = evaluated or {}
    parts = []
    if "quit" in wanted:
        parts.append(f"QUIT labels the 325 passages of {every(quit.max_labeled_questions, 'questions')} "
                     f"(convergence over {quit.distractors} wrong candidates)"
                     + (f" and evaluates {named_splits(evaluated['quit'])} of the release sample "
                        f"{RELEASE_SAMPLES['quit']} (passages of both labels; tables on the test split)"
                        if "quit" in evaluated else ""))
    if "recor" in wanted:
        named = "all 11 domains" if len(domains) == len(DOMAINS) else ", ".join(domains)
        parts.append(f"RECOR builds and evaluates {named} from {every(recor.max_questions, 'source questions')} each "
                     f"(at most {recor.max_aspects} aspects of {recor.max_facts} facts)")
    if "wikiprofile" in wanted:
        parts.append(f"WikiProfile reads {every(wikiprofile.max_pages, 'pages', 'up to ')}, keeps "
                     f"{every(wikiprofile.downsample_to, 'facts', 'up to ')}"
                     + (f", profiles {named_facts(evaluated['wikiprofile'])} of the release sample "
                        f"{RELEASE_SAMPLES['wikiprofile']}" if "wikiprofile" in evaluated else "")
                     + f" and samples each question {wikiprofile.n_samples} times")
    return parts


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
    finetune: bool
    plan_only: bool
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
    parser.add_argument("--profile", choices=("demo", "paper"), default="demo",
                        help="demo: the settings' demo slice, cut further by a preset; paper: the papers' configuration, "
                             "what the web UI runs with no config (hours with the embedded model)")
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="a slice of the demo profile. quick (the default): every stage on a slice (under 20 minutes); "
                             "full: every RECOR domain, more QUIT questions and WikiProfile pages (about 52 minutes). "
                             "The flags below override it")
    parser.add_argument("--max-labeled-questions", type=int, help="questions whose 325 passages are labeled (0 = all)")
    parser.add_argument("--quit-distractors", type=int,
                        help="wrong candidates per TriviaHG question for hint convergence (HintEval: 10)")
    parser.add_argument("--recor-domains", help=f"comma-separated RECOR domains to build and evaluate, or all ({', '.join(DOMAINS)})")
    parser.add_argument("--recor-questions", type=int,
                        help="source questions per RECOR domain to build conversations from (0 = all)")
    parser.add_argument("--wikiprofile-pages", type=int, help="WikiProfile page summaries to extract facts from (0 = all)")
    parser.add_argument("--wikiprofile-facts", type=int, help="WikiProfile facts kept by the balanced downsampling (0 = all)")
    parser.add_argument("--wikiprofile-samples", type=int,
                        help="WikiProfile samples per question and thinking setting (a multiple of 4; the paper: 8)")
    parser.add_argument("--benchmarks", help=f"comma-separated benchmarks to build and evaluate: {', '.join(BENCHMARKS)} "
                                             "(the default: all three)")
    parser.add_argument("--from-release", action="store_true",
                        help="evaluate on the published releases' bundled samples (data/releases/) instead of building "
                             "the benchmarks: the evaluation stages alone, their source assets set to source: release")
    parser.add_argument("--reteco", metavar="RELEASE",
                        help="SemEval-2027 RETECO Track 2: evaluate RECOR alone from the release at RELEASE (a folder or "
                             "s3:// prefix holding data/benchmark/<domain>_benchmark.jsonl and data/corpus/<domain>_documents.jsonl; "
                             "every conversation of every domain it holds, or of --recor-domains) with the registry's retrievers, "
                             "score the runs by the task's rules and print the official table")
    demo_quit = {preset: named_splits(evaluated["quit"]) for preset, evaluated in DEMO_EVALUATION.items()}
    parser.add_argument("--finetune", action=argparse.BooleanOptionalAction,
                        help="train QUIT's fine-tuned retriever and reranker on the train split before the evaluation, "
                             "evaluate them and report them against the vanilla systems (Tables 10-12). Default: on with "
                             "--from-release and --profile paper; off for a demo run, whose QUIT evaluation (the release "
                             f"sample's {demo_quit['quick'].removeprefix('the ')} in the quick preset, "
                             f"{demo_quit['full']} in the full one) holds no train question to train them on")
    parser.add_argument("--plan", action="store_true", help="print the stages and partitions the run would materialize, and stop")
    return parser


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
    if unknown := set(wanted) - set(BENCHMARKS):
        parser.error(f"unknown benchmarks {sorted(unknown)} ({', '.join(BENCHMARKS)})")
    domains = recor_domains(parser, args, wanted, named_domains)
    if args.reteco:
        wanted = ["recor"]
    if args.quit_distractors is not None and args.quit_distractors < 1:
        parser.error("--quit-distractors must be at least 1 (convergence is measured against wrong candidates)")
    if args.wikiprofile_samples is not None and (args.wikiprofile_samples <= 0 or args.wikiprofile_samples % 4):
        parser.error("--wikiprofile-samples must be a positive multiple of 4 (the gold sits in each of 4 option slots equally often)")
    return RunOptions(
        profile=args.profile, preset=args.preset, wanted=wanted, domains=domains, from_release=args.from_release,
        reteco=args.reteco, plan_only=args.plan,
        finetune=args.finetune if args.finetune is not None else args.from_release or args.profile == "paper",
        quit=profiled(QuitSettings, args.profile, max_labeled_questions=args.max_labeled_questions,
                      distractors=args.quit_distractors),
        recor=profiled(RecorSettings, args.profile, max_questions=args.recor_questions),
        wikiprofile=profiled(WikiProfileSettings, args.profile, max_pages=args.wikiprofile_pages,
                             downsample_to=args.wikiprofile_facts, n_samples=args.wikiprofile_samples),
        evaluated=DEMO_EVALUATION[args.preset] if args.profile == "demo" and not (args.from_release or args.reteco) else {},
        slices=RELEASE_SLICES.get(args.preset, {}) if args.profile == "demo" else {})


def recor_domains(parser: argparse.ArgumentParser, args: argparse.Namespace, wanted: list[str],
                  named_domains: str | None) -> list[str]:
    """The RECOR domains a run builds or evaluates: ``--recor-domains`` (the preset's, or all), of them those the
    release holds when it reads one (all it holds when ``--reteco`` names none). Makes ``args.reteco`` absolute."""
    args.recor_domains = args.recor_domains or "all"
    domains = list(DOMAINS) if args.recor_domains == "all" else [d.strip() for d in args.recor_domains.split(",") if d.strip()]
    if not domains or set(domains) - set(DOMAINS):
        parser.error(f"--recor-domains: unknown domains {sorted(set(domains) - set(DOMAINS))} (known: {', '.join(DOMAINS)}, or all)")
    if args.from_release and "recor" in wanted:
        released = release_domains(RELEASE_SAMPLES["recor"])
        domains = [d for d in domains if d in released] if args.recor_domains != "all" else released
        if not domains:
            parser.error(f"--recor-domains: the bundled RECOR release holds {', '.join(released)} only")
    if args.reteco:
        args.reteco = args.reteco if "://" in args.reteco else os.path.abspath(os.path.expanduser(args.reteco))
        released = release_domains(args.reteco)
        if not released:
            parser.error(f"--reteco: no RECOR domain under {args.reteco} (expected data/benchmark/<domain>_benchmark.jsonl "
                         "and data/corpus/<domain>_documents.jsonl)")
        domains = [d for d in domains if d in released] if named_domains else released
        if not domains:
            parser.error(f"--recor-domains: the release at {args.reteco} holds {', '.join(released)} only")
    return domains


def plan(options: RunOptions) -> RunPlan:
    """The stages of the run ``options`` asks for, the partitions of the registries and of
    the run's RECOR domains, and the source stages' configs."""
    partitions = stage_partitions()
    partitions["domains"] = options.domains
    partitions["domain_retrievers"] = [k for k in partitions["domain_retrievers"] if k.keys_by_dimension["domain"] in options.domains]
    stages = RETECO_STAGES if options.reteco else run_plan(options.wanted, options.from_release, options.finetune)
    configs = (reteco_configs(options.reteco) if options.reteco else release_configs(options.slices) if options.from_release
               else demo_configs(options.preset) if options.evaluated else {})
    return RunPlan(stages, partitions, configs)


def announce(options: RunOptions) -> None:
    """The lines a run prints first: what it builds and evaluates, and how large."""
    built = "; ".join(describe(options.quit, options.recor, options.wikiprofile, options.domains, options.wanted,
                               options.evaluated))
    if options.from_release:
        cut = options.slices
        sizes = {"quit": f"QUIT {named_splits(cut['quit'])} (tables on the test split)" if "quit" in cut
                         else "QUIT every question (tables on the test split)",
                 "recor": (f"RECOR {cut['recor']['max_conversations']} conversation" if "recor" in cut else "RECOR every conversation")
                          + f" of {', '.join(options.domains)}",
                 "wikiprofile": f"WikiProfile {cut['wikiprofile']['max_facts']} facts" if "wikiprofile" in cut else "WikiProfile every fact"}
        built = f"the evaluation alone, on the published releases' samples in data/releases/: {'; '.join(sizes[b] for b in options.wanted)}"
    if options.reteco:
        print(f"make run --reteco: RECOR as SemEval-2027 RETECO Track 2 scores it, from the release at {options.reteco} "
              f"(every conversation of {', '.join(options.domains)}): every retriever of the registry under each query strategy, "
              "then the official table (binary nDCG@10 macro-averaged over the target turns).")
        print("  the full published release takes hours on CPU: each turn's queries are rewritten by the LLM, and the dense "
              "retrievers encode every document")
    elif options.profile == "demo":
        print(f"make run, the demo slice (preset {options.preset}; the papers' configuration: make run ARGS=\"--profile paper\", "
              f"or materialize from the web UI with no config): {built}.")
    else:
        print(f"make run, the papers' configuration (hours with the embedded model): {built}.")
    if options.preset == "quick" and not options.reteco:
        print('  a larger demo: make run ARGS="--preset full" (about 52 minutes for all three; README.md says what it '
              'builds and what each flag does)')
    if options.finetune and "quit" in options.wanted:
        counts = FinetuneSettings(profile=options.profile).positives
        print("  QUIT fine-tuning: two retrievers (DPR- and ColBERT-style) and a reranker trained on the train split "
              f"with {', '.join(map(str, counts))} positives a question ({len(counts)} of each), evaluated beside the "
              "vanilla ones on the held-out splits (eval/quit_finetune_report)")


def print_plan(options: RunOptions, planned: RunPlan) -> None:
    """``--plan``: each stage, with the keys of its partitions."""
    for job_name, named in planned.stages:
        keys = planned.partitions[named] if named else []
        print(f"{job_name}" + (f" x {len(keys)}: {', '.join(map(str, keys))}" if named else ""))
    if options.finetune and "quit" in options.wanted:
        print("(quit_retrieval and quit_rerank also run the retriever and reranker that quit_finetune registers)")


def run(options: RunOptions, planned: RunPlan) -> StorageResource | None:
    """Materializes ``planned`` into the project's instance; the storage it wrote to, or
    None when a stage failed."""
    defs = build_defs(quit_settings=options.quit, recor_settings=options.recor, wikiprofile_settings=options.wikiprofile,
                      finetune_settings=FinetuneSettings(profile=options.profile))
    instance = dg.DagsterInstance.get()
    # The registries' aliases are the partitions (the registry sensor adds them too when the daemon runs).
    sync_partitions(instance)
    started = time.monotonic()
    if not run_stages(defs, instance, planned.stages, configs=planned.configs, tags={PROFILE_TAG: options.profile},
                      partitions=planned.partitions):
        return None
    print(f"\nfinished in {time.monotonic() - started:.0f}s")
    return defs.resources["storage"]


def main(argv: list[str] | None = None) -> int:
    options = parse(argv)
    announce(options)
    planned = plan(options)
    if options.plan_only:
        print_plan(options, planned)
        return 0
    if (storage := run(options, planned)) is None:
        return 1
    summarize(options, storage)
    return 0


def summarize(options: RunOptions, storage: StorageResource) -> None:
    """Where a finished run's tables and files are, with the tables a reader looks at first."""
    root = storage.root
    print(f"asset tables (Parquet):   {os.path.abspath(root) if '://' not in root else root}")
    if options.reteco:
        print_reteco(storage, options.reteco, options.domains)
        return
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


def print_quit_build(storage: StorageResource, settings: QuitSettings, sample_evaluated: bool) -> None:
    """QUIT's statistics, retrieval table and files, after a build."""
    root = storage.root
    release = settings.export_dir or storage.path("quit", "release")
    statistics = table_uri(root, ["quit", "statistics"])
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, fmt_str_lengths=40):
        print("\nQUIT statistics (Table 1 of the paper):")
        print(read_parquet(statistics))
    print(f"QUIT benchmark files:     {release}  (corpus.jsonl, train.json, dev.json, test.json, qrels.*.txt)")
    print(f"QUIT statistics table:    {statistics}")
    print(f"QUIT rejected records:    {table_uri(root, ['quit', 'source_rejects'])}, {table_uri(root, ['quit', 'leakage_rejects'])}")
    sample = f"the release sample {RELEASE_SAMPLES['quit']}" if sample_evaluated else "the built questions"
    print_quit_retrieval(storage, f"QUIT retrieval (Table 2 of the paper), {HEADLINE_SPLIT} split, {sample}:")
    print(QUIT_REPORTS)


def print_recor_build(storage: StorageResource) -> None:
    """RECOR's statistics and files, after a build."""
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True):
        print("\nRECOR statistics (Table 2 of the paper):")
        print(read_parquet(table_uri(storage.root, ["recor", "statistics"])))
    print(f"RECOR benchmark files:    {storage.path('recor', 'release')}  ({{domain}}_benchmark.jsonl, _documents.jsonl, _qrels.txt)")
    print("RECOR reports:            eval/recor_retrieval_metrics, eval/reteco_retrieval, eval/recor_generation_metrics, recor/quality_report (web UI)")


def print_wikiprofile_build(storage: StorageResource, sample_evaluated: bool) -> None:
    """WikiProfile's profiles (Table 2) and files, after a build."""
    table = read_parquet(table_uri(storage.root, ["eval", "wikiprofile_profile_report"]))
    facts = read_parquet(table_uri(storage.root, ["eval", "wikiprofile_tasks"]))["fact_id"].n_unique()
    sample = f" of the release sample {RELEASE_SAMPLES['wikiprofile']}" if sample_evaluated else ""
    # one column per model: Table 2's thirteen measures do not fit a terminal's width as rows
    measures = table.select("model", *[c for c, t in table.schema.items() if t.is_numeric()])
    by_model = measures.with_columns(pl.exclude("model").cast(pl.Float64)).transpose(
        include_header=True, header_name="measure", column_names="model")
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, float_precision=3):
        print(f"\nWikiProfile: {facts} facts{sample} with ten tasks each; profiles (Table 2 of the paper, shares; Knows includes direct inference):")
        print(by_model)
    print(f"WikiProfile benchmark:    {table_uri(storage.root, ['wikiprofile', 'benchmark'])}  (funnel: wikiprofile/benchmark in the web UI)")
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
    print("RETECO tables:            eval/reteco_retrieval in the web UI (official, by_domain, by_depth, runs_read); "
          f"per-turn scores {retrieval}")
    print(f"run files:                {storage.path('eval', 'runs', 'recor')}/<domain>/<retriever>.<strategy>.trec  "
          f"(python -m pipelines.reteco score --release {release} FILE ...)")
    print(WEB_UI)
    with pl.Config(tbl_rows=50, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True, float_precision=4,
                   tbl_formatting="MARKDOWN"):
        print(f"\nRETECO Track 2 official table, {scores.select('domain', 'qid').n_unique()} target turns of {', '.join(domains)} "
              "(nDCG@10 official; MAP@10, Recall@10, MRR diagnostic):")
        print(reteco.official_table(scores))
        judged = pl.concat([read_parquet(table_uri(storage.root, ["eval", "reteco_generation"], d)) for d in domains])
        board = reteco_judge.leaderboard(scores, judged)
        print(f"\nRETECO Track 2 leaderboard, one row per sub-track and run (2b, 2c ranked by the macro average of the "
              "five judge dimensions; eval/reteco_leaderboard in the web UI):")
        print(board.filter(pl.col("subtrack") != "2a").drop("turns", "MAP@10", "Recall@10", "MRR"))


def print_quit_retrieval(storage: StorageResource, title: str) -> None:
    """QUIT's retrieval table on the test split (the headline tables'), under ``title``."""
    table = read_parquet(table_uri(storage.root, ["eval", "quit_retrieval_metrics"])).filter(pl.col("split") == HEADLINE_SPLIT)
    with pl.Config(tbl_rows=20, tbl_hide_dataframe_shape=True, float_precision=3):
        print(f"\n{title}")
        print(table.select("retriever", "questions", "hit_rate@1", "hit_rate@10", "mrr", "ndcg_burges@10"))


def print_evaluation(storage: StorageResource, wanted: list[str]) -> None:
    """Where a release evaluation's reports are, with QUIT's retrieval table and its fine-tuning report's."""
    if "quit" in wanted:
        print_quit_retrieval(storage, f"QUIT release sample, retrieval (Table 2 of the paper), {HEADLINE_SPLIT} split:")
        print(QUIT_REPORTS)
        finetuning = table_uri(storage.root, ["eval", "quit_finetune_report"])
        if exists(finetuning):
            print_finetuning(read_parquet(finetuning))
    if "recor" in wanted:
        print("RECOR reports:            eval/recor_retrieval_metrics, eval/reteco_retrieval, eval/recor_generation_metrics (web UI)")
    if "wikiprofile" in wanted:
        print(WIKIPROFILE_REPORTS)
    print("sources:                  eval/quit_questions, eval/recor_turns, eval/wikiprofile_tasks name the release they read; "
          "their *_source_rejects hold what the loaders refused")
    print(f"leaderboard:              {storage.path('eval', 'leaderboard.csv')}  (eval/leaderboard in the web UI)")
    print(WEB_UI)


if __name__ == "__main__":
    sys.exit(main())
