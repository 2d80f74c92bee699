"""``make run ARGS=--from-release``'s stages and config (``pipelines.run_default``) over the
bundled release samples of all three benchmarks, with the scripted LLM, real Lucene and the
TF-IDF entry point as a retriever beside BM25 and the Oracle, once a session in the
background (``tests.background``); ``test_release_evaluation`` reads what it made.
Usage: python -m tests.pipelines.release_run

Paths come from the environment: BENCHFOUNDRY_STORAGE, BENCHFOUNDRY_CACHE (the LLM cache),
BENCHFOUNDRY_STAGE_HOME (the instance), BENCHFOUNDRY_RETRIEVERS, BENCHFOUNDRY_RERANKERS and
BENCHFOUNDRY_DATASETS (the retriever, reranker and dataset registries) and BENCHFOUNDRY_TRAINED
(the trained models' registry), read when ``resources.retrieval`` is imported: hence a process
of its own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.background import METRICS_COMPILED, Build, BuildFolder, environment

# The release evaluation's retrievers: BM25, a Python entry point and the Oracle bound. The
# bundled dense encoders are left out (their encoding is most of a retrieval stage's time
# and the default run covers them).
RETRIEVERS = """retrievers:
  bm25: {kind: bm25, k1: 0.9, b: 0.4}
  tfidf: {kind: entrypoint, function: "examples.retrievers:tfidf"}
  oracle: {kind: oracle}
"""
# Its LLM rerankers: UPR is left out. It scores a question by its prompt log-probabilities
# (``echo``), which litellm drops from a custom provider's text completion, so every UPR call
# of the scripted model fails, and the blocking accounting check stops the run, as it should
# for a model that cannot score. The default run scores UPR with the real embedded model.
RERANKERS = """rerankers:
  rankgpt: {kind: rankgpt, model: smollm2, window: 10, step: 5, top_k: 10}
  pointwise: {kind: pointwise, model: smollm2, top_k: 20}
"""
DOMAIN = "law"
SUBJECT = "smollm2"
# make run --from-release's stages (stages.run_plan): QUIT's models fine-tuned on the
# slice's train questions first; the fixture's BEIR-layout dataset, registered as a deployment
# registers one (BENCHFOUNDRY_DATASETS), evaluated by every retriever (the fine-tuned ones
# included) and reranker, as make run evaluates the registered datasets
PLAN = {"from_release": True, "finetune": True, "beir": True}
DATASETS = Path(__file__).resolve().parents[1] / "fixtures" / "beir" / "datasets.yaml"
# Training steps of each fine-tuned model: the demo profile's 20 teach the scripted run
# nothing more than 4 do (what it checks is that each model trains, registers and is evaluated).
TRAINING_STEPS = 4


class ReleaseRun(BuildFolder):
    retrievers = property(lambda self: self.base / "retrievers.yaml")
    rerankers = property(lambda self: self.base / "rerankers.yaml")
    trained = property(lambda self: self.base / "trained")


def start_release_run(base: Path) -> Build:
    run = ReleaseRun(base)
    run.retrievers.write_text(RETRIEVERS)
    run.rerankers.write_text(RERANKERS)
    run.make_instance_home()
    env = {
        "BENCHFOUNDRY_STORAGE": str(run.storage),
        "BENCHFOUNDRY_CACHE": str(base / "cache"),
        "BENCHFOUNDRY_STAGE_HOME": str(run.home),
        "BENCHFOUNDRY_RETRIEVERS": str(run.retrievers),
        "BENCHFOUNDRY_RERANKERS": str(run.rerankers),
        "BENCHFOUNDRY_DATASETS": str(DATASETS),
        # its own registry of trained models: the test process's (tests/conftest.py) would
        # show the tests the aliases this run's fine-tuning registers
        "BENCHFOUNDRY_TRAINED": str(run.trained),
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    }
    return Build(
        "release_run",
        [sys.executable, "-m", "tests.pipelines.release_run"],
        environment(**env),
        Path(__file__).resolve().parents[2],
        base / "build.log",
        timeout=1200,
    ).start()


def main() -> int:
    from assets.eval.metrics import compile_metrics

    # first: the tests that evaluate wait for ranx's compiled metrics (tests.background)
    compile_metrics()
    (Path(os.environ["BENCHFOUNDRY_STAGE_HOME"]).parent / METRICS_COMPILED).touch()

    import dagster as dg

    from assets.partitions import sync_partitions
    from assets.quit.settings import FinetuneSettings, QuitSettings
    from assets.recor.settings import RecorSettings
    from assets.wikiprofile.settings import WikiProfileSettings
    from pipelines import run_default, stages
    from pipelines.definitions import build_defs
    from resources.llm import LLMResource
    from resources.storage import StorageResource
    from tests import scripted
    from tests.conftest import SCRIPTED_REGISTRY

    scripted.install()
    defs = build_defs(
        storage=StorageResource(root=os.environ["BENCHFOUNDRY_STORAGE"]),
        llm=LLMResource(
            registry_path=SCRIPTED_REGISTRY, cache_dir=os.path.join(os.environ["BENCHFOUNDRY_CACHE"], "llm")
        ),
        quit_settings=QuitSettings(profile="demo"),
        finetune_settings=FinetuneSettings(profile="demo", max_steps=TRAINING_STEPS),
        recor_settings=RecorSettings(profile="demo"),
        wikiprofile_settings=WikiProfileSettings(profile="demo"),
    )
    instance = dg.DagsterInstance.from_config(os.environ["BENCHFOUNDRY_STAGE_HOME"])
    sync_partitions(instance, models=SCRIPTED_REGISTRY)
    partitions = stages.stage_partitions()
    partitions["domains"] = [DOMAIN]
    partitions["domain_retrievers"] = [
        k for k in partitions["domain_retrievers"] if k.keys_by_dimension["domain"] == DOMAIN
    ]
    partitions["subjects"] = [SUBJECT]
    slices = stages.RELEASE_SLICES["quick"]
    configs = stages.release_configs(slices)
    planned = stages.run_plan(**PLAN)
    return (
        0
        if run_default.run_stages(
            defs, instance, planned, configs=configs, partitions=partitions, registries={"models": SCRIPTED_REGISTRY}
        )
        else 1
    )


if __name__ == "__main__":
    sys.exit(main())
