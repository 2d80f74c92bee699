"""What ``make run`` (:mod:`pipelines.run_default`) materializes: the stages of a run, the keys
of their partitions, and the run config that points the evaluation's source stages at a
published release or slices it."""

from __future__ import annotations

import dagster as dg

from assets.partitions import DOMAINS, registered_keys
from pipelines.jobs import (
    BEIR_STAGES,
    LEADERBOARD_STAGES,
    QUIT_BUILD_STAGES,
    RECOR_EVAL_STAGES,
    RECOR_STAGES,
    WIKIPEDIA_STAGES,
    WIKIPROFILE_EVAL_STAGES,
    WIKIPROFILE_STAGES,
    quit_eval_stages,
)


def stage_partitions(**registries: str) -> dict[str, list]:
    """The keys of each set of partitions a stage runs over, by its name
    (:data:`assets.partitions.NAMED`): the registries' aliases (``registries`` names other
    registry files, as :func:`assets.partitions.registered_keys` takes them), which
    ``sync_partitions`` adds to the instance before the stages run, and RECOR's domains."""
    registered = registered_keys(**registries)
    datasets = registered["beir_datasets"]
    return {
        "quit_models": registered["quit_models"],
        "quit_labelers": registered["quit_labelers"],
        "quit_readers": registered["quit_readers"],
        "retrievers": registered["retrievers"],
        "retriever_rerankers": [
            dg.MultiPartitionKey({"retriever": r, "reranker": k})
            for r in registered["retrievers"]
            for k in registered["rerankers"]
        ],
        "finetune_bases": registered["finetune_bases"],
        "domains": DOMAINS,
        "domain_retrievers": [
            dg.MultiPartitionKey({"domain": d, "retriever": r}) for d in DOMAINS for r in registered["recor_retrievers"]
        ],
        "subjects": registered["wikiprofile_subjects"],
        "beir_datasets": datasets,
        "beir_dataset_retrievers": [
            dg.MultiPartitionKey({"dataset": d, "retriever": r}) for d in datasets for r in registered["retrievers"]
        ],
        # the files of a Wikipedia folder, when a run reads one (pipelines.run_default)
        "wikipedia_shards": [],
        "wikipedia_months": [],
    }


# What a stage that registers trained models changes: QUIT's retrievers and rerankers, and the
# registered datasets' (a model trained on QUIT is left out of RECOR's retrievers).
REGISTERED_BY_TRAINING = ("retrievers", "retriever_rerankers", "beir_dataset_retrievers")
BENCHMARKS = ("quit", "recor", "wikiprofile")
# The registered datasets in BEIR's layout, as --benchmarks names them (make run --beir picks them).
BEIR = "beir"
# The bundled samples of the published releases, in their published formats.
RELEASE_SAMPLES = {
    "quit": "data/releases/quit",
    "recor": "data/releases/recor",
    "wikiprofile": "data/releases/wikiprofile",
}
# --from-release on the quick preset evaluates a slice of each sample, sized as the built
# slice is: without the build, the reader's Optimal bound asks about every relevant passage
# (about 300 a question, 80 s with the embedded model), and each RECOR turn's generations
# are judged (about 30 s a turn). QUIT keeps the sample's 2 train questions (the fine-tuned
# models learn from them: a train split of one has no negative to draw) and its 2 test
# questions, which the tables score (the test split, as the paper's). The full preset
# evaluates the samples whole.
RELEASE_SLICES = {
    "quick": {
        "quit": {"splits": ["train", "test"]},
        "recor": {"max_conversations": 1},
        "wikiprofile": {"max_facts": 2},
    },
    "full": {},
}
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
DEMO_EVALUATION = {
    "quick": {"quit": {"splits": ["test"]}, "wikiprofile": {"fact_ids": ["0", "8"]}},
    "full": {"quit": {"splits": ["dev", "test"]}, "wikiprofile": {}},
}
# make run --reteco: RECOR's evaluation from a release up to the task's tables: retrieval (2a),
# the generators' answers judged as 2b and 2c, and the task's leaderboard. The leaderboard of
# every benchmark is left out.
RETECO_STAGES = list(RECOR_EVAL_STAGES)
# Step events stay in the instance (the UI shows them); the terminal gets INFO and above.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
# The stages of the evaluation's source assets (assets.eval.sources) and the step each runs.
SOURCE_STAGES = {
    "quit_eval_source": "eval_quit_source",
    "recor_eval_source": "eval_recor_source",
    "wikiprofile_eval_source": "eval_wikiprofile_source",
}


def release_config(job_name: str, path: str | None = None, **slice_: int | list[str]) -> dict:
    """The run config that points a source stage at a published release (the bundled sample
    unless ``path``), sliced by ``slice_`` (the source's ``max_*`` fields, or WikiProfile's
    ``fact_ids``); empty for the other stages."""
    if job_name not in SOURCE_STAGES:
        return {}
    return {
        "ops": {
            SOURCE_STAGES[job_name]: {
                "config": {"source": "release", **({"release_path": path} if path else {}), **slice_}
            }
        }
    }


def reteco_configs(release: str) -> dict[str, dict]:
    """The run config of ``--reteco``: RECOR's source stage pointed at the whole release."""
    return {"recor_eval_source": release_config("recor_eval_source", release)}


def release_configs(slices: dict[str, dict], benchmarks=BENCHMARKS) -> dict[str, dict]:
    """The run config of the source stages of ``benchmarks`` (every one by default), each
    pointed at its benchmark's bundled release sample and sliced by ``slices`` (by benchmark,
    as :data:`RELEASE_SLICES` has them)."""
    return {
        job: release_config(job, RELEASE_SAMPLES[job.split("_")[0]], **slices.get(job.split("_")[0], {}))
        for job in SOURCE_STAGES
        if job.split("_")[0] in benchmarks
    }


def demo_configs(preset: str) -> dict[str, dict]:
    """The run config of a built demo run: the evaluations :data:`DEMO_EVALUATION` names on
    their release samples, sliced as it says; the others on their builds."""
    return release_configs(DEMO_EVALUATION[preset], DEMO_EVALUATION[preset])


def run_plan(
    wanted=BENCHMARKS, from_release: bool = False, finetune: bool = False, wikipedia: bool = False, beir: bool = False
) -> list[tuple[str, str | None]]:
    """The stages of a run of the ``wanted`` benchmarks: each one's build and evaluation, or
    with ``from_release`` its evaluation alone; QUIT's fine-tuning with ``finetune``;
    WikiProfile's pages read from a Wikipedia folder first with ``wikipedia``; the registered
    BEIR-layout datasets' evaluation with ``beir`` (after QUIT's, so its fine-tuned models are
    evaluated on them too); the leaderboard last, over every system on every benchmark the run evaluated. ``run_plan()``
    is the default ``make run``."""
    quit = quit_eval_stages(finetune) if from_release else QUIT_BUILD_STAGES + quit_eval_stages(finetune)
    per_benchmark = {
        "quit": quit,
        "recor": RECOR_EVAL_STAGES if from_release else RECOR_STAGES,
        "wikiprofile": WIKIPROFILE_EVAL_STAGES
        if from_release
        else (WIKIPEDIA_STAGES if wikipedia else []) + WIKIPROFILE_STAGES,
    }
    stages = [stage for b in BENCHMARKS if b in wanted for stage in per_benchmark[b]]
    return stages + (BEIR_STAGES if beir else []) + LEADERBOARD_STAGES
