"""Bad input files (issue 28): every loader of a release, a source or a run file either
loads, rejects the bad record with a reason that names its line, or stops with an error that
names the file and line. Never a crash that names nothing, never a silent change.

The named cases come first (each one a crash or a silent change found by hand); then
properties over thousands of generated files. A generated file is small: hypothesis
varies what is in it, not how big it is."""

import csv
import io
import json
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from assets.common.records import SourceFormatError, read_json_list, read_records
from assets.quit import published as quit_published
from assets.quit import sources as quit_sources
from assets.recor import published as recor_published
from assets.recor import sources as recor_sources
from assets.wikiprofile import published as wp_published
from assets.wikiprofile import sources as wp_sources
from resources.retrieval import parse_trec_run, read_run_files
from tests.assets.quit.test_published import corpus_lines, entry, question, write_release

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000
NOT_UTF8 = b'{"title": "Caf\xe9"}'  # Latin-1, as a spreadsheet may save it
WP_SAMPLE = ROOT / "data" / "releases" / "wikiprofile" / "wikiprofile.csv"

# A file per example: fewer examples than the parsers get, and hypothesis must not count
# the writing as slowness.
FILES = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """One folder for a test's generated files, each example replacing the last."""
    return tmp_path_factory.mktemp("generated")


def put(path: Path, data: bytes) -> str:
    """``data`` as a new file at ``path``. The old file is removed first: on ext4 truncating
    a file just written waits for the disk (auto_da_alloc), 2 ms an example here, and so
    does removing a folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.write_bytes(data)
    return str(path)


def write_lines(path: Path, lines: list) -> str:
    """JSON Lines from records (dumped), str (written as is) and bytes (written raw)."""
    return put(
        path,
        b"".join(
            (x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode()) + b"\n"
            for x in lines
        ),
    )


# --- named cases ---------------------------------------------------------------------------------


def test_a_line_that_is_not_utf8_is_rejected_by_line_and_the_rest_loads(tmp_path):
    path = write_lines(tmp_path / "pages.jsonl", [{"a": 1}, NOT_UTF8, {"b": 2}])
    records = read_records(path)
    assert [w for w, _ in records] == [f"{path} line 1", f"{path} line 2", f"{path} line 3"]
    assert records[0][1] == {"a": 1} and records[2][1] == {"b": 2}
    assert isinstance(records[1][1], str) and "not UTF-8" in records[1][1]
    pages, rejects = wp_sources.load_pages(path)
    assert pages.height == 0 and rejects.height == 3
    assert f"{path} line 2" in rejects.filter(pl.col("detail").str.contains("UTF-8"))["detail"][0]


def test_a_whole_file_that_is_not_utf8_is_an_error_naming_its_line(tmp_path):
    path = tmp_path / "triviahg.json"
    path.write_bytes(b'[\n{"Q_ID": 1},\n' + NOT_UTF8 + b"\n]")
    with pytest.raises(SourceFormatError, match=rf"{path} line 3: not UTF-8"):
        read_json_list(str(path))
    with pytest.raises(SourceFormatError, match=rf"{path} line 3: not UTF-8"):
        read_records(str(path))
    csv_path = tmp_path / "wikiprofile.csv"
    csv_path.write_bytes(WP_SAMPLE.read_bytes().replace(b"Einstein", b"Einst\xe9in", 1))
    with pytest.raises(SourceFormatError, match=rf"{csv_path} line \d+: not UTF-8"):
        wp_published.load_release(str(csv_path))


def test_a_release_file_that_is_not_utf8_names_the_file_and_line(tmp_path):
    root = Path(write_release(tmp_path / "quit", test=[question("city_q_1")]))
    corpus = root / "corpus" / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes() + b'{"id": "city_q_1_01000_1", "contents": "\xff", "title": "city_q_1"}\n')
    out = quit_published.load_release(str(root))
    bad = out.rejects.filter(pl.col("reason") == "malformed").row(0, named=True)
    assert bad["detail"].startswith("corpus/corpus.jsonl line 4: not UTF-8") and out.corpus.height == 3
    (root / "dev.json").write_bytes(b"[\xff]")
    with pytest.raises(SourceFormatError, match="dev.json line 1: not UTF-8"):
        quit_published.load_release(str(root))
    bench = tmp_path / "recor" / "law_benchmark.jsonl"
    bench.parent.mkdir()
    bench.write_bytes(b'{"id": "c\xff"}\n')
    (tmp_path / "recor" / "law_documents.jsonl").write_text(json.dumps({"doc_id": "d1", "content": "text"}) + "\n")
    loaded = recor_published.load_release(str(tmp_path / "recor"), "law")
    assert loaded.rejects["reason"].to_list() == ["malformed_record"]
    assert "law_benchmark.jsonl line 1: not UTF-8" in loaded.rejects["detail"][0]


def test_a_line_nested_100000_deep_is_rejected_and_the_rest_loads(tmp_path):
    path = write_lines(tmp_path / "docs.jsonl", [{"id": "d1", "content": "one"}, DEEP, {"id": "d2", "content": "two"}])
    records = read_records(path)
    assert records[1][0] == f"{path} line 2" and records[1][1].startswith("not JSON (nested too deeply): [[[")
    loaded = recor_sources.load_bright("biology", write_lines(tmp_path / "q.jsonl", []), path)
    questions, documents, rejects = loaded.frames()
    assert documents["doc_id"].to_list() == ["d1", "d2"] and rejects["reason"].to_list() == ["malformed_document"]
    root = Path(write_release(tmp_path / "quit", test=[question("city_q_1")]))
    corpus = root / "corpus" / "corpus.jsonl"
    corpus.write_text(corpus.read_text() + DEEP + "\n")
    out = quit_published.load_release(str(root))
    assert out.rejects["detail"].to_list() == ["corpus/corpus.jsonl line 4: not JSON (nested too deeply)"]
    assert out.corpus.height == 3


def test_a_json_list_nested_too_deep_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "wikihint.json"
    path.write_text('[\n{"id": 1},\n' + DEEP + "\n]")
    with pytest.raises(SourceFormatError, match=rf"{path} line 3: a record nested too deeply"):
        read_json_list(str(path))


def test_a_number_too_long_to_read_is_rejected_by_line(tmp_path):
    path = write_lines(tmp_path / "docs.jsonl", ["1" * 5000, {"id": "d1", "content": "one"}])
    records = read_records(path)
    assert records[0][0] == f"{path} line 1" and records[0][1].startswith("not JSON (")
    assert records[1][1] == {"id": "d1", "content": "one"}
    whole = tmp_path / "big.json"
    whole.write_text("[1,\n" + "1" * 5000 + "]")
    with pytest.raises(SourceFormatError, match=rf"{whole} line 2"):
        read_json_list(str(whole))


def test_a_line_separator_inside_a_json_string_is_part_of_its_line(tmp_path):
    # json.dumps(ensure_ascii=False), as the releases are written, leaves U+2028, U+2029 and
    # U+0085 raw inside strings; only \n (and \r) end a JSON Lines record.
    text = "one\u2028two\u2029three\x85four"
    path = write_lines(tmp_path / "docs.jsonl", [json.dumps({"id": "d1", "content": text}, ensure_ascii=False)])
    assert read_records(path) == [(f"{path} line 1", {"id": "d1", "content": text})]


def test_a_string_holding_half_a_surrogate_pair_is_rejected_by_line(tmp_path):
    # JSON may escape half a pair alone; json.loads accepts it, polars and Parquet cannot hold it.
    lone = b'{"doc_id": "d\\ud800", "content": "text"}'
    pair = '{"doc_id": "d2", "content": "\\ud83d\\ude00"}'
    path = write_lines(tmp_path / "law_documents.jsonl", [lone, pair])
    records = read_records(path)
    assert records[0][1].startswith("not valid Unicode") and records[1][1] == {"doc_id": "d2", "content": "\U0001f600"}
    loaded = recor_published.parse_release("law", [], records)
    assert loaded.corpus["doc_id"].to_list() == ["d2"] and loaded.rejects["reason"].to_list() == ["malformed_record"]
    whole = tmp_path / "triviahg.json"
    whole.write_bytes(b'[{"Q_ID": 1},\n' + lone + b"]")
    with pytest.raises(SourceFormatError, match="line 2: a record that is not valid Unicode"):
        read_json_list(str(whole))


def test_an_options_cell_that_is_an_unhashable_literal_is_rejected(tmp_path):
    header, rows = wp_rows()
    rows[1]["direct_choices"] = "[{{}: 1}]"
    rows[2]["reverse_choices"] = "[" + "-" * 100_000 + "1]"
    benchmark, _, rejects = wp_published.parse_release(csv_text(header, rows), "wikiprofile.csv")
    assert rejects["reason"].to_list() == ["malformed_record", "malformed_record"]
    assert rejects["line"].to_list() == ["3", "4"]
    assert benchmark["fact_id"].n_unique() == len(rows) - 2


@pytest.mark.parametrize("answer", [None, 3, {"text": "Paris"}, ["Paris"], True])
def test_a_labeler_answer_that_is_not_a_string_is_rejected_not_relabeled(tmp_path, answer):
    # The rule's `_ga in answers` reads null or a number as a wrong answer: a label 2 would
    # silently become 1. The passage is rejected with its reason instead.
    q = question("city_q_1", entries={"10000_0": entry(("Paris", answer, "x")), "01000_1": entry(("Paris", "x", "x"))})
    out = quit_published.load_release(write_release(tmp_path, test=[q]))
    assert out.qrels.rows() == [("city_q_1", "city_q_1_01000_1", 2)]
    assert dict(zip(out.rejects["reason"], out.rejects["passage_id"])) == {
        "malformed": "city_q_1_10000_0",
        "unlabeled_passage": "city_q_1_10000_0",
    }
    detail = out.rejects.filter(pl.col("reason") == "malformed")["detail"][0]
    assert "qwen-3-4b" in detail and "not a string" in detail


def test_a_turn_without_gold_documents_is_a_named_reject(tmp_path):
    docs = [("d line 1", {"doc_id": "d1", "content": "text"})]
    turns = [
        {"turn_id": 1, "query": "q1", "answer": "a1", "gold_doc_ids": ["d1"]},
        {"turn_id": 2, "query": "q2", "answer": "a2", "gold_doc_ids": []},
        {"turn_id": 3, "query": "q3", "answer": "a3", "gold_doc_ids": [], "supporting_doc_ids": []},
        {"turn_id": 4, "query": "q4", "answer": "a4", "gold_doc_ids": ["d9"]},
    ]
    loaded = recor_published.parse_release("law", [("b line 1", {"id": "c1", "turns": turns})], docs)
    # every turn stays (the later turns' history needs them); those no metric can score are named
    assert loaded.benchmark["turn_id"].to_list() == [1, 2, 3, 4]
    no_gold = loaded.rejects.filter(pl.col("reason") == "no_gold")
    assert no_gold["item"].to_list() == ["c1_turn_2", "c1_turn_3", "c1_turn_4"]
    assert all(d.startswith("b line 1: turn ") for d in no_gold["detail"])
    assert set(loaded.rejects["reason"]) <= recor_published.REASONS


# --- generators ------------------------------------------------------------------------------------

# JSON values as a hostile file holds them: every type in every field, one level deep (deep
# nesting comes as raw lines; a recursive strategy cost more than the loads it fed).
leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = leaves | st.lists(leaves, max_size=3) | st.dictionaries(st.text(max_size=8), leaves, max_size=3)
# A raw line: a record, a broken, deep, huge or non-UTF-8 one, or anything at all.
raw_lines = st.one_of(
    json_values,
    st.sampled_from(
        [
            DEEP.encode(),
            NOT_UTF8,
            b"\xff\xfe",
            b"{",
            b"1" * 5000,
            b"",
            b"   ",
            "\u2028".encode(),
            b"\r",
            b'{"id": "d\\ud800", "content": "\\udfff", "title": "\\ud83d\\ude00"}',
        ]
    ),
    st.binary(max_size=30),
)


def mutated(record: dict) -> st.SearchStrategy:
    """``record`` with fields dropped or replaced by any JSON value, or not an object at all."""
    keys = sorted(record)
    replace = st.dictionaries(st.sampled_from(keys), json_values, max_size=3)
    drop = st.sets(st.sampled_from(keys), max_size=2)
    edited = st.builds(lambda r, d: {k: v for k, v in {**record, **r}.items() if k not in d}, replace, drop)
    return st.one_of(st.just(record), edited, json_values)


def reason_of(rejects: pl.DataFrame, vocabulary) -> None:
    """Every reject has a known reason and a detail."""
    assert set(rejects["reason"]) <= set(vocabulary), set(rejects["reason"]) - set(vocabulary)
    assert all(rejects["detail"]), rejects.filter(pl.col("detail") == "")


# --- common reading ---------------------------------------------------------------------------------


BRIGHT_QUERY = {
    "id": "0",
    "query": "Why?",
    "reasoning": "r",
    "gold_ids": ["d1"],
    "gold_answer": "Because.",
    "excluded_ids": ["N/A"],
}


@FILES
@given(
    lines=st.lists(
        st.one_of(
            mutated({"title": "Page", "summary": "word " * 60, "monthly_views": {"2025-04": 3}}),
            mutated({"id": "d1", "title": "Page", "contents": "Text.", "content": "Text."}),
            mutated(BRIGHT_QUERY),
            raw_lines,
        ),
        max_size=6,
    )
)
def test_any_json_lines_file_loads_record_by_record(folder, lines):
    # One generated file read by every JSON Lines loader: as pages, search pages, and a
    # BRIGHT domain's queries and documents.
    path = write_lines(folder / "any.jsonl", lines)
    records = read_records(path)
    wheres = [w for w, _ in records]
    assert len(set(wheres)) == len(wheres) and all(w.startswith(f"{path} line ") for w in wheres)
    pages, rejects = wp_sources.load_pages(path)
    reason_of(rejects, wp_sources.SOURCE_REASONS)
    assert pages.height + rejects.height == len(records)
    docs, rejects = wp_sources.load_search_pages(path)
    reason_of(rejects, wp_sources.SEARCH_PAGE_REASONS)
    assert docs.height + rejects.height == len(records)
    questions, documents, rejects = recor_sources.load_bright("biology", path, path).frames()
    reason_of(rejects, recor_sources.SOURCE_REASONS)
    assert questions.height + documents.height + rejects.height == 2 * len(records)


@FILES
@given(
    data=st.one_of(
        st.binary(max_size=60),
        st.lists(raw_lines, max_size=5).map(
            lambda xs: b"[" + b",\n".join(x if isinstance(x, bytes) else json.dumps(x).encode() for x in xs) + b"]"
        ),
    )
)
def test_any_json_list_file_reads_or_names_the_file(folder, data):
    path = folder / "any.json"
    put(path, data)
    try:
        records = read_json_list(str(path))
    except SourceFormatError as e:
        assert str(e).startswith(str(path))
    else:
        assert isinstance(records, list)


def test_a_run_file_that_is_not_utf8_names_the_file_and_line(tmp_path):
    (tmp_path / "test.trec").write_bytes(b"q1 Q0 d1 1 0.9 t\nq1 Q0 d\xe92 2 0.8 t\n")
    spec = SimpleNamespace(alias="bm25", path=str(tmp_path / "{part}.trec"))
    with pytest.raises(ValueError, match=r"test\.trec line 2"):
        read_run_files(spec, "quit", {"test": ["q1"]})


@settings(max_examples=2000, deadline=None)
@given(text=st.text())
@example("q1 Q0 d1 1 0.9 t\n\u2028q1 Q0 d2 2 0.8 t")
@example("q1 Q0 d1 " + "9" * 5000 + " 1e400 t")
@example("q1 Q0 d1 1 nan t")
def test_any_trec_run_text_parses_or_names_its_line(text):
    try:
        hits = parse_trec_run(text, "run.trec")
    except ValueError as e:
        assert str(e).startswith("run.trec line ")
    else:
        assert all(h.rank == n for ranked in hits.values() for n, h in enumerate(ranked, start=1))


# --- QUIT ---------------------------------------------------------------------------------------------

QUESTION = question(
    "city_q_1",
    answers=("Paris", "City of Light"),
    entries={"10000_0": entry(("Paris", "x", "x")), "01000_1": entry(), "11000_10": entry(("x", "City of Light", "x"))},
)


QUIT_CORPUS = corpus_lines([QUESTION, question("city_q_2")])


@FILES
@given(
    questions=st.lists(mutated(QUESTION), max_size=3),
    extra=st.lists(raw_lines, max_size=3),
    answers=st.lists(json_values, min_size=3, max_size=3),
)
def test_any_quit_release_loads_with_named_rejects(folder, questions, extra, answers):
    given_q = [
        *questions,
        {**question("city_q_2"), "subsets": {"10000": {"0": dict(zip(quit_published.LABELERS, answers))}}},
    ]
    for split in ("train", "dev"):
        put(folder / f"{split}.json", b"[]")
    put(folder / "test.json", json.dumps(given_q).encode())
    write_lines(folder / "corpus" / "corpus.jsonl", [*QUIT_CORPUS, *extra])
    out = quit_published.load_release(str(folder))
    reason_of(out.rejects, quit_published.REASONS)
    assert set(out.qrels["passage_id"]) == set(out.corpus["passage_id"])
    # a label 2 only from a labeler's string answer in the pool, every passage labeled from strings
    label = dict(zip(out.qrels["passage_id"], out.qrels["label"]))
    if "city_q_2_10000_0" in label:
        assert all(isinstance(a, str) for a in answers)
        assert label["city_q_2_10000_0"] == (2 if any(a in question("city_q_2")["answers"] for a in answers) else 1)


TRIVIAHG = {
    "Q_ID": 1,
    "Question": "Which city?",
    "ExactAnswer": ["Paris"],
    "Hints": [f"Clue {i}." for i in range(5)],
    "Snippet": ["a"],
    "Exact_Answer_Popularity": {"Normalized": 0.5},
    "Candidates_Answers": ["Rome"],
    "MajorType": "LOC",
    "MinorType": "city",
}
# WikiHint's records nest: each part is varied on its own.
WIKIHINT = st.builds(
    lambda q, a, hints, rest: {**rest, "question": q, "answer": a, "hints": hints},
    mutated(
        {
            "question": "Which river?",
            "question_type": {"major": "LOC", "minor": "other"},
            "difficulty": "easy",
            "candidate_answers": ["Nile", "Amazon"],
        }
    ),
    mutated({"answer": "Nile", "aliases": ["The Nile"]}),
    st.lists(mutated({"hint": "A hint.", "metrics": {"convergence": 0.5}}), min_size=4, max_size=6),
    st.one_of(st.just({"id": 2}), st.fixed_dictionaries({}, optional={"id": json_values})),
)


@FILES
@given(records=st.lists(st.one_of(mutated(TRIVIAHG), WIKIHINT), max_size=4))
def test_any_triviahg_or_wikihint_record_is_ingested_or_rejected_by_reason(records):
    out = quit_sources.ingest([("triviahg", records), ("wikihint", records)])
    rejects = quit_sources.REJECTS.frame(out.rejects)
    reason_of(rejects, quit_sources.SOURCE_REASONS)
    assert len(out.rows) + rejects.height == 2 * len(records)
    quit_sources.questions_frame(out.rows)


@FILES
@given(data=st.one_of(st.binary(max_size=40), json_values.map(lambda v: json.dumps(v).encode())))
def test_any_decisions_file_loads_or_names_the_file(folder, data):
    path = folder / "decisions.json"
    put(path, data)
    try:
        decisions = quit_sources.load_decisions(str(path))
    except ValueError as e:
        assert str(e).startswith(str(path))
    else:
        assert all(isinstance(d.get("accepted", []), list) for d in decisions.values())


# --- RECOR ---------------------------------------------------------------------------------------------

TURN = {
    "turn_id": 1,
    "query": "q",
    "answer": "a",
    "gold_doc_ids": ["d1"],
    "supporting_doc_ids": ["d2"],
    "conversation_history": "h",
    "subquestion_reasoning": "r",
    "subquestion_reasoning_metadata": {
        "target_information": "t",
        "relevance_signals": ["x"],
        "irrelevance_signals": [],
    },
}


def numbered(turns: list) -> list:
    """Turns numbered 1..n where the generator left the number alone."""
    return [
        {**t, "turn_id": n} if isinstance(t, dict) and t.get("turn_id") == 1 else t
        for n, t in enumerate(turns, start=1)
    ]


@FILES
@given(
    conversation=st.one_of(
        st.builds(lambda ts: {"id": "c1", "turns": numbered(ts)}, st.lists(mutated(TURN), max_size=3)),
        mutated({"id": "c1", "turns": [TURN]}),
    ),
    documents=st.lists(st.one_of(mutated({"doc_id": "d1", "content": "text"}), raw_lines), max_size=3),
    extra=st.lists(raw_lines, max_size=2),
)
def test_any_recor_release_loads_with_named_rejects(folder, conversation, documents, extra):
    write_lines(folder / "law_benchmark.jsonl", [conversation, *extra])
    write_lines(folder / "law_documents.jsonl", documents)
    loaded = recor_published.load_release(str(folder), "law")
    reason_of(loaded.rejects, recor_published.REASONS)
    named = set(loaded.rejects.filter(pl.col("reason") == "no_gold")["item"])
    assert {q for q, gold in loaded.benchmark.select("qid", "gold_doc_ids").iter_rows() if not gold} == named


ANSWER = {"is_accepted": True, "body": "<p>Yes &amp; no.</p>"}
PASSAGE = {"passage_index": 0, "passage": "A passage."}


@FILES
@given(
    records=st.lists(
        st.one_of(
            mutated(
                {
                    "question_id": 101,
                    "title": "Can it?",
                    "body": "<p>Body</p>",
                    "answers": [ANSWER],
                    "positive_passages": [PASSAGE],
                }
            ),
            st.builds(
                lambda a, p: {
                    "question_id": 7,
                    "title": "T",
                    "body": "<p>B</p>",
                    "answers": [a],
                    "positive_passages": [p],
                },
                mutated(ANSWER),
                mutated(PASSAGE),
            ),
        ),
        max_size=3,
    ),
    pool=st.lists(st.one_of(mutated({"id": "p1", "content": "text"}), raw_lines), max_size=3),
    body=st.text(max_size=20),
)
@example(
    records=[{"question_id": 1, "title": "T", "body": "<p>a\x00b\x0c</p>", "answers": 5, "positive_passages": 3}],
    pool=[],
    body="",
)
def test_any_stackexchange_domain_loads_with_named_rejects(folder, records, pool, body):
    records = [
        *records,
        {
            "question_id": 8,
            "title": "T",
            "body": body,
            "answers": [{**ANSWER, "body": body}],
            "positive_passages": [PASSAGE],
        },
    ]
    path = folder / "law.json"
    put(path, json.dumps(records).encode())
    pool_path = write_lines(folder / "pool.jsonl", pool)
    questions, documents, rejects = recor_sources.load_stackexchange("law", str(path), pool_path).frames()
    reason_of(rejects, recor_sources.SOURCE_REASONS)
    # every question record asked or rejected, every pool line a document or rejected
    bad_pool = rejects.filter(pl.col("reason") == "malformed_document").height
    assert questions.height + rejects.height - bad_pool == len(records)
    assert documents.filter(pl.col("role") == "pool").height + bad_pool == len(read_records(pool_path))


# --- WikiProfile --------------------------------------------------------------------------------------


def wp_rows() -> tuple[list[str], list[dict]]:
    reader = csv.DictReader(io.StringIO(WP_SAMPLE.read_text(encoding="utf-8"), newline=""))
    return list(reader.fieldnames), list(reader)


def csv_text(header: list[str], rows: list) -> str:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(header)
    for row in rows:
        writer.writerow([row.get(c, "") for c in header] if isinstance(row, dict) else row)
    return out.getvalue()


WP_HEADER, WP_ROWS = wp_rows()
cells = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "[{{}: 1}]",
            "[" + "-" * 5000 + "1]",
            "(" * 300,
            "1e999",
            "nan",
            "['a', 'b', 'c', 'd']",
            "[1, 2, 3, 4]",
            "\x00",
            "\ufeff",
            "PERSON",
        ]
    ),
)


@FILES
@given(
    edits=st.lists(st.tuples(st.integers(0, len(WP_ROWS) - 1), st.sampled_from(WP_HEADER), cells), max_size=4),
    raw=st.lists(st.lists(st.text(max_size=6), max_size=4), max_size=2),
)
def test_any_wikiprofile_csv_loads_with_named_rejects(edits, raw):
    rows = [dict(r) for r in WP_ROWS]
    for i, column, value in edits:
        rows[i][column] = value
    try:
        benchmark, pages, rejects = wp_published.parse_release(csv_text(WP_HEADER, [*rows, *raw]), "wikiprofile.csv")
    except ValueError as e:
        assert str(e).startswith("wikiprofile.csv line ")
        return
    reason_of(rejects, wp_published.REASONS)
    # every row loaded as a fact or rejected (an empty raw row is a blank line)
    assert benchmark["fact_id"].n_unique() + rejects.height == len(rows) + sum(1 for r in raw if r)
