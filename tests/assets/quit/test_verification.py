import json
import re
import threading
import urllib.parse
import urllib.request

import polars as pl

from assets.quit import rules, sources, steps
from pipelines import verification_page
from resources.llm import CallStats
from resources.storage import write_parquet


def answers():
    return pl.DataFrame(
        {
            "question_id": ["q"] * 4,
            "passage_id": ["p1", "p2", "p3", "p4"],
            "model": ["m"] * 4,
            "answer": ["Mount Everest", "Chomolungma", "K2", None],
            "correct": [True, True, False, False],
        }
    )


def questions():
    return pl.DataFrame(
        {
            "question_id": ["q"],
            "question": ["Which mountain?"],
            "answer": ["Mount Everest"],
            "aliases": [["Mount Everest"]],
            "source": ["triviahg"],
            "hints": [["A high peak.", "In Asia.", "Climbed in 1953.", "Near Lhotse.", "Very cold."]],
        }
    )


def labels():
    return pl.DataFrame(
        {
            "passage_id": ["p1", "p2", "p3", "p4"],
            "question_id": ["q"] * 4,
            "num_hints": [1] * 4,
            "labelers": [1] * 4,
            "label": pl.Series([2, 2, 1, 1], dtype=pl.Int8),
        }
    )


def pools():
    return pl.DataFrame(
        {
            "question_id": ["q"],
            "answer": ["Mount Everest"],
            "aliases": [["Mount Everest"]],
            "generated_correct": [["Chomolungma"]],
            "answer_pool": [["Mount Everest", "Chomolungma"]],
        }
    )


def test_candidates_list_distinct_answers_with_flags():
    c = rules.candidates(answers(), questions())
    assert c["candidate"].to_list() == ["Mount Everest", "Chomolungma", "K2"]
    assert c["judged_correct"].to_list() == [True, True, False]
    assert c["exact_match"].to_list() == [True, False, False]


def test_candidates_group_normalized_answers_most_frequent_first():
    given = pl.DataFrame(
        {
            "question_id": ["q"] * 7 + ["not_asked"],
            "answer": ["Chomolungma", "k2", "K2.", "Mount Everest", "the Mount Everest", "Lhotse", None, "K2"],
            "correct": [True, False, None, True, True, False, False, True],
        }
    )
    c = rules.candidates(given, questions())
    # ties (2 and 1 occurrences) in the order the answers first came; each shown as first given
    assert c.select("candidate", "occurrences", "judged_correct", "exact_match").rows() == [
        ("k2", 2, False, False),
        ("Mount Everest", 2, True, True),
        ("Chomolungma", 1, True, False),
        ("Lhotse", 1, False, False),
    ]
    assert c["gold"].unique().to_list() == ["Mount Everest"]


def test_without_decisions_labels_pass_through_unverified(scripted_llm):
    out = steps.apply({}, answers(), labels(), pools(), questions(), scripted_llm.named("smollm2"), CallStats())
    assert not out.verified and out.labels.equals(labels())


def test_deselecting_demotes_passages_and_accepting_adds_to_pool(scripted_llm):
    decisions = {"q": {"accepted": ["K2"], "rejected": ["Chomolungma"]}}
    out = steps.apply(decisions, answers(), labels(), pools(), questions(), scripted_llm.named("smollm2"), CallStats())
    got = dict(zip(out.labels["passage_id"], out.labels["label"]))
    assert got == {"p1": 2, "p2": 1, "p3": 2, "p4": 1}
    assert out.demoted == 1
    assert out.pools["answer_pool"][0].to_list() == ["Mount Everest", "K2"]
    assert out.rejects.height == 0


def test_newly_accepted_answer_that_leaks_removes_the_question(scripted_llm):
    decisions = {"q": {"accepted": ["Lhotse"], "rejected": []}}
    out = steps.apply(decisions, answers(), labels(), pools(), questions(), scripted_llm.named("smollm2"), CallStats())
    assert out.rejects["question_id"].to_list() == ["q"]
    assert "names the answer 'Lhotse'" in out.rejects["detail"][0]
    assert out.rejects["step"][0] == "human_verification"


def test_page_round_trip(tmp_path):
    cands = tmp_path / "cands.parquet"
    write_parquet(str(cands), rules.candidates(answers(), questions()))
    decisions = tmp_path / "decisions.json"
    server = verification_page.serve(str(cands), str(decisions), port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page = urllib.request.urlopen(base).read().decode()
        assert 'class="exact"' in page and "Chomolungma" in page and "checked" in page
        token = re.search(r'name="token" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            [
                ("token", token),
                ("shown", "q\tMount Everest"),
                ("shown", "q\tChomolungma"),
                ("shown", "q\tK2"),
                ("accept", "q\tMount Everest"),
                ("accept", "q\tK2"),
            ]
        ).encode()
        # a browser names the page a form comes from; the page takes saves from itself only
        urllib.request.urlopen(urllib.request.Request(base + "/save", data=form, headers={"Origin": base})).read()
    finally:
        server.shutdown()
    saved = json.loads(decisions.read_text())
    assert saved["q"]["accepted"] == ["Mount Everest", "K2"]
    assert saved["q"]["rejected"] == ["Chomolungma"]
    assert sources.load_decisions(str(decisions))["q"]["rejected"] == ["Chomolungma"]


def test_bad_decisions_file_is_a_clear_error(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"q": {"accepted": "K2"}}')
    try:
        sources.load_decisions(str(p))
    except ValueError as e:
        assert "'q'" in str(e)
    else:
        raise AssertionError("expected an error")
