import polars as pl

from assets.quit import rules, steps
from assets.quit.rules import passages_frame
from assets.quit.sources import questions_frame
from resources.llm import CallStats, LLMResult, Model
from resources.llm.registry import ModelSpec

HINTS = [
    "It rises on the border of Nepal and China.",
    "Its summit was first reached in 1953.",
    "Sherpas guide climbers up its slopes.",
    "Its height is about 8,849 metres.",
    "It belongs to the Mahalangur range.",
    "Many expeditions start from its base camp.",
]


def question(
    qid="q1", hints=HINTS, answer="Mount Everest", aliases=("Mount Everest", "Everest"), convergence=None, candidates=()
):
    return {
        "question_id": qid,
        "source": "triviahg",
        "source_id": qid,
        "question": "Which mountain is this?",
        "answer": answer,
        "aliases": list(aliases),
        "hints": list(hints),
        "hint_convergence": convergence,
        "candidate_answers": list(candidates),
        "major_type": None,
        "minor_type": None,
        "difficulty": None,
        "popularity": None,
        "snippet": None,
    }


def test_leakage_exact_and_judged_spans(scripted_llm):
    qs = questions_frame(
        [
            question("clean"),
            question("exact", hints=HINTS[:5] + ["Everest is its short name."]),
            question("near", hints=HINTS[:5] + ["Guides call these peaks the Everests."]),
        ]
    )
    stats = CallStats()
    kept, rejects, unresolved = steps.screen_leakage(qs, scripted_llm.named("smollm2"), stats)
    assert kept["question_id"].to_list() == ["clean"]
    why = dict(zip(rejects["question_id"], rejects["detail"]))
    assert "hint 6 names the answer 'Everest'" in why["exact"]
    assert "span 'everests' judged equivalent" in why["near"]
    assert set(rejects["reason"]) == {"answer_leakage"}
    assert stats.calls >= 1  # only the near miss went to the judge
    assert unresolved.height == 0

    # an advisory judge's Yes discards nothing: the question stays, its span is listed
    kept, rejects, unresolved = steps.screen_leakage(qs, scripted_llm.named("smollm2"), CallStats(), binding=False)
    assert kept["question_id"].to_list() == ["clean", "near"]
    assert rejects["question_id"].to_list() == ["exact"]
    assert unresolved.select("question_id", "span", "verdict").rows() == [("near", "everests", True)]


def test_convergence_from_source_or_computed(scripted_llm):
    qs = questions_frame(
        [
            question("src", hints=HINTS[:5], convergence=[0.1, 0.2, 0.3, 0.4, 0.5]),
            question("gen", hints=HINTS),
            question("cands", hints=HINTS[:5], candidates=["Alpha", "Beta", "Mount Everest"]),
        ]
    )
    stats = CallStats()
    conv = steps.hint_convergence(qs, scripted_llm.named("smollm2"), distractors=3, stats=stats)
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
    assert (
        selected.filter(pl.col("question_id") == "gen")["hint_convergence"][0].to_list()
        == sorted(expected, reverse=True)[:5]
    )


def test_judge_skips_exact_matches_and_asks_once_per_distinct_answer(scripted_llm):
    stats = CallStats()
    items = [
        ("q", "Which?", ["Mount Everest"], "mount everest"),
        ("q", "Which?", ["Mount Everest"], "Everest peak"),
        ("q", "Which?", ["Mount Everest"], "everest  PEAK"),
        ("q", "Which?", ["Mount Everest"], "K2"),
    ]
    verdicts = steps.judge(scripted_llm.named("smollm2"), items, stats)
    assert stats.calls == 2
    assert verdicts[("q", "mount everest")] is True
    assert verdicts[("q", "k2")] is False


def test_passage_labels_and_answer_pool(scripted_llm):
    qs = questions_frame([question("q1", hints=HINTS[:5])])
    ps = passages_frame(qs.select("question_id", "hints"))
    stats = CallStats()
    answers = steps.passage_answers(ps, qs, scripted_llm.named("smollm2"), scripted_llm.named("smollm2"), stats)
    assert answers.height == 325 and stats.calls == 325  # exact matches need no judge
    labels, pool = rules.labels_and_pool(answers, ps, qs)
    counts = dict(labels.group_by("label").len().iter_rows())
    assert counts == {2: 300, 1: 25}  # passages with 3+ hints are answered by the script
    assert pool["answer_pool"][0].to_list() == ["Mount Everest", "Everest"]


def test_passages_are_asked_and_judged_chunk_by_chunk_with_the_same_answers(scripted_llm, tmp_path):
    qs = questions_frame([question("q1", hints=HINTS[:5])])
    ps = passages_frame(qs.select("question_id", "hints"))
    whole = steps.passage_answers(ps, qs, scripted_llm.named("smollm2"), scripted_llm.named("smollm2"), CallStats())
    small = scripted_llm.model_copy(update={"chunk_size": 40, "cache_dir": str(tmp_path / "fresh")})
    labeler, judge = CallStats(), CallStats()
    chunked = steps.passage_answers(ps, qs, small.named("smollm2"), small.named("smollm2"), labeler, judge_stats=judge)
    assert chunked.equals(whole)
    assert labeler.calls == 325 and labeler.cached == 0 and judge.calls == 0  # exact matches need no judge
    # passages read in batches of 33 (a stored table's) that the 40-call chunks cut across
    fresh = small.model_copy(update={"cache_dir": str(tmp_path / "fresh2")})
    batched = steps.passage_answers(
        ps.iter_slices(33), qs, fresh.named("smollm2"), fresh.named("smollm2"), CallStats(), total=ps.height
    )
    assert batched.equals(whole)


class Replies:
    """An LLM whose results are given per request (``reply(request) -> LLMResult``); it keeps
    every request it was asked."""

    def __init__(self, reply):
        self.reply, self.asked = reply, []

    def named(self, alias):
        return Model(self, ModelSpec(alias, alias))

    def run(self, alias, requests, parse=None, stats=None, thinking=False, log=None):
        requests = list(requests)
        self.asked += requests
        results = [self.reply(r) for r in requests]
        for r in results:
            (stats if stats is not None else CallStats()).add(r)
        return results

    def stream(self, alias, requests, parse=None, stats=None, thinking=False, log=None, kind=None, total=None):
        yield self.run(alias, requests, parse, stats, thinking, log)


GAVE_UP = "gave up after 5 tries: APIConnectionError: refused"


def labeler_and_judge(failing: set[str]):
    """Labeler answers by passage (``garbled`` passages do not parse, ``failing`` keys get no
    reply); the judge says Yes to Chomolungma, and gets no reply for keys in ``failing``."""

    def reply(req) -> LLMResult:
        if req.key in failing:
            return LLMResult(req.key, None, error=GAVE_UP)
        if " | " in req.key:  # the judge: "<question id> | <candidate>"
            return LLMResult(req.key, "Yes", value=req.key.endswith("Chomolungma"))
        if req.key.endswith("garbled"):
            return LLMResult(req.key, "Answer:", error="unparsable: no answer text")
        return LLMResult(req.key, "Chomolungma", value="Chomolungma")

    return reply


def graded(llm, binding=True) -> dict[str, tuple]:
    qs = questions_frame([question("q1", hints=HINTS[:5]), question("q2", hints=HINTS[1:6])])
    ps = pl.DataFrame(
        {
            "passage_id": ["q1_a", "q1_garbled", "q1_failing", "q2_a"],
            "question_id": ["q1", "q1", "q1", "q2"],
            "text": ["x"] * 4,
        }
    )
    out = steps.passage_answers(ps, qs, llm.named("labeler"), llm.named("judge"), CallStats(), binding=binding)
    return {
        r["passage_id"]: (r["answer"], r["judge"], r["correct"], r["error"], r["judge_error"])
        for r in out.iter_rows(named=True)
    }


def test_an_unparsable_reply_is_not_correct_and_a_failed_call_is_undecided():
    got = graded(Replies(labeler_and_judge({"q1_failing", "q2 | Chomolungma"})))
    assert got["q1_a"] == ("Chomolungma", True, True, None, None)
    # the reply is kept, and it holds no answer: not correct, and no call to retry
    assert got["q1_garbled"] == (None, None, False, "unparsable: no answer text", None)
    # no reply: neither correct nor wrong
    assert got["q1_failing"] == (None, None, None, GAVE_UP, None)
    # the labeler answered, the binding judge could not be asked
    assert got["q2_a"] == ("Chomolungma", None, None, None, GAVE_UP)


def test_an_advisory_judge_is_recorded_and_only_exact_matches_count():
    got = graded(Replies(labeler_and_judge({"q2 | Chomolungma"})), binding=False)
    # the verdict is kept, the label does not follow it
    assert got["q1_a"] == ("Chomolungma", True, False, None, None)
    # its failed call decides nothing either: the answer is not an exact match, so not correct
    assert got["q2_a"] == ("Chomolungma", None, False, None, GAVE_UP)


def test_a_passage_with_an_undecided_answer_gets_no_label():
    answers = pl.DataFrame(
        {
            "passage_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
            "question_id": ["q"] * 6,
            "model": ["a", "b"] * 3,
            "answer": ["Everest", None, None, "K2", "Everest", "K2"],
            "error": [None, GAVE_UP, None, None, None, None],
            "judge_error": [None, None, None, GAVE_UP, None, None],
            "correct": [True, None, False, None, True, False],
        }
    )
    passages = pl.DataFrame(
        {"passage_id": ["p1", "p2", "p3"], "question_id": ["q"] * 3, "num_hints": pl.Series([1, 2, 3], dtype=pl.Int8)}
    )
    qs = questions_frame([question("q")])
    labels, pool = rules.labels_and_pool(answers, passages, qs)
    got = {r["passage_id"]: (r["label"], r["error"]) for r in labels.iter_rows(named=True)}
    # a labeler was correct on p1, but another's answer is unknown: no label rather than a partial one
    assert got == {"p1": (None, f"b: {GAVE_UP}"), "p2": (None, f"b: judge: {GAVE_UP}"), "p3": (2, None)}
    assert pool["answer_pool"][0].to_list() == ["Mount Everest", "Everest"]


def test_closed_book_repeats_are_sampled_with_distinct_seeds(scripted_llm):
    qs = questions_frame(
        [question("fr", answer="Paris", aliases=("Paris",)) | {"question": "Capital of France?"}, question("ev")]
    )
    stats = CallStats()
    out = steps.closed_book_answers(
        qs, scripted_llm.named("smollm2"), scripted_llm.named("smollm2"), repeats=3, temperature=0.7, stats=stats
    )
    assert out.height == 6
    assert out.filter(pl.col("question_id") == "fr")["correct"].all()
    assert not out.filter(pl.col("question_id") == "ev")["correct"].any()
    assert stats.calls == 6 and stats.cached == 0

    llm = Replies(lambda req: LLMResult(req.key, "Paris", value="Paris" if " | " not in req.key else False))
    steps.closed_book_answers(qs, llm.named("m"), llm.named("judge"), repeats=3, temperature=0.7, stats=CallStats())
    asked = [(r.key, r.sample, r.params.get("temperature")) for r in llm.asked if " repeat " in r.key]
    assert asked == [(f"{q} repeat {k}", k, 0.7) for q in ("fr", "ev") for k in range(3)]
