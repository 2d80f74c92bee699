"""RECOR under RETECO Track 2's rules (assets/eval/recor/reteco/rules.py, pipelines/reteco.py): every rule a
hand-computed number, every malformed file a line-numbered error."""

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from assets.eval.recor.reteco import rules as reteco
from pipelines import reteco as cli

# ranx evaluates here: wait for its metrics compiled once in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")

# Two conversations in two domains: c1 (law) turns 1-2, c2 (biology) turns 1 and 5.
TURNS = pl.DataFrame(
    {
        "qid": ["c1_turn_1", "c1_turn_2", "c2_turn_1", "c2_turn_5", "c2_turn_2"],
        "domain": ["law", "law", "biology", "biology", "biology"],
        "conversation_id": ["c1", "c1", "c2", "c2", "c2"],
        "turn_id": [1, 2, 1, 5, 2],
        "gold_doc_ids": [["d1", "d2"], ["d3"], ["d4"], ["d5"], []],  # c2 turn 2 has no gold: no target
    }
)
TARGETS = reteco.Targets.from_tables(TURNS, [f"d{i}" for i in range(1, 10)])
A = 1 / math.log2(3)  # the discount at rank 2

RUN = """\
c1#turn1 Q0 d9 1 9.0 runA
c1#turn1 Q0 d1 2 8.0 runA
c1#turn1 Q0 d9 3 7.0 runA
c1#turn1 Q0 zz 4 6.5 runA
c1#turn1 Q0 d2 5 6.0 runA
c1_turn_2 Q0 d3 1 5.0 runA
c1_turn_2 Q0 d7 2 5.5 runA
c9#turn1 Q0 d1 1 1.0 runA

c2#turn1 Q0 d6 1 2.0 runA
c2#turn1 Q0 d4 2 2.0 runA
"""


def test_query_ids_in_both_styles():
    assert reteco.task_qid("ex_41233", 3) == "ex_41233#turn3"
    assert reteco.split_qid("2#turn12") == ("2", 12) and reteco.split_qid("a_b_turn_4") == ("a_b", 4)
    assert reteco.project_qid("ex_1#turn2") == "ex_1_turn_2" == reteco.project_qid("ex_1_turn_2")
    assert reteco.to_task_qid("ex_1_turn_2") == "ex_1#turn2"
    assert reteco.split_qid("c1#turn0") is None and reteco.project_qid("nonsense") == "nonsense"
    assert [reteco.depth(t) for t in (1, 4, 5, 9)] == ["T1", "T4", "T5+", "T5+"]
    turns = pl.DataFrame({"conversation_id": ["c"] * 9, "turn_id": list(range(1, 10))})
    assert turns.select(reteco.depth_expr())["turn_id"].to_list() == [reteco.depth(t) for t in range(1, 10)]
    assert turns.select(reteco.task_qid_expr())["conversation_id"].to_list() == [
        reteco.task_qid("c", t) for t in range(1, 10)
    ]
    # the targets: turns with gold only, the task's qrels file beside them
    assert TARGETS.turns["qid"].to_list() == ["c2_turn_1", "c2_turn_5", "c1_turn_1", "c1_turn_2"]
    assert reteco.qrels_text(TARGETS).splitlines()[:2] == ["c2#turn1 0 d4 1", "c2#turn5 0 d5 1"]


def test_a_run_is_read_and_scored_by_the_task_rules():
    checked = reteco.check_run(RUN.encode(), "runA.trec", TARGETS)
    assert checked.ok and checked.run_id == "runA"
    # c1#turn1: the second d9 removed, zz discarded; c1_turn_2 (project style) ordered by score,
    # not by its rank column; c2#turn1's tie broken as trec_eval does (doc id descending)
    assert checked.rankings == {"c1_turn_1": ["d9", "d1", "d2"], "c1_turn_2": ["d7", "d3"], "c2_turn_1": ["d6", "d4"]}
    assert checked.counts == {
        "duplicates_removed": 1,
        "unknown_documents": 1,
        "unknown_turns": 1,
        "order_disagreements": 1,
        "turns_scored": 3,
        "missing_turns": 1,
        "project_style_ids": 2,
    }
    lines = {p.kind: p.line for p in checked.problems}
    assert lines == {
        "duplicate": 3,
        "unknown_document": 4,
        "unknown_turn": 8,
        "order": 6,
        "id_style": 6,
        "missing_turn": None,
    }
    assert "c2#turn5" in str(checked.problems[-1]) and "scores 0" in str(checked.problems[-1])

    scores = reteco.run_scores(checked, TARGETS).sort("qid")
    c1t1 = (A + 1 / 2) / (1 + A)  # relevant at ranks 2 and 3, of 2 relevant
    assert scores["ndcg@10"].to_list() == pytest.approx([c1t1, A, A, 0.0])
    assert scores["map@10"].to_list() == pytest.approx([(1 / 2 + 2 / 3) / 2, 1 / 2, 1 / 2, 0.0])
    assert scores["recall@10"].to_list() == [1.0, 1.0, 1.0, 0.0] and scores["mrr"].to_list() == [0.5, 0.5, 0.5, 0.0]

    official = reteco.official_table(scores).row(0, named=True)
    assert official["run"] == "runA" and official["turns"] == 4
    assert official["nDCG@10"] == pytest.approx((c1t1 + 2 * A) / 4)  # 0.4888
    assert (
        official["MAP@10"] == pytest.approx((7 / 12 + 1) / 4)
        and official["Recall@10"] == 0.75
        and official["MRR"] == 0.375
    )
    assert dict(reteco.domain_table(scores).iter_rows()) == pytest.approx({"biology": A / 2, "law": (c1t1 + A) / 2})
    depth = reteco.depth_table(scores)
    assert depth["depth"].to_list() == ["T1", "T2", "T5+"] and depth["turns"].to_list() == [2, 1, 1]
    assert depth["runA"].to_list() == pytest.approx([(c1t1 + A) / 2, A, 0.0])


def test_many_runs_scored_in_one_evaluation_score_as_each_alone():
    first = reteco.check_run(b"c1#turn1 Q0 d1 1 2.0 A\nc1#turn1 Q0 d9 2 1.0 A\nc2#turn1 Q0 d4 1 1.0 A\n", "a", TARGETS)
    # the same query ids in the second run rank other documents: each run keeps its own
    second = reteco.check_run(b"c1#turn1 Q0 d9 1 2.0 B\nc1#turn1 Q0 d1 2 1.0 B\nc2#turn5 Q0 d5 1 1.0 B\n", "b", TARGETS)
    together = reteco.score_runs([("first", first, TARGETS), ("second", second, TARGETS)])
    alone = pl.concat([reteco.run_scores(first, TARGETS, "first"), reteco.run_scores(second, TARGETS, "second")])
    assert together.equals(alone) and together.height == 2 * TARGETS.turns.height
    c1t1 = together.filter(pl.col("qid") == "c1_turn_1").sort("run")
    assert c1t1["ndcg@10"].to_list() == pytest.approx([1 / (1 + A), A / (1 + A)])  # d1 at rank 1, then at rank 2
    assert reteco.score_runs([]).columns == [*reteco.TURN_SCHEMA, "run", *reteco.METRICS]


@pytest.mark.parametrize(
    "line, kind",
    [
        ("c1#turn1 Q0 d1 1 9.0", "columns"),
        ("c1#turn1 Q0 d1 1 9.0 runA extra", "columns"),
        ("c1#turn1 Q0 d1 first 9.0 runA", "rank"),
        ("c1#turn1 Q0 d1 0 9.0 runA", "rank"),
        ("c1#turn1 Q0 d1 1 high runA", "score"),
        ("c1#turn1 Q0 d1 1 nan runA", "score"),
        ("c1#turn1 Q0 d1 1 inf runA", "score"),
    ],
)
def test_the_checker_names_each_malformed_run_line(line, kind):
    checked = reteco.check_run(f"c1#turn2 Q0 d3 1 1.0 runA\n{line}\n".encode(), "bad.trec", TARGETS)
    errors = [p for p in checked.problems if p.fatal]
    assert not checked.ok and [(p.kind, p.line) for p in errors] == [(kind, 2)]
    assert "not scorable" in checked.summary() and str(errors[0]).startswith("ERROR line 2 [")
    with pytest.raises(ValueError, match="not scorable"):
        reteco.run_scores(checked, TARGETS)


def test_the_checker_refuses_two_run_ids_and_bytes_that_are_not_utf8():
    two = reteco.check_run(b"c1#turn2 Q0 d3 1 1.0 runA\nc1#turn1 Q0 d1 1 1.0 runB\n", "two.trec", TARGETS)
    assert [(p.kind, p.line, p.fatal) for p in two.problems if p.kind == "run_id"] == [("run_id", None, True)]
    assert "'runB' (from line 2)" in str(
        two.problems[-1] if two.problems[-1].kind == "run_id" else next(p for p in two.problems if p.kind == "run_id")
    )
    latin = reteco.check_run(b"c1#turn2 Q0 d3 1 1.0 runA\nc1#turn1 Q0 caf\xe9 1 1.0 runA\n", "latin.trec", TARGETS)
    assert [(p.kind, p.line, p.fatal) for p in latin.problems] == [("encoding", 2, True)]
    bom = reteco.check_run(b"\xef\xbb\xbfc1#turn2 0 d3 1 1.0 runA\n", "bom.trec", TARGETS)
    assert bom.ok and [p.kind for p in bom.problems] == ["encoding", "q0", "missing_turn"]


def test_a_generation_file_with_missing_and_extra_turns_scores_them_by_the_rules():
    text = (
        '{"turn_id": "c1#turn1", "answer": "An oral contract can bind."}\n'
        '{"turn_id": "c1_turn_2", "answer": "", "passages": ["d3"]}\n'
        '{"turn_id": "c7#turn1", "answer": "extra"}\n'
    )
    checked = reteco.check_generation(text.encode(), "gen.jsonl", TARGETS)
    assert checked.ok and checked.answers == {"c1_turn_1": "An oral contract can bind.", "c1_turn_2": ""}
    assert [(p.kind, p.line) for p in checked.problems] == [
        ("empty_answer", 2),
        ("unknown_turn", 3),
        ("id_style", 2),
        ("missing_turn", None),
    ]
    assert checked.missing == ["c2_turn_1", "c2_turn_5"]
    # judged 1-5: c1#turn1 all 5s, c1_turn_2 3/4/2/5/1; the two missing turns score 0
    judged = pl.DataFrame(
        {
            "qid": ["c1#turn1", "c1_turn_2"],
            "correctness": [5, 3],
            "completeness": [5, 4],
            "relevance": [5, 2],
            "coherence": [5, 5],
            "faithfulness": [5, 1],
        }
    )
    table = reteco.generation_table(reteco.generation_scores(judged, TARGETS, "gen")).row(0, named=True)
    assert table["turns"] == 4
    assert [table[d] for d in reteco.DIMENSIONS] == pytest.approx([1.5 / 4, 1.75 / 4, 1.25 / 4, 2 / 4, 1 / 4])
    assert table["macro"] == pytest.approx(0.375)


@pytest.mark.parametrize(
    "line, kind",
    [
        ("{not json", "json"),
        ('["c1#turn1", "an answer"]', "json"),
        ('{"turn_id": 1, "answer": "an answer"}', "turn_id"),
        ('{"answer": "an answer"}', "turn_id"),
        ('{"turn_id": "c1#turn1"}', "answer"),
        ('{"turn_id": "c1#turn1", "answer": ["a", "b"]}', "answer"),
        ('{"turn_id": "c1#turn2", "answer": "twice"}', "duplicate"),
    ],
)
def test_the_checker_names_each_malformed_generation_line(line, kind):
    checked = reteco.check_generation(
        f'{{"turn_id": "c1#turn2", "answer": "once"}}\n{line}\n'.encode(), "g.jsonl", TARGETS
    )
    assert not checked.ok and [(p.kind, p.line) for p in checked.problems if p.fatal] == [(kind, 2)]


def test_two_domains_sharing_a_conversation_id_are_refused_together():
    shared = TURNS.with_columns(pl.lit("c1").alias("conversation_id"), pl.col("qid").str.replace("c2", "c1"))
    with pytest.raises(
        ValueError, match=r"turns of several domains \(c1#turn1 in biology, law\).*--domain biology, then --domain law"
    ):
        reteco.Targets.from_tables(shared, ["d1"])


def test_the_command_checks_and_scores_a_run_on_the_bundled_release(tmp_path, capsys):
    targets = reteco.release_targets("data/releases/recor")
    gold = dict(targets.turns.select("qid", "task_qid").iter_rows())
    # every turn's gold first, but one turn left out: 12 of 13 turns score 1
    lines = [
        f"{gold[q]} Q0 {d} {r} {10 - r} mine" for q in list(gold)[1:] for r, d in enumerate(sorted(targets.gold[q]), 1)
    ]
    run = tmp_path / "mine.trec"
    run.write_text("\n".join(lines) + "\n")
    assert cli.main(["check", "--release", "data/releases/recor", str(run)]) == 0
    out = capsys.readouterr().out
    assert "[missing_turn]: 1 target turns have no line (biology_12#turn1); each scores 0" in out
    assert "12 target turns answered" in out
    assert cli.main(["score", "--release", "data/releases/recor", "--out", str(tmp_path / "tables"), str(run)]) == 0
    official = pl.read_csv(tmp_path / "tables" / "official.csv").row(0, named=True)
    assert official["run"] == "mine" and official["turns"] == 13 and official["nDCG@10"] == pytest.approx(12 / 13)
    assert pl.read_csv(tmp_path / "tables" / "by_domain.csv")["mine"].to_list() == pytest.approx([6 / 7, 1.0])
    bad = tmp_path / "bad.trec"
    bad.write_text(run.read_text() + "biology_12#turn1 Q0 x 1\n")
    assert cli.main(["score", "--release", "data/releases/recor", str(bad)]) == 1
    assert f"ERROR line {len(lines) + 1} [columns]" in capsys.readouterr().out
    assert cli.main(["export", "--release", "data/releases/recor", "--out", str(tmp_path / "task"), str(run)]) == 0
    assert (tmp_path / "task" / "qrels.txt").read_text().splitlines()[
        0
    ] == "biology_12#turn1 0 apple_browning/Enzymatic_browning_1.txt 1"
    assert (tmp_path / "task" / "mine.trec").read_text().splitlines()[0].startswith("biology_12#turn2 Q0 ")


def bundled_run(name: str, run_id: str, turns: int | None = None) -> tuple[str, list[str]]:
    """A run file on the bundled release ranking every target turn's gold first (the first
    ``turns`` turns only, where given): its path under ``name`` and its lines."""
    targets = reteco.release_targets("data/releases/recor")
    gold = dict(targets.turns.select("qid", "task_qid").iter_rows())
    lines = [
        f"{gold[q]} Q0 {d} {r} {10 - r} {run_id}"
        for q in list(gold)[:turns]
        for r, d in enumerate(sorted(targets.gold[q]), 1)
    ]
    Path(name).write_text("\n".join(lines) + "\n")
    return name, lines


def test_two_run_files_with_one_run_id_are_two_rows_named_by_their_files(tmp_path, capsys):
    every, _ = bundled_run(str(tmp_path / "a.trec"), "r")
    first, _ = bundled_run(str(tmp_path / "b.trec"), "r", turns=1)
    assert cli.main(["score", "--release", "data/releases/recor", "--out", str(tmp_path / "t"), every, first]) == 0
    official = pl.read_csv(tmp_path / "t" / "official.csv")
    assert official.select("run", "turns").rows() == [("r (a.trec)", 13), ("r (b.trec)", 13)]
    assert official["nDCG@10"].to_list() == pytest.approx([1.0, 1 / 13])
    assert "r (b.trec)" in capsys.readouterr().out
    # scoring two runs under one name would merge them: refused
    checked = reteco.check_run(b"c1#turn1 Q0 d1 1 1.0 r\n", "a", TARGETS)
    with pytest.raises(ValueError, match="2 runs are named 'r'"):
        reteco.score_runs([("r", checked, TARGETS), ("r", checked, TARGETS)])


def test_query_ids_in_the_project_style_are_read_with_a_warning_that_the_task_will_not():
    checked = reteco.check_run(RUN.encode(), "runA.trec", TARGETS)
    style = [str(p) for p in checked.problems if p.kind == "id_style"]
    assert style == [
        "warning line 6 [id_style]: 2 lines write query ids as <conversation>_turn_<n>; this project reads "
        "them, the task's scorer reads <conversation>#turn<n> only: `python -m pipelines.reteco export` "
        "rewrites the file"
    ]
    assert "2 lines with query ids as <conversation>_turn_<n>" in checked.summary()
    task = reteco.check_run(b"c1#turn2 Q0 d3 1 1.0 runA\n", "task.trec", TARGETS)
    assert "id_style" not in {p.kind for p in task.problems}
    generation = reteco.check_generation(b'{"turn_id": "c1_turn_2", "answer": "a"}\n', "g.jsonl", TARGETS)
    assert [(p.kind, p.line) for p in generation.problems if p.kind == "id_style"] == [("id_style", 1)]
    # eval/reteco_retrieval writes the project's runs with the task's ids before reading them
    from assets.eval.recor.assets.reteco import task_ids
    from assets.eval.runs import trec_run

    run = pl.DataFrame(
        {"question_id": ["c1_turn_2"], "passage_id": ["d3"], "rank": [1], "score": [1.0], "system": ["bm25"]}
    ).with_columns(pl.lit("baseline").alias("strategy"), pl.lit("law").alias("domain"))
    own = reteco.check_run(trec_run(task_ids(run)).encode(), "law: bm25/baseline", TARGETS)
    assert own.rankings == {"c1_turn_2": ["d3"]} and "id_style" not in {p.kind for p in own.problems}


def test_a_turn_whose_lines_all_name_unknown_documents_is_said_to_be_discarded():
    text = b"c1#turn1 Q0 d1 1 1.0 r\nc1#turn2 Q0 x1 1 1.0 r\nc1#turn2 Q0 x2 2 0.5 r\n"
    checked = reteco.check_run(text, "u.trec", TARGETS)
    assert [str(p) for p in checked.problems if p.kind == "missing_turn"] == [
        "warning file [missing_turn]: 2 target turns have no line (c2#turn1, c2#turn5); each scores 0",
        "warning file [missing_turn]: 1 target turns have lines naming unknown documents only, all "
        "discarded (c1#turn2); each scores 0",
    ]
    assert checked.missing == ["c2_turn_1", "c2_turn_5", "c1_turn_2"] and checked.counts["missing_turns"] == 3


def test_every_diagnostic_has_a_domain_and_a_depth_table(tmp_path, capsys):
    run, _ = bundled_run(str(tmp_path / "mine.trec"), "mine")
    assert cli.main(["score", "--release", "data/releases/recor", "--out", str(tmp_path / "t"), run]) == 0
    out = capsys.readouterr().out
    for metric in ("nDCG@10", "MAP@10", "Recall@10", "MRR"):
        assert f"{metric} per domain (diagnostic)" in out and f"{metric} by conversation depth (diagnostic)" in out
    for name in ("by_domain", "by_depth", "by_domain_map@10", "by_depth_recall@10", "by_domain_mrr"):
        assert set(pl.read_csv(tmp_path / "t" / f"{name}.csv")["mine"]) == {1.0}, name
    # eval/reteco_retrieval's metadata keeps them beside each other, by what they group:
    # c1#turn1 has d1 at rank 2 of 3 gold, c1#turn2 its gold first
    gold = pl.Series("gold_doc_ids", [["d1", "d4", "d5"], ["d2"]])
    targets = reteco.Targets.from_tables(TURNS.filter(pl.col("domain") == "law").with_columns(gold), ["d1", "d2", "d3"])
    checked = reteco.check_run(b"c1#turn1 Q0 d3 1 2 r\nc1#turn1 Q0 d1 2 1 r\nc1#turn2 Q0 d2 1 1 r\n", "r", targets)
    meta = reteco.breakdown_markdown(reteco.run_scores(checked, targets))
    assert list(meta) == ["by_domain", "by_depth"]
    for metric in ("nDCG@10", "MAP@10", "Recall@10", "MRR"):
        assert f"{metric} per domain (diagnostic)" in meta["by_domain"]
        assert f"{metric} by conversation depth (diagnostic)" in meta["by_depth"]
    assert "| law | 0.75 |" in meta["by_domain"]  # MRR: (1/2 + 1) / 2


@pytest.mark.parametrize(
    "text, line",
    [
        ("c1#turn1 Q0 d1 0 1.0 r\n", 1),  # rank 0
        ("c1#turn1 Q0 d1 1 1.0 r\nc1#turn1 Q0 d2 -3 0.5 r\n", 2),
        ("c1#turn1 Q0 d1 1 1.0 r\nc1#turn2 Q0 d3 1 1.0 s\n", 2),  # two run ids
        ("c1#turn1 Q0 d1 1 1.0 r\x0c\u2028\nc1#turn2 Q0 d3 1 x r\n", 2),  # a line ends at \n only
    ],
)
def test_a_recor_run_file_is_refused_where_the_checker_refuses_it(tmp_path, text, line):
    from resources.retrieval import RetrieverSpec, read_run_files

    checked = reteco.check_run(text.encode(), "law.trec", TARGETS)
    assert not checked.ok and {p.line for p in checked.problems if p.fatal} <= {line, None}
    (tmp_path / "law.trec").write_text(text, encoding="utf-8")
    spec = RetrieverSpec(alias="mine", kind="run", path=str(tmp_path / "{part}.trec"))
    with pytest.raises(ValueError, match=f"law.trec line {line}: "):
        read_run_files(
            spec,
            "recor",
            {"law": ["c1_turn_1", "c1_turn_2"]},
            documents={"d1", "d2", "d3"},
            query_id=reteco.project_qid,
            lenient=True,
        )


def test_the_generation_checker_reads_deep_nesting_long_values_and_odd_characters_line_by_line():
    lines = [
        '{"turn_id": "c1#turn1", "answer": "one\u2028two\u0085three"}',  # raw inside a string: JSON allows it
        '{"turn_id": "c2#turn1",\x0c"answer": "a form feed is no JSON space"}',
        "[" * 100_000 + "]" * 100_000,
        '{"turn_id": [' + ",".join(["1"] * 2_000_000) + '], "answer": "a"}',
        '{"turn_id": "c1#turn2", "answer": 7}',
    ]
    checked = reteco.check_generation("\n".join(lines).encode(), "g.jsonl", TARGETS)
    assert [(p.kind, p.line) for p in checked.problems if p.fatal] == [
        ("json", 2),
        ("json", 3),
        ("turn_id", 4),
        ("answer", 5),
    ]
    assert checked.answers == {"c1_turn_1": "one\u2028two\u0085three"}
    assert max(len(str(p)) for p in checked.problems) < 300


def per_turn(values: dict[str, np.ndarray], domain: str, **columns) -> pl.DataFrame:
    """One row per turn of ``domain`` and run or system (``values``: its score on each turn),
    the same turn ids in every domain."""
    n = len(next(iter(values.values())))
    return pl.concat(
        pl.DataFrame({"domain": domain, "qid": [f"c{i}_turn_1" for i in range(n)], "run": name, "score": v})
        for name, v in values.items()
    ).with_columns(pl.lit(v).alias(c) for c, v in columns.items())


def test_the_official_tables_intervals_mark_the_runs_not_worse_than_the_best():
    """Issue 48: a run and its copy well above a third in two domains whose turn ids are alike;
    the intervals pool each run's 60 turns, every interval holds its figure."""
    from assets.eval.recor.reteco import steps
    from assets.eval.uncertainty import UncertaintySettings

    rng = np.random.default_rng(2)
    frames = []
    for domain in ("law", "biology"):
        good = rng.random(30) * 0.4 + 0.6
        frames.append(per_turn({"bm25/history": good, "copy/history": good, "bm25/baseline": good - 0.5}, domain))
    scores = pl.concat(frames).with_columns(pl.col("score").alias(m) for m in reteco.METRICS).drop("score")
    settings = UncertaintySettings()
    tables = reteco.uncertainty_tables(scores, settings)
    official, described = tables["official"]
    assert set(official["metric"]) == {"nDCG@10", "MAP@10", "Recall@10", "MRR"}
    values = {r["run"]: r for r in reteco.official_table(scores).iter_rows(named=True)}
    for row in official.iter_rows(named=True):
        assert row["value"] == pytest.approx(values[row["run"]][row["metric"]]) and row["items"] == 60
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        assert row["tied_best"] == (row["run"] != "bm25/baseline")
    assert "percentile bootstrap over target turns (1,000 resamples, seed 0)" in described["ci_low"]
    by_domain, described = tables["by_domain"]
    assert by_domain.height == 6 and by_domain["items"].to_list() == [30] * 6
    assert by_domain.filter(pl.col("run") == "bm25/baseline")["tied_best"].to_list() == [False, False]
    assert "compared with the best run of the domain" in described["run"]

    # the leaderboard: 2a's runs by nDCG@10, 2b's systems by the macro of their five dimensions
    judged = pl.concat(
        per_turn({"g": s, "g-copy": s, "weak": s / 4}, d, subtrack="2b")
        for d, s in (("law", rng.random(30)), ("biology", rng.random(30)))
    )
    judged = judged.rename({"run": "system"}).with_columns(pl.col("score").alias(d) for d in reteco.DIMENSIONS)
    long = steps.leaderboard_uncertainty(scores, judged, settings)
    marked = {(r["subtrack"], r["run"], r["metric"]): r["tied_best"] for r in long.iter_rows(named=True)}
    assert marked == {
        ("2a", "bm25/history", "nDCG@10"): True,
        ("2a", "copy/history", "nDCG@10"): True,
        ("2a", "bm25/baseline", "nDCG@10"): False,
        ("2b", "g", "macro"): True,
        ("2b", "g-copy", "macro"): True,
        ("2b", "weak", "macro"): False,
    }
