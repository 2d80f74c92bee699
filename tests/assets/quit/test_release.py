"""The QUIT benchmark's assembly and release export on the bundled sample: the export
streams its files (bounded memory at 2.4M passages) and writes the bytes the one-string
export wrote, kept here as the reference."""

import json
import random
from pathlib import Path

import boto3
import dagster as dg
import numpy as np
import polars as pl
import pytest

from assets.quit import release, rules, sources
from assets.quit.assets import benchmark, release_files, statistics
from assets.quit.settings import QuitSettings
from resources.encoders import EncoderResource
from resources.storage import (
    ParquetIOManager,
    StorageResource,
    StoredTable,
    read_bytes,
    read_parquet,
    write_parquet,
    write_parquet_batches,
)

# Texts JSON escapes (quotes, backslash, control characters), non-ASCII kept as is
# (ensure_ascii=False) and the line separators Python does not escape.
AWKWARD_HINTS = [
    'It said "stop" at C:\\path.',
    "Line one\nline two\ttab\x01.",
    "Café, naïve, 東京, 😀.",
    "Odd separators \u2028 and \u2029 here.",
    "Plain last hint.",
]


def reference_export(
    questions: pl.DataFrame, corpus: pl.DataFrame, qrels: pl.DataFrame, target: Path
) -> list[tuple[str, int]]:
    """The export as it was first written, each file built as one string: the bytes the
    streaming export must reproduce."""
    files = []
    lines = (
        json.dumps({"id": r["passage_id"], "contents": r["text"], "title": r["question_id"]}, ensure_ascii=False)
        for r in corpus.iter_rows(named=True)
    )
    (target / "corpus.jsonl").write_bytes(("\n".join(lines) + "\n").encode())
    files.append(("corpus.jsonl", corpus.height))
    split_of = dict(questions.select("question_id", "split").iter_rows())
    for split in release.SPLITS:
        part = questions.filter(pl.col("split") == split)
        records = [release.question_record(r) for r in part.iter_rows(named=True)]
        (target / f"{split}.json").write_bytes(json.dumps(records, ensure_ascii=False, indent=1).encode())
        files.append((f"{split}.json", len(records)))
        rows = [
            f"{r['question_id']} 0 {r['passage_id']} {r['label']}"
            for r in qrels.iter_rows(named=True)
            if split_of.get(r["question_id"]) == split
        ]
        (target / f"qrels.{split}.txt").write_bytes(("\n".join(rows) + ("\n" if rows else "")).encode())
        files.append((f"qrels.{split}.txt", len(rows)))
    return files


def sample_build(splits_used=release.SPLITS) -> dict[str, pl.DataFrame]:
    """The bundled sample sources as the finalize steps receive them: every usable question
    with its 5 first hints, one with awkward hint texts, 325 passages each, seeded labels
    (some passages left unlabeled), a verification reject and splits round robin."""
    settings = QuitSettings()
    loaded = [
        (name, json.loads(Path(path).read_text()))
        for name, path in (("triviahg", settings.triviahg_path), ("wikihint", settings.wikihint_path))
    ]
    qs = sources.questions_frame(sources.ingest(loaded).rows)
    qs = qs.with_columns(pl.col("hints").list.head(5), pl.lit([0.9, 0.7, 0.5, 0.3, 0.1]).alias("hint_convergence"))
    qs = qs.with_columns(
        pl.when(pl.col("question_id") == qs["question_id"][0])
        .then(pl.lit(AWKWARD_HINTS))
        .otherwise(pl.col("hints"))
        .alias("hints")
    )
    ids = qs["question_id"].to_list()
    splits = pl.DataFrame(
        {
            "question_id": ids,
            "parametric_answerable": [i % 3 == 0 for i in range(len(ids))],
            "split": [splits_used[i % len(splits_used)] for i in range(len(ids))],
            "labeled": [True] * len(ids),
        }
    )
    metadata = pl.DataFrame(
        {
            "question_id": ids,
            "question_type": ["ENTY:other"] * len(ids),
            "difficulty": ["easy", "medium", "hard"] * (len(ids) // 3) + ["easy"] * (len(ids) % 3),
            "reference_complexity": [None] * len(ids),
        },
        schema_overrides={"reference_complexity": pl.Float64},
    )
    passages = rules.passages_frame(qs.select("question_id", "hints"))
    rng = random.Random(3)
    labels = passages.select("passage_id", "question_id", "num_hints").with_columns(
        pl.lit(3, pl.UInt32).alias("labelers"),
        pl.Series("label", [rng.choice([1, 2, 2, None]) for _ in range(passages.height)], dtype=pl.Int8),
        pl.lit(None, pl.String).alias("error"),
    )
    pools = qs.select("question_id", pl.col("aliases").alias("answer_pool"))
    rejects = sources.REJECTS.frame(
        [sources.REJECTS.row(ids[1], "triviahg", "human_verification", "answer_leakage", "leaks", {})]
    )
    return {
        "selected": qs,
        "splits": splits,
        "metadata": metadata,
        "passages": passages,
        "all_labels": labels,
        "labels": labels.filter(pl.col("label").is_not_null()),
        "pools": pools,
        "rejects": rejects,
    }


def built(splits_used=release.SPLITS):
    b = sample_build(splits_used)
    return release.assemble(
        b["selected"], b["splits"], b["metadata"], b["passages"], b["labels"], b["pools"], b["rejects"]
    )


@pytest.mark.parametrize("splits_used", [release.SPLITS, ("test", "dev")], ids=["every split", "no train questions"])
def test_export_writes_the_reference_bytes(tmp_path, splits_used):
    questions, corpus, qrels = built(splits_used)
    assert corpus.height > 5000 and questions.height > 30
    (tmp_path / "reference").mkdir()
    expected = reference_export(questions, corpus, qrels, tmp_path / "reference")
    # small batches, so the files are written in many pieces
    manifest = release.export(questions, corpus, qrels, str(tmp_path / "streamed"), batch_rows=1000)
    assert list(manifest.select("file", "records").iter_rows()) == expected
    for name, _ in expected:
        assert (tmp_path / "streamed" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert manifest["path"].to_list() == [str(tmp_path / "streamed" / name) for name, _ in expected]
    assert "東京" in (tmp_path / "streamed" / "corpus.jsonl").read_text()


def test_an_empty_benchmark_writes_empty_files(tmp_path):
    questions, corpus, qrels = (frame.clear() for frame in built())
    manifest = release.export(questions, corpus, qrels, str(tmp_path))
    assert manifest["records"].to_list() == [0] * 7
    # the one-string export wrote a lone newline for an empty corpus: not a JSON line
    assert (tmp_path / "corpus.jsonl").read_bytes() == b""
    assert all((tmp_path / f"qrels.{split}.txt").read_bytes() == b"" for split in release.SPLITS)
    assert all((tmp_path / f"{split}.json").read_bytes() == b"[]" for split in release.SPLITS)


def test_corpus_batches_are_the_assembled_corpus():
    b = sample_build()
    questions, corpus, qrels = release.assemble(
        b["selected"], b["splits"], b["metadata"], b["passages"], b["labels"], b["pools"], b["rejects"]
    )
    batches = list(
        release.corpus_batches(b["passages"], release.in_corpus(b["passages"], questions, b["labels"]), batch_rows=777)
    )
    assert len(batches) > 1 and all(f.height <= 777 for f in batches)
    assert pl.concat(batches).equals(corpus)
    # labeled passages of kept questions only: the removed question and unlabeled passages are out
    assert b["rejects"]["question_id"][0] not in set(corpus["question_id"])
    assert set(corpus["passage_id"]) == set(qrels["passage_id"]) < set(b["passages"]["passage_id"])


def test_corpus_through_the_batch_writer(tmp_path):
    b = sample_build()
    questions, corpus, _ = built()
    out = tmp_path / "corpus.parquet"
    rows = write_parquet_batches(
        str(out), release.corpus_batches(b["passages"], release.in_corpus(b["passages"], questions, b["labels"]))
    )
    assert rows == corpus.height and read_parquet(str(out)).equals(corpus)
    nothing = pl.Series([False] * b["passages"].height)
    rows = write_parquet_batches(str(out), release.corpus_batches(b["passages"], nothing))
    assert rows == 0 and read_parquet(str(out)).schema == corpus.schema


def stub(name: str, frame: pl.DataFrame) -> dg.AssetsDefinition:
    @dg.asset(key=["quit", name])
    def _stub() -> pl.DataFrame:
        return frame

    return _stub


def test_benchmark_and_release_files_through_the_io_manager(tmp_path):
    """The assets as a run executes them: inputs read by the Parquet IO manager (the labels'
    ``columns`` only), the corpus written batch by batch, the release streamed."""
    b = sample_build()
    stubs = {
        "selected_questions": b["selected"],
        "splits": b["splits"],
        "question_metadata": b["metadata"],
        "passages": b["passages"],
        "verified_labels": b["all_labels"],
        "verified_pools": b["pools"],
        "verification_rejects": b["rejects"],
    }
    storage = StorageResource(root=str(tmp_path / "storage"))
    result = dg.materialize(
        [benchmark, release_files, *(stub(name, frame) for name, frame in stubs.items())],
        resources={
            "io_manager": ParquetIOManager(root=storage.root),
            "storage": storage,
            "quit_settings": QuitSettings(export_dir=str(tmp_path / "release")),
        },
    )
    assert result.success
    questions, corpus, qrels = built()
    for name, frame in (("benchmark_questions", questions), ("benchmark_corpus", corpus), ("benchmark_qrels", qrels)):
        assert read_parquet(str(tmp_path / "storage" / "quit" / f"{name}.parquet")).equals(frame), name
    by_key = {m.asset_key.path[-1]: m.metadata for m in result.asset_materializations_for_node("benchmark")}
    assert by_key["benchmark_corpus"]["dagster/row_count"].value == corpus.height
    assert by_key["benchmark_corpus"]["unlabeled_passages_left_out"].value == b["all_labels"]["label"].null_count()
    assert corpus["passage_id"][0] in by_key["benchmark_corpus"]["preview"].value
    (tmp_path / "reference").mkdir()
    for name, _ in reference_export(questions, corpus, qrels, tmp_path / "reference"):
        assert (tmp_path / "release" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name


@pytest.mark.slow
def test_export_streams_to_s3(s3_server, monkeypatch, tmp_path):
    """On S3 the corpus goes up as a multipart upload (more than one 5 MB part) with the
    bytes a local export writes; tables are read back from S3 by column."""
    for name, value in (
        ("AWS_ENDPOINT_URL", s3_server.endpoint_url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", s3_server.region),
    ):
        monkeypatch.setenv(name, value)
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region).create_bucket(
        Bucket="quit-release"
    )
    questions, corpus, qrels = built()
    corpus = pl.concat([corpus.with_columns(pl.col("passage_id") + f"_{i}") for i in range(4)])
    release.export(questions, corpus, qrels, str(tmp_path), batch_rows=5000)
    assert (tmp_path / "corpus.jsonl").stat().st_size > 2 * 5 * 2**20
    manifest = release.export(questions, corpus, qrels, "s3://quit-release/quit", batch_rows=5000)
    for name, path in manifest.select("file", "path").iter_rows():
        assert read_bytes(path) == (tmp_path / name).read_bytes(), name
    write_parquet("s3://quit-release/quit/benchmark_corpus.parquet", corpus)
    assert read_parquet("s3://quit-release/quit/benchmark_corpus.parquet", ["passage_id"]).equals(
        corpus.select("passage_id")
    )


# --- Table 1 (the release's results/statistics/dataset_statistics.py definitions) ----------------

T1_QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2", "q3", "q4"],
        "question": [
            "What is the capital of France?",
            "Who wrote Hamlet?",
            "Who wrote Hamlet?",
            "A question without passages",
        ],
        "answers": [["Paris", "City of Light"], ["Shakespeare"], ["William Shakespeare"], ["x"]],
    }
)
T1_CORPUS = pl.DataFrame(
    {
        "passage_id": ["c1", "c2", "c3", "c4"],
        "question_id": ["q1", "q1", "q2", "q3"],
        "text": [
            "It is a Parisian city.",
            "The capital  of France lies on the Seine.",
            "He was an English playwright.",
            "He wrote Hamlet in Stratford.",
        ],
    }
)
T1_QRELS = pl.DataFrame(
    {"question_id": ["q1", "q1", "q2", "q3"], "passage_id": ["c1", "c2", "c3", "c4"], "label": [2, 1, 1, 1]}
)


def cosine_six_tenths(texts):
    # unit vectors by text, however the calls are batched: a question [1, 0], a passage [0.6, 0.8]
    asked = set(T1_QUESTIONS["question"])
    return np.array([[1.0, 0.0] if t in asked else [0.6, 0.8] for t in texts])


def test_table_1_follows_the_released_definitions():
    table = release.table1(T1_QUESTIONS, T1_CORPUS, T1_QRELS, cosine_six_tenths)
    got = dict(table.select("metric", "value").iter_rows())
    # q2 and q3 share their wording, q4 has no passage: 2 distinct question texts
    assert got["Total Questions"] == 2 and got["Total Passages"] == 4
    # split(" "): 6 and 3 words
    assert got["Avg. Question Length (words)"] == 4.5
    # 5, 9 (the double space makes an empty word), 5, 5
    assert got["Avg. Passage Length (words)"] == 6
    # q1's pool (1 + 3 words) once per passage (2), q2's 1, q3's 2: 11 words / 6 answers
    assert got["Avg. Answer Length (words)"] == pytest.approx(11 / 6)
    # c1: {What, capital, France?} vs {It, Parisian, city.} -> 0
    # c2: {The, capital, "", France, lies, Seine.} ("of", "on", "the" dropped, "The" kept): 1 / 8
    # c3: {Who, wrote, Hamlet?} vs {He, English, playwright.} -> 0
    # c4: vs {He, wrote, Hamlet, Stratford.}: "wrote" of 6 -> 1 / 6;  mean (1/8 + 1/6) / 4 = 7/96
    assert got["Query-Passage Lexical Overlap"] == pytest.approx(7 / 96)
    # "paris" is a substring of "parisian" (c1) but not a whole word
    assert got["Answer Containment"] == 0.25 and got["Answer Containment (whole words)"] == 0
    assert got["Query-Passage Semantic Overlap"] == pytest.approx(0.6)
    assert got["Label-2 Passages"] == 1 and got["Label-1 Passages"] == 3
    assert table["definition"].null_count() == 0


def test_table_1_from_a_stored_table_read_in_small_batches_is_the_same(tmp_path):
    uri = str(tmp_path / "corpus.parquet")
    write_parquet_batches(uri, T1_CORPUS.iter_slices(3))
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return cosine_six_tenths(texts)

    stored = release.table1(T1_QUESTIONS, StoredTable((uri,)), T1_QRELS, encode, block_size=1)
    assert stored.equals(release.table1(T1_QUESTIONS, T1_CORPUS, T1_QRELS, cosine_six_tenths))
    # the questions once, then the four passages a block of one at a time
    assert calls == [2, 1, 1, 1, 1]


def test_table_1_counts_an_answer_on_word_boundaries_after_normalize():
    questions = pl.DataFrame({"question_id": ["q1"], "question": ["Which tower?"], "answers": [["Eiffel Tower", " "]]})
    corpus = pl.DataFrame(
        {
            "passage_id": ["a", "b", "c"],
            "question_id": ["q1"] * 3,
            "text": ["The eiffel-tower stands.", "Eiffel Towers stand.", "Gustave Eiffel's tower."],
        }
    )
    table = release.table1(
        questions, corpus, pl.DataFrame({"label": [1]}), lambda texts: np.ones((len(texts), 2)) / np.sqrt(2)
    )
    got = dict(table.select("metric", "value").iter_rows())
    # "eiffel tower stands" holds it; "eiffel towers", "gustave eiffel tower" (possessive dropped) do not / do
    assert got["Answer Containment (whole words)"] == pytest.approx(2 / 3)
    assert got["Answer Containment"] == pytest.approx(1 / 3)  # lower-cased substring: only "Eiffel Towers"


def test_table_1_rules_on_their_own():
    assert release.lexical_overlap("the of", "is a") == 0.0  # only stop words: nothing to compare
    assert release.lexical_overlap("Paris France", "paris France") == pytest.approx(1 / 3)  # case kept
    assert release.contains_answer("Born in the U.S.A.", ["u.s."]) and not release.contains_answer(
        "Anything", [" ", ""]
    )


def test_table_1_names_passages_of_unknown_questions():
    with pytest.raises(ValueError, match="q9"):
        release.table1(
            T1_QUESTIONS, T1_CORPUS.with_columns(pl.lit("q9").alias("question_id")), T1_QRELS, cosine_six_tenths
        )


# --- Table 1's semantic overlap from a seeded sample of each question's passages -----------------


def test_the_overlap_sample_takes_n_passages_of_each_question_by_seed():
    ids = pl.Series(["q1"] * 7 + ["q2"] * 3 + ["q3"] * 5)
    mask = release.overlap_sample_mask(ids, 4, seed=13)
    assert mask.dtype == bool and len(mask) == 15
    # min(4, N_q) of each question: q2 has only 3 passages
    assert {q: int(mask[ids.to_numpy() == q].sum()) for q in ("q1", "q2", "q3")} == {"q1": 4, "q2": 3, "q3": 4}
    assert (release.overlap_sample_mask(ids, 4, seed=13) == mask).all()
    assert (release.overlap_sample_mask(ids, 4, seed=14) != mask).any()
    assert release.overlap_sample_mask(ids, None, seed=13) is None


def cosine_by_text(texts):
    # a question [1, 0]; a passage "cos <c>" at cosine c to it
    return np.array(
        [[1.0, 0.0] if not t.startswith("cos ") else [float(t[4:]), np.sqrt(1 - float(t[4:]) ** 2)] for t in texts]
    )


SAMPLED_QUESTIONS = pl.DataFrame(
    {"question_id": ["q1", "q2"], "question": ["First?", "Second?"], "answers": [["a"], ["b"]]}
)
SAMPLED_CORPUS = pl.DataFrame(
    {
        "passage_id": [f"p{i}" for i in range(8)],
        "question_id": ["q1"] * 4 + ["q2"] * 4,
        "text": [f"cos {c}" for c in (0.2, 0.4, 0.6, 0.8, 0.1, 0.3, 0.5, 0.9)],
        "num_hints": [1, 2, 3, 4] * 2,
    }
)
SAMPLED_QRELS = SAMPLED_CORPUS.select("question_id", "passage_id", pl.lit(1).alias("label"))


def test_a_sampled_overlap_is_the_stratified_mean_with_its_interval():
    # seed 1 takes passages 1 and 3 of each question: q1's cosines 0.2, 0.6; q2's 0.1, 0.9
    assert release.overlap_sample_mask(SAMPLED_CORPUS["question_id"], 2, seed=1).tolist() == [1, 0, 1, 0, 1, 0, 0, 1]
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return cosine_by_text(texts)

    table, overlap = release.table1_estimated(
        SAMPLED_QUESTIONS, SAMPLED_CORPUS, SAMPLED_QRELS, encode, sample=2, seed=1, encoder="stand-in, float32"
    )
    # the two questions, then only the four sampled passages
    assert calls == [2, 4] and (overlap.encoded, overlap.passages) == (4, 8)
    # means 0.4 and 0.5, each question half the corpus: 0.5 * 0.4 + 0.5 * 0.5 = 0.45 (every passage: 0.475)
    # variances (ddof 1): q1 (0.2^2 + 0.2^2) / 1 = 0.08, q2 (0.4^2 + 0.4^2) / 1 = 0.32
    # Var = 0.5^2 * (1 - 2/4) * 0.08 / 2 + 0.5^2 * (1 - 2/4) * 0.32 / 2 = 0.005 + 0.02 = 0.025
    # half-width 1.959964 * sqrt(0.025) = 0.309897
    assert overlap.value == pytest.approx(0.45)
    assert (overlap.ci_low, overlap.ci_high) == (pytest.approx(0.140103, abs=1e-6), pytest.approx(0.759897, abs=1e-6))
    row = table.filter(pl.col("metric") == "Query-Passage Semantic Overlap").row(0, named=True)
    assert (row["value"], row["ci_low"], row["ci_high"]) == (overlap.value, overlap.ci_low, overlap.ci_high)
    assert row["definition"] == (
        "mean cosine of question and passage embeddings, estimated from a seeded sample of 2 passages per question "
        "(4 of 8, seed 1), stratified by question; 95% interval [0.1401, 0.7599]; stand-in, float32"
    )
    # the other rows are exact, over every passage, and have no interval
    assert table.filter(pl.col("ci_low").is_not_null()).height == 1
    assert dict(table.select("metric", "value").iter_rows())["Total Passages"] == 8


def test_table_1_reads_every_passage_by_default_and_names_its_encoder():
    table, overlap = release.table1_estimated(
        SAMPLED_QUESTIONS, SAMPLED_CORPUS, SAMPLED_QRELS, cosine_by_text, encoder="minilm, float32"
    )
    assert overlap.value == pytest.approx(0.475) and overlap.ci_low is None and overlap.encoded == 8
    row = table.filter(pl.col("metric") == "Query-Passage Semantic Overlap").row(0, named=True)
    assert row["ci_low"] is None and row["ci_high"] is None
    assert row["definition"] == "mean cosine of question and passage embeddings, every passage; minilm, float32"


def test_every_passage_of_each_question_sampled_gives_the_exact_mean_and_no_width():
    overlap = release.table1_estimated(SAMPLED_QUESTIONS, SAMPLED_CORPUS, SAMPLED_QRELS, cosine_by_text, sample=4)[1]
    assert overlap.value == pytest.approx(0.475)
    assert overlap.ci_low == pytest.approx(overlap.value, abs=1e-12) == overlap.ci_high


def test_the_stratified_interval_covers_the_exact_mean_about_95_times_in_100():
    # 200 questions x 325 cosines: question means spread 0.11 about 0.47, passages 0.049 about theirs
    rng = np.random.default_rng(2024)
    cosines = (0.47 + 0.11 * rng.normal(size=(200, 1)) + 0.049 * rng.normal(size=(200, 325))).ravel()
    codes = np.repeat(np.arange(200), 325)
    ids, exact, sizes = pl.Series(codes), cosines.mean(), np.full(200, 325)

    def interval(n, seed):
        keep = release.overlap_sample_mask(ids, n, seed)
        c, y = codes[keep], cosines[keep]
        return release.stratified_interval(
            np.bincount(c, y, 200), np.bincount(c, y**2, 200), np.bincount(c, minlength=200), sizes
        )

    covered = [low <= exact <= high for _, low, high in (interval(4, seed) for seed in range(400))]
    assert 0.92 <= np.mean(covered) <= 0.98
    estimate, low, high = interval(325, 0)
    assert estimate == pytest.approx(exact, abs=1e-12) and high - low == pytest.approx(0, abs=1e-12)


class StandInEncoder(EncoderResource):
    def encode(self, texts, kind="passage", log=None):
        return cosine_by_text(texts)


@pytest.mark.parametrize("sample", [None, 2])
def test_the_statistics_asset_samples_by_its_settings_and_reports_the_interval(tmp_path, sample):
    stubs = {"benchmark_questions": SAMPLED_QUESTIONS, "benchmark_corpus": SAMPLED_CORPUS}
    result = dg.materialize(
        [statistics, stub("benchmark_qrels", SAMPLED_QRELS), *(stub(n, f) for n, f in stubs.items())],
        resources={
            "io_manager": ParquetIOManager(root=str(tmp_path)),
            "encoder": StandInEncoder(),
            "quit_settings": QuitSettings(semantic_overlap_sample=sample, seed=1),
        },
    )
    meta = result.asset_materializations_for_node("quit__statistics")[0].metadata
    assert meta["encoder"].value == "minilm, float32"
    if sample is None:
        assert meta["table1/semantic_overlap_sampled"].value == 8 and "table1/semantic_overlap_ci_low" not in meta
        assert meta["table1/Query-Passage Semantic Overlap"].value == pytest.approx(0.475)
    else:
        # the hand-computed interval above
        assert meta["table1/semantic_overlap_sampled"].value == 4
        assert meta["table1/semantic_overlap_ci_low"].value == pytest.approx(0.140103, abs=1e-6)
        assert meta["table1/semantic_overlap_ci_high"].value == pytest.approx(0.759897, abs=1e-6)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        QuitSettings(semantic_overlap_sample=1)


def test_make_run_prints_the_sampled_row_with_its_interval():
    from pipelines.summary import table_1_printed

    table = release.table1(SAMPLED_QUESTIONS, SAMPLED_CORPUS, SAMPLED_QRELS, cosine_by_text, sample=2, seed=1)
    cells = dict(table_1_printed(table).select("metric", "value").iter_rows())
    assert cells["Query-Passage Semantic Overlap"] == "0.45 [0.1401, 0.7599]"
    assert cells["Total Passages"] == "8.0"
