"""The export formats, checked by the readers the community uses: ``datasets.load_dataset``
reads the Hugging Face folder, ``mlcroissant`` validates the Croissant JSON-LD and reads
every record set, BEIR's ``GenericDataLoader`` reads the BEIR folder; and ``read_beir``
names every line of a bad BEIR folder that it cannot use."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import polars as pl
import pytest
import yaml

from assets.common.formats import Card, TableFile, croissant_metadata, read_beir, write_beir, write_hf_dataset
from assets.common.formats.beir import QRELS_SCHEMA, REASONS, SCHEMAS
from assets.common.formats.huggingface import size_category
from assets.common.records import SourceFormatError
from resources.storage import read_bytes

# Nothing here may reach the Hub: the readers load local folders only.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

QUESTIONS = pl.DataFrame(
    {
        "question_id": ["q1", "q2", "q3"],
        "question": ["Où est la tour Eiffel ?", "東京タワーの高さは？", None],
        "hints": [["Paris", "fer"], [], None],
        "score": [1.5, None, 2.0],
        "turns": [3, None, 12],
        "leaks": [False, True, None],
    }
)
PASSAGES = pl.DataFrame({"passage_id": ["p1", "p2"], "text": ["Ä passage\u2028with a line separator", "plain"]})
CARD = Card(
    pretty_name="QUIT — test build",
    summary="Questions with hint passages, built for a test.",
    citation="@inproceedings{quit2025,\n  title = {QUIT},\n  year = {2025}\n}",
    license="cc-by-4.0",
    task_categories=["text-retrieval", "question-answering"],
    run_id="run-7f3a",
    tags=["retrieval", "reasoning"],
    profile="demo",
    sizes={"questions": 3, "passages per question": 325},
    funnel=[("source questions", 40), ("hints kept", 12), ("questions kept", 3)],
    models={"hint writer": "local/smollm2-135m", "judge": "hosted_vllm/qwen3-8b"},
    code_versions={"quit/questions": "3", "quit/passages": "5"},
)


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    """The Hugging Face folder of two configurations, the dev split streamed in two batches."""
    folder = tmp_path_factory.mktemp("hf")
    export = write_hf_dataset(
        str(folder),
        {
            "questions": {"test": QUESTIONS, "dev": iter([QUESTIONS.head(1), QUESTIONS.tail(2)])},
            "passages": {"test": PASSAGES},
        },
        CARD,
    )
    return folder, export


def front_matter(readme: str) -> tuple[dict, str]:
    assert readme.startswith("---\n")
    header, body = readme[4:].split("\n---\n", 1)
    return yaml.safe_load(header), body


def test_hf_folder_loads_with_datasets(hf_folder, tmp_path):
    import datasets

    folder, export = hf_folder
    assert export.rows == {
        "data/questions/test-00000-of-00001.parquet": 3,
        "data/questions/dev-00000-of-00001.parquet": 3,
        "data/passages/test-00000-of-00001.parquet": 2,
    }
    cache = str(tmp_path / "cache")
    default = datasets.load_dataset(str(folder), cache_dir=cache)  # the first configuration
    assert {split: default[split].num_rows for split in default} == {"test": 3, "dev": 3}
    assert default["test"].column_names == QUESTIONS.columns
    assert default["dev"]["question"] == QUESTIONS["question"].to_list()
    assert default["dev"]["hints"] == [["Paris", "fer"], [], None]
    assert default["test"]["turns"] == [3, None, 12]
    passages = datasets.load_dataset(str(folder), "passages", cache_dir=cache)
    assert list(passages) == ["test"]
    assert passages["test"].column_names == ["passage_id", "text"]
    assert passages["test"]["text"] == PASSAGES["text"].to_list()


def test_the_card_declares_the_configs_and_tells_how_it_was_built(hf_folder):
    folder, _ = hf_folder
    header, body = front_matter((folder / "README.md").read_text(encoding="utf-8"))
    assert header["configs"] == [
        {
            "config_name": "questions",
            "data_files": [
                {"split": "test", "path": "data/questions/test-00000-of-00001.parquet"},
                {"split": "dev", "path": "data/questions/dev-00000-of-00001.parquet"},
            ],
            "default": True,
        },
        {
            "config_name": "passages",
            "data_files": [{"split": "test", "path": "data/passages/test-00000-of-00001.parquet"}],
        },
    ]
    assert header["license"] == "cc-by-4.0"
    assert header["task_categories"] == ["text-retrieval", "question-answering"]
    assert header["size_categories"] == ["n<1K"]
    assert header["pretty_name"] == "QUIT — test build"
    assert header["language"] == ["en"]
    assert header["tags"] == ["retrieval", "reasoning"]
    assert f"```bibtex\n{CARD.citation}\n```" in body
    for row in (
        "| build run id | run-7f3a |",
        "| profile | demo |",
        "| passages per question | 325 |",
        "| source questions | 40 |",
        "| questions kept | 3 |",
        "| judge | hosted_vllm/qwen3-8b |",
        "| quit/passages | 5 |",
        "| dev | 3 | `data/questions/dev-00000-of-00001.parquet` |",
        "| `hints` | List(String) |",
        "| `leaks` | Boolean |",
        "| `text` | String |",
    ):
        assert row in body, row


@pytest.mark.parametrize(
    "rows, bucket",
    [
        (0, "n<1K"),
        (999, "n<1K"),
        (1_000, "1K<n<10K"),
        (99_999, "10K<n<100K"),
        (2_400_000, "1M<n<10M"),
        (10**12, "n>1T"),
    ],
)
def test_size_category_uses_the_hubs_buckets(rows, bucket):
    assert size_category(rows) == bucket


def test_size_category_counts_the_largest_configuration(tmp_path):
    big = pl.DataFrame({"i": range(1_500)})
    export = write_hf_dataset(str(tmp_path), {"small": {"test": big.head(10)}, "big": {"test": big}}, CARD)
    assert export.size_category == "1K<n<10K"


@pytest.mark.parametrize(
    "configs, message",
    [
        ({"questions": {"test": QUESTIONS, "dev": QUESTIONS.drop("hints")}}, "split 'dev' has columns"),
        ({"questions": {"test-set": QUESTIONS}}, "split name 'test-set'"),
        ({"../up": {"test": QUESTIONS}}, "configuration name '../up'"),
        ({"questions": {"test": iter([])}}, "no batches"),
    ],
)
def test_a_folder_datasets_could_not_load_is_refused(tmp_path, configs, message):
    with pytest.raises(ValueError, match=message):
        write_hf_dataset(str(tmp_path), configs, CARD)
    assert not (tmp_path / "README.md").exists()


CORPUS = pl.DataFrame(
    {
        "_id": ["d1", "d2", "d3"],
        "title": ["Café Müller", None, "東京"],
        "text": ["a line\u2028separator", 'a "quoted"\nnewline', ""],
        "metadata": [{"source": "wiki", "rank": 1}, None, {"source": "web", "rank": 2}],
    }
)
QUERIES = pl.DataFrame({"_id": ["q1", "q2", "q3"], "text": ["Where is it?", "Où ?", "どこ？"]})
QRELS = {
    "test": pl.DataFrame(
        {"query-id": ["q1", "q1", "q2", "q3"], "corpus-id": ["d1", "d2", "d3", "d1"], "score": [2, 1, 0, 1]}
    ),
    "dev": iter([pl.DataFrame({"query-id": ["q2"], "corpus-id": ["d1"], "score": [1]})]),
}


@pytest.fixture(scope="module")
def beir_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beir")
    written = write_beir(str(folder), CORPUS, iter([QUERIES.head(2), QUERIES.tail(1)]), QRELS)
    return folder, written


def test_beirs_own_loader_reads_the_folder(beir_folder):
    from beir.datasets.data_loader import GenericDataLoader

    folder, written = beir_folder
    assert written == {"corpus.jsonl": 3, "queries.jsonl": 3, "qrels/test.tsv": 4, "qrels/dev.tsv": 1}
    corpus, queries, qrels = GenericDataLoader(data_folder=str(folder)).load(split="test")
    assert corpus == {
        "d1": {"title": "Café Müller", "text": "a line\u2028separator"},
        "d2": {"title": "", "text": 'a "quoted"\nnewline'},
        "d3": {"title": "東京", "text": ""},
    }
    assert queries == {"q1": "Where is it?", "q2": "Où ?", "q3": "どこ？"}
    assert qrels == {"q1": {"d1": 2, "d2": 1}, "q2": {"d3": 0}, "q3": {"d1": 1}}
    _, dev_queries, dev_qrels = GenericDataLoader(data_folder=str(folder)).load(split="dev")
    assert dev_queries == {"q2": "Où ?"} and dev_qrels == {"q2": {"d1": 1}}
    assert (folder / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[0] == "query-id\tcorpus-id\tscore"


def test_read_beir_gives_back_what_was_written(beir_folder):
    folder, _ = beir_folder
    data = read_beir(str(folder), "test")
    assert data.rejects.height == 0
    expected = CORPUS.with_columns(pl.col("title").fill_null(""))
    assert data.corpus.drop("metadata").equals(expected.drop("metadata"))
    assert [None if m is None else json.loads(m) for m in data.corpus["metadata"]] == CORPUS["metadata"].to_list()
    assert data.queries.drop("metadata").equals(QUERIES)
    assert data.queries["metadata"].null_count() == 3
    assert data.qrels.equals(QRELS["test"])
    assert data.counts["documents"] == 3 and data.counts["queries"] == 3 and data.counts["qrels"] == 4
    dev = read_beir(str(folder), "dev")
    assert dev.queries["_id"].to_list() == ["q2"]
    # the queries dev does not judge are kept out of its scoring, by name
    assert dev.rejects.select("line", "reason").rows() == [("1", "query_without_qrels"), ("3", "query_without_qrels")]


def test_croissant_describes_and_mlcroissant_reads_every_table(hf_folder, beir_folder, tmp_path):
    import mlcroissant

    # one release folder: the Hugging Face files, and the BEIR folder under beir/
    folder = tmp_path / "release"
    shutil.copytree(hf_folder[0], folder)
    shutil.copytree(beir_folder[0], folder / "beir")
    export = hf_folder[1]
    tables = {f"{f.config}_{f.split}": TableFile(f.path) for f in export.files}
    tables |= {
        "corpus": TableFile("beir/corpus.jsonl", schema=SCHEMAS["corpus.jsonl"]),
        "queries": TableFile("beir/queries.jsonl", schema=SCHEMAS["queries.jsonl"]),
        "qrels_test": TableFile("beir/qrels/test.tsv", schema=SCHEMAS["qrels"]),
    }
    metadata = croissant_metadata(
        str(folder),
        "quit-test",
        "A test build of QUIT.",
        "https://spdx.org/licenses/CC-BY-4.0",
        CARD.citation,
        "https://example.org/quit",
        "1.0.0",
        tables,
        date_published="2025-06-01",
    )
    assert json.loads((folder / "croissant.json").read_text(encoding="utf-8")) == metadata
    dataset = mlcroissant.Dataset(jsonld=str(folder / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors and not dataset.metadata.ctx.issues.warnings
    rows = {name: list(dataset.records(record_set=name)) for name in tables}
    assert {name: len(records) for name, records in rows.items()} == {
        "questions_test": 3,
        "questions_dev": 3,
        "passages_test": 2,
        "corpus": 3,
        "queries": 3,
        "qrels_test": 4,
    }
    first = rows["questions_dev"][0]
    assert first["questions_dev/question"].decode("utf-8") == "Où est la tour Eiffel ?"
    assert [h.decode("utf-8") for h in first["questions_dev/hints"]] == ["Paris", "fer"]
    assert rows["questions_dev"][2]["questions_dev/question"] is None
    assert [r["corpus/title"].decode("utf-8") for r in rows["corpus"]] == ["Café Müller", "", "東京"]
    assert [r["qrels_test/score"] for r in rows["qrels_test"]] == [2, 1, 0, 1]


def test_croissant_files_carry_their_checksums_and_types(hf_folder):
    folder, export = hf_folder
    path = export.files[0].path
    metadata = croissant_metadata(
        str(folder),
        "q",
        "d",
        "https://spdx.org/licenses/CC-BY-4.0",
        "c",
        "https://e.org",
        "1.0.0",
        {"q": TableFile(path)},
    )
    assert metadata["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert metadata["@context"]["cr"] == "http://mlcommons.org/croissant/"
    (file_object,) = metadata["distribution"]
    data = (folder / path).read_bytes()
    assert file_object["sha256"] == hashlib.sha256(data).hexdigest()
    assert file_object["contentSize"] == f"{len(data)} B"
    assert file_object["contentUrl"] == path and file_object["encodingFormat"] == "application/x-parquet"
    fields = {f["name"]: f for f in metadata["recordSet"][0]["field"]}
    assert {name: f["dataType"] for name, f in fields.items()} == {
        "question_id": "sc:Text",
        "question": "sc:Text",
        "hints": "sc:Text",
        "score": "sc:Float",
        "turns": "sc:Integer",
        "leaks": "sc:Boolean",
    }
    assert fields["hints"]["isArray"] is True and "isArray" not in fields["question"]
    assert fields["score"]["source"] == {"fileObject": {"@id": path}, "extract": {"column": "score"}}


def test_croissant_refuses_a_column_it_cannot_type(tmp_path):
    pl.DataFrame({"id": ["a"], "meta": [{"k": 1}]}).write_parquet(tmp_path / "t.parquet")
    with pytest.raises(ValueError, match="t.parquet column 'meta'"):
        croissant_metadata(str(tmp_path), "t", "d", "l", "c", "u", "1.0.0", {"t": TableFile("t.parquet")})


GOOD = {
    "corpus.jsonl": ['{"_id": "d1", "title": "T", "text": "one"}', '{"_id": "d2", "text": "two"}'],
    "queries.jsonl": ['{"_id": "q1", "text": "first?"}', '{"_id": "q2", "text": "second?"}'],
    "qrels/test.tsv": ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t2"],
}


def write_folder(root, extra: dict[str, bytes] | None = None, drop: tuple[str, ...] = ()):
    for name, lines in GOOD.items():
        if name in drop:
            continue
        (root / name).parent.mkdir(exist_ok=True)
        data = "\n".join(lines).encode("utf-8") + b"\n" + (extra or {}).get(name, b"")
        (root / name).write_bytes(data)
    return str(root)


@pytest.mark.parametrize(
    "file, line, reason, detail",
    [
        ("corpus.jsonl", b'{"_id": "d9", "text": ', "malformed_line", "not JSON"),
        ("corpus.jsonl", b'["d9", "a list"]', "malformed_line", "a JSON list, not an object"),
        ("corpus.jsonl", b'{"_id": "d9", "text": "caf\xe9"}', "malformed_line", "not UTF-8"),
        ("corpus.jsonl", b'{"_id": "d9", "title": "no text"}', "missing_field", "no text"),
        ("queries.jsonl", b'{"text": "no id?"}', "missing_field", "no _id"),
        ("corpus.jsonl", b'{"_id": "d9", "text": 7}', "bad_field", "text is a int"),
        ("corpus.jsonl", b'{"_id": "d9", "text": NaN}', "bad_field", "text is a float"),
        ("corpus.jsonl", b'{"_id": "d9", "text": "\\ud800 half a pair"}', "malformed_line", "not valid Unicode"),
        ("corpus.jsonl", b'{"_id": "d1", "text": "again"}', "duplicate_id", "read first at line 1"),
        ("qrels/test.tsv", b"q1\td2\t1.5", "bad_score", "'1.5' is not an integer"),
        ("qrels/test.tsv", b"q9\td1\t1", "unknown_query", "query 'q9' is not in queries.jsonl"),
        ("qrels/test.tsv", b"q1\td9\t1", "unknown_document", "document 'd9' is not in corpus.jsonl"),
        ("qrels/test.tsv", b"q1\td1\t0", "duplicate_qrel", "judged 1 at line 2"),
        ("qrels/test.tsv", b"q1\td2", "missing_field", "no score"),
        ("qrels/test.tsv", b"q1\tQ0\td2\t1", "malformed_line", "4 tab-separated fields"),
        (
            "queries.jsonl",
            b'{"_id": "q3", "text": "not judged?"}',
            "query_without_qrels",
            "no judgment in qrels/test.tsv",
        ),
    ],
)
def test_read_beir_names_each_bad_line(tmp_path, file, line, reason, detail):
    data = read_beir(write_folder(tmp_path, {file: line + b"\n"}), "test")
    assert reason in REASONS
    line_number = len(GOOD[file]) + 1
    (row,) = data.rejects.iter_rows(named=True)
    assert (row["file"], row["line"], row["step"], row["reason"]) == (file, str(line_number), "beir", reason)
    assert detail in row["detail"]
    assert data.counts["rejects"] == 1 and data.counts[f"rejects/{reason}"] == 1
    # the good records are all kept, and the first of a duplicate is the one kept
    assert data.corpus.select("_id", "text").rows() == [("d1", "one"), ("d2", "two")]
    assert data.queries["_id"].to_list() == ["q1", "q2"]
    assert data.qrels.rows() == [("q1", "d1", 1), ("q2", "d2", 2)]


def test_ids_and_metadata_are_read_as_pythons_json_reads_them(tmp_path):
    """The fast reading (orjson) and Python's agree: an integer id past 64 bits stays an
    integer's digits, not a float's; a blank line is no record; blocks of the frame join in
    file order."""
    import assets.common.formats.beir as layout

    big = b'{"_id": 123456789012345678901234567890, "text": "big", "metadata": {"n": 98765432109876543210}}'
    folder = write_folder(tmp_path, {"corpus.jsonl": b"\n" + big + b"\n"})
    (tmp_path / "qrels" / "test.tsv").write_bytes(b"q1\t123456789012345678901234567890\t1\nq2\td2\t2\n")
    original = layout._BLOCK
    try:
        layout._BLOCK = 1
        data = read_beir(folder, "test")
    finally:
        layout._BLOCK = original
    assert data.corpus["_id"].to_list() == ["d1", "d2", "123456789012345678901234567890"]
    assert data.corpus["metadata"][2] == '{"n": 98765432109876543210}'
    assert data.qrels.rows() == [("q1", "123456789012345678901234567890", 1), ("q2", "d2", 2)]
    assert data.rejects.height == 0


def test_a_first_qrels_line_that_is_a_judgment_is_read(tmp_path):
    folder = write_folder(tmp_path)
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td1\t1\nq2\td2\t2\n", encoding="utf-8")
    data = read_beir(folder, "test")
    assert data.qrels.height == 2 and data.rejects.height == 0


def test_a_missing_split_is_an_error_naming_the_file(tmp_path):
    folder = write_folder(tmp_path)
    with pytest.raises(
        FileNotFoundError, match=r"qrels/dev\.tsv: no judgments for split 'dev' \(splits found: \['test'\]\)"
    ):
        read_beir(folder, "dev")


@pytest.mark.parametrize(
    "file, content, message",
    [
        ("corpus.jsonl", b"\x1f\x8b\x08\x00gzip\n\xff\xfe\n", r"corpus\.jsonl line 1: not UTF-8"),
        ("queries.jsonl", b"[1, 2]\n", r"queries\.jsonl line 1: a JSON list, not an object"),
        ("queries.jsonl", b"\n", r"queries\.jsonl: empty"),
        ("qrels/test.tsv", b"query-id\tcorpus-id\tscore\n", r"test\.tsv: no judgment after the header"),
        ("qrels/test.tsv", b"query-id\tQ0\tcorpus-id\tscore\nq1\tQ0\td1\t1\n", r"test\.tsv line 2: 4 tab-separated"),
    ],
)
def test_a_wholly_unreadable_file_is_an_error_naming_it(tmp_path, file, content, message):
    folder = write_folder(tmp_path)
    (tmp_path / file).write_bytes(content)
    with pytest.raises(SourceFormatError, match=message):
        read_beir(folder, "test")


def test_a_missing_corpus_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"corpus\.jsonl"):
        read_beir(write_folder(tmp_path, drop=("corpus.jsonl",)), "test")


@pytest.mark.parametrize(
    "corpus, qrels, message",
    [
        (CORPUS.with_columns(text=pl.lit(None, pl.String)), QRELS_SCHEMA, "without an _id or text"),
        (CORPUS.with_columns(extra=pl.lit(1)), QRELS_SCHEMA, r"columns .*extra"),
        (CORPUS, {"query-id": pl.String, "corpus-id": pl.String, "score": pl.Float64}, "BEIR's judgments are integers"),
    ],
)
def test_write_beir_refuses_what_beir_could_not_read(tmp_path, corpus, qrels, message):
    with pytest.raises(ValueError, match=message):
        write_beir(str(tmp_path), corpus, QUERIES, {"test": pl.DataFrame(schema=qrels)})
    assert not list(tmp_path.rglob("*.tmp")), "a refused file was left half written"


def test_the_formats_are_written_to_and_read_from_s3(s3_server, monkeypatch, tmp_path):
    """The same writers and reader on an ``s3://`` folder (moto): the bytes a local export
    writes, and the same dataset read back."""
    import boto3

    for name, value in (
        ("AWS_ENDPOINT_URL", s3_server.endpoint_url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", s3_server.region),
    ):
        monkeypatch.setenv(name, value)
    boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name=s3_server.region).create_bucket(
        Bucket="exports"
    )
    qrels = {"test": QRELS["test"]}
    write_beir(str(tmp_path), CORPUS, QUERIES, qrels)
    write_beir("s3://exports/beir", CORPUS, QUERIES, qrels)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert read_bytes(f"s3://exports/beir/{name}") == (tmp_path / name).read_bytes(), name
    remote, local = read_beir("s3://exports/beir", "test"), read_beir(str(tmp_path), "test")
    assert remote.corpus.equals(local.corpus) and remote.qrels.equals(local.qrels) and remote.counts == local.counts
    with pytest.raises(FileNotFoundError, match=r"s3://exports/beir/qrels/dev\.tsv.*splits found: \['test'\]"):
        read_beir("s3://exports/beir", "dev")
    export = write_hf_dataset("s3://exports/hf", {"passages": {"test": PASSAGES}}, CARD)
    metadata = croissant_metadata(
        "s3://exports/hf", "p", "d", "l", "c", "u", "1.0.0", {"p": TableFile(export.files[0].path)}
    )
    data = read_bytes(f"s3://exports/hf/{export.files[0].path}")
    assert metadata["distribution"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    assert json.loads(read_bytes("s3://exports/hf/croissant.json")) == metadata
    assert (
        front_matter(read_bytes("s3://exports/hf/README.md").decode("utf-8"))[0]["configs"][0]["config_name"]
        == "passages"
    )
