"""QUIT's fine-tuning data: positives label 2 first then label 1, negatives of other train
questions only (BM25's in rank order, or random as the published scripts draw them), a
seeded order that no other question disturbs, rejects with their reason, and the asset on the
bundled release sample with real Lucene."""

import dagster as dg
import polars as pl
import pytest

from assets.eval import sources as benchmarks
from assets.eval.quit.finetune import assets as finetune_data
from assets.eval.quit.finetune import rules
from assets.quit.settings import FinetuneSettings
from checks.eval import finetune as ef
from resources.lucene import LuceneResource
from resources.storage import StorageResource, parquet_io_manager

# q1 and q3 share an answer once normalized ("Iron", "the iron"); q4 is a dev question.
QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2", "q3", "q4"],
        "split": ["train", "train", "train", "dev"],
        "question": ["Which metal is Fe?", "Capital of Australia?", "What rusts?", "Capital of France?"],
        "answer": ["Iron", "Canberra", "the iron", "Paris"],
    }
)
PASSAGES = {"q1": ["a1", "a2", "a3", "a4"], "q2": ["b1", "b2", "b3"], "q3": ["c1", "c2"], "q4": ["d1", "d2"]}
CORPUS = pl.DataFrame(
    [(p, q, f"text of {p}") for q, ps in PASSAGES.items() for p in ps],
    schema=["passage_id", "question_id", "text"],
    orient="row",
)
LABELS = {
    "q1": {"a1": 2, "a2": 2, "a3": 1, "a4": 0},
    "q2": {"b1": 2, "b2": 1, "b3": 1},
    "q3": {"c1": 1, "c2": 1},
    "q4": {"d1": 2, "d2": 1},
}
QRELS = pl.DataFrame(
    [(q, p, label) for q, ls in LABELS.items() for p, label in ls.items()],
    schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int8},
    orient="row",
)
OWNER = {p: q for q, ps in PASSAGES.items() if q != "q4" for p in ps}
ANSWERS = {"q1": "iron", "q2": "canberra", "q3": "iron"}
# q1's BM25 list: its own passage, a same-answer passage, a dev passage, then q2's.
HITS = {"q1": ["a1", "c1", "d1", "b2", "a2", "b1", "b3"], "q2": ["b1", "a3", "c2"], "q3": ["c2", "b3", "a1"]}


def pairs(questions=QUESTIONS, hits=HITS, **settings) -> tuple[pl.DataFrame, list[dict]]:
    return rules.training_pairs(
        questions, CORPUS, QRELS, hits, **{"positives": 10, "negatives": "bm25", "seed": 42, **settings}
    )


def test_label_2_passages_come_first_then_label_1_and_label_0_is_never_a_positive():
    ordered = rules.ordered_positives(LABELS["q1"], 42, "q1")
    assert [label for _, label in ordered] == [2, 2, 1]
    assert {p for p, _ in ordered[:2]} == {"a1", "a2"} and ordered[2] == ("a3", 1)


def test_the_order_is_seeded_by_question_alone():
    many = {f"p{i:02d}": 2 for i in range(20)} | {f"w{i:02d}": 1 for i in range(20)}
    ordered = rules.ordered_positives(many, 42, "q1")
    assert rules.ordered_positives(dict(reversed(many.items())), 42, "q1") == ordered
    assert rules.ordered_positives(many, 43, "q1") != ordered and rules.ordered_positives(many, 42, "q2") != ordered
    alone, _ = pairs(QUESTIONS.filter(pl.col("question_id").is_in(["q1", "q2"])))
    crowded, _ = pairs()
    first = [frame.filter(pl.col("question_id") == "q1")["positive_id"].to_list() for frame in (alone, crowded)]
    assert first[0] == first[1] == [p for p, _ in rules.ordered_positives(LABELS["q1"], 42, "q1")]


def test_bm25_negatives_are_other_questions_passages_in_rank_order():
    found = rules.bm25_negatives(HITS["q1"], "q1", LABELS["q1"], OWNER, ANSWERS, 3)
    # a1 and a2 are q1's own, c1 is of q3 (the same answer), d1 a dev passage outside the pool.
    assert [(n.passage_id, n.question_id, n.rank) for n in found] == [("b2", "q2", 4), ("b1", "q2", 6), ("b3", "q2", 7)]
    assert rules.bm25_negatives(HITS["q1"], "q1", LABELS["q1"], OWNER, ANSWERS, 1) == found[:1]


def test_every_pair_follows_the_rule_and_negatives_cycle_when_fewer():
    frame, rejects = pairs()
    assert frame.schema == pl.Schema(rules.PAIRS_SCHEMA) and rejects == []
    q1 = frame.filter(pl.col("question_id") == "q1")
    assert q1["positive_label"].to_list() == [2, 2, 1] and q1["pair"].to_list() == [0, 1, 2]
    assert q1["negative_id"].to_list() == ["b2", "b1", "b3"] and set(q1["negative_source"]) == {"bm25"}
    # q3 has one usable hit (b3; a1 is of q1, the same answer) for its two positives.
    q3 = frame.filter(pl.col("question_id") == "q3")
    assert q3["negative_id"].to_list() == ["b3", "b3"] and q3["negative_rank"].to_list() == [2, 2]
    assert "q4" not in frame["question_id"].to_list()
    assert not set(frame["positive_id"]) & set(PASSAGES["q4"]) and not set(frame["negative_id"]) & set(PASSAGES["q4"])


def test_a_question_takes_its_first_positives_and_as_many_negatives():
    frame, _ = pairs(positives=2)
    assert frame.group_by("question_id").len().sort("question_id").rows() == [("q1", 2), ("q2", 2), ("q3", 2)]
    assert frame.filter(pl.col("question_id") == "q2")["positive_id"].to_list()[0] == "b1"


def test_random_negatives_are_a_seeded_passage_of_a_random_other_question():
    frame, rejects = pairs(negatives="random")
    assert (
        rejects == []
        and set(frame["negative_source"]) == {"random"}
        and frame["negative_rank"].null_count() == frame.height
    )
    assert frame.equals(pairs(negatives="random")[0])
    for row in frame.iter_rows(named=True):
        assert row["negative_question_id"] == OWNER[row["negative_id"]] != row["question_id"]
        assert row["negative_id"] not in LABELS[row["question_id"]]
        assert {row["question_id"], row["negative_question_id"]} != {"q1", "q3"}
    # The positives do not depend on how the negatives are drawn.
    assert frame["positive_id"].to_list() == pairs()[0]["positive_id"].to_list()


def test_a_random_negative_comes_only_from_a_question_with_a_passage_to_lend():
    pool = {q: ps for q, ps in PASSAGES.items() if q != "q4"}
    labeled = set(LABELS["q2"]) | set(PASSAGES["q1"])
    drawn = rules.random_negatives("q2", labeled, pool, ANSWERS, 42, 5)
    assert len(drawn) == 5 and {n.question_id for n in drawn} == {"q3"} and {n.source for n in drawn} == {"random"}
    assert rules.random_negatives("q2", labeled | set(PASSAGES["q3"]), pool, ANSWERS, 42, 5) == []


def test_a_question_bm25_finds_no_negative_for_falls_back_to_random():
    frame, _ = pairs(hits={**HITS, "q2": ["b1", "b2"]})
    q2 = frame.filter(pl.col("question_id") == "q2")
    assert set(q2["negative_source"]) == {"random"} and set(q2["negative_question_id"]) <= {"q1", "q3"}
    assert set(frame.filter(pl.col("question_id") != "q2")["negative_source"]) == {"bm25"}


def test_questions_without_a_positive_or_any_negative_are_rejected():
    unlabeled = QRELS.with_columns(
        pl.when(pl.col("question_id") == "q2").then(0).otherwise(pl.col("label")).cast(pl.Int8).alias("label")
    )
    frame, rejects = rules.training_pairs(QUESTIONS, CORPUS, unlabeled, HITS, positives=10, negatives="bm25", seed=42)
    assert [(r["question_id"], r["reason"]) for r in rejects] == [("q2", rules.NO_POSITIVE)]
    assert "q2" not in frame["question_id"].to_list()
    # q1's only other train question shares its answer: nothing may be its negative.
    frame, rejects = pairs(QUESTIONS.filter(pl.col("question_id").is_in(["q1", "q3", "q4"])))
    assert sorted((r["question_id"], r["reason"]) for r in rejects) == [
        ("q1", rules.NO_NEGATIVE),
        ("q3", rules.NO_NEGATIVE),
    ]
    assert frame.height == 0 and rules.REJECTS.frame(rejects).height == 2


def test_unknown_settings_are_refused():
    with pytest.raises(ValueError, match="negatives must be one of"):
        pairs(negatives="hard")
    with pytest.raises(ValueError, match="positives must be at least 1"):
        pairs(positives=0)


def materialize(
    *assets,
    settings: FinetuneSettings,
    io_manager=dg.mem_io_manager,
    storage: StorageResource,
    run_config: dict | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, dg.AssetCheckEvaluation]]:
    """The asset and its checks after ``assets`` that give the benchmark's tables, with real Lucene."""
    result = dg.materialize(
        [*assets, finetune_data.quit_finetune_data, *ef.finetune_data_checks],
        instance=dg.DagsterInstance.ephemeral(),
        run_config=run_config,
        resources={
            "storage": storage,
            "io_manager": io_manager,
            "lucene": LuceneResource(),
            "finetune_settings": settings,
        },
    )
    name = finetune_data.quit_finetune_data.op.name
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert len(checks) == len(ef.finetune_data_checks)
    return (
        result.output_for_node(name, "quit_finetune_data"),
        result.output_for_node(name, "quit_finetune_rejects"),
        checks,
    )


def stand_in(name: str, frame: pl.DataFrame) -> dg.AssetsDefinition:
    @dg.asset(key=["eval", name])
    def table() -> pl.DataFrame:
        return frame

    return table


def test_bm25_ranks_other_train_questions_passages_as_hard_negatives(tmp_path):
    """Two train questions whose passages share a word with the other's question, and a dev
    passage that matches one of them best: it is never indexed, so never a negative."""
    questions = pl.DataFrame(
        {
            "question_id": ["t1", "t2", "d1"],
            "split": ["train", "train", "dev"],
            "question": [
                "Which metal rusts in water?",
                "Which city is the capital of Australia?",
                "Which metal floor lies deepest in water?",
            ],
            "answer": ["Iron", "Canberra", "Pacific"],
        }
    )
    texts = {
        "t1_a": ("t1", "It rusts in water and air."),
        "t1_b": ("t1", "Every city has bridges made of it."),
        "t2_a": ("t2", "It is the capital of Australia."),
        "t2_b": ("t2", "A metal sculpture stands by its lake."),
        "d1_a": ("d1", "Its metal floor rusts in deepest water."),
    }
    corpus = pl.DataFrame(
        [(p, q, t) for p, (q, t) in texts.items()], schema=["passage_id", "question_id", "text"], orient="row"
    )
    qrels = pl.DataFrame(
        {
            "question_id": ["t1", "t1", "t2", "t2", "d1"],
            "passage_id": ["t1_a", "t1_b", "t2_a", "t2_b", "d1_a"],
            "label": [2, 1, 2, 1, 2],
        },
        schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int8},
    )
    tables = [stand_in("quit_questions", questions), stand_in("quit_corpus", corpus), stand_in("quit_qrels", qrels)]
    frame, rejects, checks = materialize(
        *tables, settings=FinetuneSettings(), storage=StorageResource(root=str(tmp_path))
    )
    assert rejects.height == 0 and set(frame["negative_source"]) == {"bm25"}
    negatives = dict(frame.group_by("question_id").agg(pl.col("negative_id").unique()).iter_rows())
    assert {q: list(ns) for q, ns in negatives.items()} == {"t1": ["t2_b"], "t2": ["t1_b"]}
    assert frame.filter(pl.col("question_id") == "t1")["positive_id"].to_list() == ["t1_a", "t1_b"]
    assert all(e.passed for e in checks.values()), {
        n: e.metadata["problems"].value for n, e in checks.items() if not e.passed
    }


def test_the_release_sample_trains_on_its_two_train_questions(tmp_path):
    """The bundled QUIT release through the source and the asset with real Lucene: every
    check holds but the fallback warning. Its two train questions share no word with each
    other's passages, so BM25 ranks none of them and every negative is a random one."""
    frame, rejects, checks = materialize(
        benchmarks.quit_source,
        settings=FinetuneSettings(positives=[10]),
        io_manager=parquet_io_manager,
        storage=StorageResource(root=str(tmp_path / "storage")),
        run_config={"ops": {benchmarks.quit_source.op.name: {"config": {"source": "release"}}}},
    )
    assert rejects.height == 0
    assert frame.group_by("question_id").len().sort("question_id").rows() == [
        ("sample_train_01", 10),
        ("sample_train_02", 10),
    ]
    assert set(frame["negative_source"]) == {"random"} and (frame["negative_question_id"] != frame["question_id"]).all()
    fallback = checks.pop(ef.RANDOM_FALLBACK)
    assert not fallback.passed and fallback.severity == dg.AssetCheckSeverity.WARN
    assert all(e.passed for e in checks.values()), {
        n: e.metadata["problems"].value for n, e in checks.items() if not e.passed
    }
