"""QUIT's fine-tuned bi-encoder, cross-encoder reranker and multi-vector (ColBERT-style)
retriever: training moves a toy answer up the ranking, the same seed trains the same weights,
and the assets save, register and check the models so the evaluation's partitions pick them up
(and RECOR's do not)."""

import json
import os

import dagster as dg
import numpy as np
import polars as pl
import pytest

from assets.eval.quit.finetune import steps as training
from assets.eval.quit.finetune.assets import (
    colbert_alias,
    dense_alias,
    quit_colbert_model,
    quit_dense_model,
    quit_rerank_model,
    rerank_alias,
)
from assets.eval.runs import RUN_SCHEMA
from assets.quit.settings import FinetuneSettings
from checks.eval.finetune import colbert_model_checks, dense_model_checks, rerank_model_checks
from resources import multi_vector
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
from resources.signing import KEY_VARIABLE
from resources.storage import StorageResource, parquet_io_manager, table_uri, write_parquet

# eval/quit_finetune_data's columns, built here rather than imported: the trainer reads the
# table as stored.
PAIRS_SCHEMA = {
    "question_id": pl.String,
    "question": pl.String,
    "pair": pl.Int32,
    "positive_id": pl.String,
    "positive": pl.String,
    "positive_label": pl.Int8,
    "negative_id": pl.String,
    "negative": pl.String,
    "negative_question_id": pl.String,
    "negative_source": pl.String,
    "negative_rank": pl.Int32,
}
MINILM = load_bases()["minilm"]


@pytest.fixture(autouse=True)
def deployment_key(monkeypatch):
    """The models these tests register are signed with a key set as a cluster sets it, not
    with a key file made in the working directory."""
    monkeypatch.setenv(KEY_VARIABLE, "k" * 40)


def pairs(rows: list[tuple]) -> pl.DataFrame:
    """``(question_id, question, pair, positive_id, positive, negative_id, negative,
    negative_question_id)`` rows as the table stores them, every negative from BM25."""
    return pl.DataFrame(
        [
            (q, text, pair, pos_id, pos, 2, neg_id, neg, neg_q, "bm25", pair + 1)
            for q, text, pair, pos_id, pos, neg_id, neg, neg_q in rows
        ],
        schema=PAIRS_SCHEMA,
        orient="row",
    )


def settings(**knobs) -> FinetuneSettings:
    return FinetuneSettings(**{"device": "cpu", "batch_size": 4, "passage_max_length": 64, "seed": 7, **knobs})


def ranking(model: str, queries: dict[str, str], passages: dict[str, str]) -> pl.DataFrame:
    """Every passage for every query, by cosine similarity under ``model``."""
    scores = encode_texts(model, list(queries.values()), "query") @ encode_texts(model, list(passages.values())).T
    ids = list(passages)
    rows = [
        (qid, ids[j], rank, float(row[j]), "run")
        for qid, row in zip(queries, scores)
        for rank, j in enumerate(np.argsort(-row, kind="stable"), start=1)
    ]
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


def toy_frame() -> pl.DataFrame:
    """The toy set: each question answered by ``ANSWER``, the passage it resembles its negative."""
    return pairs([(f"q{i}", q, 0, "answer", ANSWER, f"n{i}", neg, f"o{i}") for i, (q, neg) in enumerate(TOY)])


def test_training_ranks_the_passage_that_always_answers_higher(tmp_path):
    frame = toy_frame()
    queries = {f"q{i}": q for i, (q, _) in enumerate(TOY)}
    passages = {"answer": ANSWER, **{f"n{i}": neg for i, (_, neg) in enumerate(TOY)}}
    before = ranking(MINILM, queries, passages).filter(pl.col("passage_id") == "answer").sort("question_id")
    assert before["rank"].mean() > 3

    log = training.train_bi_encoder(MINILM, frame, settings(max_steps=12, learning_rate=1e-4), str(tmp_path / "model"))
    after = (
        ranking(str(tmp_path / "model"), queries, passages).filter(pl.col("passage_id") == "answer").sort("question_id")
    )
    assert [r["step"] for r in log] == list(range(1, 13)) and not training.log_problems(log)
    assert after["rank"].mean() < before["rank"].mean()
    assert (after["score"] > before["score"]).all()
    assert training.read_log(str(tmp_path / "model")) == log


QUESTIONS = {"q1": "Which ocean is the largest?", "q2": "Who painted the Mona Lisa?", "q3": "Which planet is red?"}
PASSAGES = {
    "p1a": "The Pacific is the largest ocean.",
    "p1b": "No ocean is wider than the Pacific.",
    "p2a": "Leonardo painted the Mona Lisa.",
    "p2b": "Da Vinci's Mona Lisa hangs in the Louvre.",
    "p3a": "Mars is the red planet.",
    "p3b": "Iron oxide dust makes Mars look red.",
}
QRELS = pl.DataFrame(
    {"question_id": ["q1", "q1", "q2", "q2", "q3", "q3"], "passage_id": list(PASSAGES), "label": [2] * 6}
)


# Each question's two passages, each paired with a passage of the next question.
PLAN = [
    ("q1", 0, "p1a", "p2b"),
    ("q1", 1, "p1b", "p2a"),
    ("q2", 0, "p2a", "p3b"),
    ("q2", 1, "p2b", "p3a"),
    ("q3", 0, "p3a", "p1b"),
    ("q3", 1, "p3b", "p1a"),
]


def qa_pairs() -> pl.DataFrame:
    return pairs(
        [(q, QUESTIONS[q], pair, pos, PASSAGES[pos], neg, PASSAGES[neg], f"q{neg[1]}") for q, pair, pos, neg in PLAN]
    )


# it evaluates with ranx: its metrics are compiled once, in the background (tests.background)
@pytest.mark.usefixtures("compiled_metrics")
def test_the_same_seed_trains_the_same_weights_and_metrics(tmp_path):
    import torch
    from safetensors.torch import load_file

    from assets.eval.metrics import evaluate_run

    folders = [str(tmp_path / name) for name in ("first", "second")]
    logs = [
        training.train_bi_encoder(MINILM, qa_pairs(), settings(max_steps=4, learning_rate=5e-5), f) for f in folders
    ]
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
    assert training.fingerprint(qa_pairs().reverse(), s, MINILM, "1") == training.fingerprint(
        qa_pairs(), s, MINILM, "1"
    )
    assert training.fingerprint(
        qa_pairs(), settings(max_steps=4, learning_rate=5e-5, seed=8), MINILM, "1"
    ) != training.fingerprint(qa_pairs(), s, MINILM, "1")
    # the ColBERT-style model's question shape names its folders alone: the other kinds keep theirs
    padded = settings(max_steps=4, learning_rate=5e-5, colbert_query_length=32)
    assert training.fingerprint(qa_pairs(), padded, MINILM, "1") == training.fingerprint(qa_pairs(), s, MINILM, "1")
    assert (
        len(
            {
                training.fingerprint(qa_pairs(), knobs, MINILM, "1", training.MULTI_VECTOR_KNOBS)
                for knobs in (s, padded, settings(max_steps=4, learning_rate=5e-5, colbert_query_augmentation=False))
            }
        )
        == 3
    )


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
    assert load_retrievers(str(static), trained)["ft-x"] == RetrieverSpec(
        "ft-x", "dense", encoder="/m/x", trained_on="quit"
    )
    assert set(load_retrievers(str(static), None)) == {"bm25"}
    register_trained("retrievers", "bm25", {"kind": "dense", "encoder": "/m/y"}, trained)
    with pytest.raises(
        ValueError, match=r"retrievers\.bm25\.yaml: trained alias 'bm25' is already in .*retrievers\.yaml"
    ):
        load_retrievers(str(static), trained)
    os.remove(os.path.join(trained, "retrievers.bm25.yaml"))
    (tmp_path / "trained" / "retrievers.ft-y.yaml").write_text(
        "written_by: benchfoundry\nretrievers:\n  ft-z: {kind: dense, encoder: /m/z}\n"
    )
    assert set(trained_specs("retrievers", RetrieverSpec, trained)) == {"ft-x"}


def test_bases_resolve_to_folders_and_e5_small_cannot_be_one(tmp_path):
    assert os.path.isfile(os.path.join(MINILM, "model.safetensors"))
    p = tmp_path / "finetuning.yaml"
    p.write_text("bases:\n  bert: {model: /models/bert-base-uncased}\n")
    assert load_bases(str(p)) == {"bert": "/models/bert-base-uncased"}
    p.write_text("bases:\n  e5: {model: e5-small}\n")
    with pytest.raises(ValueError, match="base 'e5': e5-small cannot be fine-tuned"):
        load_bases(str(p))
    p.write_text("bases:\n  Bad/Name: {model: minilm}\n")
    with pytest.raises(ValueError, match="base 'Bad/Name': a name is letters, digits"):
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

    def __init__(self, tmp_path, asset, checks, positives=(10,)):
        from assets.partitions import sync_partitions

        self.root = tmp_path / "storage"
        storage = StorageResource(root=str(self.root))
        write_parquet(table_uri(storage.root, ["eval", "quit_finetune_data"]), qa_pairs())
        self.instance = dg.DagsterInstance.ephemeral()
        sync_partitions(self.instance)
        assert self.instance.get_dynamic_partitions("finetune_bases") == ["minilm"]
        self.resources = {
            "storage": storage,
            "io_manager": parquet_io_manager,
            "finetune_settings": settings(max_steps=3, batch_size=2, positives=list(positives)),
        }
        self.assets = [dg.AssetSpec(["eval", "quit_finetune_data"]), asset]
        self.checks, self.node = checks, f"eval__{asset.key.path[-1]}"

    def run(self) -> tuple[dg.ExecuteInProcessResult, dict]:
        result = dg.materialize(
            [*self.assets, *self.checks], partition_key="minilm", instance=self.instance, resources=self.resources
        )
        return result, result.asset_materializations_for_node(self.node)[0].metadata

    def first_run(self, kind: str, alias: str) -> tuple[str, dict]:
        """Materialize the asset the first time: a new 3-step training saved under
        ``models/quit/<kind>/minilm``, registered as ``alias``, passing both checks; returns
        its folder and the metadata."""
        result, meta = self.run()
        folder = meta["model_path"].value
        assert (meta["alias"].value, meta["reused"].value, meta["steps"].value) == (alias, False, 3)
        assert folder.startswith(str(self.root / "models" / "quit" / kind / "minilm"))
        assert meta["loss_curve"].value.startswith("![plot](data:image/png;base64,")
        assert check_results(result) == {"registered": True, "loss_log": True}
        return folder, meta

    def recheck(self) -> dg.ExecuteInProcessResult:
        job = dg.define_asset_job("recheck", selection=dg.AssetSelection.checks(*self.checks))
        defs = dg.Definitions(assets=self.assets, asset_checks=self.checks, jobs=[job], resources=self.resources)
        return defs.resolve_job_def("recheck").execute_in_process(
            instance=self.instance, tags={"dagster/partition": "minilm"}
        )


def break_log(folder: str) -> None:
    with open(os.path.join(folder, training.LOG_FILE), "w") as f:
        json.dump([{"step": 1, "loss": float("nan")}], f)


def assert_broken_model_fails_its_checks(
    model: ModelAsset, folder: str, section: str, alias: str, entry: dict, registry: str
) -> None:
    """Registered as ``entry`` (pointing elsewhere) with a loss that is not finite, the stored
    model fails both checks when they run alone, and nothing is materialized."""
    register_trained(section, alias, entry, registry)
    break_log(folder)
    result = model.recheck()
    assert check_results(result) == {"registered": False, "loss_log": False}
    assert result.get_asset_materialization_events() == []


def test_the_model_asset_registers_a_retriever_the_evaluation_partitions_pick_up(tmp_path, trained_registry):
    from assets.partitions import sync_partitions

    model, alias = ModelAsset(tmp_path, quit_dense_model, dense_model_checks), dense_alias("minilm")
    folder, meta = model.first_run("dense", alias)
    assert (meta["questions"].value, meta["pairs"].value, meta["seed"].value) == (3, 6, 7)
    spec = load_retrievers()[alias]
    assert (spec.kind, spec.encoder, spec.trained_on, spec.positives) == ("dense", folder, "quit", 10)

    # the evaluation's retriever partitions take the alias; RECOR's leave a QUIT-trained one out
    changes = sync_partitions(model.instance)
    assert changes.new == {"retrievers": [alias]}
    assert alias in model.instance.get_dynamic_partitions("retrievers")
    assert alias not in model.instance.get_dynamic_partitions("recor_retrievers")

    # nothing changed: the saved training is reused, not trained again or written over
    _, again = model.run()
    assert again["reused"].value is True and again["model_path"].value == folder

    # a registration pointing elsewhere, or a loss that is not finite, fails its check
    assert_broken_model_fails_its_checks(
        model,
        folder,
        "retrievers",
        alias,
        {"kind": "dense", "encoder": str(tmp_path), "trained_on": "quit"},
        trained_registry,
    )


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


def train_on_toy(tmp_path_factory, train) -> tuple[str, list[dict]]:
    """The model ``train`` fine-tunes from MiniLM on the toy set for 6 steps, and its log."""
    folder = str(tmp_path_factory.mktemp(train.__name__) / "model")
    return folder, train(MINILM, toy_frame(), settings(max_steps=6, learning_rate=2e-4), folder)


def assert_toy_training_logged(folder: str, log: list[dict], train) -> None:
    """Six finite, falling losses, read back as saved; the folder is never trained over."""
    assert [r["step"] for r in log] == list(range(1, 7)) and not training.log_problems(log)
    assert log[-1]["loss"] < log[0]["loss"]
    assert training.read_log(folder) == log
    with pytest.raises(FileExistsError, match="never overwritten"):
        train(MINILM, qa_pairs(), settings(max_steps=1), folder)


@pytest.fixture(scope="module")
def toy_reranker(tmp_path_factory) -> tuple[str, list[dict]]:
    """A cross-encoder trained on the toy set, and its log (trained once for the tests that read it)."""
    return train_on_toy(tmp_path_factory, training.train_cross_encoder)


def test_a_trained_cross_encoder_scores_the_passage_that_always_answers_above_the_negatives(toy_reranker):
    folder, log = toy_reranker
    toy = [(q, passage) for q, negative in TOY for passage in (ANSWER, negative)]
    before, after = (cross_scores(f, toy).reshape(-1, 2) for f in (MINILM, folder))
    margin_before, margin_after = before[:, 0] - before[:, 1], after[:, 0] - after[:, 1]
    assert (margin_after > margin_before).all() and (margin_after > 0.05).all()
    assert_toy_training_logged(folder, log, training.train_cross_encoder)


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
    assert load_rerankers(str(static), trained=trained)["ft-x"] == RerankerSpec(
        "ft-x", "cross_encoder", model="/m/x", trained_on="quit"
    )
    assert set(load_rerankers(str(static), trained=None)) == {"mine"}
    register_trained("rerankers", "mine", {"kind": "cross_encoder", "model": "/m/y"}, trained)
    with pytest.raises(
        ValueError, match=r"rerankers\.mine\.yaml: trained alias 'mine' is already in .*rerankers\.yaml"
    ):
        load_rerankers(str(static), trained=trained)


def test_the_rerank_model_asset_registers_a_reranker_the_evaluation_partitions_pick_up(tmp_path, trained_registry):
    from assets.partitions import sync_partitions

    model, alias = ModelAsset(tmp_path, quit_rerank_model, rerank_model_checks), rerank_alias("minilm")
    assert alias == "ft-ce-minilm"
    folder, _ = model.first_run("cross_encoder", alias)
    assert load_rerankers()[alias] == RerankerSpec(
        alias, "cross_encoder", model=folder, trained_on="quit", positives=10
    )
    assert alias not in load_retrievers()

    # the reranked runs' partitions take the alias
    assert sync_partitions(model.instance).new == {"rerankers": [alias]}

    # nothing changed: the saved training is reused
    _, again = model.run()
    assert again["reused"].value is True and again["model_path"].value == folder

    # a registration pointing elsewhere, or a loss that is not finite, fails its check
    assert_broken_model_fails_its_checks(
        model,
        folder,
        "rerankers",
        alias,
        {"kind": "cross_encoder", "model": str(tmp_path), "trained_on": "quit"},
        trained_registry,
    )


# --- The fine-tuned multi-vector (ColBERT-style) retriever ----------------------------------------


def maxsim_scores(folder: str, questions: list[str], passages: list[str]) -> np.ndarray:
    """MaxSim of every question against every passage under the multi-vector model in
    ``folder``; MiniLM's folder gets the projection and markers the training adds, drawn from
    the seed the training draws them from."""
    from transformers import set_seed

    if folder == MINILM:
        set_seed(settings().seed)
        s = settings()
        model = training.multi_vector_encoder(
            MINILM, s.passage_max_length, "cpu", s.colbert_query_length, s.colbert_query_augmentation
        )
        return multi_vector.maxsim(
            model.encode_query(questions, convert_to_numpy=True), model.encode_document(passages, convert_to_numpy=True)
        )
    return multi_vector.score(folder, questions, passages)


@pytest.fixture(scope="module")
def toy_colbert(tmp_path_factory) -> tuple[str, list[dict]]:
    """A multi-vector model trained on the toy set, and its log (trained once for the tests that read it)."""
    return train_on_toy(tmp_path_factory, training.train_multi_vector)


def test_a_trained_multi_vector_model_scores_the_passage_that_always_answers_above_the_negatives(toy_colbert):
    folder, log = toy_colbert
    questions, passages = [q for q, _ in TOY], [ANSWER, *(negative for _, negative in TOY)]
    before, after = (maxsim_scores(f, questions, passages) for f in (MINILM, folder))
    # each question's answer (column 0) against its own hard negative (column i + 1)
    own = np.arange(len(TOY))
    margin_before, margin_after = before[:, 0] - before[own, own + 1], after[:, 0] - after[own, own + 1]
    assert (margin_before < 0).all() and (margin_after > margin_before).all() and margin_after.mean() > 0
    # the answer's rank among all seven passages rises
    rank_before, rank_after = ((s > s[:, :1]).sum(axis=1) + 1 for s in (before, after))
    assert rank_after.mean() < rank_before.mean()
    assert_toy_training_logged(folder, log, training.train_multi_vector)


# The scored models' weights are compared through their scores: every question against every passage.
@pytest.mark.parametrize(
    "train, scores",
    [
        (
            training.train_cross_encoder,
            lambda f: cross_scores(f, [(q, p) for q in QUESTIONS.values() for p in PASSAGES.values()]),
        ),
        (training.train_multi_vector, lambda f: maxsim_scores(f, list(QUESTIONS.values()), list(PASSAGES.values()))),
    ],
    ids=["cross_encoder", "multi_vector"],
)
def test_the_same_seed_trains_a_model_that_scores_the_same(tmp_path, train, scores):
    runs = {
        name: train(MINILM, qa_pairs(), settings(max_steps=2, learning_rate=1e-4, seed=seed), str(tmp_path / name))
        for name, seed in (("first", 7), ("second", 7), ("other", 8))
    }
    first, second, other = (scores(str(tmp_path / name)) for name in runs)
    assert runs["first"] == runs["second"] and np.array_equal(first, second)
    assert not np.array_equal(first, other)


def test_the_multi_vector_kind_searches_the_saved_token_vectors_by_maxsim(toy_colbert, tmp_path, monkeypatch):
    from assets.eval import retrieve

    folder, _ = toy_colbert
    static = tmp_path / "retrievers.yaml"
    static.write_text(f"retrievers:\n  colbert: {{kind: multi_vector, encoder: {folder}}}\n")
    spec = load_retrievers(str(static), trained=None)["colbert"]
    # two passages of one text score the same: the later id ranks first, as trec_eval orders ties
    texts = {
        "answer": ANSWER,
        "twin-a": TOY[0][1],
        "twin-b": TOY[0][1],
        **{f"n{i}": neg for i, (_, neg) in enumerate(TOY[1:])},
    }
    docs = pl.DataFrame({"id": list(texts), "contents": list(texts.values())})
    storage = StorageResource(root=str(tmp_path / "storage"))
    n, where = retrieve.build(spec, "toy", docs, None, None, storage)
    assert n == len(texts) and where.endswith("multi_vector/toy/colbert.npz") and os.path.isfile(where)
    questions = {f"q{i}": q for i, (q, _) in enumerate(TOY)}
    expected = maxsim_scores(folder, list(questions.values()), list(texts.values()))

    # the passages are not encoded again: the search reads their vectors from the saved file
    encode = multi_vector.encode
    monkeypatch.setattr(
        multi_vector,
        "encode",
        lambda path, items, kind: (
            encode(path, items, kind) if kind == "query" else pytest.fail("the search encoded the passages again")
        ),
    )
    hits = retrieve.search(spec, "toy", list(questions.values()), list(questions), 4, None, None, storage)
    for qid, row in zip(questions, expected):
        best = sorted(zip(texts, row.tolist()), key=lambda item: (item[1], item[0]), reverse=True)[:4]
        assert [(h.docid, h.rank) for h in hits[qid]] == [(doc, rank) for rank, (doc, _) in enumerate(best, start=1)]
        assert np.allclose([h.score for h in hits[qid]], [value for _, value in best], atol=1e-5)
    # every passage ranked: wherever the twins fall, the later id comes first
    ranked = [h.docid for h in retrieve.search(spec, "toy", [TOY[0][0]], ["q0"], len(texts), None, None, storage)["q0"]]
    assert ranked.index("twin-b") + 1 == ranked.index("twin-a")
    # the search's questions were padded to the trained length with [MASK], as in training
    assert [len(v) for v in multi_vector.encode(folder, list(questions.values()), "query")] == [
        settings().colbert_query_length
    ] * len(questions)
    os.remove(where)
    with pytest.raises(FileNotFoundError, match="no multi-vector index at"):
        retrieve.search(spec, "toy", ["Which ocean is the largest?"], ["q0"], 4, None, None, storage)


def test_a_multi_vector_retriever_counts_the_conversations_it_cuts(toy_colbert):
    from assets.eval.recor.assets import truncated

    folder, _ = toy_colbert
    # the toy model reads questions of 64 tokens (colbert_query_length); a history of 80 words runs past them
    short, long = TOY[0][0], " ".join([TOY[0][0]] + ["and before that the keeper rang the bell"] * 10)
    spec = RetrieverSpec("colbert", "multi_vector", encoder=folder)
    assert truncated(spec, [short, long, long]) == 2 and truncated(spec, [short]) == 0 and truncated(spec, []) == 0


def test_the_colbert_model_asset_registers_a_multi_vector_retriever(tmp_path, trained_registry):
    from assets.partitions import sync_partitions

    model, alias = ModelAsset(tmp_path, quit_colbert_model, colbert_model_checks), colbert_alias("minilm")
    assert alias == "ft-colbert-minilm"
    folder, _ = model.first_run("multi_vector", alias)
    assert load_retrievers()[alias] == RetrieverSpec(
        alias, "multi_vector", encoder=folder, trained_on="quit", positives=10
    )

    # the evaluation's retriever partitions take the alias; RECOR's leave a QUIT-trained one out
    assert sync_partitions(model.instance).new == {"retrievers": [alias]}
    assert alias not in model.instance.get_dynamic_partitions("recor_retrievers")

    assert_broken_model_fails_its_checks(
        model,
        folder,
        "retrievers",
        alias,
        {"kind": "multi_vector", "encoder": str(tmp_path), "trained_on": "quit"},
        trained_registry,
    )


# --- A sweep of positives per question --------------------------------------------------------


def fake_training(base_dir: str, pairs: pl.DataFrame, settings: FinetuneSettings, folder: str) -> list[dict]:
    """A stand-in trainer: a saved folder with one logged step a pair, so a sweep's plumbing
    is tested without training (the tests above train for real)."""
    os.makedirs(folder)
    log = [{"step": i + 1, "loss": 1.0 / (i + 1), "epoch": 1.0} for i in range(pairs.height)]
    for name, content in (("modules.json", []), (training.LOG_FILE, log)):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(content, f)
    return log


def test_a_sweep_of_two_counts_trains_and_registers_a_model_per_count(tmp_path, trained_registry):
    import dataclasses

    from assets.eval.quit.finetune.assets import DENSE, trained_model
    from assets.partitions import finetune_base_partitions, sync_partitions
    from checks.eval.finetune import trained_model_checks

    fake = dataclasses.replace(DENSE, train=fake_training, smoke=lambda folder, question, passage: None)

    @dg.asset(
        key=["eval", "quit_dense_model"],
        partitions_def=finetune_base_partitions,
        ins={"quit_finetune_data": dg.AssetIn(["eval", "quit_finetune_data"])},
    )
    def swept(
        context: dg.AssetExecutionContext,
        quit_finetune_data: pl.DataFrame,
        storage: StorageResource,
        finetune_settings: FinetuneSettings,
    ) -> dg.MaterializeResult:
        return trained_model(context, quit_finetune_data, storage, finetune_settings, fake)

    model = ModelAsset(tmp_path, swept, trained_model_checks("quit_dense_model", fake), positives=(1, 2))
    result, meta = model.run()
    # qa_pairs(): three questions of two pairs each; count 1 trains on each question's pair 0
    rows = [r.data for r in meta["models"].records]
    assert [(r["positives"], r["alias"], r["pairs"], r["steps"], r["reused"]) for r in rows] == [
        (1, "ft-dpr-minilm-p1", 3, 3, False),
        (2, "ft-dpr-minilm-p2", 6, 6, False),
    ]
    assert "alias" not in meta and meta["positives"].value == "1, 2"
    assert check_results(result) == {"registered": True, "loss_log": True}
    specs = load_retrievers()
    for r in rows:
        assert specs[r["alias"]] == RetrieverSpec(
            r["alias"], "dense", encoder=r["model_path"], trained_on="quit", positives=r["positives"]
        )
    assert rows[0]["model_path"] != rows[1]["model_path"]
    assert sync_partitions(model.instance).new == {"retrievers": ["ft-dpr-minilm-p1", "ft-dpr-minilm-p2"]}

    # a registration that names another count fails the check
    register_trained(
        "retrievers",
        "ft-dpr-minilm-p2",
        {"kind": "dense", "encoder": rows[1]["model_path"], "trained_on": "quit", "positives": 1},
        trained_registry,
    )
    assert check_results(model.recheck()) == {"registered": False, "loss_log": True}

    # data drawn for fewer positives than a count asks would train that count on fewer: refused
    model.instance.report_runless_asset_event(
        dg.AssetMaterialization(["eval", "quit_finetune_data"], metadata={"positives": 1})
    )
    with pytest.raises(Exception, match="drawn for at most 1 positives a question, and positives asks for 2"):
        model.run()
