"""QUIT's fine-tuning (paper section 5, Tables 10-12): its data, the (question, positive,
negative) pairs of the train split drawn by the rule of :mod:`assets.eval.quit.finetune.rules`
from the benchmark as the evaluation reads it (built or released); and the fine-tuned
retrievers and rerankers, models trained on the train split, saved under the storage root
and registered as retriever or reranker aliases, so the QUIT evaluation (``eval/quit_index``,
``eval/quit_runs``, ``eval/quit_reranked_runs`` and what follows) runs them on dev and test
like any other. Partitioned by base model (``resources/finetuning.yaml``); each
materialization trains one model per count of the settings' ``positives`` (the paper's sweep
of 1 to 200 positive passages per question, Tables 10-12), each registered under its own
alias.
"""

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence

import dagster as dg
import numpy as np
import polars as pl

from assets.common.metadata import counts_md, png_markdown, report_table, table_metadata
from assets.common.placement import GPU_STEP_TAGS
from assets.common.wiring import Wiring
from assets.eval.quit.finetune import rules
from assets.eval.quit.finetune import steps as training
from assets.partitions import finetune_base_partitions
from assets.quit.settings import FinetuneSettings
from resources.cross_encoder import score as score_pairs
from resources.encoders import encode_texts
from resources.finetuning import BASES_PATH, load_bases
from resources.lucene import LuceneResource
from resources.multi_vector import score as maxsim_scores
from resources.retrieval import (
    RERANKERS_PATH,
    RETRIEVERS_PATH,
    TRAINED_DIR,
    load_rerankers,
    load_retrievers,
    register_trained,
)
from resources.storage import StorageResource

PREFIX = GROUP = "eval"
wiring = Wiring(PREFIX, GROUP)
# Part of every trained folder's name: bump it when a model's training code changes, so a
# changed training never reuses a folder an older one saved.
DENSE_CODE_VERSION = "1"
CROSS_ENCODER_CODE_VERSION = "1"
# 2: questions padded with [MASK] tokens (ColBERT's query augmentation).
MULTI_VECTOR_CODE_VERSION = "2"
# What the registry entry says a model learned from: RECOR's evaluation leaves such aliases out.
TRAINED_ON = "quit"
# The Lucene index of the train passages, beside the evaluation's indexes.
INDEX = "quit_finetune_train"
PREVIEW = ("question", "pair", "positive_label", "positive", "negative_source", "negative_rank", "negative")


def bm25_hits(
    lucene: LuceneResource, where: str, train: pl.DataFrame, passages: pl.DataFrame, depth: int
) -> dict[str, list[str]]:
    """Each train question's BM25 hits over the train passages (indexed at ``where``), best
    first. A question's own passages are written from its hints and fill the head of its
    list, so each is searched ``depth`` hits past the most passages any one question has:
    ``depth`` hits of other questions remain to draw hard negatives from."""
    lucene.build(where, passages.select(pl.col("passage_id").alias("id"), pl.col("text").alias("contents")))
    own = passages.group_by("question_id").len()["len"].max()
    found = lucene.searcher(where).batch_search(
        train["question"].to_list(), train["question_id"].to_list(), depth + own
    )
    return {qid: [hit.docid for hit in hits] for qid, hits in found.items()}


def _counts(frame: pl.DataFrame, column: str) -> dg.MetadataValue:
    return counts_md(dict(frame.group_by(column).len().sort(column).iter_rows()), column)


@dg.multi_asset(
    name="eval_quit_finetune_data",
    group_name=GROUP,
    outs={
        "quit_finetune_data": wiring.out(
            "QUIT's fine-tuning data: one row per (positive, negative) pair of a train question.", {"polars", "lucene"}
        ),
        "quit_finetune_rejects": wiring.out(
            "Train questions without a positive or a negative, with the reason.", {"polars"}
        ),
    },
    ins={
        "quit_questions": wiring.input("quit_questions"),
        "quit_corpus": wiring.input("quit_corpus"),
        "quit_qrels": wiring.input("quit_qrels"),
    },
    code_version="1",
)
def quit_finetune_data(
    quit_questions: pl.DataFrame,
    quit_corpus: pl.DataFrame,
    quit_qrels: pl.DataFrame,
    finetune_settings: FinetuneSettings,
    lucene: LuceneResource,
    storage: StorageResource,
):
    """The training data of QUIT's fine-tuned models, one row per (positive, negative) pair
    of a train question: its label-2 passages, then its label-1 passages (a weaker positive,
    never a negative), in a seeded order, as many as the largest count of ``positives``; each
    paired with a hard negative, a passage of another train question that BM25 ranks high for
    it (Lucene over the train passages), or under ``negatives: random`` a random passage of a
    random other train question, as the authors' scripts draw them. Only train passages are ever
    trained on. Dense and late-interaction trainers read ``(question, positive, negative)``,
    the cross-encoder a positive and a negative row per pair; a model of count n reads each
    question's first n pairs, so one table serves every count of the sweep."""
    s = finetune_settings
    train = quit_questions.filter(pl.col("split") == rules.TRAIN)
    passages = rules.train_passages(quit_questions, quit_corpus)
    hits, index = {}, {}
    if s.negatives == rules.BM25 and passages.height:
        where = storage.index_path("lucene", INDEX)
        hits, index = (
            bm25_hits(lucene, where, train, passages, s.bm25_depth),
            {"bm25_index": dg.MetadataValue.path(where)},
        )
    pairs, rejects = rules.training_pairs(
        quit_questions, quit_corpus, quit_qrels, hits, positives=max(s.positives), negatives=s.negatives, seed=s.seed
    )
    yield dg.Output(
        pairs,
        output_name="quit_finetune_data",
        metadata={
            **table_metadata(pairs.select(list(PREVIEW))),
            "train_questions": train.height,
            "questions": pairs["question_id"].n_unique(),
            "rejected": len(rejects),
            "train_passages": passages.height,
            "pairs": pairs.height,
            "by_label": _counts(pairs, "positive_label"),
            "by_negative_source": _counts(pairs, "negative_source"),
            "positives": max(s.positives),
            "positive_counts": ", ".join(map(str, s.positives)),
            "negatives": s.negatives,
            "bm25_depth": s.bm25_depth,
            "seed": s.seed,
            **index,
        },
    )
    yield wiring.rejects("quit_finetune_rejects", rules.REJECTS, rejects)


finetune_data_assets = [quit_finetune_data]


def dense_alias(base: str) -> str:
    return f"ft-dpr-{base}"


def rerank_alias(base: str) -> str:
    return f"ft-ce-{base}"


def colbert_alias(base: str) -> str:
    return f"ft-colbert-{base}"


def base_model(base: str) -> str:
    bases = load_bases()
    if base not in bases:
        raise ValueError(f"base model {base!r} is not in {BASES_PATH} (bases: {', '.join(sorted(bases))})")
    return bases[base]


def smoke_encode(folder: str, question: str, passage: str) -> None:
    """Encode one question with the saved model, as the evaluation will load it: a model that
    does not load or encodes to nothing usable is never registered (a bi-encoder reads the
    question alone: the passage is not used)."""
    vecs = encode_texts(folder, [question], "query")
    if vecs.shape[0] != 1 or not np.isfinite(vecs).all() or not np.abs(vecs).sum():
        raise RuntimeError(
            f"{folder}: the trained model encodes {question!r} to {vecs.shape} non-finite or zero values"
        )


def smoke_score(folder: str, question: str, passage: str) -> None:
    """Score one (question, passage) with the saved model, as the reranker will load it: a
    model that does not load or scores no finite number is never registered."""
    values = score_pairs(folder, [(question, passage)])
    if len(values) != 1 or not math.isfinite(values[0]):
        raise RuntimeError(f"{folder}: the trained model scores ({question!r}, {passage[:60]!r}) as {values}")


def smoke_maxsim(folder: str, question: str, passage: str) -> None:
    """Score one (question, passage) by MaxSim with the saved model, as the retriever will load
    it: a model that does not load or scores no finite number is never registered."""
    values = maxsim_scores(folder, [question], [passage])
    if values.shape != (1, 1) or not np.isfinite(values).all():
        raise RuntimeError(f"{folder}: the trained model scores ({question!r}, {passage[:60]!r}) by MaxSim as {values}")


@dataclasses.dataclass(frozen=True)
class TrainedModel:
    """What differs between the fine-tuned model assets: the model's ``kind`` (its registry
    kind and the folder it is saved under, ``models/quit/<kind>/<base>/<fingerprint>``), the
    code version in that name, the trainer, the smoke test a saved model passes before it is
    registered, the alias per base, and the registry: its ``section``, the entry's key naming
    the model's folder, its loader (``load(trained=None)`` reads the registry file alone) and
    that file, which may not hold the alias already; and the settings its folder's name reads."""

    kind: str
    code_version: str
    train: Callable[..., list[dict]]
    smoke: Callable[[str, str, str], None]
    alias: Callable[[str], str]
    section: str
    path_key: str
    load: Callable[..., dict]
    static_path: str
    knobs: tuple[str, ...] = training.TRAINING_KNOBS


DENSE = TrainedModel(
    "dense",
    DENSE_CODE_VERSION,
    training.train_bi_encoder,
    smoke_encode,
    dense_alias,
    "retrievers",
    "encoder",
    load_retrievers,
    RETRIEVERS_PATH,
)
CROSS_ENCODER = TrainedModel(
    "cross_encoder",
    CROSS_ENCODER_CODE_VERSION,
    training.train_cross_encoder,
    smoke_score,
    rerank_alias,
    "rerankers",
    "model",
    load_rerankers,
    RERANKERS_PATH,
)
MULTI_VECTOR = TrainedModel(
    "multi_vector",
    MULTI_VECTOR_CODE_VERSION,
    training.train_multi_vector,
    smoke_maxsim,
    colbert_alias,
    "retrievers",
    "encoder",
    load_retrievers,
    RETRIEVERS_PATH,
    training.MULTI_VECTOR_KNOBS,
)


def sweep_alias(alias: str, positives: int, counts: Sequence[int]) -> str:
    """The alias of the model trained on ``positives`` pairs a question: the kind's alias of
    the base (``alias``), naming the count when the sweep has more than one (``-p<count>``),
    so each count is a retriever or reranker of its own; one count keeps the plain alias."""
    return alias if len(counts) == 1 else f"{alias}-p{positives}"


def undrawn(counts: Sequence[int], drawn: int | None) -> list[int]:
    """The counts above ``drawn``, the positives per question the training data was drawn
    for (None: not recorded): their first pairs would be fewer than the count their alias
    names."""
    return [] if drawn is None else [n for n in counts if n > drawn]


def drawn_positives(instance: dg.DagsterInstance) -> int | None:
    """The positives per question the latest eval/quit_finetune_data was drawn for, as its
    materialization recorded them (None: none is recorded)."""
    event = instance.get_latest_materialization_event(dg.AssetKey([PREFIX, "quit_finetune_data"]))
    value = event.asset_materialization.metadata.get("positives") if event and event.asset_materialization else None
    return value.value if value is not None else None


# The materialization's table of the models it trained (one row per count); the checks read it.
MODELS = "models"
MODEL_COLUMNS = {
    "positives": "pairs a train question is trained on at most (a question with fewer relevant passages has fewer)",
    "alias": "the retriever or reranker alias the model is registered under",
    "pairs": "training pairs of this count",
    "steps": "training steps",
    "epochs": "epochs over the pairs",
    "seconds": "training time (0 when reused)",
    "final_loss": "the last step's loss",
    "reused": "true when a folder of the same training existed and was registered again",
    "model_path": "the saved model's folder",
    "registry_file": "the registry file naming the alias",
}


def models_of(metadata: dict) -> list[dict]:
    """The rows of a materialization's :data:`MODELS` table (metadata values as the instance
    returns them); a materialization made before the sweep names one model at top level."""
    table = metadata.get(MODELS)
    if table is not None:
        return [dict(record.data) for record in table.records]
    return [{"alias": metadata.get("alias"), "model_path": metadata.get("model_path"), "positives": None}]


def train_count(
    context: dg.AssetExecutionContext,
    pairs: pl.DataFrame,
    storage: StorageResource,
    settings: FinetuneSettings,
    model: TrainedModel,
    base_dir: str,
    positives: int,
    alias: str,
) -> tuple[dict, list[dict]]:
    """Train the model of one count on its ``pairs`` (or reuse the folder of the same
    training), try it and register it as ``alias``; returns its :data:`MODELS` row and loss log."""
    base = context.partition_key
    folder = os.path.abspath(
        storage.model_path(
            "quit", model.kind, base, training.fingerprint(pairs, settings, base_dir, model.code_version, model.knobs)
        )
    )
    start = time.monotonic()
    reused = os.path.isdir(folder)
    if reused:
        context.log.info(f"{folder} holds this training already (same data, settings, seed and code): reused")
        log = training.read_log(folder)
    else:
        log = model.train(base_dir, pairs, settings, folder)
    seconds = time.monotonic() - start
    model.smoke(folder, pairs["question"][0], pairs["positive"][0])
    registry_file = register_trained(
        model.section,
        alias,
        {"kind": model.kind, model.path_key: folder, "trained_on": TRAINED_ON, "positives": positives},
    )
    context.log.info(f"registered {model.section[:-1]} {alias!r} ({positives} positives a question) -> {folder}")
    return {
        "positives": positives,
        "alias": alias,
        "pairs": pairs.height,
        "steps": log[-1]["step"] if log else 0,
        "epochs": round(log[-1].get("epoch", 0.0), 3) if log else 0.0,
        "seconds": round(seconds, 1),
        "final_loss": log[-1]["loss"] if log else float("nan"),
        "reused": reused,
        "model_path": folder,
        "registry_file": registry_file,
    }, log


def trained_model(
    context: dg.AssetExecutionContext,
    pairs: pl.DataFrame,
    storage: StorageResource,
    settings: FinetuneSettings,
    model: TrainedModel,
) -> dg.MaterializeResult:
    """Train the partition's model once per count of ``settings.positives``, each on every
    question's first pairs up to that count (or reuse the folder of the same training), try
    each and register its alias; the materialization's metadata describes the trainings."""
    base, counts = context.partition_key, settings.positives
    base_dir, what = base_model(base), model.section[:-1]
    aliases = {n: sweep_alias(model.alias(base), n, counts) for n in counts}
    if taken := [a for a in aliases.values() if a in model.load(trained=None)]:
        raise ValueError(
            f"{model.static_path} already names {', '.join(map(repr, taken))}: the trained {what} of base "
            f"{base!r} would register under that alias in {TRAINED_DIR}; rename the static one"
        )
    drawn = drawn_positives(context.instance)
    if missing := undrawn(counts, drawn):
        raise ValueError(
            f"eval/quit_finetune_data was drawn for at most {drawn} positives a question, and positives "
            f"asks for {', '.join(map(str, missing))}: materialize eval/quit_finetune_data again with "
            "these settings first"
        )
    rows, logs = [], {}
    for n in counts:
        row, logs[aliases[n]] = train_count(
            context, rules.first_positives(pairs, n), storage, settings, model, base_dir, n, aliases[n]
        )
        rows.append(row)
    # One count reads as before the sweep: its model's keys at top level as well.
    single = {k: v for k, v in rows[0].items() if k != "positives"} if len(rows) == 1 else {}
    return dg.MaterializeResult(
        metadata={
            "base": base,
            "base_path": dg.MetadataValue.path(base_dir),
            "positives": ", ".join(map(str, counts)),
            "questions": pairs["question_id"].n_unique(),
            **{k: dg.MetadataValue.path(v) if k in ("model_path", "registry_file") else v for k, v in single.items()},
            MODELS: report_table(pl.DataFrame(rows), MODEL_COLUMNS),
            "batch": settings.batch_size,
            "lr": settings.learning_rate,
            "seed": settings.seed,
            "device": training.resolve_device(settings.device),
            "loss_curve": png_markdown(training.loss_curve(logs, f"{model.alias(base)}: training loss")),
        }
    )


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=finetune_base_partitions,
    ins={"quit_finetune_data": wiring.input("quit_finetune_data")},
    kinds={"pytorch"},
    pool="training",
    op_tags=GPU_STEP_TAGS,
    code_version=DENSE_CODE_VERSION,
)
def quit_dense_model(
    context: dg.AssetExecutionContext,
    quit_finetune_data: pl.DataFrame,
    storage: StorageResource,
    finetune_settings: FinetuneSettings,
) -> dg.MaterializeResult:
    """A DPR-style bi-encoder fine-tuned from the partition's base model on QUIT's train
    pairs: a contrastive loss over each question's positive, its hard negative and the other
    passages of the batch (the published ``finetune.sh``: Tevatron, one shared encoder, one
    positive and one negative per row, in-batch negatives), seeded so a rerun gives the same
    weights. Saved under ``<storage root>/models/quit/dense/<base>/<fingerprint>`` (data,
    settings, seed and code), never over an earlier model; a rerun with nothing changed reuses
    that folder. Registered as retriever ``ft-dpr-<base>`` once the saved model encodes a
    question (``ft-dpr-<base>-p<count>``, one per count, when ``positives`` sweeps several), so
    materializing ``eval/quit_index`` and ``eval/quit_runs`` for that partition evaluates it. The paper fine-tunes
    ``bert-base-uncased``; the demo starts from the bundled MiniLM (e5-small cannot be a base: it is no Hugging Face model)."""
    return trained_model(context, quit_finetune_data, storage, finetune_settings, DENSE)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=finetune_base_partitions,
    ins={"quit_finetune_data": wiring.input("quit_finetune_data")},
    kinds={"pytorch"},
    pool="training",
    op_tags=GPU_STEP_TAGS,
    code_version=CROSS_ENCODER_CODE_VERSION,
)
def quit_rerank_model(
    context: dg.AssetExecutionContext,
    quit_finetune_data: pl.DataFrame,
    storage: StorageResource,
    finetune_settings: FinetuneSettings,
) -> dg.MaterializeResult:
    """A cross-encoder reranker fine-tuned from the partition's base model on QUIT's train
    pairs (Table 12): each pair gives the question with its positive (label 1) and with its
    hard negative (label 0), and a binary cross-entropy loss on one relevance score per
    (question, passage), as monoT5 is trained, seeded so a rerun gives the same weights.
    Saved under ``<storage root>/models/quit/cross_encoder/<base>/<fingerprint>``, never over
    an earlier model; a rerun with nothing changed reuses that folder. Registered as reranker
    ``ft-ce-<base>`` (kind ``cross_encoder``; ``ft-ce-<base>-p<count>`` per count of a sweep)
    once the saved model scores a pair, so its
    ``eval/quit_reranked_runs`` partitions rerank with it. The paper fine-tunes MonoT5
    (``castorini/monot5-base-msmarco``, a T5 that answers true or false) with PyGaggle; its
    weights cannot be fetched here, so the demo starts from the bundled MiniLM encoder with a
    fresh, seeded classification head: a different model, trained the same way. A user with
    the monoT5 checkpoint in a local folder can register it as a ``seq2seq`` reranker in
    ``resources/rerankers.yaml``."""
    return trained_model(context, quit_finetune_data, storage, finetune_settings, CROSS_ENCODER)


@dg.asset(
    key_prefix=PREFIX,
    group_name=GROUP,
    partitions_def=finetune_base_partitions,
    ins={"quit_finetune_data": wiring.input("quit_finetune_data")},
    kinds={"pytorch"},
    pool="training",
    op_tags=GPU_STEP_TAGS,
    code_version=MULTI_VECTOR_CODE_VERSION,
)
def quit_colbert_model(
    context: dg.AssetExecutionContext,
    quit_finetune_data: pl.DataFrame,
    storage: StorageResource,
    finetune_settings: FinetuneSettings,
) -> dg.MaterializeResult:
    """A ColBERT-style late-interaction retriever fine-tuned from the partition's base model on
    QUIT's train pairs (appendix A.2, Table 10): every token of a question and a passage gets
    its own 128-dimensional vector, a question scores a passage by MaxSim (each question
    token's best match among the passage's tokens, summed; a question is padded with [MASK]
    tokens to ``colbert_query_length``, whose vectors count too, as ColBERT's query
    augmentation does), and a contrastive loss over each question's positive, its hard
    negative and the other passages of the batch trains it, seeded so a rerun gives the same
    weights. Saved under
    ``<storage root>/models/quit/multi_vector/<base>/<fingerprint>``, never over an earlier
    model; a rerun with nothing changed reuses that folder. Registered as retriever
    ``ft-colbert-<base>`` (kind ``multi_vector``; ``ft-colbert-<base>-p<count>`` per count of a
    sweep) once the saved model scores a pair, so
    ``eval/quit_index`` and ``eval/quit_runs`` for that partition index every passage's token
    vectors and search them exhaustively. The paper fine-tunes ColBERT
    (``colbert-ir/colbertv2.0``; best with 50 positives per question); those weights cannot be
    fetched here, so the demo starts from the bundled MiniLM encoder with a fresh, seeded
    projection and question/passage markers: a different model, trained the same way. A user
    with a ColBERT checkpoint saved in a folder (any PyLate or Stanford ColBERT checkpoint
    loads) can register it as a ``multi_vector`` retriever in ``resources/retrievers.yaml``."""
    return trained_model(context, quit_finetune_data, storage, finetune_settings, MULTI_VECTOR)


finetune_model_assets = [quit_dense_model, quit_rerank_model, quit_colbert_model]
