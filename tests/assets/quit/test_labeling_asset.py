"""The ``quit/passage_answers`` asset with the scripted LLM: progress in the run log and the
cap on labeled passages."""

import re

import dagster as dg
import polars as pl
import pytest

from assets.quit import release
from assets.quit.assets import passage_answers
from assets.quit.rules import ORDERS, PASSAGES_PER_QUESTION, passages_frame, sampled_orders
from assets.quit.settings import QuitSettings
from assets.quit.sources import questions_frame
from resources.llm import LLMResource
from resources.storage import ParquetIOManager
from tests.assets.quit.test_steps import HINTS, question
from tests.conftest import SCRIPTED_REGISTRY


def stub(name: str, frame: pl.DataFrame) -> dg.AssetsDefinition:
    @dg.asset(key=["quit", name])
    def _stub() -> pl.DataFrame:
        return frame

    return _stub


@pytest.mark.parametrize("stored", [False, True], ids=["frames", "parquet"])
def test_labeling_logs_progress_and_labels_the_capped_slice(scripted_llm, tmp_path, instance, stored):
    # with the Parquet IO manager the passages come as a stored table read a batch at a time
    qs = questions_frame([question("q1", hints=HINTS[:5]), question("q2", hints=HINTS[1:6])])
    splits = pl.DataFrame({"question_id": ["q1", "q2"], "labeled": [True, True]})
    llm = LLMResource(
        registry_path=SCRIPTED_REGISTRY, cache_dir=str(tmp_path / "llm-cache"), progress_every_seconds=0.0
    )
    stubs = [
        stub("passages", passages_frame(qs.select("question_id", "hints"))),
        stub("selected_questions", qs),
        stub("splits", splits),
    ]
    io = ParquetIOManager(root=str(tmp_path / "tables")) if stored else dg.mem_io_manager
    if stored:  # the upstream tables stored unpartitioned, as the build stores them
        dg.materialize(stubs, resources={"io_manager": io})
    result = dg.materialize(
        [passage_answers, *stubs],
        selection=[passage_answers] if stored else None,
        partition_key="smollm2",
        instance=instance,
        resources={
            "llm": llm,
            "quit_settings": QuitSettings(labeled_passages_per_question=7, seed=5),
            "io_manager": io,
        },
    )
    assert result.success
    frame = result.output_for_node("quit__passage_answers")
    # the same 7 hint orders for both questions
    orders = sampled_orders(7, 5)
    labeled = {(pid.split("_")[0], pid.split("_")[-1]) for pid in frame["passage_id"]}
    assert frame.height == 14 and labeled == {(q, o) for q in ("q1", "q2") for o in orders}

    messages = [e.user_message for e in instance.all_logs(result.run_id) if e.user_message]
    progress = [m for m in messages if re.fullmatch(r"smollm2: \d+/14 calls, \d+\.\d calls/s", m)]
    # every call reported (the interval is 0 s), in order, the last one included
    assert [int(m.split()[1].split("/")[0]) for m in progress] == list(range(1, 15))


def test_sampled_orders_are_a_seeded_slice_shortest_first():
    assert sampled_orders(None, 13) is None and sampled_orders(PASSAGES_PER_QUESTION, 13) is None
    picked = sampled_orders(20, 13)
    assert picked == sampled_orders(20, 13) and picked != sampled_orders(20, 14)
    assert len(set(picked)) == 20
    all_orders = ["".join(map(str, o)) for o in ORDERS]
    assert [all_orders.index(o) for o in picked] == sorted(all_orders.index(o) for o in picked)
    with pytest.raises(ValueError, match="at least 1"):
        sampled_orders(0, 13)


def test_benchmark_corpus_holds_only_labeled_passages():
    qs = questions_frame([question("q1", hints=HINTS[:5])]).with_columns(pl.lit("q1").alias("source_id"))
    passages = passages_frame(qs.select("question_id", "hints"))
    labeled = passages.head(3)
    labels = labeled.select("question_id", "passage_id", pl.lit(1, pl.Int8).alias("label"))
    splits = pl.DataFrame(
        {"question_id": ["q1"], "split": ["test"], "labeled": [True], "parametric_answerable": [False]}
    )
    metadata = pl.DataFrame(
        {"question_id": ["q1"], "question_type": ["LOC:mount"], "difficulty": ["easy"], "reference_complexity": [None]}
    )
    pools = pl.DataFrame({"question_id": ["q1"], "answer_pool": [["Mount Everest"]]})
    rejects = pl.DataFrame({"question_id": []}, schema={"question_id": pl.String})
    _, corpus, qrels = release.assemble(qs, splits, metadata, passages, labels, pools, rejects)
    # the other 322 passages were never labeled: in the corpus they would read as label 0
    assert sorted(corpus["passage_id"]) == sorted(qrels["passage_id"]) == sorted(labeled["passage_id"])


def test_a_slice_per_source_converges_and_selects_only_its_questions(scripted_llm, tmp_path, instance):
    """``max_questions_per_source`` takes the first questions of each source, in order, past
    the leakage screen; the rest are neither converged (no LLM call) nor selected."""
    from assets.quit.assets import hint_convergence, selected_questions

    rows = [question(f"t{i}", hints=HINTS) for i in range(3)]
    rows += [{**question(f"w{i}", hints=HINTS[:5], convergence=[0.5] * 5), "source": "wikihint"} for i in range(2)]
    screened = questions_frame(rows)
    result = dg.materialize(
        [hint_convergence, selected_questions, stub("screened_questions", screened)],
        instance=instance,
        resources={"llm": scripted_llm, "quit_settings": QuitSettings(max_questions_per_source=1, distractors=3)},
    )
    assert result.success
    assert sorted(result.output_for_node("quit__hint_convergence")["question_id"].unique()) == ["t0", "w0"]
    assert result.output_for_node("quit__selected_questions")["question_id"].to_list() == ["t0", "w0"]
    # one generation call and 6 hints x 4 fits, for t0 alone
    calls = result.asset_materializations_for_node("quit__hint_convergence")[0].metadata["llm/calls"].value
    assert calls == 1 + 6 * 4
    slice_ = result.asset_materializations_for_node("quit__selected_questions")[0].metadata["slice"].value
    assert slice_ == "2 of 5 screened questions (the first 1 of each source: max_questions_per_source)"
