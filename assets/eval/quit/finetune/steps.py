"""Training QUIT's fine-tuned retrievers and rerankers (paper section 5, Tables 10-12), free
of Dagster.

The bi-encoder is DPR-style training as the published ``finetune.sh`` runs it with Tevatron:
one encoder shared by questions and passages, a contrastive loss over each question's
positive, its hard negative and every other passage of the batch (sentence-transformers'
MultipleNegativesRankingLoss). The multi-vector retriever is ColBERT's: the same contrastive
loss over late-interaction (MaxSim) scores of per-token vectors, each question padded with
[MASK] tokens as ColBERT's query augmentation does. The cross-encoder reranker is
pointwise, as monoT5 is trained: a relevance logit per (question, passage), binary
cross-entropy against positive 1 and negative 0. All start from a local folder, so the hub is
never asked, and share one training loop, log and save.

Two runs with the same data, settings and seed give identical weights on the same machine:
the seed is set before the model is built and handed to the trainer (which seeds the
shuffle and dropout), data loads in process, and training stays in fp32. On a GPU the same
code trains unchanged, though GPU kernels do not promise bit-identical reruns.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import shutil
import string
import tempfile
from collections.abc import Callable, Mapping
from typing import NamedTuple

import polars as pl

# The triples the trainer reads, in the loss's order: anchor, positive, hard negative.
TRIPLES = ("question", "positive", "negative")
# The rows of eval/quit_finetune_data in a fixed order, whatever order the table was read in.
ORDER = ("question_id", "pair")
# The settings that change the trained weights (the data's own knobs are in its digest).
TRAINING_KNOBS = ("epochs", "max_steps", "batch_size", "learning_rate", "passage_max_length", "seed")
# The multi-vector model's own: they name its folders alone, so changing one retrains no other kind.
MULTI_VECTOR_KNOBS = (*TRAINING_KNOBS, "colbert_query_length", "colbert_query_augmentation")
# Written beside the weights: the loss per step, read back by the checks and by a rerun.
LOG_FILE = "training_log.json"
LOG_KEYS = ("loss", "learning_rate", "grad_norm", "epoch")
DEVICES = ("auto", "cpu")
# ColBERT's question and passage markers (PyLate's spelling), added to the tokenizer as tokens
# and put before every text, so one encoder tells the two apart; and its vector size.
MARKERS = {"query": "[Q] ", "document": "[D] "}
COLBERT_DIM = 128
# ColBERT's attend_to_mask_tokens, off in its default config and in PyLate's: the encoder does
# not attend to the [MASK] padding, whose positions still read the question and get vectors of
# their own.
ATTEND_TO_MASK = False


def resolve_device(device: str) -> str:
    """``cpu``, or for ``auto`` the GPU when torch sees one."""
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: expected {' or '.join(DEVICES)}")
    import torch

    return "cuda" if device == "auto" and torch.cuda.is_available() else "cpu"


def ordered(triples: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in (*ORDER, *TRIPLES) if c not in triples.columns]
    if missing:
        raise ValueError(f"training pairs lack columns {missing}: expected eval/quit_finetune_data's")
    if triples.is_empty():
        raise ValueError(
            "no training pairs: eval/quit_finetune_data has no train question with a positive and a negative"
        )
    return triples.sort(*ORDER)


def fingerprint(
    triples: pl.DataFrame, settings, base_dir: str, code_version: str, knobs: tuple[str, ...] = TRAINING_KNOBS
) -> str:
    """The name of one training's model folder: the data, the ``knobs`` the model reads, the
    base and the code. A new training gets a new folder, never an old one rewritten, because
    encoders are cached by path within a process and a rewritten folder would serve the old
    weights."""
    data = hashlib.sha256(json.dumps(ordered(triples).select(*ORDER, *TRIPLES).rows()).encode()).hexdigest()
    payload = {
        "data": data,
        "settings": {k: getattr(settings, k) for k in knobs},
        "base": base_dir,
        "code_version": code_version,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


class _Recipe(NamedTuple):
    """What one kind of model brings to the shared training loop: the model (built after the
    seed is set), its training rows, its loss, and the library's trainer, arguments and batch
    sampler for it."""

    model: object
    rows: dict[str, list]
    loss: object
    trainer: type
    arguments: type
    sampler: object


def _train(base_dir: str, triples: pl.DataFrame, settings, out_dir: str, recipe: Callable) -> list[dict]:
    """Train the model ``recipe(base_dir, triples, settings, device)`` builds and save it to
    ``out_dir`` (which must not exist yet), its loss log beside it; returns the log, one
    ``{step, loss, learning_rate, grad_norm, epoch}`` per step."""
    if os.path.exists(out_dir):
        raise FileExistsError(f"{out_dir} exists: a trained model is never overwritten")
    if not os.path.isdir(base_dir) or not ({"config.json", "modules.json"} & set(os.listdir(base_dir))):
        raise FileNotFoundError(f"base model {base_dir}: not a local Hugging Face or sentence-transformers folder")
    triples = ordered(triples)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets
    from transformers import PrinterCallback, set_seed
    from transformers.utils import logging as transformers_logging

    device = resolve_device(settings.device)
    # Loading, saving and data bars would fill the run's log; they stay off for the process.
    datasets.disable_progress_bars()
    transformers_logging.disable_progress_bar()
    # The trainer seeds again, but only once the model exists: whatever the model draws while
    # it is built must come from the seed too.
    set_seed(settings.seed)
    built = recipe(base_dir, triples, settings, device)

    class _Trainer(built.trainer):
        def add_model_card_callback(self, default_args_dict: dict) -> None:
            """Gather no model card, as none is saved: gathering one samples widget examples
            from the training data behind a progress bar. The library names this override."""

    with tempfile.TemporaryDirectory(prefix="benchfoundry-train-") as scratch:
        args = built.arguments(
            output_dir=scratch,
            num_train_epochs=settings.epochs,
            max_steps=settings.max_steps or -1,
            per_device_train_batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            warmup_steps=0.1,
            lr_scheduler_type="linear",
            optim="adamw_torch",
            seed=settings.seed,
            data_seed=settings.seed,
            use_cpu=device == "cpu",
            batch_sampler=built.sampler,
            dataloader_num_workers=0,
            dataloader_pin_memory=False,
            logging_strategy="steps",
            logging_steps=1,
            save_strategy="no",
            eval_strategy="no",
            report_to="none",
            disable_tqdm=True,
        )
        trainer = _Trainer(
            model=built.model, args=args, train_dataset=datasets.Dataset.from_dict(built.rows), loss=built.loss
        )
        # Without progress bars the trainer prints every step's log; it goes to the metadata.
        trainer.remove_callback(PrinterCallback)
        trainer.train()
    log = [
        {"step": int(r["step"]), **{k: float(r[k]) for k in LOG_KEYS if k in r}}
        for r in trainer.state.log_history
        if "loss" in r
    ]
    # Saved beside its destination and moved into place, so a killed run leaves no folder
    # that looks like a finished model.
    staging = f"{out_dir}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    built.model.save(staging, create_model_card=False)
    with open(os.path.join(staging, LOG_FILE), "w", encoding="utf-8") as f:
        json.dump(log, f)
    os.rename(staging, out_dir)
    return log


def _bi_encoder(base_dir: str, triples: pl.DataFrame, settings, device: str) -> _Recipe:
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(base_dir, device=device, local_files_only=True)
    model.max_seq_length = settings.passage_max_length
    return _Recipe(
        model,
        text_columns(triples),
        MultipleNegativesRankingLoss(model),
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        BatchSamplers.NO_DUPLICATES,
    )


def text_columns(triples: pl.DataFrame) -> dict[str, list]:
    """The triples' text columns only, in the loss's order: the collator would tokenize an id
    column as text."""
    return {c: triples[c].to_list() for c in TRIPLES}


def train_bi_encoder(base_dir: str, triples: pl.DataFrame, settings, out_dir: str) -> list[dict]:
    """Fine-tune the sentence-transformers model in ``base_dir`` on ``(question, positive,
    negative)`` triples and save it to ``out_dir`` (which must not exist yet), its loss log
    beside it; returns the log, one ``{step, loss, learning_rate, grad_norm, epoch}`` per step.

    A batch holds each question once (``NO_DUPLICATES`` refuses a row sharing any text with
    the batch): two rows of one question would make its own other positive a negative. So a
    batch has at most as many rows as there are train questions. One leak remains, as in
    Tevatron and ColBERT training: a row whose hard negative is a passage of another question
    in the same batch shows that question one of its own passages as a negative.

    Queries and passages share one length limit, ``passage_max_length``: a sentence-transformers
    model has one, and QUIT's questions are far shorter than the paper's 64 query tokens."""
    return _train(base_dir, triples, settings, out_dir, _bi_encoder)


def query_shape(query_length: int, augment: bool) -> dict:
    """How the encoder reads a question, as sentence-transformers' ``Transformer`` takes it.
    ``augment``: ColBERT's query augmentation, every question exactly ``query_length`` tokens,
    cut there or padded with the tokenizer's [MASK] (attended to as ``ATTEND_TO_MASK`` says),
    and those positions scored by MaxSim too. Otherwise a question is its own tokens, cut at
    ``query_length``."""
    if query_length < 4:
        raise ValueError(
            f"colbert_query_length {query_length}: a question needs [CLS], the [Q] marker, [SEP] and "
            "at least one word; set it to 4 or more (ColBERT's default is 32)"
        )
    if augment:
        return {"query_expansion": {"strategy": "fixed", "attend": ATTEND_TO_MASK, "length": query_length}}
    return {"query_length": query_length}


def multi_vector_encoder(base_dir: str, max_length: int, device: str, query_length: int, augment: bool):
    """A ColBERT-style model on the encoder in ``base_dir`` (a Hugging Face or
    sentence-transformers folder), built as ColBERT is: the encoder's token states, each
    projected to ``COLBERT_DIM`` by a linear layer without bias and L2-normalised, ``MARKERS``
    put before questions and passages, punctuation left out of a passage's vectors, and
    questions read as ``query_shape(query_length, augment)`` says. The markers' token
    embeddings and the projection are new, drawn at random from torch's generator: seed it
    first for the same model. Passages are cut at ``max_length`` tokens. The question shape is
    saved with the model, so whatever loads it encodes questions as training did."""
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask
    from torch import nn

    local = {"local_files_only": True}
    encoder = Transformer(
        base_dir,
        max_seq_length=max_length,
        model_kwargs=local,
        processor_kwargs=local,
        config_kwargs=local,
        **query_shape(query_length, augment),
    )
    encoder.tokenizer.add_tokens(list(MARKERS.values()))
    encoder.auto_model.resize_token_embeddings(len(encoder.tokenizer))
    projection = Dense(
        encoder.get_embedding_dimension(),
        COLBERT_DIM,
        bias=False,
        activation_function=nn.Identity(),
        module_input_name="token_embeddings",
    )
    return MultiVectorEncoder(
        modules=[
            encoder,
            projection,
            MultiVectorMask(skiplist_words=list(string.punctuation)),
            Normalize(module_input_name="token_embeddings"),
        ],
        device=device,
        prompts=MARKERS,
    )


def _multi_vector(base_dir: str, triples: pl.DataFrame, settings, device: str) -> _Recipe:
    from sentence_transformers import MultiVectorEncoderTrainer, MultiVectorEncoderTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.multi_vector_encoder.losses import MultiVectorMultipleNegativesRankingLoss

    model = multi_vector_encoder(
        base_dir,
        settings.passage_max_length,
        device,
        settings.colbert_query_length,
        settings.colbert_query_augmentation,
    )
    # The trainer puts its own prompts, by column, before the texts: the model's markers.
    markers = {c: MARKERS["query" if c == TRIPLES[0] else "document"] for c in TRIPLES}
    return _Recipe(
        model,
        text_columns(triples),
        MultiVectorMultipleNegativesRankingLoss(model),
        MultiVectorEncoderTrainer,
        functools.partial(MultiVectorEncoderTrainingArguments, prompts=markers),
        BatchSamplers.NO_DUPLICATES,
    )


def train_multi_vector(base_dir: str, triples: pl.DataFrame, settings, out_dir: str) -> list[dict]:
    """Fine-tune a ColBERT-style late-interaction retriever (``multi_vector_encoder``) from the
    encoder in ``base_dir`` on ``(question, positive, negative)`` triples, as ColBERT is
    trained: MaxSim scores of each question against its positive, its hard negative and every
    other passage of the batch, and a cross-entropy loss over them (sentence-transformers'
    MultiVectorMultipleNegativesRankingLoss, temperature 1 as PyLate's). Batches, seeding,
    saving and the log are ``train_bi_encoder``'s: a batch holds each question once, two runs
    on the same machine give identical weights, the model and its loss log are saved to
    ``out_dir`` (which must not exist yet); returns the log.

    A BERT-style encoder such as the bundled MiniLM has no projection or markers: they start
    at random (from the seed) and are trained with the encoder. Passages are cut at
    ``passage_max_length``. Questions are ColBERT's: ``colbert_query_length`` tokens (64, the
    ``query_maxlen`` of the paper's ColBERT scripts; ColBERT's own default is 32), the [Q]
    marker after [CLS], and with ``colbert_query_augmentation`` (on) padded after [SEP] with
    [MASK] tokens. The encoder does not attend to those (``ATTEND_TO_MASK``, ColBERT's
    default), but each gets a vector that MaxSim scores like a word's, in training and in
    search alike: the saved model carries the question shape."""
    return _train(base_dir, triples, settings, out_dir, _multi_vector)


def labeled_pairs(triples: pl.DataFrame) -> dict[str, list]:
    """Each ``(question, positive, negative)`` triple as two labeled rows, the positive's
    (label 1) then the negative's (label 0), in the triples' order."""
    return {
        "question": [q for q in triples["question"].to_list() for _ in range(2)],
        "passage": [p for pair in zip(triples["positive"].to_list(), triples["negative"].to_list()) for p in pair],
        "label": [1.0, 0.0] * triples.height,
    }


def _cross_encoder(base_dir: str, triples: pl.DataFrame, settings, device: str) -> _Recipe:
    from sentence_transformers import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.base.sampler import BatchSamplers
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    model = CrossEncoder(
        base_dir, num_labels=1, max_length=settings.passage_max_length, device=device, local_files_only=True
    )
    return _Recipe(
        model,
        labeled_pairs(triples),
        BinaryCrossEntropyLoss(model),
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
        BatchSamplers.BATCH_SAMPLER,
    )


def train_cross_encoder(base_dir: str, triples: pl.DataFrame, settings, out_dir: str) -> list[dict]:
    """Fine-tune a cross-encoder reranker from the encoder in ``base_dir`` on ``(question,
    positive, negative)`` triples, as monoT5 is trained (PyGaggle): each triple gives two
    labeled rows, ``(question, positive)`` with label 1 and ``(question, negative)`` with
    label 0, and a binary cross-entropy loss on one relevance logit per row. Saved to
    ``out_dir`` (which must not exist yet), the loss log beside it, as ``train_bi_encoder``
    saves; returns the log. Seeded as the bi-encoder is: two runs on the same machine give
    identical weights.

    A BERT-style encoder such as the bundled MiniLM has no relevance head: a one-logit
    classification head is added on top of its pooled output, initialised at random (from
    the seed) and trained with the encoder. A batch holds ``batch_size`` rows, so half as
    many triples; question and passage are read together within ``passage_max_length``
    tokens (the longer text is cut first), a limit the saved model keeps when it reranks."""
    return _train(base_dir, triples, settings, out_dir, _cross_encoder)


def read_log(model_dir: str) -> list[dict]:
    """The loss log a finished training saved beside its weights."""
    with open(os.path.join(model_dir, LOG_FILE), encoding="utf-8") as f:
        return json.load(f)


def log_problems(log: list[dict]) -> list[str]:
    """What makes a loss log unusable: no step at all, or a loss that is not a finite number."""
    if not log:
        return ["the loss log has no step"]
    bad = [r.get("step") for r in log if not isinstance(r.get("loss"), (int, float)) or not math.isfinite(r["loss"])]
    return [f"{len(bad)} steps with a loss that is not finite (steps {', '.join(map(str, bad[:10]))})"] if bad else []


def loss_curve(logs: Mapping[str, list[dict]], title: str):
    """Training loss by step, one line per log (by its label, named in a legend when there
    are several: the counts of a positives sweep)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    for label, log in logs.items():
        ax.plot([r["step"] for r in log], [r["loss"] for r in log], marker="o", markersize=3, label=label)
    if len(logs) > 1:
        ax.legend(fontsize="small")
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    return fig
