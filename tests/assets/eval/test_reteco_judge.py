"""RETECO Track 2's generation judge (assets/eval/recor/reteco/steps.py, ``pipelines.reteco judge``):
what each focused prompt shows, the strict reading of a reply, and the table's numbers
computed by hand.

The scripted LLM answers a prompt holding ``Scripted distribution: 4=1`` with "4" (the
first such line in the prompt wins) and any other judge prompt with "NO ANSWER", which holds
no score. The marker is put where one prompt shows it and another does not: in a passage
(faithfulness only), in the conversation history (relevance and coherence, where it comes
before the answer) or in the answer (every prompt)."""

import json
import math
from pathlib import Path

import polars as pl
import pytest

from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco import steps as rj
from pipelines import reteco as cli
from resources.llm import CallStats, ParseError

# Three target turns of c1 (law) and one of c2 (biology).
GOLD = {"c1_turn_1": ["d1", "d2"], "c1_turn_2": ["d3"], "c1_turn_3": ["d5"], "c2_turn_1": ["d4"]}
TARGETS = reteco.Targets.from_tables(
    pl.DataFrame(
        {
            "qid": list(GOLD),
            "domain": ["law", "law", "law", "biology"],
            "conversation_id": ["c1", "c1", "c1", "c2"],
            "turn_id": [1, 2, 3, 1],
            "gold_doc_ids": list(GOLD.values()),
        }
    ),
    [f"d{i}" for i in range(1, 10)],
)
HISTORY_2 = "Q: Is a spoken deal binding?\nA: Usually it is. Scripted distribution: 3=1"
TURNS = TARGETS.turns.join(
    pl.DataFrame(
        {
            "qid": list(GOLD),
            "query": [
                "Is a spoken deal binding?",
                "Which deals need writing?",
                "And if he already paid?",
                "Why do apples brown?",
            ],
            "reference": [
                "Yes, offer and acceptance suffice.",
                "Land and goods over $500.",
                "Then it binds.",
                "Enzymes.",
            ],
            "history": [
                "No previous conversation.",
                HISTORY_2,
                "Q: Is a spoken deal binding?\nA: Usually it is.\nQ: Which deals need writing?\nA: Land.",
                "No previous conversation.",
            ],
            "gold_doc_ids": list(GOLD.values()),
        }
    ),
    on="qid",
).select(rj.TURN_COLUMNS)
TEXTS = {
    "d1": "A contract needs offer, acceptance and consideration.",
    "d2": "Scripted distribution: 2=1",
    "d3": "The statute of frauds lists contracts that need a writing.",
    "d4": "Enzymes brown cut apples.",
    "d5": "Goods over $500 need a signed writing.",
    **{f"d{i}": f"Other text {i}." for i in range(6, 10)},
}
GENERATION = (
    "\n".join(
        json.dumps(r)
        for r in [
            {"turn_id": "c1#turn1", "answer": "Yes, it binds. Scripted distribution: 5=1"},
            {"turn_id": "c1_turn_2", "answer": "Land sales do. Scripted distribution: 4=1"},
            {"turn_id": "c1#turn3", "answer": "It depends."},  # the judge's reply holds no score
            {"turn_id": "c9#turn1", "answer": "No such turn."},  # no target: ignored
        ]
    )
    + "\n"
)  # c2#turn1 has no answer
# c1#turn1's top five leave out d2; c1#turn3 is not in the run.
RUN = (
    "".join(f"c1#turn1 Q0 {d} {r} {7 - r} mine\n" for r, d in enumerate(["d9", "d8", "d7", "d6", "d5", "d2"], 1))
    + "c1#turn2 Q0 d3 1 1.0 mine\n"
)


def checked_generation() -> reteco.Checked:
    checked = reteco.check_generation(GENERATION.encode(), "gen.jsonl", TARGETS)
    assert checked.ok and checked.counts["unknown_turns"] == 1 and checked.missing == ["c2_turn_1"]
    return checked


def prompts(subtrack: str, rankings=None) -> dict[str, str]:
    """Each request's user message by key (``<task qid> <dimension>``)."""
    items = rj.judge_items(TURNS, checked_generation().answers, rj.passage_ids(TURNS, subtrack, rankings), TEXTS)
    return {r.key: r.messages[-1]["content"] for r in rj.requests(items)}


@pytest.mark.parametrize(
    "reply, score",
    [
        ("4", 4),
        (" 4.\n", 4),
        ("Score: 4", 4),
        ("**5**", 5),
        ("Rating: 3/5.", 3),
        ("2 out of 5", 2),
        ("Score: 4\nScore: 4", 4),
        ("1", 1),
    ],
)
def test_a_reply_with_one_whole_score_is_read(reply, score):
    assert rj.parse_score(reply) == score


@pytest.mark.parametrize(
    "reply, why",
    [
        ("4.5", "not a whole number"),
        ("4.0", "not a whole number"),
        ("6", "outside 1-5"),
        ("0", "outside 1-5"),
        ("-1", "outside 1-5"),
        ("10/10", "outside 1-5"),
        ("3 or 4", "2 different numbers"),
        ("On a 1-5 scale: 4", "3 different numbers"),
        ("", "no score"),
        ("NO ANSWER", "no score"),
        ("the 4th", "no score"),
    ],
)
def test_a_reply_without_exactly_one_score_in_range_is_refused(reply, why):
    with pytest.raises(ParseError, match=why):
        rj.parse_score(reply)


def test_each_prompt_shows_what_its_dimension_needs():
    gold, top5 = prompts("2b"), prompts("2c", reteco.check_run(RUN.encode(), "mine.trec", TARGETS).rankings)
    assert len(gold) == 3 * 5  # three answered turns, five dimensions; the missing turn is not asked
    # 2b: the turn's gold passages, in the release's order
    assert (
        "[1] A contract needs offer, acceptance and consideration.\n[2] Scripted distribution: 2=1"
        in gold["c1#turn1 faithfulness"]
    )
    # 2c: the run's top five, best first; its sixth document (d2) is not shown
    shown = top5["c1#turn1 faithfulness"]
    assert "[1] Other text 9.\n[2] Other text 8.\n[3] Other text 7.\n[4] Other text 6.\n[5] Goods over $500" in shown
    assert "[6]" not in shown and TEXTS["d2"] not in shown and TEXTS["d1"] not in shown
    assert rj.NO_PASSAGES in top5["c1#turn3 faithfulness"]  # the run has no line for the turn
    # the conversation so far for relevance and coherence; the reference for correctness and completeness
    for dimension in ("coherence", "relevance"):
        assert (
            HISTORY_2 in gold[f"c1#turn2 {dimension}"]
            and "Land and goods over $500." not in gold[f"c1#turn2 {dimension}"]
        )
    for dimension in ("correctness", "completeness"):
        text = gold[f"c1#turn2 {dimension}"]
        assert "Land and goods over $500." in text and "Is a spoken deal binding?" not in text and "statute" not in text
    assert all("Reply with the number only." in text for text in gold.values())


def test_judged_scores_are_normalized_and_missing_or_unparsable_ones_score_zero(scripted_llm):
    run = reteco.check_run(RUN.encode(), "mine.trec", TARGETS)
    checked = checked_generation()
    scores, stats = [], CallStats()
    for subtrack in rj.SUBTRACKS:
        items = rj.judge_items(TURNS, checked.answers, rj.passage_ids(TURNS, subtrack, run.rankings), TEXTS)
        judgments = rj.judge(items, scripted_llm.named("smollm2"), stats)
        judged = rj.judged_turns(judgments)
        scores.append(rj.turn_scores(judged, TARGETS, "gen", subtrack))
    # c1#turn1: 5 on all but faithfulness (2b: 2, from the gold passage d2; 2c: 5, d2 not in its top five);
    # c1#turn2: 4, but 3 for relevance and coherence (their history); c1#turn3: five unparsable replies
    assert judged.sort("qid").rows() == [
        ("c1_turn_1", 5, 5, 5, 5, 5, 0),
        ("c1_turn_2", 4, 4, 3, 3, 4, 0),
        ("c1_turn_3", None, None, None, None, None, 5),
    ]
    failed = judgments.filter(pl.col("score").is_null())
    assert (
        failed["reply"].unique().to_list() == ["NO ANSWER"]
        and failed["reason"][0] == "unparsable: no score in 'NO ANSWER'"
    )
    assert stats.parse_failures == 10 and stats.calls == 30
    # over the four target turns, c1#turn3 and the missing c2#turn1 at 0
    table = rj.judge_table(pl.concat(scores))
    two_b, two_c = table.row(0, named=True), table.row(1, named=True)
    assert (two_b["subtrack"], two_c["subtrack"]) == ("2b", "2c")
    expected = {"correctness": 1.75 / 4, "completeness": 1.75 / 4, "relevance": 1.5 / 4, "coherence": 1.5 / 4}
    assert {d: two_b[d] for d in expected} == pytest.approx(expected)
    assert two_b["faithfulness"] == pytest.approx((0.25 + 0.75) / 4) and two_b["macro"] == pytest.approx(0.375)
    assert two_c["faithfulness"] == pytest.approx((1.0 + 0.75) / 4) and two_c["macro"] == pytest.approx(2.0625 / 5)
    assert (two_b["turns"], two_b["turns_judged"], two_b["judge_failures"]) == (4, 3, 5)
    assert all(two_b[m] is None for m in rj.DIAGNOSTICS)  # not computed


def test_a_turn_without_an_answer_scores_zero_on_the_diagnostics_too():
    judged = pl.DataFrame({"qid": ["c1_turn_1"], **{d: [5] for d in rj.DIMENSIONS}, "judge_failures": [0]})
    diagnostic = pl.DataFrame({"qid": ["c1_turn_1"], "rouge_l": [0.8], "meteor": [0.6], "bertscore_f1": [0.9]})
    scores = rj.turn_scores(judged, TARGETS, "gen", "2b", diagnostic)
    assert scores.filter(~pl.col("answered"))["rouge_l"].to_list() == [0.0, 0.0, 0.0]
    row = rj.judge_table(scores).row(0, named=True)
    assert (row["rouge_l"], row["meteor"], row["bertscore_f1"]) == pytest.approx((0.2, 0.15, 0.225))
    assert row["macro"] == 0.25 and row["turns_judged"] == 1


def test_2c_needs_the_run_and_other_subtracks_are_refused():
    with pytest.raises(ValueError, match="give the checked run"):
        rj.passage_ids(TURNS, "2c")
    with pytest.raises(ValueError, match="sub-track '2a'"):
        rj.passage_ids(TURNS, "2a")


def test_the_release_is_read_without_holding_a_documents_file(monkeypatch):
    targets = reteco.release_targets("data/releases/recor")

    def whole(uri):
        raise AssertionError(f"{uri} read whole")

    # the benchmark files are read whole, the documents files only streamed
    monkeypatch.setattr(
        "assets.common.records.read_bytes",
        lambda uri: whole(uri) if uri.endswith("_documents.jsonl") else Path(uri).read_bytes(),
    )
    turns = rj.release_turns("data/releases/recor", targets).sort("domain", "conversation_id", "turn_id")
    assert turns.height == 13 and turns["qid"].to_list() == targets.turns["qid"].to_list()
    first, second = turns.row(0, named=True), turns.row(1, named=True)
    assert first["history"] == "No previous conversation." and second["history"].startswith(
        f"Q: {first['query']}\nA: {first['reference']}"
    )
    assert first["gold_doc_ids"] == [
        "apple_browning/Polyphenol_oxidase_0.txt",
        "apple_browning/Enzymatic_browning_1.txt",
    ]
    texts = rj.passage_texts(
        "data/releases/recor", ["biology", "law"], {"law_ex_41233_hn_3", first["gold_doc_ids"][0], "nope"}
    )
    assert sorted(texts) == ["apple_browning/Polyphenol_oxidase_0.txt", "law_ex_41233_hn_3"]
    assert texts["law_ex_41233_hn_3"].startswith("Lemon laws are state laws")


def test_the_judge_command_on_the_bundled_release(tmp_path, scripted_llm, capsys, monkeypatch):
    release = "data/releases/recor"
    targets = reteco.release_targets(release)
    qids = targets.turns["task_qid"].to_list()
    # 11 answers the judge gives 4, one it gives no score, one turn missing, one unknown turn
    lines = [{"turn_id": q, "answer": "An answer. Scripted distribution: 4=1"} for q in qids[:11]]
    lines += [{"turn_id": qids[11], "answer": "I am not sure."}, {"turn_id": "zz#turn1", "answer": "?"}]
    gen = tmp_path / "mine.jsonl"
    gen.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "tables"
    args = ["judge", "--release", release, "--no-diagnostics", "--out", str(out)]
    assert cli.main([*args, "--subtrack", "2b", str(gen)], llm=scripted_llm) == 0
    printed = capsys.readouterr()
    assert "| 2b       | mine   | 13    | 12           |" in printed.out
    assert f"{qids[11]} correctness: no score (unparsable: no score in 'NO ANSWER'); scored 0" in printed.err
    table = pl.read_csv(out / "generation_2b.csv").row(0, named=True)
    assert [table[d] for d in rj.DIMENSIONS] == pytest.approx([11 * 0.75 / 13] * 5)
    assert (table["turns"], table["turns_judged"], table["judge_failures"]) == (13, 12, 5)
    assert pl.read_csv(out / "judgments_2b.csv").height == 12 * 5
    assert pl.read_csv(out / "generation_2b_turns.csv").filter(pl.col("task_qid") == qids[12])[
        "correctness"
    ].to_list() == [0.0]

    # 2c: faithfulness to the run's own top five, here a document that is no turn's gold first
    run = tmp_path / "mine.trec"
    run.write_text(f"{qids[7]} Q0 law_ex_41233_hn_3 1 2.0 mine\n{qids[7]} Q0 law_ex_41233_doc_0 2 1.0 mine\n")
    log = tmp_path / "prompts.jsonl"
    monkeypatch.setenv("SCRIPTED_LLM_LOG", str(log))
    assert cli.main([*args, "--subtrack", "2c", "--run", str(run), str(gen)], llm=scripted_llm) == 0
    asked = [json.loads(line)["prompt"] for line in log.read_text().splitlines()]
    # only the faithfulness prompts are new (the others come from the cache); 11 of them show no passages
    assert len(asked) == 12 and sum(rj.NO_PASSAGES in p for p in asked) == 11
    assert any("[1] Lemon laws are state laws" in p and "[2] In common-law systems" in p for p in asked)
    assert "top 5 passages of" in capsys.readouterr().out

    with pytest.raises(SystemExit):
        cli.main([*args, "--subtrack", "2c", str(gen)], llm=scripted_llm)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"turn_id": 3, "answer": "x"}\n')
    assert cli.main([*args, "--subtrack", "2b", str(bad)], llm=scripted_llm) == 1
    assert "ERROR line 1 [turn_id]" in capsys.readouterr().out


@pytest.mark.slow
def test_the_diagnostics_are_the_paper_sides_reference_metrics():
    items = [
        {
            "qid": "c1_turn_1",
            "reference": "Offer and acceptance make a contract.",
            "answer": "Offer and acceptance make a contract.",
        },
        {"qid": "c1_turn_2", "reference": "Land and goods over $500.", "answer": ""},
    ]
    same, empty = rj.diagnostics(items).rows()
    assert same[1] == 1.0 and same[2] > 0.99 and math.isclose(same[3], 1.0, abs_tol=1e-5)
    assert empty[1:] == (0.0, 0.0, 0.0)


def test_a_reply_without_a_score_is_read_from_its_log_probabilities_where_it_has_them():
    import math
    import types

    def result(text, tokens=None, alternatives=None, top=None):
        return types.SimpleNamespace(text=text, tokens=tokens, token_logprobs=alternatives, top_logprobs=top)

    # "I" was generated where a number would stand; of 1-5, 4 held the most probability there
    lead = result(
        "I think", ["I", " think"], [{"I": math.log(0.5), "4": math.log(0.3), "2": math.log(0.2)}, {" think": 0.0}]
    )
    assert rj.most_probable_score(lead) == 4
    assert (
        rj.most_probable_score(result("Five", top={"Five": math.log(0.9), "3": math.log(0.05), "2": math.log(0.05)}))
        == 2
    )
    assert rj.most_probable_score(result("NO ANSWER")) is None  # no log-probabilities
    assert rj.most_probable_score(result("Hm", ["Hm"], [{"Hm": 0.0, "7": math.log(0.1)}])) is None  # no mass on 1-5
