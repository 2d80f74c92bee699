"""The QUIT steps that encode whole tables (Table 1's semantic overlap, the questions'
reference difficulty) against the per-question encoder calls they replaced: same numbers,
far fewer calls."""

import hashlib

import numpy as np
import polars as pl
import pytest

from assets.common.text import contains_phrase
from assets.quit import release, rules, steps


def text_vectors(texts):
    # A unit vector that depends on the text alone, however the texts are batched into calls.
    out = np.array(
        [
            np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")).normal(size=8)
            for t in texts
        ],
        dtype=np.float32,
    ).reshape(-1, 8)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


class Counted:
    """An encoder that records the size of every call."""

    def __init__(self, encode):
        self.encode, self.calls = encode, []

    def __call__(self, texts):
        self.calls.append(len(texts))
        return self.encode(texts)


def per_question_overlap(questions: pl.DataFrame, corpus: pl.DataFrame, encode) -> float:
    # Table 1's semantic overlap as it was computed: one call per question, its text first.
    text = dict(questions.select("question_id", "question").iter_rows())
    sims = []
    for (qid,), group in corpus.group_by("question_id", maintain_order=True):
        vecs = encode([text[qid]] + group["text"].to_list())
        sims.extend((vecs[1:] @ vecs[0]).tolist())
    return float(np.mean(sims))


def per_question_complexity(questions: pl.DataFrame, hits: dict, encode) -> dict:
    # Reference complexity as it was computed: one call per question with hits.
    out = {}
    for qid, question, aliases in questions.select("question_id", "question", "aliases").iter_rows():
        docs = hits.get(qid, [])
        sims = (lambda v: (v[1:] @ v[0]).tolist())(encode([question] + docs)) if docs else []
        out[qid] = rules.reference_complexity([any(contains_phrase(d, a) for a in aliases) for d in docs], sims)
    return out


def quit_questions(hints: list[list[str]], questions: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    frame = pl.DataFrame({"question_id": [f"q{i}" for i in range(len(hints))], "hints": hints})
    corpus = rules.passages_frame(frame)
    return pl.DataFrame({"question_id": frame["question_id"], "question": questions}), corpus


def test_semantic_overlap_streams_blocks_and_matches_per_question_calls():
    questions, corpus = quit_questions(
        [[f"Q{i} hint {j} about topic {i * j}." for j in range(5)] for i in range(3)],
        ["Which river?", "Which mountain?", "Which river?"],
    )
    encode, lines = Counted(text_vectors), []
    got = release.semantic_overlap(dict(questions.iter_rows()), corpus, encode, block_size=300, log=lines.append)
    assert got == pytest.approx(per_question_overlap(questions, corpus, text_vectors), rel=1e-6)
    # the two distinct question texts once, then 975 passages in blocks of 300 (blocks cross questions)
    assert encode.calls == [2, 300, 300, 300, 75]
    assert lines[-1] == "semantic overlap: 975 of 975 passages encoded"
    assert release.semantic_overlap({}, corpus.clear(), encode) == 0.0


def test_a_sampled_semantic_overlap_encodes_only_its_passages():
    questions, corpus = quit_questions(
        [[f"Q{i} hint {j} about topic {i * j}." for j in range(5)] for i in range(3)],
        ["Which river?", "Which mountain?", "Which lake?"],
    )
    encode, lines = Counted(text_vectors), []
    text = dict(questions.iter_rows())
    got = release.semantic_overlap(text, corpus, encode, block_size=300, log=lines.append, sample=5, seed=13)
    # 5 of each question's 325 passages, those of the mask, wherever the blocks cut them
    keep = release.overlap_sample_mask(corpus["question_id"], 5, 13)
    sampled = corpus.filter(pl.Series(keep))
    assert sum(encode.calls[1:]) == 15 and lines[-1] == "semantic overlap: 15 of 15 passages encoded"
    # every question has 325 passages: the stratified mean is the mean of the sampled cosines
    assert got == pytest.approx(per_question_overlap(questions, sampled, text_vectors), rel=1e-6)


def test_difficulties_encode_every_distinct_text_once_and_match_per_question_calls():
    questions = pl.DataFrame(
        {
            "question_id": ["q1", "q2", "q3", "q4"],
            "question": [
                "Where is the Eiffel Tower?",
                "Which city has the Louvre?",
                "Highest mountain?",
                "Capital of Peru?",
            ],
            "aliases": [["Paris"], ["Paris"], ["Mount Everest", "Everest"], ["Lima"]],
            "difficulty": [None, None, None, "Hard"],
        }
    )
    shared = "Paris is the capital of France."
    hits = {
        "q1": [shared, "The tower was built in 1889.", "Paris hosts the tower."],
        "q2": [shared, "The Louvre is a museum in Paris."],
        "q3": ["Everest rises 8,849 metres.", "K2 is the second highest."],
    }
    encode = Counted(text_vectors)
    got = steps.difficulties(questions, hits, encode)
    # one call: three questions with hits and their six distinct passages
    assert encode.calls == [9]
    want = per_question_complexity(questions.filter(pl.col("difficulty").is_null()), hits, text_vectors)
    rows = {r["question_id"]: r for r in got.iter_rows(named=True)}
    for qid, complexity in want.items():
        assert rows[qid]["reference_complexity"] == pytest.approx(complexity, abs=1e-4)
        assert rows[qid]["difficulty"] == rules.difficulty_bucket(complexity)
    assert rows["q1"]["references_with_answer"] == 2 and rows["q3"]["references_retrieved"] == 2
    assert rows["q4"]["difficulty"] == "hard" and rows["q4"]["difficulty_origin"] == "source"
    # no question with hits: nothing to encode
    encode.calls.clear()
    assert steps.difficulties(questions, {}, encode)["reference_complexity"].to_list() == [1.0, 1.0, 1.0, None]
    assert encode.calls == []


def sample_questions(n: int) -> pl.DataFrame:
    from assets.common.records import parse_json_list
    from assets.quit import sources
    from assets.quit.settings import QuitSettings

    s = QuitSettings()
    loaded = [
        (name, parse_json_list(open(path).read(), path))
        for name, path in (("triviahg", s.triviahg_path), ("wikihint", s.wikihint_path))
    ]
    frame = sources.questions_frame(sources.ingest(loaded).rows).head(n)
    return frame.with_columns(frame["hints"].list.head(5))


@pytest.mark.slow
def test_batched_minilm_gives_the_per_question_numbers_on_the_sample():
    from resources.encoders import encode_texts

    def minilm(texts):
        return encode_texts("minilm", texts, "passage")

    sample = sample_questions(2)
    # each question's first 40 passages (one and two hints) keep the real model's run short
    corpus = rules.passages_frame(sample.select("question_id", "hints")).filter(
        pl.int_range(pl.len()).over("question_id") < 40
    )
    questions = sample.select("question_id", "question")
    assert corpus.height == 80
    batched = release.semantic_overlap(dict(questions.iter_rows()), corpus, minilm, block_size=30)
    assert batched == pytest.approx(per_question_overlap(questions, corpus, minilm), abs=1e-6)

    # references with the answer in them (so each similarity counts), some shared by both questions
    texts = corpus["text"].to_list()
    (q0, q1), answers = sample["question_id"].to_list(), sample["aliases"].list.first().to_list()
    hits = {
        q0: [f"{t} {answers[0]}." for t in texts[:4]] + [f"{t} {answers[1]}." for t in texts[40:42]],
        q1: [f"{t} {answers[1]}." for t in texts[40:44]] + [f"{t} {answers[0]}." for t in texts[:2]],
    }
    frame = sample.select("question_id", "question", "aliases", pl.lit(None, pl.String).alias("difficulty"))
    got = dict(steps.difficulties(frame, hits, minilm).select("question_id", "reference_complexity").iter_rows())
    want = per_question_complexity(frame, hits, minilm)
    assert got == pytest.approx(want, abs=1e-4) and all(c < 1 for c in want.values())
