"""QUIT's fine-tuned bi-encoder and cross-encoder reranker: training moves a toy answer up
the ranking, the same seed trains the same weights, and the assets save, register and check
the models so the evaluation's partitions pick them up (and RECOR's do not)."""

import json
import os

import dagster as dg
import numpy as np
import polars as pl
import pytest

from assets.eval import training
from assets.eval.finetune import (
    dense_alias,
    quit_dense_model,
    quit_rerank_model,
    rerank_alias,
)
from assets.eval.runs import RUN_SCHEMA
from assets.quit.settings import FinetuneSettings
from checks.eval import dense_model_checks, rerank_model_checks
from resources.cross_encoder import score as score_pairs
from resources.encoders import encode_texts
from resources.finetuning import load_bases
from resources.retrieval import (
    RerankerSpec,
    RetrieverSpec,
    load_rerankers,
    load_retrievers,
    register_trained,
    trained_specs,
)
from resources.storage import (
    StorageResource,
    parquet_io_manager,
    table_uri,
    write_parquet,
)

# eval/quit_finetune_data's columns, built here rather than imported: the trainer reads the
# table as stored.
PAIRS_SCHEMA = {
    "question_id": pl.String, "question": pl.String, "pair": pl.Int32,
    "positive_id": pl.String, "positive": pl.String, "positive_label": pl.Int8,
    "negative_id": pl.String, "negative": pl.String, "negative_question_id": pl.String,
    "negative_source": pl.String, "negative_rank": pl.Int32,
}
MINILM = load_bases()["minilm"]


def pairs(rows: list[tuple]) -> pl.DataFrame:
    """``(question_id, question, pair, positive_id, positive, negative_id, negative,
    negative_question_id)`` rows as the table stores them, every negative from BM25."""
    return pl.DataFrame([(q, text, pair, pos_id, pos, 2, neg_id, neg, neg_q, "bm25", pair + 1)
                         for q, text, pair, pos_id, pos, neg_id, neg, neg_q in rows], schema=PAIRS_SCHEMA, orient="row")


def settings(**knobs) -> FinetuneSettings:
    return FinetuneSettings(**{"device": "cpu", "batch_size": 4, "passage_max_length": 64, "seed": 7, **knobs})


def ranking(model: str, queries: dict[str, str], passages: dict[str, str]) -> pl.DataFrame:
    """Every passage for every query, by cosine similarity under ``model``."""
    scores = encode_texts(model, list(queries.values()), "query") @ encode_texts(model, list(passages.values())).T
    ids = list(passages)
    rows = [(qid, ids[j], rank, float(row[j]), "run")
            for qid, row in zip(queries, scores) for rank, j in enumerate(np.argsort(-row, kind="stable"), start=1)]
    return pl.DataFrame(rows, schema=RUN_SCHEMA, orient="row")


# Six questions one unrelated sentence answers, each with the passage it resembles as its
# hard negative: before training, that passage outranks the answer.
ANSWER = "The lighthouse keeper rang the brass bell twice at dawn."
TOY = [
    ("Which ocean is the largest?", "The Pacific is the largest and deepest of the oceans."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa in Florence."),
    ("What is the boiling point of water?", "Water boils at one hundred degrees Celsius at sea level."),
    ("Which planet is known as the red planet?", "Mars is called the red planet because of its iron oxide dust."),
    ("How many legs does a spider have?", "Spiders have eight legs and most have eight eyes."),
    ("What is the capital of Japan?", "Tokyo is the capital and largest city of Japan."),
]


def test_training_ranks_the_passage_that_always_answers_higher(tmp_path):
    frame = pairs([(f"q{i}", q, 0, "answer", ANSWER, f"n{i}", neg, f"o{i}") for i, (q, neg) in enumerate(TOY)])
    queries = {f"q{i}": q for i, (q, _) in enumerate(TOY)}
    passages = {"answer": ANSWER, **{f"n{i}": neg for i, (_, neg) in enumerate(TOY)}}
    before = ranking(MINILM, queries, passages).filter(pl.col("passage_id") == "answer").sort("question_id")
    assert before["rank"].mean() > 3

    log = training.train_bi_encoder(MINILM, frame, settings(max_steps=12, learning_rate=1e-4), str(tmp_path / "model"))
    after = ranking(str(tmp_path / "model"), queries, passages).filter(pl.col("passage_id") == "answer").sort("question_id")
    assert [r["step"] for r in log] == list(range(1, 13)) and not training.log_problems(log)
    assert after["rank"].mean() < before["rank"].mean()
    assert (after["score"] > before["score"]).all()
    assert training.read_log(str(tmp_path / "model")) == log


QUESTIONS = {"q1": "Which ocean is the largest?", "q2": "Who painted the Mona Lisa?", "q3": "Which planet is red?"}
PASSAGES = {
    "p1a": "The Pacific is the largest ocean.", "p1b": "No ocean is wider than the Pacific.",
    "p2a": "Leonardo painted the Mona Lisa.", "p2b": "Da Vinci's Mona Lisa hangs in the Louvre.",
    "p3a": "Mars is the red planet.", "p3b": "Iron oxide dust makes Mars look red.",
}
QRELS = pl.DataFrame({"question_id": ["q1", "q1", "q2", "q2", "q3", "q3"], "passage_id": list(PASSAGES), "label": [2] * 6})


# Each question's two passages, each paired with a passage of the next question.
PLAN = [("q1", 0, "p1a", "p2b"), ("q1", 1, "p1b", "p2a"), ("q2", 0, "p2a", "p3b"), ("q2", 1, "p2b", "p3a"),
        ("q3", 0, "p3a", "p1b"), ("q3", 1, "p3b", "p1a")]


def qa_pairs() -> pl.DataFrame:
    return pairs([(q, QUESTIONS[q], pair, pos, PASSAGES[pos], neg, PASSAGES[neg], f"q{neg[1]}") for q, pair, pos, neg in PLAN])


def test_the_same_seed_trains_the_same_weights_and_metrics(tmp_path):
    import torch
    from safetensors.torch import load_file

    from assets.eval.metrics import evaluate_run

    folders = [str(tmp_path / name) for name in ("first", "second")]
    logs = [training.train_bi_encoder(MINILM, qa_pairs(), settings(max_steps=4, learning_rate=5e-5), f) for f in folders]
    first, second = (load_file(os.path.join(f, "model.safetensors")) for f in folders)
    base = load_file(os.path.join(MINILM, "model.safetensors"))
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], base[k]) for k in first)
    assert logs[0] == logs[1]
    metrics = ["hit_rate@1", "mrr", "ndcg@10"]
    scores = [evaluate_run(QRELS, ranking(f, QUESTIONS, PASSAGES), metrics) for f in folders]
    assert scores[0] == scores[1]
    # the fingerprint names the training: the data in any row order, and the seed
    s = settings(max_steps=4, learning_rate=5e-5)
    assert training.fingerprint(qa_pairs().reverse(), s, MINILM, "1") == training.fingerprint(qa_pairs(), s, MINILM, "1")
    assert training.fingerprint(qa_pairs(), settings(max_steps=4, learning_rate=5e-5, seed=8), MINILM, "1") != \
        training.fingerprint(qa_pairs(), s, MINILM, "1")


def test_a_trained_model_is_never_written_over(tmp_path):
    (tmp_path / "model").mkdir()
    with pytest.raises(FileExistsError, match="never overwritten"):
        training.train_bi_encoder(MINILM, qa_pairs(), settings(max_steps=1), str(tmp_path / "model"))
    with pytest.raises(FileNotFoundError, match="not a local Hugging Face or sentence-transformers folder"):
        training.train_bi_encoder(str(tmp_path / "nowhere"), qa_pairs(), settings(max_steps=1), str(tmp_path / "other"))
    with pytest.raises(ValueError, match="no training pairs"):
        training.train_bi_encoder(MINILM, qa_pairs().clear(), settings(max_steps=1), str(tmp_path / "other"))


def test_trained_aliases_merge_into_the_registry_and_may_not_shadow_it(tmp_path):
    static = tmp_path / "retrievers.yaml"
    static.write_text("retrievers:\n  bm25: {kind: bm25}\n")
    trained = str(tmp_path / "trained")
    assert set(load_retrievers(str(static), trained)) == {"bm25"}
    register_trained("retrievers", "ft-x", {"kind": "dense", "encoder": "/m/x", "trained_on": "quit"}, trained)
    assert load_retrievers(str(static), trained)["ft-x"] == RetrieverSpec("ft-x", "dense", encoder="/m/x", trained_on="quit")
    assert set(load_retrievers(str(static), None)) == {"bm25"}
    register_trained("retrievers", "bm25", {"kind": "dense", "encoder": "/m/y"}, trained)
    with pytest.raises(ValueError, match=r"retrievers\.bm25\.yaml: trained alias 'bm25' is already in .*retrievers\.yaml"):
        load_retrievers(str(static), trained)
    os.remove(os.path.join(trained, "retrievers.bm25.yaml"))
    (tmp_path / "trained" / "retrievers.ft-y.yaml").write_text("retrievers:\n  ft-z: {kind: dense, encoder: /m/z}\n")
    with pytest.raises(ValueError, match="expected one 'retrievers' entry, 'ft-y' as the file is named"):
        trained_specs("retrievers", RetrieverSpec, {"dense"}, trained)


def test_bases_resolve_to_folders_and_e5_small_cannot_be_one(tmp_path):
    assert os.path.isfile(os.path.join(MINILM, "model.safetensors"))
    p = tmp_path / "finetuning.yaml"
    p.write_text("bases:\n  bert: {model: /models/bert-base-uncased}\n")
    assert load_bases(str(p)) == {"bert": "/models/bert-base-uncased"}
    p.write_text("bases:\n  e5: {model: e5-small}\n")
    with pytest.raises(ValueError, match="base 'e5': e5-small cannot be fine-tuned"):
        load_bases(str(p))
    p.write_text("bases:\n  Bad/Name: {model: minilm}\n")
    with pytest.raises(ValueError, match="an alias is lower-case"):
        load_bases(str(p))


@pytest.fixture
def trained_registry():
    """The test process's trained registry (set by conftest), emptied afterwards: a later
    test of this process must not find the alias this one registered."""
    from resources.retrieval import TRAINED_DIR

    yield TRAINED_DIR
    for name in os.listdir(TRAINED_DIR):
        os.remove(os.path.join(TRAINED_DIR, name))


def check_results(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


class ModelAsset:
    """A fine-tuned model asset over ``qa_pairs()`` in a fresh storage root and instance,
    partition ``minilm``: ``run`` materializes it with its checks; ``recheck`` runs the checks
    alone, as the checks-only jobs rejudge a stored model without training it."""

    def __init__(self, tmp_path, asset, checks):
        from assets.partitions import sync_partitions

        storage = StorageResource(root=str(tmp_path / "storage"))
        write_parquet(table_uri(storage.root, ["eval", "quit_finetune_data"]), qa_pairs())
        self.instance = dg.DagsterInstance.ephemeral()
        sync_partitions(self.instance)
        assert self.instance.get_dynamic_partitions("finetune_bases") == ["minilm"]
        self.resources = {"storage": storage, "io_manager": parquet_io_manager,
                          "finetune_settings": settings(max_steps=3, batch_size=2)}
        self.assets = [dg.AssetSpec(["eval", "quit_finetune_data"]), asset]
        self.checks, self.node = checks, f"eval__{asset.key.path[-1]}"

    def run(self) -> tuple[dg.ExecuteInProcessResult, dict]:
        result = dg.materialize([*self.assets, *self.checks], partition_key="minilm", instance=self.instance,
                                resources=self.resources)
        return result, result.asset_materializations_for_node(self.node)[0].metadata

    def recheck(self) -> dg.ExecuteInProcessResult:
        job = dg.define_asset_job("recheck", selection=dg.AssetSelection.checks(*self.checks))
        defs = dg.Definitions(assets=self.assets, asset_checks=self.checks, jobs=[job], resources=self.resources)
        return defs.resolve_job_def("recheck").execute_in_process(instance=self.instance, tags={"dagster/partition": "minilm"})


def break_log(folder: str) -> None:
    with open(os.path.join(folder, training.LOG_FILE), "w") as f:
        json.dump([{"step": 1, "loss": float("nan")}], f)


def test_the_model_asset_registers_a_retriever_the_evaluation_partitions_pick_up(tmp_path, trained_registry):
    from assets.partitions import sync_partitions

    model = ModelAsset(tmp_path, quit_dense_model, dense_model_checks)
    result, meta = model.run()
    folder, alias = meta["model_path"].value, dense_alias("minilm")
    assert meta["alias"].value == alias and meta["reused"].value is False and meta["steps"].value == 3
    assert (meta["questions"].value, meta["pairs"].value, meta["seed"].value) == (3, 6, 7)
    assert folder.startswith(str(tmp_path / "storage" / "models" / "quit" / "dense" / "minilm"))
    assert meta["loss_curve"].value.startswith("![plot](data:image/png;base64,")
    assert check_results(result) == {"registered": True, "loss_log": True}
    spec = load_retrievers()[alias]
    assert (spec.kind, spec.encoder, spec.trained_on) == ("dense", folder, "quit")

    # the evaluation's retriever partitions take the alias; RECOR's leave a QUIT-trained one out
    changes = sync_partitions(model.instance)
    assert changes.new == {"retrievers": [alias]}
    assert alias in model.instance.get_dynamic_partitions("retrievers")
    assert alias not in model.instance.get_dynamic_partitions("recor_retrievers")

    # nothing changed: the saved training is reused, not trained again or written over
    _, again = model.run()
    assert again["reused"].value is True and again["model_path"].value == folder

    # a registration pointing elsewhere, or a loss that is not finite, fails its check
    register_trained("retrievers", alias, {"kind": "dense", "encoder": str(tmp_path), "trained_on": "quit"}, trained_registry)
    break_log(folder)
    result = model.recheck()
    assert check_results(result) == {"registered": False, "loss_log": False}
    assert result.get_asset_materialization_events() == []


# --- The fine-tuned cross-encoder reranker ------------------------------------------------------


def cross_scores(folder: str, pairs: list[tuple[str, str]]) -> np.ndarray:
    """The cross-encoder in ``folder`` scoring each pair; MiniLM's folder gets the one-logit
    head the training adds, drawn from the seed the training draws it from."""
    from sentence_transformers import CrossEncoder
    from transformers import set_seed

    if folder == MINILM:
        set_seed(settings().seed)
        return CrossEncoder(folder, num_labels=1, local_files_only=True, device="cpu").predict(pairs)
    return np.asarray(score_pairs(folder, pairs))


@pytest.fixture(scope="module")
def toy_reranker(tmp_path_factory) -> tuple[str, list[dict]]:
    """A cross-encoder trained on the toy set, and its log (trained once for the tests that read it)."""
    frame = pairs([(f"q{i}", q, 0, "answer", ANSWER, f"n{i}", neg, f"o{i}") for i, (q, neg) in enumerate(TOY)])
    folder = str(tmp_path_factory.mktemp("reranker") / "model")
    return folder, training.train_cross_encoder(MINILM, frame, settings(max_steps=6, learning_rate=2e-4), folder)


def test_a_trained_cross_encoder_scores_the_passage_that_always_answers_above_the_negatives(toy_reranker):
    folder, log = toy_reranker
    toy = [(q, passage) for q, negative in TOY for passage in (ANSWER, negative)]
    before, after = (cross_scores(f, toy).reshape(-1, 2) for f in (MINILM, folder))
    margin_before, margin_after = before[:, 0] - before[:, 1], after[:, 0] - after[:, 1]
    assert (margin_after > margin_before).all() and (margin_after > 0.05).all()
    assert [r["step"] for r in log] == list(range(1, 7)) and not training.log_problems(log)
    assert log[-1]["loss"] < log[0]["loss"]
    assert training.read_log(folder) == log
    with pytest.raises(FileExistsError, match="never overwritten"):
        training.train_cross_encoder(MINILM, qa_pairs(), settings(max_steps=1), folder)


def test_the_same_seed_trains_a_cross_encoder_that_scores_the_same(tmp_path):
    pairs_ = [(QUESTIONS[q], PASSAGES[p]) for q in QUESTIONS for p in PASSAGES]
    runs = {name: training.train_cross_encoder(MINILM, qa_pairs(), settings(max_steps=2, learning_rate=1e-4, seed=seed),
                                               str(tmp_path / name))
            for name, seed in (("first", 7), ("second", 7), ("other", 8))}
    first, second, other = (cross_scores(str(tmp_path / name), pairs_) for name in runs)
    assert runs["first"] == runs["second"] and np.array_equal(first, second)
    assert not np.array_equal(first, other)


def test_the_cross_encoder_kind_reorders_a_head_by_the_model_scores(toy_reranker, tmp_path):
    from assets.eval.rerankers import rerank

    folder, _ = toy_reranker
    static = tmp_path / "rerankers.yaml"
    static.write_text(f"rerankers:\n  ce: {{kind: cross_encoder, model: {folder}, batch_size: 3, top_k: 5}}\n")
    spec = load_rerankers(str(static), trained=None)["ce"]
    queries = {f"q{i}": q for i, (q, _) in enumerate(TOY[:3])}
    texts = {"answer": ANSWER, **{f"n{i}": negative for i, (_, negative) in enumerate(TOY)}}
    # retrieved order: the answer last, below every negative
    head = {q: [*(f"n{i}" for i in range(6)), "answer"] for q in queries}
    done = rerank(spec, None, queries, head, texts, stats=None)
    for q, ids in head.items():
        scores = cross_scores(folder, [(queries[q], texts[pid]) for pid in ids])
        assert done.lists[q] == [ids[j] for j in np.argsort(-scores, kind="stable")]
        assert done.lists[q][0] == "answer"
    assert done.unscored == 0
    static.write_text("rerankers:\n  ce: {kind: cross_encoder}\n")
    with pytest.raises(ValueError, match="reranker 'ce' needs a model"):
        load_rerankers(str(static), trained=None)


def test_trained_rerankers_merge_into_the_registry_and_may_not_shadow_it(tmp_path):
    static = tmp_path / "rerankers.yaml"
    static.write_text("rerankers:\n  mine: {kind: entrypoint, function: 'examples.rerankers:overlap'}\n")
    trained = str(tmp_path / "trained")
    register_trained("rerankers", "ft-x", {"kind": "cross_encoder", "model": "/m/x", "trained_on": "quit"}, trained)
    assert load_rerankers(str(static), trained=trained)["ft-x"] == RerankerSpec("ft-x", "cross_encoder", model="/m/x",
                                                                                 trained_on="quit")
    assert set(load_rerankers(str(static), trained=None)) == {"mine"}
    register_trained("rerankers", "mine", {"kind": "cross_encoder", "model": "/m/y"}, trained)
    with pytest.raises(ValueError, match=r"rerankers\.mine\.yaml: trained alias 'mine' is already in .*rerankers\.yaml"):
        load_rerankers(str(static), trained=trained)


def test_the_rerank_model_asset_registers_a_reranker_the_evaluation_partitions_pick_up(tmp_path, trained_registry):
    from assets.partitions import sync_partitions

    model = ModelAsset(tmp_path, quit_rerank_model, rerank_model_checks)
    result, meta = model.run()
    folder, alias = meta["model_path"].value, rerank_alias("minilm")
    assert (alias, meta["alias"].value, meta["reused"].value, meta["steps"].value) == ("ft-ce-minilm", alias, False, 3)
    assert folder.startswith(str(tmp_path / "storage" / "models" / "quit" / "cross_encoder" / "minilm"))
    assert meta["loss_curve"].value.startswith("![plot](data:image/png;base64,")
    assert check_results(result) == {"registered": True, "loss_log": True}
    assert load_rerankers()[alias] == RerankerSpec(alias, "cross_encoder", model=folder, trained_on="quit")
    assert alias not in load_retrievers()

    # the reranked runs' partitions take the alias
    assert sync_partitions(model.instance).new == {"rerankers": [alias]}

    # nothing changed: the saved training is reused
    _, again = model.run()
    assert again["reused"].value is True and again["model_path"].value == folder

    # a registration pointing elsewhere, or a loss that is not finite, fails its check
    register_trained("rerankers", alias, {"kind": "cross_encoder", "model": str(tmp_path), "trained_on": "quit"},
                     trained_registry)
    break_log(folder)
    result = model.recheck()
    assert check_results(result) == {"registered": False, "loss_log": False}
    assert result.get_asset_materialization_events() == []
