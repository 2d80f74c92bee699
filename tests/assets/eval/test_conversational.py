import math

import polars as pl
import pytest

from assets.eval import conversational, generation
from assets.eval.runs import RUN_SCHEMA


def turns():
    return pl.DataFrame({
        "domain": ["law", "law", "biology"], "qid": ["c1_turn1", "c1_turn2", "c2_turn1"], "conversation_id": ["c1", "c1", "c2"],
        "turn_id": [1, 2, 1], "query": ["Can police search my car?", "What if I said no?", "Why do onions sting?"],
        "conversation_history": ["No previous conversation.", "Turn 1 - User: Can police search my car?\nAssistant: Sometimes.",
                                 "No previous conversation."],
        "answer": ["Sometimes, with probable cause.", "Refusal alone is not probable cause.", "A gas irritates the eye."],
        "gold_doc_ids": [["d1"], ["d2"], ["d9"]],
    })


def test_strategy_queries_and_their_fallbacks():
    frame = conversational.strategy_queries(turns(), {"c1_turn1": "Can police search my car?", "c1_turn2": None,
                                                      "c2_turn1": "Why do onions sting?"},
                                            {"c1_turn1": "Needs the automobile exception.", "c1_turn2": "Consent and probable cause.",
                                             "c2_turn1": None})
    q = {(r["qid"], r["strategy"]): (r["query"], r["fallback"]) for r in frame.iter_rows(named=True)}
    assert q[("c1_turn2", "baseline")] == ("What if I said no?", False)
    assert q[("c1_turn2", "query_rewrite")] == ("What if I said no?", True)
    assert q[("c1_turn2", "reasoning")] == ("What if I said no? Consent and probable cause.", False)
    assert q[("c1_turn2", "history")][0].startswith("Turn 1 - User: Can police search my car?") and q[("c1_turn2", "history")][0].endswith("What if I said no?")
    # the first turn has no history to prepend
    assert q[("c1_turn1", "history")] == ("Can police search my car?", False)
    assert q[("c2_turn1", "history_reasoning")] == ("Why do onions sting?", True)
    assert frame.height == 15


def run(rows):
    return pl.DataFrame([(q, p, r, 1.0 / r, s) for q, p, r, s in rows], schema=RUN_SCHEMA, orient="row")


def test_turn_scores_by_hand_and_the_macro_average():
    qrels = pl.DataFrame({"question_id": ["c1_turn1", "c1_turn2", "c2_turn1"], "passage_id": ["d1", "d2", "d9"], "label": [1, 1, 1]})
    runs = run([("c1_turn1", "d1", 1, "bm25"), ("c1_turn1", "d5", 2, "bm25"),
                ("c1_turn2", "d7", 1, "bm25"), ("c1_turn2", "d2", 2, "bm25")]).with_columns(pl.lit("baseline").alias("strategy"))
    scores = conversational.turn_scores(runs, qrels, turns())
    by = {r["qid"]: r for r in scores.iter_rows(named=True)}
    assert by["c1_turn1"]["ndcg@10"] == pytest.approx(1.0)
    assert by["c1_turn2"]["ndcg@10"] == pytest.approx(1 / math.log2(3)) and by["c1_turn2"]["mrr"] == pytest.approx(0.5)
    # c2's turn was not retrieved at all: it scores 0 rather than disappearing
    assert by["c2_turn1"]["ndcg@10"] == 0.0 and by["c2_turn1"]["recall@10"] == 0.0
    # law averages its two turns (0.8155), biology has one (0): each domain weighs the same
    law = (1 + 1 / math.log2(3)) / 2
    assert conversational.macro(scores, ["retriever"])["ndcg@10"][0] == pytest.approx(law / 2)
    table3 = conversational.strategy_table(scores)
    assert table3.columns == ["retriever", "Base"] and table3["retriever"].to_list() == ["bm25", "Average"]


def test_ablation_percentages():
    table3 = pl.DataFrame({"retriever": ["bm25"], "Base": [0.2], "Reas": [0.3], "Hist": [0.4], "H+R": [0.5]})
    out = conversational.ablation_table(table3).row(0, named=True)
    assert out["Reas %"] == pytest.approx(50.0) and out["Hist %"] == pytest.approx(100.0) and out["H+R %"] == pytest.approx(150.0)


def test_lexical_metrics():
    scores = generation.lexical("the cat sat on the mat", "the cat sat on the mat")
    assert scores["rouge_l"] == pytest.approx(1.0) and scores["meteor"] > 0.99
    partial = generation.lexical("the cat sat on the mat", "a dog sat")
    assert 0 < partial["rouge_l"] < 1 and 0 < partial["meteor"] < 1
    assert generation.lexical("the cat", None) == {"rouge_l": None, "meteor": None}


def test_generation_judge_skips_faithfulness_without_passages(scripted_llm):
    corpus = pl.DataFrame({"doc_id": ["d1", "d2", "d9"], "content": ["Probable cause.", "Consent.", "Syn-propanethial-S-oxide."]})
    items = generation.contexts(turns(), corpus, {"c1_turn1": ["d5", "d1"]})
    assert [i["mode"] for i in items[:3]] == ["oracle", "retrieved", "no_retrieval"]
    assert items[0]["passages"] == ["Probable cause."] and items[2]["passages"] == []
    grades = generation.judge(items[:3], ["an answer"] * 3, scripted_llm, "smollm2", __import__("resources.llm").llm.CallStats())
    assert "faithfulness" in grades[0] and "faithfulness" not in grades[2]
    # the scripted judge answers 4 of 5: (4 - 1) / 4
    assert set(grades[0].values()) == {0.75} and len(grades[0]) == 5 and len(grades[2]) == 4
