import importlib.util
import json
import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from assets.common.records import SourceFormatError
from assets.quit import published, release, rules, sources
from checks.quit import release as qrelease
from checks.quit import steps as qsteps

SAMPLE = Path(__file__).resolve().parents[3] / "data" / "releases" / "quit"
LABELERS = ("gemma-3-1b", "qwen-3-4b", "llama-31-8b")
READERS = ("llama-32-1b", "gemma-3-4b", "qwen-3-8b")


def entry(labelers=("x", "x", "x"), readers=("x", "x", "x")) -> dict:
    return {**dict(zip(LABELERS, labelers)), **dict(zip(READERS, readers))}


def question(qid, answers=("Paris",), entries=None, **extra) -> dict:
    """A release question with five hints and, by default, three passages."""
    entries = entries if entries is not None else {"10000_0": entry(), "01000_1": entry(), "11000_10": entry()}
    subsets = {}
    for code, given in entries.items():
        mask, order = code.split("_")
        subsets.setdefault(mask, {})[order] = given
    return {
        "id": qid,
        "question": f"Question {qid}?",
        "answers": list(answers),
        "hints": [{"hint": f"Clue {i} of {qid}."} for i in range(5)],
        "subsets": subsets,
        **extra,
    }


def corpus_lines(questions: list[dict]) -> list[dict]:
    """The corpus the release's index.py derives from its questions' subsets."""
    return [
        {
            "id": f"{q['id']}_{mask}_{order}",
            "contents": " ".join(q["hints"][int(i)]["hint"] for i in order),
            "title": q["id"],
        }
        for q in questions
        for mask, orders in q["subsets"].items()
        for order in orders
    ]


def write_release(root: Path, train=(), dev=(), test=(), corpus=None) -> str:
    (root / "corpus").mkdir(parents=True, exist_ok=True)
    for name, records in (("train", train), ("dev", dev), ("test", test)):
        (root / f"{name}.json").write_text(json.dumps(list(records)))
    lines = corpus if corpus is not None else corpus_lines([*train, *dev, *test])
    (root / "corpus" / "corpus.jsonl").write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    )
    return str(root)


def reasons(rejects: pl.DataFrame) -> Counter:
    return Counter(rejects["reason"].to_list())


@pytest.fixture(scope="module")
def sample() -> published.Release:
    return published.load_release(str(SAMPLE))


# --- the bundled sample ---------------------------------------------------------------------


def test_the_sample_loads_with_zero_rejects_and_its_counts(sample):
    questions, corpus, qrels, rejects = sample
    assert rejects.height == 0
    assert dict(questions.group_by("split").len().iter_rows()) == {"train": 2, "dev": 2, "test": 2}
    assert corpus.height == qrels.height == 6 * 325
    assert corpus.group_by("question_id").len()["len"].to_list() == [325] * 6
    assert corpus["passage_id"].n_unique() == 1950
    assert set(qrels["label"].unique().to_list()) == {1, 2}
    # Counted once from the committed files (README); any change to the files or the rule shows here.
    assert dict(qrels.group_by("label").len().iter_rows()) == {2: 1394, 1: 556}
    one = questions.filter(pl.col("question_id") == "sample_test_02").row(0, named=True)
    assert one["answers"] == ["Jordan", "Hashemite Kingdom of Jordan"] and one["answer"] == "Jordan"
    assert one["hints"][0] == "Its capital is Amman." and one["split"] == "test"
    passage = corpus.filter(pl.col("passage_id") == "sample_test_02_10100_20").row(0, named=True)
    assert passage["text"] == "Abdullah II has been its king since 1999. Its capital is Amman."
    assert (passage["num_hints"], passage["hint_order"], passage["question_id"]) == (2, "20", "sample_test_02")


def test_the_committed_sample_is_the_generators_output():
    spec = importlib.util.spec_from_file_location("make_sample", SAMPLE / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    assert sorted(built) == ["corpus/corpus.jsonl", "dev.json", "test.json", "train.json"]
    for name, text in built.items():
        assert (SAMPLE / name).read_text(encoding="utf-8") == text, name


def test_the_sample_passes_the_benchmark_checks(sample):
    questions, corpus, qrels, _ = sample
    assert qrelease.benchmark_questions_suite(benchmark_questions=questions).passed
    assert qrelease.qrels_in_corpus(benchmark_qrels=qrels, benchmark_corpus=corpus).passed
    assert qrelease.corpus_no_leakage(benchmark_corpus=corpus, benchmark_questions=questions).passed
    assert qsteps.passages_per_question(passages=corpus).passed


def test_the_sample_ids_follow_the_projects_passage_codes(sample):
    for (qid,), group in sample.corpus.group_by("question_id"):
        assert sorted(p.removeprefix(f"{qid}_") for p in group["passage_id"]) == sorted(rules.ORDER_CODES), qid


def built_benchmark() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """One question through the project's own assembly (release.assemble), as the pipeline
    hands it the tables."""
    selected = pl.DataFrame(
        [
            {
                "question_id": "q",
                "source": "triviahg",
                "source_id": "Q_1",
                "question": "Which?",
                "answer": "Paris",
                "aliases": ["Paris"],
                "hints": [f"Clue {i}." for i in range(5)],
                "hint_convergence": [0.9] * 5,
                "candidate_answers": [],
                "difficulty": None,
            }
        ],
        schema=sources.QUESTION_SCHEMA,
    )
    splits = pl.DataFrame(
        {"question_id": ["q"], "parametric_answerable": [False], "split": ["test"], "labeled": [True]}
    )
    metadata = pl.DataFrame(
        {"question_id": ["q"], "question_type": ["LOC:city"], "difficulty": ["hard"], "reference_complexity": [0.8]}
    )
    passages = rules.passages_frame(selected.select("question_id", "hints"))
    labels = passages.select("passage_id", "question_id", "num_hints").with_columns(
        pl.lit(3, pl.UInt32).alias("labelers"),
        pl.lit(1, pl.Int8).alias("label"),
        pl.lit(None, pl.String).alias("error"),
    )
    assert dict(labels.schema) == rules.LABEL_SCHEMA
    pools = pl.DataFrame({"question_id": ["q"], "answer_pool": [["Paris"]]})
    return release.assemble(selected, splits, metadata, passages, labels, pools, sources.REJECTS.empty())


def test_the_frames_have_the_built_benchmarks_schemas(sample):
    built = built_benchmark()
    for loaded, made, schema in zip(
        sample[:3], built, (published.QUESTIONS_SCHEMA, published.CORPUS_SCHEMA, published.QRELS_SCHEMA)
    ):
        assert list(made.schema.items()) == list(schema.items())
        assert list(loaded.schema.items()) == list(schema.items())


def test_fields_the_release_lacks_are_null(sample):
    questions = sample.questions
    assert set(published.NOT_IN_RELEASE) == set(published.QUESTIONS_SCHEMA) - {
        "question_id",
        "split",
        "question",
        "answer",
        "answers",
        "hints",
    }
    for column in published.NOT_IN_RELEASE:
        assert questions[column].null_count() == questions.height, column


# --- the published field names ------------------------------------------------------------------


def test_the_published_field_names():
    # experiments/index/{train,dev,test}/index.py and finetuning/dpr/make_tevatron_inputs.py of
    # DataScienceUIBK/InferentialQA: q['id'], q['question'], q['answers'], hint['hint'],
    # q['subsets'][subset][perm][llm]; corpus lines {'id', 'contents', 'title'}.
    assert published.PUBLISHED_FIELDS == {
        "question": ("id", "question", "answers", "hints", "subsets"),
        "hint": ("hint",),
        "corpus": ("id", "contents", "title"),
    }
    assert published.LABELERS == LABELERS and published.READERS == READERS
    assert published.release_paths("s3://bucket/quit") == {
        "corpus/corpus.jsonl": "s3://bucket/quit/corpus/corpus.jsonl",
        "train.json": "s3://bucket/quit/train.json",
        "dev.json": "s3://bucket/quit/dev.json",
        "test.json": "s3://bucket/quit/test.json",
    }


def test_the_loader_reads_the_published_fields_and_only_those(tmp_path):
    q = question(
        "city_q_1",
        answers=("Paris", "City of Light"),
        entries={"10000_0": entry(("Paris", "x", "x")), "11000_10": entry()},
    )
    plain = published.load_release(write_release(tmp_path / "plain", test=[q]))
    assert plain.rejects.height == 0
    row = plain.questions.row(0, named=True)
    assert (row["question_id"], row["split"], row["question"], row["answer"], row["answers"]) == (
        "city_q_1",
        "test",
        "Question city_q_1?",
        "Paris",
        ["Paris", "City of Light"],
    )
    assert row["hints"] == [f"Clue {i} of city_q_1." for i in range(5)]
    assert plain.corpus.sort("passage_id").rows() == [
        ("city_q_1_10000_0", "city_q_1", 1, "0", "Clue 0 of city_q_1."),
        ("city_q_1_11000_10", "city_q_1", 2, "10", "Clue 1 of city_q_1. Clue 0 of city_q_1."),
    ]
    # Fields the authors' code does not read change nothing: not read, not required.
    extra = {
        **q,
        "question_type": "LOC:city",
        "difficulty": "hard",
        "hints": [{**h, "convergence": 0.5, "source": "wiki"} for h in q["hints"]],
    }
    lines = [{**line, "score": 3} for line in corpus_lines([q])]
    richer = published.load_release(write_release(tmp_path / "richer", test=[extra], corpus=lines))
    for a, b in zip(plain, richer):
        assert a.equals(b)
    # Each published field is required, by name.
    for field in published.PUBLISHED_FIELDS["question"]:
        out = published.load_release(
            write_release(
                tmp_path / f"no_{field}", test=[{k: v for k, v in q.items() if k != field}], corpus=corpus_lines([q])
            )
        )
        first = out.rejects.row(0, named=True)
        assert (first["reason"], first["step"]) == ("missing_field", "test.json") and f"no {field}" in first["detail"]
    for field in published.PUBLISHED_FIELDS["corpus"]:
        lines = corpus_lines([q])
        del lines[0][field]
        out = published.load_release(write_release(tmp_path / f"no_corpus_{field}", test=[q], corpus=lines))
        # the passage is lost, so its label points outside the corpus
        assert reasons(out.rejects) == {"missing_field": 1, "qrel_not_in_corpus": 1}
        assert f"line 1: no {field}" in out.rejects.filter(pl.col("reason") == "missing_field")["detail"][0]
    no_hint = {**q, "hints": [{"text": "Clue."}] + q["hints"][1:]}
    out = published.load_release(write_release(tmp_path / "no_hint", test=[no_hint], corpus=corpus_lines([q])))
    assert out.rejects["detail"][0] == "test.json record 0: hint 0 must be an object with a hint"


# --- labels ------------------------------------------------------------------------------------


def test_labels_follow_the_published_rule():
    assert published.release_label(["Rome", "Paris", "Lyon"], ["Paris"]) == 2
    assert published.release_label(["Rome", "Lyon", "Nice"], ["Paris"]) == 1
    # exact string membership, as `_ga in answers`: no normalization
    assert published.release_label(["paris", "Paris.", " Paris"], ["Paris"]) == 1
    assert published.release_label([None, None, None], ["Paris"]) == 1


def test_labels_from_a_hand_made_subsets_example(tmp_path):
    q = question(
        "city_q_2",
        answers=("Paris", "City of Light"),
        entries={
            "10000_0": entry(("Rome", "Lyon", "Nice")),  # no labeler right: 1
            "01000_1": entry(("Rome", "Lyon", "City of Light")),  # the third labeler's alias: 2
            "11000_01": entry(("paris", "PARIS", "Paris, France")),  # right, but not a pool string: 1
            "11000_10": entry(("Rome", "Rome", "Rome"), ("Paris", "Paris", "Paris")),  # only the readers right: 1
            "00100_2": entry(("Paris", "Paris", "Paris")),  # all three: 2
        },
    )
    out = published.load_release(write_release(tmp_path, dev=[q]))
    assert out.rejects.height == 0
    assert dict(out.qrels.select("passage_id", "label").iter_rows()) == {
        "city_q_2_10000_0": 1,
        "city_q_2_01000_1": 2,
        "city_q_2_11000_01": 1,
        "city_q_2_11000_10": 1,
        "city_q_2_00100_2": 2,
    }
    assert out.qrels["question_id"].unique().to_list() == ["city_q_2"]


def test_a_passage_without_every_labelers_answer_is_rejected_not_guessed(tmp_path):
    partial = {k: v for k, v in entry(("Paris", "x", "x")).items() if k != "qwen-3-4b"}
    q = question("city_q_3", entries={"10000_0": partial, "01000_1": entry()})
    out = published.load_release(write_release(tmp_path, train=[q]))
    assert reasons(out.rejects) == {"missing_field": 1, "unlabeled_passage": 1}
    assert set(out.rejects["passage_id"]) == {"city_q_3_10000_0"}
    assert "no answer of qwen-3-4b" in out.rejects.filter(pl.col("step") == "train.json")["detail"][0]
    assert out.qrels["passage_id"].to_list() == out.corpus["passage_id"].to_list() == ["city_q_3_01000_1"]


def test_a_question_whose_passages_all_lost_their_label_stays(tmp_path):
    """One null among a passage's six answers rejects that passage's label, not the question:
    the question is still evaluated (the published scripts count every question), without
    passages of its own, and the rejects say why."""
    q = question("city_q_4", entries={"10000_0": entry(("x", None, "x"))})
    out = published.load_release(write_release(tmp_path, test=[q, question("city_q_5")]))
    assert out.questions["question_id"].to_list() == ["city_q_4", "city_q_5"]
    assert reasons(out.rejects) == {"malformed": 1, "unlabeled_passage": 1}
    assert set(out.rejects["passage_id"]) == {"city_q_4_10000_0"}
    assert "city_q_4" not in out.qrels["question_id"] and "city_q_4" not in out.corpus["question_id"]


# --- rejects -----------------------------------------------------------------------------------


def test_a_malformed_copy_of_the_sample_is_rejected_with_reasons_while_the_rest_loads(tmp_path, sample):
    root = tmp_path / "quit"
    shutil.copytree(SAMPLE, root)
    train = json.loads((root / "train.json").read_text())
    dev = json.loads((root / "dev.json").read_text())
    lost = question("city_q_9", entries={"10000_0": entry()})
    (root / "train.json").write_text(
        json.dumps([*train, 42, {k: v for k, v in question("city_q_8").items() if k != "subsets"}, lost])
    )
    (root / "dev.json").write_text(json.dumps([*dev, train[0]]))
    lines = (root / "corpus" / "corpus.jsonl").read_text().splitlines()
    removed = next(i for i, line in enumerate(lines) if json.loads(line)["id"] == "sample_test_01_11000_01")
    kept = lines[:removed] + lines[removed + 1 :]
    no_contents = {k: v for k, v in json.loads(kept[0]).items() if k != "contents"}
    broken = kept + [
        '{"id": "sample_dev_01_10000_0", "contents": ',
        kept[5],
        json.dumps(no_contents),
        json.dumps({"id": "nobody_q_1_10000_0", "contents": "A clue.", "title": "nobody_q_1"}),
        json.dumps(corpus_lines([question("city_q_8")])[0]),
    ]
    (root / "corpus" / "corpus.jsonl").write_text("\n".join(broken) + "\n")

    questions, corpus, qrels, rejects = published.load_release(str(root))

    assert reasons(rejects) == {
        "malformed": 2,
        "missing_field": 2,
        "duplicate_id": 2,
        "unknown_question": 2,
        "qrel_not_in_corpus": 2,
        "no_passages": 1,
    }
    by = {
        (r["reason"], r["step"], r["question_id"], r["passage_id"]): r["detail"] for r in rejects.iter_rows(named=True)
    }
    assert (
        by[("malformed", "train.json", None, None)] == "train.json record 2: a question must be a JSON object, not int"
    )
    assert by[("missing_field", "train.json", "city_q_8", None)] == "train.json record 3: no subsets"
    assert "is already in train.json" in by[("duplicate_id", "dev.json", "sample_train_01", None)]
    dup = json.loads(kept[5])
    assert (
        f"line {len(kept) + 2}: passage {dup['id']} is already on line 6"
        in by[("duplicate_id", "corpus/corpus.jsonl", dup["title"], dup["id"])]
    )
    assert by[("malformed", "corpus/corpus.jsonl", None, None)].startswith(
        f"corpus/corpus.jsonl line {len(kept) + 1}: not JSON"
    )
    assert ("missing_field", "corpus/corpus.jsonl", no_contents["title"], no_contents["id"]) in by
    assert (
        "is in no question file" in by[("unknown_question", "corpus/corpus.jsonl", "nobody_q_1", "nobody_q_1_10000_0")]
    )
    assert "was rejected" in by[("unknown_question", "corpus/corpus.jsonl", "city_q_8", "city_q_8_10000_0")]
    assert ("qrel_not_in_corpus", "test.json", "sample_test_01", "sample_test_01_11000_01") in by
    assert ("qrel_not_in_corpus", "train.json", "city_q_9", "city_q_9_10000_0") in by
    assert ("no_passages", "train.json", "city_q_9", None) in by
    assert rejects["record"].null_count() == 3  # the derived rejects have no record of their own

    assert questions["question_id"].to_list() == sample.questions["question_id"].to_list()
    assert questions.filter(pl.col("question_id") == "sample_train_01")["split"].to_list() == ["train"]
    assert corpus.height == qrels.height == 1949
    assert qrelease.qrels_in_corpus(benchmark_qrels=qrels, benchmark_corpus=corpus).passed
    assert qrelease.benchmark_questions_suite(benchmark_questions=questions).passed


def test_passage_ids_must_be_the_question_id_and_a_permutation_code(tmp_path):
    q = question("city_q_4", entries={"10000_0": entry(), "1000_0": entry(), "11000_0": entry()})
    lines = corpus_lines([{**q, "subsets": {"10000": {"0": {}}}}]) + [
        {"id": "town_q_4_01000_1", "contents": "Clue 1.", "title": "city_q_4"}
    ]
    out = published.load_release(write_release(tmp_path, test=[q], corpus=lines))
    assert reasons(out.rejects) == {"bad_passage_id": 3}
    details = sorted(out.rejects["detail"])
    assert "1000_0 is not <five 0/1 digits>_<hint ranks 0-4>" in details[0] + details[1] + details[2]
    assert any("order 0 does not hold the 2 distinct hints its mask 11000 marks" in d for d in details)
    assert any("town_q_4_01000_1 does not start with its question id city_q_4" in d for d in details)
    assert out.corpus["passage_id"].to_list() == ["city_q_4_10000_0"]


def test_records_of_the_wrong_type_are_malformed(tmp_path):
    good = question("city_q_5")
    bad = [
        {**question("city_q_6"), "answers": []},
        {**question("city_q_7"), "hints": good["hints"][:4]},
        {**question("city_q_8"), "subsets": ["10000"]},
    ]
    lines = corpus_lines([good]) + [{"id": 7, "contents": "x", "title": "city_q_5"}, ["not", "an", "object"]]
    out = published.load_release(write_release(tmp_path, dev=[good, *bad], corpus=lines))
    assert reasons(out.rejects) == {"malformed": 5}
    details = out.rejects["detail"].to_list()
    assert details[:3] == [
        "dev.json record 1: answers must be a non-empty list of non-empty strings",
        "dev.json record 2: hints must be a list of 5 hint objects",
        "dev.json record 3: subsets must map hint subsets to hint orders",
    ]
    assert details[3].endswith("id must be non-empty strings") and details[4].endswith("not list")
    assert out.questions["question_id"].to_list() == ["city_q_5"] and out.corpus.height == 3


def test_a_missing_file_or_a_question_file_that_is_no_list_is_an_error(tmp_path):
    root = write_release(tmp_path / "a", test=[question("city_q_1")])
    (tmp_path / "a" / "dev.json").unlink()
    with pytest.raises(FileNotFoundError, match="lacks dev.json"):
        published.load_release(root)
    root = write_release(tmp_path / "b", test=[question("city_q_1")])
    (tmp_path / "b" / "train.json").write_text('{"id": "not a list"}')
    with pytest.raises(SourceFormatError, match="train.json: expected a JSON list"):
        published.load_release(root)
