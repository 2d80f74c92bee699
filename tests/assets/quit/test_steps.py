import polars as pl

from assets.quit import steps
from assets.quit.rules import passages_frame
from assets.quit.sources import questions_frame
from resources.llm import CallStats

HINTS = ["It rises on the border of Nepal and China.", "Its summit was first reached in 1953.",
         "Sherpas guide climbers up its slopes.", "Its height is about 8,849 metres.",
         "It belongs to the Mahalangur range.", "Many expeditions start from its base camp."]


def question(qid="q1", hints=HINTS, answer="Mount Everest", aliases=("Mount Everest", "Everest"), convergence=None, candidates=()):
    return {"question_id": qid, "source": "triviahg", "source_id": qid, "question": "Which mountain is this?",
            "answer": answer, "aliases": list(aliases), "hints": list(hints), "hint_convergence": convergence,
            "candidate_answers": list(candidates), "major_type": None, "minor_type": None, "difficulty": None,
            "popularity": None, "snippet": None}


def test_leakage_exact_and_judged_spans(scripted_llm):
    qs = questions_frame([
        question("clean"),
        question("exact", hints=HINTS[:5] + ["Everest is its short name."]),
        question("near", hints=HINTS[:5] + ["Guides call these peaks the Everests."]),
    ])
    stats = CallStats()
    kept, rejects = steps.screen_leakage(qs, scripted_llm, "smollm2", stats)
    assert kept["question_id"].to_list() == ["clean"]
    why = dict(zip(rejects["question_id"], rejects["detail"]))
    assert "hint 6 names the answer 'Everest'" in why["exact"]
    assert "span 'everests' judged equivalent" in why["near"]
    assert set(rejects["reason"]) == {"answer_leakage"}
    assert stats.calls >= 1  # only the near miss went to the judge


def test_convergence_from_source_or_computed(scripted_llm):
    qs = questions_frame([
        question("src", hints=HINTS[:5], convergence=[0.1, 0.2, 0.3, 0.4, 0.5]),
        question("gen", hints=HINTS),
        question("cands", hints=HINTS[:5], candidates=["Alpha", "Beta", "Mount Everest"]),
    ])
    stats = CallStats()
    conv = steps.hint_convergence(qs, scripted_llm, "smollm2", distractors=3, stats=stats)
    src = conv.filter(pl.col("question_id") == "src")
    assert src["origin"].unique().to_list() == ["source"] and src["convergence"].to_list() == [0.1, 0.2, 0.3, 0.4, 0.5]
    gen = conv.filter(pl.col("question_id") == "gen")
    assert gen["candidates"][0].to_list() == ["Alpha", "Beta", "Gamma"]  # 3 generated distractors
    # scripted rule: odd-length hints rule out Alpha and Beta (2 of 3 wrong) -> 1 - 1/4
    expected = [0.75 if len(h) % 2 else 0.25 for h in HINTS]
    assert gen.sort("hint_index")["convergence"].to_list() == expected
    cands = conv.filter(pl.col("question_id") == "cands")
    assert cands["candidates"][0].to_list() == ["Alpha", "Beta"]  # the gold is not a wrong candidate
    # one generation call for "gen" only; fits: 6 hints x 4 + 5 hints x 3
    assert stats.calls == 1 + 6 * 4 + 5 * 3
    selected = steps.select_hints(qs, conv)
    assert selected.filter(pl.col("question_id") == "gen")["hint_convergence"][0].to_list() == sorted(expected, reverse=True)[:5]


def test_judge_skips_exact_matches_and_asks_once_per_distinct_answer(scripted_llm):
    stats = CallStats()
    items = [("q", "Which?", ["Mount Everest"], "mount everest"), ("q", "Which?", ["Mount Everest"], "Everest peak"),
             ("q", "Which?", ["Mount Everest"], "everest  PEAK"), ("q", "Which?", ["Mount Everest"], "K2")]
    verdicts = steps.judge(scripted_llm, "smollm2", items, stats)
    assert stats.calls == 2
    assert verdicts[("q", "mount everest")] is True
    assert verdicts[("q", "k2")] is False


def test_passage_labels_and_answer_pool(scripted_llm):
    qs = questions_frame([question("q1", hints=HINTS[:5])])
    ps = passages_frame(qs.select("question_id", "hints"))
    stats = CallStats()
    answers = steps.passage_answers(ps, qs, scripted_llm, "smollm2", "smollm2", stats)
    assert answers.height == 325 and stats.calls == 325  # exact matches need no judge
    labels, pool = steps.labels_and_pool(answers, ps, qs)
    counts = dict(labels.group_by("label").len().iter_rows())
    assert counts == {2: 300, 1: 25}  # passages with 3+ hints are answered by the script
    assert pool["answer_pool"][0].to_list() == ["Mount Everest", "Everest"]


def test_unparsable_labeler_output_is_kept(scripted_llm):
    qs = questions_frame([question("q1", hints=["GARBLE " + h for h in HINTS[:5]])])
    ps = passages_frame(qs.select("question_id", "hints")).head(3)
    answers = steps.passage_answers(ps, qs, scripted_llm, "smollm2", "smollm2", CallStats())
    assert answers["error"].to_list() == ["unparsable: empty answer"] * 3
    assert answers["correct"].to_list() == [False] * 3
    assert answers["passage_id"].to_list() == ps["passage_id"].to_list()


def test_closed_book_repeats_use_distinct_sample_indices(scripted_llm):
    qs = questions_frame([question("fr", answer="Paris", aliases=("Paris",)) | {"question": "Capital of France?"},
                          question("ev")])
    stats = CallStats()
    out = steps.closed_book_answers(qs, scripted_llm, "smollm2", "smollm2", repeats=3, stats=stats)
    assert out.height == 6
    assert out.filter(pl.col("question_id") == "fr")["correct"].all()
    assert not out.filter(pl.col("question_id") == "ev")["correct"].any()
    assert stats.calls == 6 and stats.cached == 0
