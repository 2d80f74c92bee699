from collections import Counter

import polars as pl
import pytest

from assets.eval.wikiprofile import rules as method
from assets.eval.wikiprofile import steps as profiling

TASKS = [
    "completion",
    "contextual",
    "direct",
    "direct_natural",
    "reverse",
    "reverse_natural",
    "mc_direct",
    "mc_direct_natural",
    "mc_reverse",
    "mc_reverse_natural",
]


def benchmark(fact_id="f1"):
    rows = []
    for task in TASKS:
        answer = "Love and Money" if "reverse" in task else "Bobby Paterson"
        options = [answer, "A", "B", "C"] if task.startswith("mc_") else None
        rows.append(
            {
                "fact_id": fact_id,
                "task": task,
                "question": f"Question for {task}?",
                "answer": answer,
                "options": options,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "fact_id": pl.String,
            "task": pl.String,
            "question": pl.String,
            "answer": pl.String,
            "options": pl.List(pl.String),
        },
    )


def test_every_sample_is_its_own_request_with_balanced_options():
    requests = profiling.sample_requests(benchmark(), "cot", n=8)
    # 2 encoding + 4 MC tasks once, 4 knowledge questions twice (without and with thinking), 8 samples each
    assert len(requests) == (2 + 4 + 4 * 2) * 8
    keys = [r.key for _, r, _ in requests]
    assert len(set(keys)) == len(keys) and {r.sample for _, r, _ in requests} == set(range(8))
    assert all(r.params["temperature"] == 1.0 for _, r, _ in requests)
    mc = [s for s, _, _ in requests if s.task == "mc_reverse"]
    assert Counter(s.gold_slot for s in mc) == {0: 2, 1: 2, 2: 2, 3: 2}
    first = next(r for s, r, _ in requests if s.task == "mc_reverse" and s.sample == 0)
    gold_letter = method.LETTERS[mc[0].gold_slot]
    assert f"{gold_letter}. Love and Money" in first.messages[-1]["content"]
    thinking = next(r for s, r, t in requests if s.task == "direct" and t)
    assert "Think step by step" in thinking.messages[-1]["content"] and thinking.params["max_tokens"] > 48
    assert not any(t for s, _, t in requests if s.task in ("completion", "contextual") or s.task.startswith("mc_"))
    # a model that cannot think asks every question once; a native switch keeps the plain prompt
    assert len(profiling.sample_requests(benchmark(), "none", n=8)) == 10 * 8
    native = next(r for s, r, t in profiling.sample_requests(benchmark(), "native", n=8) if s.task == "direct" and t)
    assert "Think step by step" not in native.messages[-1]["content"]
    # the same fact and task shuffle the same way on a rerun
    assert [s.gold_slot for s, _, _ in profiling.sample_requests(benchmark(), "cot", n=8)] == [
        s.gold_slot for s, _, _ in requests
    ]


def test_the_autorater_gets_every_sample_of_a_question_in_one_call():
    samples = pl.DataFrame(
        [
            {"fact_id": "f1", "task": task, "thinking": False, "sample": k, "answer": f"guess {k}"}
            for task in ("completion", "direct", "mc_direct")
            for k in range(3)
        ]
    )
    reqs = profiling.grading_requests(samples, benchmark())
    assert [key for key, _ in reqs] == [("f1", "completion", False), ("f1", "direct", False)]
    text = reqs[1][1].messages[-1]["content"]
    assert "Gold answer: Bobby Paterson" in text and "Answer 3: guess 2" in text and "120k" in text
    assert "Completion 1: guess 0" in reqs[0][1].messages[-1]["content"]
    assert (
        profiling.response_answer("Let me think. The band... Answer: Bobby Paterson", thinking=True) == "Bobby Paterson"
    )


def test_from_labels_to_grades_and_profiles():
    C, I, P, O = method.LABELS  # noqa: E741 (the method's label letters)
    labels = []

    def add(fact, task, thinking, got):
        labels.extend({"fact_id": fact, "task": task, "thinking": thinking, "label": g} for g in got)

    for task in ("completion", "contextual"):
        add("f1", task, False, [C, C, C, I])  # encoded
        add("f2", task, False, [I, I, I, C])  # not encoded
    for task in method.KNOWLEDGE_TASKS:
        add("f1", task, False, [C, I, I, I])  # not known without thinking
        add("f1", task, True, [C, C, C, P])  # known with thinking
        add("f2", task, False, [P, O, P, O])  # ungradable
        add("f2", task, True, [P, O, O, O])
    grades = profiling.question_grades(pl.DataFrame(labels))
    f1 = grades.filter((pl.col("fact_id") == "f1") & (pl.col("task") == "direct"))
    assert f1.sort("thinking")["grade"].to_list() == [0.25, 1.0]
    assert grades.filter(pl.col("fact_id") == "f2")["grade"].is_nan().sum() == 8
    profiles = profiling.fact_profiles(grades)
    assert profiles.to_dicts() == [
        {
            "fact_id": "f1",
            "encodes": True,
            "knows": False,
            "knows_thinking": True,
            "profile": "recall_with_thinking",
            "thinking_run": "present",
        },
        {
            "fact_id": "f2",
            "encodes": None,
            "knows": None,
            "knows_thinking": None,
            "profile": "ungradable",
            "thinking_run": "present",
        },
    ]
    # S3 weights a partial answer 0.51: f2's knowledge questions become gradable, each at
    # 0.51 > tau, so f2 is known without being encoded (direct inference, excluded)
    s3_grades = profiling.question_grades(pl.DataFrame(labels), partial_weight=0.51)
    assert (
        s3_grades.filter((pl.col("fact_id") == "f2") & (pl.col("task") == "direct") & ~pl.col("thinking"))["grade"][0]
        == 0.51
    )
    s3 = profiling.fact_profiles(s3_grades, strategy="S3")
    assert s3.filter(pl.col("fact_id") == "f2")["profile"][0] == "direct_inference"
    with pytest.raises(ValueError):
        profiling.fact_profiles(grades, strategy="S9")


def test_a_model_without_a_thinking_run_is_profiled_not_dropped():
    C, I, P, O = method.LABELS  # noqa: E741 (the method's label letters)
    labels = []

    def add(fact, task, got):
        labels.extend({"fact_id": fact, "task": task, "thinking": False, "label": g} for g in got)

    for task in method.ENCODING_TASKS:
        add("f1", task, [C, C, C, I])  # g = 3/4: encoded
        add("f2", task, [C, C, C, C])  # encoded
        add("f3", task, [I, I, P, O])  # g = 0/2: not encoded
    for task in method.KNOWLEDGE_TASKS:
        add("f1", task, [C, C, I, O])  # g = 2/3: known
        add("f2", task, [C, I, I, P])  # g = 1/3: not known
        add("f3", task, [C, C, C, I])  # g = 3/4: known, though not encoded
    # no sample was asked with thinking (a registry entry with ``thinking: none``)
    facts = profiling.fact_profiles(profiling.question_grades(pl.DataFrame(labels)))
    assert facts["thinking_run"].to_list() == ["missing"] * 3 and facts["knows_thinking"].null_count() == 3
    assert facts["profile"].to_list() == ["direct_recall", "encoded_not_known", "direct_inference"]
    row = profiling.summary_table([{"model": "m", **method.profile_summary(facts.to_dicts())}]).row(0, named=True)
    # 2 profiled (f1, f2), 1 direct inference (f3), 3 gradable: knows = (1 DR + 1 DI) / 3
    assert (row["profiled"], row["knows"], row["direct_recall"], row["encoded_not_known"]) == (
        2,
        pytest.approx(2 / 3),
        0.5,
        0.5,
    )
    assert row["knows_thinking"] is None and row["recall_failure"] is None and row["thinking_run"] == "missing"
    # with a thinking run, a fact whose thinking grades are missing is ungradable (a pair NaN under S2)
    some = pl.DataFrame(
        labels + [{"fact_id": "f1", "task": t, "thinking": True, "label": C} for t in method.KNOWLEDGE_TASKS]
    )
    partial = profiling.fact_profiles(profiling.question_grades(some))
    assert partial["profile"].to_list() == ["direct_recall", "ungradable", "ungradable"]
    assert partial["thinking_run"].to_list() == ["present"] * 3


def test_the_profiles_asset_names_a_missing_thinking_run_in_its_metadata():
    import dagster as dg

    from assets.eval.wikiprofile.assets import wikiprofile_profiles
    from assets.partitions import subject_partitions
    from assets.wikiprofile.settings import WikiProfileSettings

    C, I = method.CORRECT, method.INCORRECT  # noqa: E741 (the method's label letters)
    # one fact, encoded (3/4) and known (4/4) without thinking; no thinking run at all
    labels = [
        {
            "fact_id": "f1",
            "task": t,
            "thinking": False,
            "sample": k,
            "label": (C if t in method.KNOWLEDGE_TASKS or k else I),
            "model": "plain",
        }
        for t in (*method.ENCODING_TASKS, *method.KNOWLEDGE_TASKS)
        for k in range(4)
    ]

    @dg.asset(key=["eval", "wikiprofile_graded_responses"], partitions_def=subject_partitions)
    def graded_responses() -> pl.DataFrame:
        return pl.DataFrame(labels)

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(subject_partitions.name, ["plain"])
    result = dg.materialize(
        [graded_responses, wikiprofile_profiles],
        partition_key="plain",
        instance=instance,
        resources={"wikiprofile_settings": WikiProfileSettings(), "io_manager": dg.mem_io_manager},
    )
    facts = result.output_for_node("eval__wikiprofile_profiles")
    assert facts.select("profile", "thinking_run", "knows_thinking").row(0) == ("direct_recall", "missing", None)
    meta = result.asset_materializations_for_node("eval__wikiprofile_profiles")[0].metadata
    assert (
        meta["thinking_run_missing"].value == "plain" and "Knows(+Think)" in meta["thinking_run_missing_reason"].value
    )
    # a share in [0, 1], rounded to four decimals; none where the thinking run is missing
    assert (
        meta["share/knows"].value == 1.0 and meta["share/encodes"].value == 1.0 and "share/knows_thinking" not in meta
    )
    assert not [k for k in meta if k.startswith("pct/")]
    assert {
        k: v
        for k, v in meta["table_2_row"].records[0].data.items()
        if k in ("model", "facts", "profiled", "thinking_run")
    } == {"model": "plain", "facts": 1, "profiled": 1, "thinking_run": "missing"}
