import math

import dagster as dg
import numpy as np
import polars as pl
import pytest

from assets.common.metadata import report_slice
from assets.eval.recor import rules as conversational
from assets.eval.recor import steps as generation
from assets.eval.runs import RUN_SCHEMA
from assets.eval.uncertainty import UncertaintySettings

# ranx compiles its metrics once a session, in the background (tests.background)
pytestmark = pytest.mark.usefixtures("compiled_metrics")


def turns():
    return pl.DataFrame(
        {
            "domain": ["law", "law", "biology"],
            "qid": ["c1_turn_1", "c1_turn_2", "c2_turn_1"],
            "conversation_id": ["c1", "c1", "c2"],
            "turn_id": [1, 2, 1],
            "query": ["Can police search my car?", "What if I said no?", "Why do onions sting?"],
            "conversation_history": [
                "No previous conversation.",
                "Turn 1 - User: Can police search my car?\nAssistant: Sometimes.",
                "No previous conversation.",
            ],
            "answer": [
                "Sometimes, with probable cause.",
                "Refusal alone is not probable cause.",
                "A gas irritates the eye.",
            ],
            "gold_doc_ids": [["d1"], ["d2"], ["d9"]],
            "target": ["the automobile exception", "consent searches", ""],
            "relevance_signals": [["probable cause"], ["consent", "refusal"], []],
            "irrelevance_signals": [[], ["arrest"], []],
        }
    )


def test_strategy_queries_follow_the_published_layout():
    # ablation_eval.py: query, "Conversation History:\n" + history, "Reasoning:\n" + the
    # stored subquestion_reasoning, joined by blank lines; evaluate_last_turn.py: previous
    # question and answer, then the current question
    frame = conversational.strategy_queries(
        turns(),
        {"c1_turn_1": "Can police search my car?", "c1_turn_2": None, "c2_turn_1": "Why do onions sting?"},
        {"c1_turn_1": "Needs the automobile exception.", "c1_turn_2": "Consent and probable cause.", "c2_turn_1": None},
    )
    q = {(r["qid"], r["strategy"]): (r["query"], r["fallback"]) for r in frame.iter_rows(named=True)}
    guidance = (
        "Find documents that contain consent searches. Relevant signals: consent, refusal. Irrelevant signals: arrest."
    )
    history = "Q: Can police search my car?\nA: Sometimes, with probable cause."
    assert q[("c1_turn_2", "baseline")] == ("What if I said no?", False)
    assert q[("c1_turn_2", "query_rewrite")] == ("What if I said no?", True)
    assert q[("c1_turn_2", "reasoning")] == (f"What if I said no?\n\nReasoning:\n{guidance}", False)
    assert q[("c1_turn_2", "history")] == (f"What if I said no?\n\nConversation History:\n{history}", False)
    assert q[("c1_turn_2", "history_reasoning")] == (
        f"What if I said no?\n\nConversation History:\n{history}\n\nReasoning:\n{guidance}",
        False,
    )
    assert q[("c1_turn_2", "last_turn")] == (
        "Previous Question: Can police search my car?\nPrevious Answer: Sometimes, with "
        "probable cause.\nCurrent Question: What if I said no?",
        False,
    )
    assert q[("c1_turn_2", "llm_reasoning")] == ("What if I said no?\n\nReasoning:\nConsent and probable cause.", False)
    # a first turn has no history and no previous turn
    assert q[("c1_turn_1", "history")] == ("Can police search my car?", False)
    assert q[("c1_turn_1", "last_turn")] == ("Can police search my car?", False)
    # c2 stored no guidance and got no rationale: the question alone, marked as a fallback
    assert q[("c2_turn_1", "reasoning")] == ("Why do onions sting?", True)
    assert q[("c2_turn_1", "history_reasoning")] == ("Why do onions sting?", True)
    assert q[("c2_turn_1", "llm_reasoning")] == ("Why do onions sting?", True)
    assert frame.height == 3 * 7 and set(frame["strategy"]) == set(conversational.STRATEGIES)


def test_history_goes_in_whole():
    # a 12-turn conversation with long answers: turn 4 carries its three earlier turns in
    # full (no cut to the last words), the question first
    long = " ".join(["word"] * 400)
    frame = pl.DataFrame(
        {
            "domain": ["law"] * 4,
            "qid": [f"c_turn_{i}" for i in range(1, 5)],
            "conversation_id": ["c"] * 4,
            "turn_id": [1, 2, 3, 4],
            "query": ["q1", "q2", "q3", "q4"],
            "answer": [long] * 4,
            "gold_doc_ids": [["d"]] * 4,
            "target": ["t"] * 4,
            "relevance_signals": [[]] * 4,
            "irrelevance_signals": [[]] * 4,
        }
    )
    out = conversational.strategy_queries(frame, {}, {}).filter(
        (pl.col("qid") == "c_turn_4") & (pl.col("strategy") == "history")
    )
    text = out["query"][0]
    assert text.startswith("q4\n\nConversation History:\nQ: q1\nA: word")
    assert text.count("word") == 3 * 400 and text.endswith(f"Q: q3\nA: {long}")


def run(rows):
    return pl.DataFrame([(q, p, r, 1.0 / r, s) for q, p, r, s in rows], schema=RUN_SCHEMA, orient="row")


def test_turn_scores_by_hand_and_the_macro_average():
    qrels = pl.DataFrame(
        {"question_id": ["c1_turn_1", "c1_turn_2", "c2_turn_1"], "passage_id": ["d1", "d2", "d9"], "label": [1, 1, 1]}
    )
    runs = run(
        [
            ("c1_turn_1", "d1", 1, "bm25"),
            ("c1_turn_1", "d5", 2, "bm25"),
            ("c1_turn_2", "d7", 1, "bm25"),
            ("c1_turn_2", "d2", 2, "bm25"),
        ]
    ).with_columns(pl.lit("baseline").alias("strategy"))
    scores = conversational.turn_scores(runs, qrels, turns())
    by = {r["qid"]: r for r in scores.iter_rows(named=True)}
    assert by["c1_turn_1"]["ndcg@10"] == pytest.approx(1.0)
    assert by["c1_turn_2"]["ndcg@10"] == pytest.approx(1 / math.log2(3)) and by["c1_turn_2"]["mrr"] == pytest.approx(
        0.5
    )
    # c2's turn was not retrieved at all: it scores 0 rather than disappearing
    assert by["c2_turn_1"]["ndcg@10"] == 0.0 and by["c2_turn_1"]["recall@10"] == 0.0
    # law averages its two turns (0.8155), biology has one (0): each domain weighs the same
    law = (1 + 1 / math.log2(3)) / 2
    assert conversational.macro(scores, ["retriever"])["ndcg@10"][0] == pytest.approx(law / 2)
    table3 = conversational.strategy_table(scores)
    assert table3.columns == ["retriever", "Base"] and table3["retriever"].to_list() == ["bm25", "Average"]


def test_a_turn_without_gold_is_left_out_and_counted():
    from assets.eval.recor.assets import qrels_frame

    benchmark = turns().with_columns(pl.Series("gold_doc_ids", [["d1"], ["d2"], []]))
    qrels = qrels_frame(benchmark)
    # the empty list leaves no qrel (not a null document)
    assert qrels["question_id"].to_list() == ["c1_turn_1", "c1_turn_2"] and qrels["passage_id"].null_count() == 0
    assert conversational.without_gold(benchmark, qrels) == ["c2_turn_1"]
    runs = run([("c1_turn_1", "d1", 1, "bm25"), ("c2_turn_1", "d9", 1, "bm25")]).with_columns(
        pl.lit("baseline").alias("strategy")
    )
    scores = conversational.turn_scores(runs, qrels, benchmark)
    assert sorted(scores["qid"]) == ["c1_turn_1", "c1_turn_2"]
    # only law is left: (1 + 0) / 2 = 0.5; scoring c2 as 0 would have given (0.5 + 0) / 2 = 0.25
    assert conversational.macro(scores, ["retriever"])["ndcg@10"][0] == pytest.approx(0.5)


def scored(
    values: dict[tuple[str, str], list[float]], strategy: str = "baseline", retriever: str = "bm25"
) -> pl.DataFrame:
    """Turn scores from {(domain, conversation): [nDCG@10 per turn]}."""
    rows = [
        {
            "domain": d,
            "conversation_id": c,
            "qid": f"{c}_turn_{i}",
            "turn_id": i,
            "retriever": retriever,
            "strategy": strategy,
            "ndcg@10": v,
            "map@10": v,
            "recall@10": v,
            "mrr": v,
        }
        for (d, c), vs in values.items()
        for i, v in enumerate(vs, 1)
    ]
    return pl.DataFrame(rows, schema_overrides={"turn_id": pl.Int32})


def test_turn_first_and_conversation_first_averages():
    scores = scored({("law", "c1"): [1.0], ("law", "c2"): [0.0, 0.5], ("biology", "c3"): [0.2, 0.4]})
    # turn first: law (1 + 0 + 0.5) / 3 = 0.5, biology 0.3, macro (0.5 + 0.3) / 2 = 0.4
    assert conversational.macro(scores, ["retriever"])["ndcg@10"][0] == pytest.approx(0.4)
    # conversation first (published ablation_eval.py): law (1 + 0.25) / 2 = 0.625, biology 0.3, (0.625 + 0.3) / 2 = 0.4625
    first = conversational.macro(scores, ["retriever"], averaging=conversational.CONVERSATION_FIRST)
    assert first["ndcg@10"][0] == pytest.approx(0.4625)
    table = conversational.strategy_table(scores, averaging=conversational.CONVERSATION_FIRST)
    assert table.filter(pl.col("retriever") == "bm25")["Base"][0] == pytest.approx(0.4625)
    full = conversational.full_metrics(
        scores.with_columns(pl.lit("history_reasoning").alias("strategy")), averaging=conversational.CONVERSATION_FIRST
    )
    assert full["mrr"][0] == pytest.approx(0.4625)
    assert conversational.AVERAGING[conversational.CONVERSATION_FIRST] == (
        "turn -> conversation -> domain -> macro over domains (published ablation scripts)"
    )
    with pytest.raises(ValueError, match="unknown averaging 'flat'"):
        conversational.macro(scores, ["retriever"], averaging="flat")


def test_each_headline_table_has_intervals_and_marks_the_strategies_tied_with_its_best():
    """Issue 48 on Tables 3, 18, 19 and 20: bm25 with History+Reasoning well above Baseline on
    every turn, History the same scores as History+Reasoning; a second retriever below."""
    rng = np.random.default_rng(1)
    good = {("law", f"l{c}"): list(rng.random(6) * 0.4 + 0.6) for c in range(3)}
    good |= {("biology", f"b{c}"): list(rng.random(5) * 0.4 + 0.6) for c in range(3)}
    # a domain of one conversation: conversation first, a stratum of one item
    good[("finance", "f0")] = list(rng.random(2) * 0.4 + 0.6)
    poor = {k: [v - 0.5 for v in vs] for k, vs in good.items()}
    scores = pl.concat(
        [
            scored(good, "history_reasoning"),
            scored(good, "history"),
            scored(poor, "baseline"),
            scored(poor, "history_reasoning", "dense"),
            scored(poor, "baseline", "dense"),
        ]
    )
    settings = UncertaintySettings()
    tables = conversational.uncertainty_tables(scores, settings)
    assert set(tables) == {
        "table_3",
        "table_3_conversation_first",
        "table_18",
        "table_18_conversation_first",
        "table_19",
        "table_20",
    }
    table_3, described = tables["table_3"]
    cells = {(r["retriever"], r["strategy"]): r for r in table_3.iter_rows(named=True)}
    wide = conversational.strategy_table(scores)
    for (retriever, strategy), row in cells.items():
        # each value is Table 3's cell, inside its interval
        assert row["value"] == pytest.approx(wide.filter(pl.col("retriever") == retriever)[strategy][0])
        assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["items"] == 35
    # strategies compared within each retriever: bm25's best is H+R, History the same scores, Baseline worse
    assert cells["bm25", "H+R"]["p"] is None and cells["bm25", "Hist"]["tied_best"] and cells["bm25", "Hist"]["p"] == 1
    assert not cells["bm25", "Base"]["tied_best"] and cells["bm25", "Base"]["p"] < 0.01
    assert cells["dense", "H+R"]["p"] is None and cells["dense", "Base"]["tied_best"]  # equal, as its scores are
    assert cells["Average", "Base"]["value"] == pytest.approx(wide.filter(pl.col("retriever") == "Average")["Base"][0])
    assert "percentile bootstrap over turns (1,000 resamples, seed 0)" in described["ci_low"]
    assert "Holm-Bonferroni" in described["ci_low"] and "(paper, section 4)" in described["value"]
    assert "compared with the best strategy of its retriever" in described["strategy"]
    first, described = tables["table_3_conversation_first"]
    assert first["items"].max() == 7 and "over conversations" in described["ci_low"]
    # Tables 18 and 20 compare retrievers: dense is clearly below bm25
    full = {(r["retriever"], r["metric"]): r["tied_best"] for r in tables["table_18"][0].iter_rows(named=True)}
    assert full == {(r, m): r == "bm25" for r in ("bm25", "dense") for m in conversational.TURN_METRICS}
    by_domain = tables["table_20"][0]
    # biology, finance, law: finance's two turns cannot tell the retrievers apart (every sign flip: p 0.5)
    assert by_domain.filter(pl.col("retriever") == "dense")["tied_best"].to_list() == [False, True, False]
    # Table 19: H+R against Baseline at each turn position of each retriever
    positions = tables["table_19"][0].filter((pl.col("retriever") == "bm25") & (pl.col("turn") == "T1"))
    assert dict(zip(positions["strategy"], positions["items"])) == {"baseline": 7, "history_reasoning": 7}


def test_table_17_mean_delta_is_the_macro_averaged_difference():
    base = scored({("law", "c1"): [0.2, 0.4, 0.6], ("biology", "c2"): [0.5]})
    hist = scored({("law", "c1"): [0.3, 0.4, 0.9], ("biology", "c2"): [0.1]}, "history")
    table = conversational.t_tests(pl.concat([base, hist]), pairs=(("history", "baseline"), ("last_turn", "baseline")))
    row = table.row(0, named=True)
    # differences: law 0.1, 0, 0.3 (mean 2/15), biology -0.4; macro (2/15 - 0.4) / 2 = -2/15;
    # over the four turns (0.1 + 0 + 0.3 - 0.4) / 4 = 0, so t = 0 and p = 1
    assert row["comparison"] == "Hist vs. Base" and row["n"] == 4
    assert row["mean delta"] == pytest.approx(-2 / 15) and row["turn delta"] == pytest.approx(0.0, abs=1e-12)
    assert row["t"] == pytest.approx(0.0, abs=1e-9) and row["p"] == pytest.approx(1.0)
    # no last-turn runs: a row that says so, not a silent gap
    empty = table.row(1, named=True)
    assert empty["n"] == 0 and math.isnan(empty["t"]) and empty["note"] == "fewer than 2 pairs (0)"


def test_paired_t_edge_cases_are_named():
    one = conversational.paired_t([0.1], [0.3])
    assert one["n"] == 1 and one["mean_delta"] == pytest.approx(0.2) and math.isnan(one["t"]) and math.isnan(one["p"])
    assert one["note"] == "fewer than 2 pairs (1)"
    # every pair differs by 0.1 (float noise aside): no variance to test against
    flat = conversational.paired_t([0.1, 0.2, 0.3], [0.2, 0.3, 0.4])
    assert flat["mean_delta"] == pytest.approx(0.1) and math.isnan(flat["t"]) and flat["note"].startswith("no variance")
    same = conversational.paired_t([0.5, 0.5], [0.5, 0.5])
    assert (
        same["mean_delta"] == 0.0 and math.isnan(same["p"]) and same["note"] == "no variance: every pair differs by 0"
    )
    with pytest.raises(ValueError, match=r"H\+R vs\. Base: pair 1 has a NaN score"):
        conversational.paired_t([0.1, float("nan")], [0.2, 0.3], "H+R vs. Base")
    with pytest.raises(ValueError, match="Hist vs. Base: paired samples differ in length"):
        conversational.paired_t([0.1], [0.2, 0.3], "Hist vs. Base")


def test_truncation_is_counted_only_where_the_encoder_cuts():
    from assets.eval.recor.assets import truncated
    from resources.retrieval import RetrieverSpec

    short, long = "Can police search my car?", " ".join(["car"] * 300)
    # MiniLM reads 256 tokens: 300 words + [CLS] and [SEP] is over, 5 words + 2 is not
    assert truncated(RetrieverSpec("minilm", "dense", encoder="minilm"), [short, long, long]) == 2
    # BM25 and the windowed e5-small read the whole query
    assert truncated(RetrieverSpec("bm25", "bm25"), [long]) == 0
    assert truncated(RetrieverSpec("e5-small", "dense", encoder="e5-small"), [long]) == 0


def test_ablation_gains_are_shares():
    table3 = pl.DataFrame({"retriever": ["bm25"], "Base": [0.2], "Reas": [0.3], "Hist": [0.4], "H+R": [0.5]})
    out = conversational.ablation_table(table3).row(0, named=True)
    # the paper's +50%, +100%, +150%
    assert (
        out["Reas gain"] == pytest.approx(0.5)
        and out["Hist gain"] == pytest.approx(1.0)
        and out["H+R gain"] == pytest.approx(1.5)
    )


def test_lexical_metrics():
    scores = generation.lexical("the cat sat on the mat", "the cat sat on the mat")
    assert scores["rouge_l"] == pytest.approx(1.0) and scores["meteor"] > 0.99
    partial = generation.lexical("the cat sat on the mat", "a dog sat")
    assert 0 < partial["rouge_l"] < 1 and 0 < partial["meteor"] < 1
    assert generation.lexical("the cat", None) == {"rouge_l": None, "meteor": None}


def test_generation_judge_skips_faithfulness_without_passages(scripted_llm):
    corpus = pl.DataFrame(
        {"doc_id": ["d1", "d2", "d9"], "content": ["Probable cause.", "Consent.", "Syn-propanethial-S-oxide."]}
    )
    items = generation.contexts(turns(), corpus, {"c1_turn_1": ["d5", "d1"]})
    assert [i["mode"] for i in items[:3]] == ["oracle", "retrieved", "no_retrieval"]
    assert items[0]["passages"] == ["Probable cause."] and items[2]["passages"] == []
    grades = generation.judge(
        items[:3], ["an answer"] * 3, scripted_llm.named("smollm2"), __import__("resources.llm").llm.CallStats()
    )
    assert "faithfulness" in grades[0] and "faithfulness" not in grades[2]
    # the scripted judge answers 4 of 5: (4 - 1) / 4
    assert set(grades[0].values()) == {0.75} and len(grades[0]) == 5 and len(grades[2]) == 4


def test_the_retrieval_report_names_its_averagings_and_counts_turns_without_gold():
    from assets.eval.recor.assets import recor_retrieval_metrics

    benchmark = turns().with_columns(pl.Series("gold_doc_ids", [["d1"], ["d2"], []]))
    runs = pl.concat(
        [
            run([("c1_turn_1", "d1", 1, "bm25"), ("c1_turn_2", "d2", 1, "bm25")]).with_columns(
                pl.lit(s).alias("strategy")
            )
            for s in ("baseline", "history")
        ]
    ).with_columns(pl.lit("law").alias("domain"))
    out = recor_retrieval_metrics(
        dg.build_asset_context(), recor_runs=runs, benchmark=benchmark, uncertainty=UncertaintySettings()
    )
    meta = out.metadata
    assert meta["turns_without_gold"].value == 1 and meta["turns_without_gold_ids"].value == "c2_turn_1"
    assert meta["slice"].value == report_slice(
        "1 RECOR domains (law), 1 conversations, 2 of the benchmark's 3 turns scored (a turn without "
        "gold left out); 1 retrievers (bm25), 2 query strategies",
        None,
    )
    # every table inline, its averaging in its scores' definitions
    for name in ("table_3", "table_3_conversation_first", "table_4", "table_17", "table_18", "table_19", "table_20"):
        assert isinstance(meta[name], dg.TableMetadataValue), name
    assert {c.name: c.description for c in meta["table_3"].schema.columns}["Base"].endswith(
        "averaging: turn -> domain -> macro over domains (paper, section 4)"
    )
    assert "(published ablation scripts)" in meta["table_3_conversation_first"].schema.columns[1].description
    assert [r.data for r in meta["table_3"].records] == [
        {"retriever": r, "Base": 1.0, "Hist": 1.0} for r in ("bm25", "Average")
    ]
    assert {r.data["comparison"]: r.data["n"] for r in meta["table_17"].records}["Hist vs. Base"] == 2
    # each headline table's intervals and tests beside it, the method in the definitions
    intervals = [r.data for r in meta["table_3_uncertainty"].records]
    assert {(r["retriever"], r["strategy"]) for r in intervals} == {
        (r, s) for r in ("bm25", "Average") for s in ("Base", "Hist")
    }
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] and r["tied_best"] for r in intervals)
    described = {c.name: c.description for c in meta["table_3_uncertainty"].schema.columns}
    assert "percentile bootstrap over turns" in described["ci_low"] and "Holm-Bonferroni" in described["ci_low"]
    assert {"table_3_conversation_first_uncertainty", "table_18_uncertainty", "table_20_uncertainty"} <= set(meta)
    # no History+Reasoning run: Tables 18 and 20 are empty, and say why
    assert meta["table_20"].records == [] and meta["table_18"].records == [] and "figure_2" in meta
    assert meta["why_empty"].value.startswith("table_18: no run with History+Reasoning queries")
    assert "table_20: no run with History+Reasoning queries" in meta["why_empty"].value
    # Table 4 inline: both turns found at rank 1 under both strategies, so no gain; the
    # averaging, no longer a caption line, is in every score's definition
    table_4 = meta["table_4"]
    assert isinstance(table_4, dg.TableMetadataValue)
    assert [r.data for r in table_4.records] == [
        {"retriever": r, "Base": 1.0, "Hist": 1.0, "Hist gain": 0.0} for r in ("bm25", "Average")
    ]
    described = {c.name: c.description for c in table_4.schema.columns}
    assert "the whole conversation history" in described["Hist"] and "(paper, section 4)" in described["Hist"]
    assert (
        "(published ablation scripts)"
        in {c.name: c.description for c in meta["table_4_conversation_first"].schema.columns}["Base"]
    )
    assert set(out.value["qid"]) == {"c1_turn_1", "c1_turn_2"}


def test_the_queries_asset_writes_every_strategy(scripted_llm):
    from assets.eval.recor.assets import recor_queries

    benchmark = turns()
    with dg.build_asset_context(partition_key="law", resources={"llm": scripted_llm}) as context:
        out = recor_queries(context, benchmark=benchmark)
    frame = out.value
    assert frame.height == 3 * len(conversational.STRATEGIES)
    stored = frame.filter((pl.col("qid") == "c1_turn_2") & (pl.col("strategy") == "reasoning"))["query"][0]
    assert stored.endswith(
        "Reasoning:\nFind documents that contain consent searches. Relevant signals: consent, refusal. "
        "Irrelevant signals: arrest."
    )
    assert "| last_turn |" in out.metadata["strategies"].value
