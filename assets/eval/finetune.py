"""QUIT's fine-tuned retrievers (paper section 5, Tables 10-11): models trained on the train
split, saved under the storage root and registered as retriever aliases, so the QUIT
evaluation (``eval/quit_index``, ``eval/quit_runs`` and what follows) runs them on dev and
test like any other retriever. Partitioned by base model (``resources/finetuning.yaml``).
"""

import os
import time

import dagster as dg
import numpy as np
import polars as pl

from assets.common.metadata import png_markdown
from assets.common.wiring import Wiring
from assets.eval import training
from assets.partitions import finetune_base_partitions
from assets.quit.settings import FinetuneSettings
from resources.encoders import encode_texts
from resources.finetuning import BASES_PATH, load_bases
from resources.retrieval import (
    RETRIEVERS_PATH,
    TRAINED_DIR,
    load_retrievers,
    register_trained,
)
from resources.storage import StorageResource

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
# Part of every trained folder's name: bump it when the training code changes, so a changed
# training never reuses a folder an older one saved.
DENSE_CODE_VERSION = "1"
# What the registry entry says a model learned from: RECOR's evaluation leaves such aliases out.
TRAINED_ON = "quit"


def dense_alias(base: str) -> str:
    return f"ft-dpr-{base}"


def base_model(base: str) -> str:
    bases = load_bases()
    if base not in bases:
        raise ValueError(f"base model {base!r} is not in {BASES_PATH} (bases: {', '.join(sorted(bases))})")
    return bases[base]


def smoke_encode(folder: str, text: str) -> None:
    """Encode one text with the saved model, as the evaluation will load it: a model that
    does not load or encodes to nothing usable is never registered."""
    vecs = encode_texts(folder, [text], "query")
    if vecs.shape[0] != 1 or not np.isfinite(vecs).all() or not np.abs(vecs).sum():
        raise RuntimeError(f"{folder}: the trained model encodes {text!r} to {vecs.shape} non-finite or zero values")


@dg.asset(key_prefix=PREFIX, group_name=GROUP, partitions_def=finetune_base_partitions,
          ins={"quit_finetune_data": wiring.input("quit_finetune_data")}, kinds={"pytorch"}, pool="training",
          code_version=DENSE_CODE_VERSION)
def quit_dense_model(context: dg.AssetExecutionContext, quit_finetune_data: pl.DataFrame, storage: StorageResource,
                     finetune_settings: FinetuneSettings) -> dg.MaterializeResult:
    """A DPR-style bi-encoder fine-tuned from the partition's base model on QUIT's train
    pairs: a contrastive loss over each question's positive, its hard negative and the other
    passages of the batch (the published ``finetune.sh``: Tevatron, one shared encoder, one
    positive and one negative per row, in-batch negatives), seeded so a rerun gives the same
    weights. Saved under ``<storage root>/models/quit/dense/<base>/<fingerprint>`` (data,
    settings, seed and code), never over an earlier model; a rerun with nothing changed reuses
    that folder. Registered as retriever ``ft-dpr-<base>`` once the saved model encodes a
    question, so materializing ``eval/quit_index`` and ``eval/quit_runs`` for that partition
    evaluates it. The paper fine-tunes ``bert-base-uncased``; the demo starts from the
    bundled MiniLM (e5-small cannot be a base: it is no Hugging Face model)."""
    base, s = context.partition_key, finetune_settings
    base_dir, alias = base_model(base), dense_alias(base)
    if alias in load_retrievers(trained=None):
        raise ValueError(f"{RETRIEVERS_PATH} already names {alias!r}: the trained model of base {base!r} would "
                         f"register under that alias in {TRAINED_DIR}; rename the static one")
    folder = os.path.abspath(storage.model_path(
        "quit", "dense", base, training.fingerprint(quit_finetune_data, s, base_dir, DENSE_CODE_VERSION)))
    start = time.monotonic()
    reused = os.path.isdir(folder)
    if reused:
        context.log.info(f"{folder} holds this training already (same data, settings, seed and code): reused")
        log = training.read_log(folder)
    else:
        log = training.train_bi_encoder(base_dir, quit_finetune_data, s, folder)
    seconds = time.monotonic() - start
    smoke_encode(folder, quit_finetune_data["question"][0])
    registry_file = register_trained("retrievers", alias, {"kind": "dense", "encoder": folder, "trained_on": TRAINED_ON})
    context.log.info(f"registered retriever {alias!r} -> {folder}")
    return dg.MaterializeResult(metadata={
        "base": base, "base_path": dg.MetadataValue.path(base_dir),
        "model_path": dg.MetadataValue.path(folder), "alias": alias,
        "registry_file": dg.MetadataValue.path(registry_file), "reused": reused,
        "questions": quit_finetune_data["question_id"].n_unique(), "pairs": quit_finetune_data.height,
        "steps": log[-1]["step"] if log else 0, "epochs": round(log[-1].get("epoch", 0.0), 3) if log else 0.0,
        "batch": s.batch_size, "lr": s.learning_rate, "seed": s.seed, "device": training.resolve_device(s.device),
        "seconds": round(seconds, 1), "final_loss": log[-1]["loss"] if log else float("nan"),
        "loss_curve": png_markdown(training.loss_curve(log, f"{alias}: training loss")),
    })


finetune_model_assets = [quit_dense_model]
