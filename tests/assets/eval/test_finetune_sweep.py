"""QUIT's positives sweep (appendix A.2-A.3, Tables 10-12): the counts as a setting, each
count's pairs a prefix of one table, each count's model under its own alias, and the
report's per-count tables against hand-computed values, with the checks failing broken ones."""

import polars as pl
import pytest

from assets.eval.quit.finetune import report as fr
from assets.eval.quit.finetune import rules
from assets.eval.quit.finetune.assets import sweep_alias, undrawn
from assets.eval.quit.steps import ANSWER_SCHEMA
from assets.quit.settings import FinetuneSettings
from checks.eval.finetune import quit_finetune_report_fine_tuned, quit_finetune_report_held_out

# the report's three-split fixture: q1 train, q2 dev (p2a label 2, p2b label 1), q3 test (p3a label 2)
from tests.assets.eval.test_finetune_report import QRELS as REPORT_QRELS
from tests.assets.eval.test_finetune_report import QUESTIONS as SPLITS
from tests.assets.eval.test_finetune_report import run

# ranx's metrics are compiled once, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")


def test_the_paper_sweeps_six_counts_and_the_demo_trains_one():
    assert FinetuneSettings().positives == [1, 5, 10, 50, 100, 200]
    assert FinetuneSettings(profile="demo").positives == [10]
    assert FinetuneSettings(profile="demo", positives=[1, 2]).positives == [1, 2]
    for bad in ([], [0, 5], [5, 5]):
        with pytest.raises(ValueError, match="give one or more different counts, each at least 1"):
            FinetuneSettings(positives=bad)


# Two train questions: t1 with three relevant passages (two of label 2), t2 with one.
QUESTIONS = pl.DataFrame(
    {
        "question_id": ["t1", "t2"],
        "split": ["train", "train"],
        "question": ["Which metal is Fe?", "Capital of Australia?"],
        "answer": ["Iron", "Canberra"],
    }
)
PASSAGES = {"t1": ["a1", "a2", "a3"], "t2": ["b1", "b2"]}
CORPUS = pl.DataFrame(
    [(p, q, f"text of {p}") for q, ps in PASSAGES.items() for p in ps],
    schema=["passage_id", "question_id", "text"],
    orient="row",
)
QRELS = pl.DataFrame(
    {
        "question_id": ["t1", "t1", "t1", "t2", "t2"],
        "passage_id": ["a1", "a2", "a3", "b1", "b2"],
        "label": [2, 2, 1, 2, 0],
    },
    schema={"question_id": pl.String, "passage_id": pl.String, "label": pl.Int8},
)
HITS = {"t1": ["b2", "b1"], "t2": ["a3", "a2", "a1"]}


def drawn(positives: int) -> pl.DataFrame:
    return rules.training_pairs(QUESTIONS, CORPUS, QRELS, HITS, positives=positives, negatives="bm25", seed=42)[0]


def test_each_count_trains_on_the_first_pairs_of_one_table():
    table = drawn(3)
    # t1's positives: its label-2 passages in the seeded order, then a3; t2's: b1 alone. Each
    # positive is paired with the next BM25 hit of the other question, cycled.
    order = [p for p, _ in rules.ordered_positives({"a1": 2, "a2": 2, "a3": 1}, 42, "t1")]
    assert order[2] == "a3" and set(order[:2]) == {"a1", "a2"}
    one = rules.first_positives(table, 1)
    two = rules.first_positives(table, 2)
    assert one.select("question_id", "positive_id", "negative_id").rows() == [
        ("t1", order[0], "b2"),
        ("t2", "b1", "a3"),
    ]
    assert two.select("question_id", "positive_id", "negative_id").rows() == [
        ("t1", order[0], "b2"),
        ("t1", order[1], "b1"),
        ("t2", "b1", "a3"),
    ]
    # the very pairs a table drawn for that count alone holds
    assert one.equals(drawn(1)) and two.equals(drawn(2))
    with pytest.raises(ValueError, match="positives must be at least 1"):
        rules.first_positives(table, 0)


def test_each_count_has_its_alias_when_more_than_one_is_swept():
    assert sweep_alias("ft-dpr-minilm", 10, [10]) == "ft-dpr-minilm"
    assert [sweep_alias("ft-ce-minilm", n, [1, 2]) for n in (1, 2)] == ["ft-ce-minilm-p1", "ft-ce-minilm-p2"]
    assert undrawn([1, 5, 10], 5) == [10] and undrawn([1, 5], 5) == [] and undrawn([200], None) == []


# The report over a sweep of two counts, on the three-split fixture above.
TRAINED = {
    "ft-dpr-minilm-p2": fr.Trained("dense", 2),
    "ft-dpr-minilm-p10": fr.Trained("dense", 10),
    "ft-colbert-minilm-p2": fr.Trained("multi_vector", 2),
    "ft-ce-minilm-p2": fr.Trained("cross_encoder", 2),
    "ft-ce-minilm-p10": fr.Trained("cross_encoder", 10),
}
RUNS = pl.concat(
    [
        run("bm25", {"q1": ["p1"], "q2": ["p2b", "p2a"], "q3": ["x", "p3a"]}),
        # two positives: the answer second; ten: first (the count, not the alias, orders the rows)
        run("ft-dpr-minilm-p2", {"q1": ["p1"], "q2": ["x", "p2a"], "q3": ["x", "p3a"]}),
        run("ft-dpr-minilm-p10", {"q1": ["p1"], "q2": ["p2a", "p2b"], "q3": ["p3a"]}),
        run("ft-colbert-minilm-p2", {"q2": ["x", "y", "p2a"], "q3": ["x", "y", "p3a"]}),
        run("oracle", {"q1": ["p1"], "q2": ["p2b", "p2a"], "q3": ["p3a"]}),
    ]
)
RERANKED = pl.concat(
    [
        run("oracle+ft-ce-minilm-p2", {"q2": ["p2b", "p2a"], "q3": ["p3a"]}),
        run("oracle+ft-ce-minilm-p10", {"q2": ["p2a", "p2b"], "q3": ["p3a"]}),
        run("bm25+ft-ce-minilm-p2", {"q3": ["x", "p3a"]}),
        # a vanilla reranker over a fine-tuned retriever: fine-tuned, but no count of the reranker's
        run("ft-dpr-minilm-p2+monot5", {"q3": ["p3a"]}),
    ]
)
NO_ANSWERS = pl.DataFrame(schema=ANSWER_SCHEMA)


def report() -> pl.DataFrame:
    return fr.report(RUNS, RERANKED, NO_ANSWERS, REPORT_QRELS, SPLITS, TRAINED, {"oracle"})


def test_the_retrievers_sweep_reads_each_count_on_the_held_out_splits():
    table = fr.sweep(report(), fr.RETRIEVAL, TRAINED)
    assert table.select("model", "system", "positives", "split").rows() == [
        ("dense", "ft-dpr-minilm-p2", 2, "dev"),
        ("dense", "ft-dpr-minilm-p10", 10, "dev"),
        ("dense", "ft-dpr-minilm-p2", 2, "test"),
        ("dense", "ft-dpr-minilm-p10", 10, "test"),
        ("multi_vector", "ft-colbert-minilm-p2", 2, "dev"),
        ("multi_vector", "ft-colbert-minilm-p2", 2, "test"),
    ]
    # the relevant passage at rank 2 (two positives), 1 (ten), 3 (ColBERT)
    assert table["mrr"].to_list() == pytest.approx([0.5, 1.0, 0.5, 1.0, 1 / 3, 1 / 3])
    assert table["hit_rate@1"].to_list() == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
    # dev, ten positives: p2a (gain 3) then p2b (gain 1), the ideal order: nDCG 1
    assert table["ndcg_burges@10"][1] == pytest.approx(1.0)
    inline = fr.inline_sweep(report(), fr.RETRIEVAL, fr.RETRIEVAL_METRICS, TRAINED)
    assert [c.name for c in inline.schema.columns][:4] == ["model", "system", "positives", "split"]
    assert [(r.data["system"], r.data["split"], r.data["mrr"]) for r in inline.records][:2] == [
        ("ft-dpr-minilm-p2", "dev", 0.5),
        ("ft-dpr-minilm-p10", "dev", 1.0),
    ]


def test_the_rerankers_sweep_reads_the_rerankers_count_per_retriever():
    frame = report()
    table = fr.sweep(frame, fr.RERANKING, TRAINED)
    assert table.select("model", "system", "positives", "split").rows() == [
        ("cross_encoder", "oracle+ft-ce-minilm-p2", 2, "dev"),
        ("cross_encoder", "oracle+ft-ce-minilm-p10", 10, "dev"),
        ("cross_encoder", "bm25+ft-ce-minilm-p2", 2, "test"),
        ("cross_encoder", "oracle+ft-ce-minilm-p2", 2, "test"),
        ("cross_encoder", "oracle+ft-ce-minilm-p10", 10, "test"),
    ]
    # dev at depth 1: the label-1 passage (gain 1 of the ideal 3), then the label-2 one
    assert table["ndcg_burges@1"].to_list() == pytest.approx([1 / 3, 1.0, 0.0, 1.0, 1.0])
    vanilla_reranker = frame.filter(pl.col("system") == "ft-dpr-minilm-p2+monot5")
    assert vanilla_reranker["fine_tuned"].all() and vanilla_reranker["positives"].is_null().all()


def test_no_count_evaluated_gives_empty_sweep_tables():
    unswept = {alias: fr.Trained(t.kind, None) for alias, t in TRAINED.items()}
    frame = fr.report(RUNS, RERANKED, NO_ANSWERS, REPORT_QRELS, SPLITS, unswept, {"oracle"})
    assert frame["fine_tuned"].any() and frame["positives"].is_null().all()
    for table, metrics in fr.SWEEP_TABLES.values():
        assert fr.sweep(frame, table, unswept).is_empty()
        empty = fr.inline_sweep(frame, table, metrics, unswept)
        assert empty.records == [] and [c.name for c in empty.schema.columns] == [*fr.SWEEP_INDEX, *metrics]


@pytest.mark.parametrize(
    "broken, why",
    [
        (
            lambda f: f.with_columns(
                pl.when(pl.col("positives") == 10).then(pl.lit(0, pl.Int32)).otherwise("positives").alias("positives")
            ),
            "below 1",
        ),
        (
            lambda f: f.with_columns(
                pl.when(pl.col("system") == "bm25").then(pl.lit(5, pl.Int32)).otherwise("positives").alias("positives")
            ),
            "on a vanilla or a reader row",
        ),
    ],
)
def test_the_held_out_check_fails_a_broken_count(broken, why):
    assert quit_finetune_report_held_out(report(), SPLITS).passed
    result = quit_finetune_report_held_out(broken(report()), SPLITS)
    assert not result.passed and why in result.metadata["problems"].value


def test_the_fine_tuned_check_warns_on_a_count_other_than_the_registered_one(monkeypatch):
    monkeypatch.setattr(fr, "trained_models", lambda: TRAINED)
    assert quit_finetune_report_fine_tuned(report(), RUNS).passed
    monkeypatch.setattr(fr, "trained_models", lambda: {**TRAINED, "ft-ce-minilm-p10": fr.Trained("cross_encoder", 5)})
    result = quit_finetune_report_fine_tuned(report(), RUNS)
    assert (
        not result.passed
        and "not their model's registered one (e.g. oracle+ft-ce-minilm-p10)" in result.metadata["problems"].value
    )


def materialized_report(monkeypatch, trained: dict) -> dict:
    """The report asset's metadata over the runs above, with ``trained`` as the registries' fine-tuned aliases."""
    import dagster as dg

    monkeypatch.setattr(fr, "trained_models", lambda: trained)
    monkeypatch.setattr(fr, "oracle_aliases", lambda: ["oracle"])
    frames = {
        "quit_runs": RUNS,
        "quit_reranked_runs": RERANKED,
        "quit_reader_answers": NO_ANSWERS,
        "benchmark_questions": SPLITS,
        "benchmark_qrels": REPORT_QRELS,
    }

    def stand_in(name: str) -> dg.AssetsDefinition:
        @dg.asset(key=fr.quit_finetune_report.keys_by_input_name[name])
        def table() -> pl.DataFrame:
            return frames[name]

        return table

    result = dg.materialize(
        [*map(stand_in, frames), fr.quit_finetune_report], resources={"io_manager": dg.mem_io_manager}
    )
    return result.asset_materializations_for_node(fr.quit_finetune_report.op.name)[0].metadata


def test_the_report_asset_shows_the_sweep_tables_or_says_why_they_are_empty(monkeypatch):
    meta = materialized_report(monkeypatch, TRAINED)
    rows = {
        name: [(r.data["system"], r.data["positives"], r.data["split"]) for r in meta[name].records]
        for name in fr.SWEEP_TABLES
    }
    assert rows["positives_sweep_retrievers"][:2] == [("ft-dpr-minilm-p2", 2, "dev"), ("ft-dpr-minilm-p10", 10, "dev")]
    assert len(rows["positives_sweep_rerankers"]) == 5
    assert "positives_sweep" not in meta["why_empty"].value  # the reader's table alone is empty: no answers here
    meta = materialized_report(monkeypatch, {alias: fr.Trained(t.kind, None) for alias, t in TRAINED.items()})
    assert all(meta[name].records == [] for name in fr.SWEEP_TABLES)
    assert (
        "positives_sweep_retrievers: no retrieval run of a model registered with its count" in meta["why_empty"].value
    )
    assert "positives_sweep_rerankers: no reranking run" in meta["why_empty"].value
