"""RECOR's published release read into the built tables: the bundled sample, a broken copy,
the published field names, a round trip through the project's own release writer, and the
project's benchmark checks on what the loader returns."""

import importlib.util
import json
import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from assets.recor import published, release, steps
from assets.recor.published import load_release, parse_release

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "data" / "releases" / "recor"

# The fields the published code reads (RECOR-Benchmark/RECOR at ba05460), with where:
PUBLISHED_CONVERSATION = {
    "id",  # experiments/retrieval/run_retrieval.py: conv['id']; ablation_eval.py: conv['id']
    "turns",  # run_retrieval.py: conv.get('turns', []); ablation_eval.py: conv['turns']
}
PUBLISHED_TURN = {
    "turn_id",  # run_retrieval.py: f"{conv_id}_turn_{turn['turn_id']}"
    "query",  # run_retrieval.py, ablation_eval.py: turn['query']
    "answer",  # experiments/generation/generate_and_evaluate.py: t["answer"]; evaluate_last_turn.py: prev_turn.get('answer', ...)
    "gold_doc_ids",  # run_retrieval.py: turn.get('gold_doc_ids', [])
    "supporting_doc_ids",  # run_retrieval.py, ablation_eval.py, generate_and_evaluate.py: the fallback
    "conversation_history",  # ablation_eval.py: turn.get('conversation_history', '')
    "subquestion_reasoning",  # ablation_eval.py: turn.get('subquestion_reasoning', '')
    "subquestion_reasoning_metadata",  # ablation_eval.py: turn.get('subquestion_reasoning_metadata', {})
}
PUBLISHED_METADATA = {
    "target_information",
    "relevance_signals",
    "irrelevance_signals",
}  # ablation_eval.py, --append_reasoning_metadata
PUBLISHED_DOCUMENT = {"doc_id", "content"}  # run_retrieval.py load_corpus: data['doc_id'], data['content']
# README.md "Data Format": the conversation's other keys and its metadata, which no script reads.
PUBLISHED_UNREAD = {"task", "original_query", "original_answer", "metadata"}


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_jsonl(path: Path, rows: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


@pytest.mark.parametrize(
    "domain, conversations, turns, documents, positives",
    [("biology", ["biology_12", "biology_31"], 7, 18, 9), ("law", ["ex_41233", "ex_52871"], 6, 15, 6)],
)
def test_the_bundled_sample_loads_with_no_rejects(domain, conversations, turns, documents, positives):
    loaded = load_release(str(SAMPLE), domain)
    benchmark, corpus, rejects = loaded
    assert rejects.height == 0, rejects.to_dicts()
    assert (loaded.gold_from_supporting, loaded.history_derived) == (0, 0)
    assert benchmark.schema == pl.Schema(published.RELEASE_SCHEMA) and corpus.schema == pl.Schema(
        published.CORPUS_SCHEMA
    )
    assert sorted(benchmark["conversation_id"].unique()) == conversations and benchmark.height == turns
    assert corpus.height == documents and corpus.filter(pl.col("role") == "positive").height == positives
    assert set(benchmark["domain"]) == set(corpus["domain"]) == {domain}


def test_the_committed_sample_is_the_generators_output():
    spec = importlib.util.spec_from_file_location("make_recor_sample", SAMPLE / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built = module.build()
    assert sorted(built) == [
        "data/benchmark/biology_benchmark.jsonl",
        "data/benchmark/law_benchmark.jsonl",
        "data/corpus/biology_documents.jsonl",
        "data/corpus/law_documents.jsonl",
    ]
    for name, text in built.items():
        assert (SAMPLE / name).read_text(encoding="utf-8") == text, name


def test_a_sample_turn_maps_onto_the_turn_columns():
    benchmark, corpus, _ = load_release(str(SAMPLE), "biology")
    t = benchmark.filter(pl.col("qid") == "biology_31_turn_3").row(0, named=True)
    assert (t["conversation_id"], t["turn_id"]) == ("biology_31", 3)
    assert t["query"] == "Is it true they can also survive radiation? What protects their DNA?"
    assert t["gold_doc_ids"] == ["tardigrade_survival/Dsup_3.txt"]
    assert t["target"] == "the tardigrade protein that protects DNA from radiation damage"
    assert t["relevance_signals"] == ["Dsup", "nucleosome binding", "X-ray", "DNA damage"]
    assert t["irrelevance_signals"] == ["Deinococcus radiodurans", "DNA repair in bacteria"]
    assert t["subquestion_reasoning"].startswith("The user moves from drying to radiation")
    assert t["conversation_history"].startswith(
        "Q: How can tardigrades survive being completely dried out?\nA: They enter"
    )
    assert t["conversation_history"].count("Q: ") == 2
    # what the release does not hold
    assert all(
        t[c] is None
        for c in (
            "aspect_id",
            "doc_scores",
            "facts",
            "llm_on_aspect",
            "llm_natural",
            "question_origin",
            "answer_origin",
        )
    )
    dsup = corpus.filter(pl.col("doc_id") == "tardigrade_survival/Dsup_3.txt").row(0, named=True)
    assert (dsup["role"], dsup["question_id"]) == ("positive", "biology_31")
    assert corpus.filter(pl.col("role") == "negative")["question_id"].null_count() == 9


def test_the_sample_uses_the_published_field_names():
    for domain in ("biology", "law"):
        for conv in lines(SAMPLE / "data" / "benchmark" / f"{domain}_benchmark.jsonl"):
            assert set(conv) == PUBLISHED_CONVERSATION | PUBLISHED_UNREAD
            for turn in conv["turns"]:
                assert set(turn) == PUBLISHED_TURN - {"supporting_doc_ids"}
                assert set(turn["subquestion_reasoning_metadata"]) == PUBLISHED_METADATA
        for doc in lines(SAMPLE / "data" / "corpus" / f"{domain}_documents.jsonl"):
            assert set(doc) == PUBLISHED_DOCUMENT


def test_the_loader_reads_exactly_the_published_fields_into_their_columns():
    assert set(published.CONVERSATION_FIELDS) == PUBLISHED_CONVERSATION
    assert set(published.TURN_FIELDS) | {published.GOLD_FALLBACK, published.METADATA} == PUBLISHED_TURN
    assert set(published.METADATA_FIELDS) == PUBLISHED_METADATA and set(published.DOCUMENT_FIELDS) == PUBLISHED_DOCUMENT
    # every published field carries a value of its own into the column the mapping names
    turn = {
        "turn_id": 1,
        "query": "the query",
        "answer": "the answer",
        "gold_doc_ids": ["d1"],
        "conversation_history": "the history",
        "subquestion_reasoning": "the reasoning",
        "subquestion_reasoning_metadata": {
            "target_information": "the target",
            "relevance_signals": ["rel"],
            "irrelevance_signals": ["irr"],
        },
    }
    loaded = parse_release(
        "law", [("b line 1", {"id": "c1", "turns": [turn]})], [("d line 1", {"doc_id": "d1", "content": "text"})]
    )
    row = loaded.benchmark.row(0, named=True)
    for field, column in published.TURN_FIELDS.items():
        assert row[column] == turn[field]
    for field, column in published.METADATA_FIELDS.items():
        assert row[column] == turn["subquestion_reasoning_metadata"][field]
    assert (row["conversation_id"], row["qid"]) == ("c1", "c1_turn_1")
    assert loaded.corpus.select("doc_id", "content").row(0) == ("d1", "text")


def test_gold_falls_back_to_supporting_doc_ids_and_a_missing_history_is_the_published_text():
    docs = [("d", {"doc_id": d, "content": f"text {d}"}) for d in ("d1", "d2")]
    turns = [
        {"turn_id": 1, "query": "q1", "answer": "a1", "supporting_doc_ids": ["d1"]},
        {"turn_id": 2, "query": "q2", "answer": "a2", "gold_doc_ids": [], "supporting_doc_ids": ["d2"]},
        {"turn_id": 3, "query": "q3", "answer": "a3", "gold_doc_ids": ["d2"], "supporting_doc_ids": ["d1"]},
    ]
    loaded = parse_release("law", [("b line 1", {"id": "c1", "turns": turns})], docs)
    assert loaded.rejects.height == 0
    assert loaded.benchmark["gold_doc_ids"].to_list() == [["d1"], ["d2"], ["d2"]]
    assert loaded.gold_from_supporting == 2 and loaded.history_derived == 3
    assert loaded.benchmark["conversation_history"].to_list() == [
        "No previous conversation.",
        "Q: q1\nA: a1",
        "Q: q1\nA: a1\nQ: q2\nA: a2",
    ]
    assert (
        loaded.benchmark["target"].to_list() == [None] * 3
        and loaded.benchmark["relevance_signals"].to_list() == [[]] * 3
    )
    neither = parse_release(
        "law", [("b line 1", {"id": "c2", "turns": [{"turn_id": 1, "query": "q", "answer": "a"}]})], docs
    )
    assert neither.benchmark.height == 0 and neither.rejects["reason"].to_list() == ["missing_field"]
    assert "neither 'gold_doc_ids' nor 'supporting_doc_ids'" in neither.rejects["detail"][0]


def test_a_broken_copy_is_rejected_by_reason_and_the_rest_loads(tmp_path):
    convs = lines(SAMPLE / "data" / "benchmark" / "law_benchmark.jsonl")
    docs = lines(SAMPLE / "data" / "corpus" / "law_documents.jsonl")
    recipes = json.loads(json.dumps(convs[1]))
    recipes["turns"][1]["gold_doc_ids"] = ["law_ex_52871_doc_1", "law_ex_99999_doc_0"]
    no_answer = json.loads(json.dumps(convs[0]))
    no_answer["id"] = "ex_10001"
    del no_answer["turns"][2]["answer"]
    gap = json.loads(json.dumps(convs[0]))
    gap["id"] = "ex_10002"
    gap["turns"][2]["turn_id"] = 4
    write_jsonl(
        tmp_path / "data" / "benchmark" / "law_benchmark.jsonl",
        [convs[0], '{"id": "ex_10003", "turns": [', recipes, no_answer, convs[0], gap],
    )
    write_jsonl(
        tmp_path / "data" / "corpus" / "law_documents.jsonl",
        [*docs, {"doc_id": "law_ex_41233_doc_0", "content": "a second text under a used id"}, {"doc_id": "law_x"}],
    )
    benchmark, corpus, rejects = load_release(str(tmp_path), "law")
    bench_file = str(tmp_path / "data" / "benchmark" / "law_benchmark.jsonl")
    got = {(r["reason"], r["conversation_id"], r["item"]) for r in rejects.iter_rows(named=True)}
    assert got == {
        ("malformed_record", None, f"{bench_file} line 2"),
        ("missing_field", "ex_10001", f"{bench_file} line 4"),
        ("duplicate_id", "ex_41233", f"{bench_file} line 5"),
        ("turn_numbering", "ex_10002", f"{bench_file} line 6"),
        ("gold_not_in_corpus", "ex_52871", "ex_52871_turn_2"),
        ("duplicate_document", None, "law_ex_41233_doc_0"),
        ("missing_field", None, f"{tmp_path / 'data' / 'corpus' / 'law_documents.jsonl'} line 17"),
    }
    assert Counter(rejects["reason"]) == {
        "missing_field": 2,
        "malformed_record": 1,
        "duplicate_id": 1,
        "turn_numbering": 1,
        "gold_not_in_corpus": 1,
        "duplicate_document": 1,
    }
    assert set(rejects["reason"]) <= published.REASONS and set(rejects["step"]) == {"release"}
    details = {r["item"]: r["detail"] for r in rejects.iter_rows(named=True)}
    assert "gold document 'law_ex_99999_doc_0' of turn 2" in details["ex_52871_turn_2"]
    assert details[f"{bench_file} line 4"].endswith("turn 3 has no 'answer'")
    assert details[f"{bench_file} line 6"].endswith("turn ids [1, 2, 4], expected 1..3")
    # the two good conversations load whole; the bad reference is gone, the turn's other gold kept
    assert sorted(benchmark["conversation_id"].unique()) == ["ex_41233", "ex_52871"] and benchmark.height == 6
    assert benchmark.filter(pl.col("qid") == "ex_52871_turn_2")["gold_doc_ids"].to_list() == [["law_ex_52871_doc_1"]]
    # the first of a repeated document is kept
    assert corpus.height == 15
    assert corpus.filter(pl.col("doc_id") == "law_ex_41233_doc_0")["content"][0].startswith("In common-law systems")


def test_a_missing_field_names_the_turn():
    turns = [
        {"turn_id": 1, "query": "q1", "answer": "a1", "gold_doc_ids": []},
        {"turn_id": 2, "query": "q2", "gold_doc_ids": []},
    ]
    loaded = parse_release("law", [("f line 1", {"id": "c1", "turns": turns})], [])
    assert loaded.rejects.select("reason", "detail").row(0) == ("missing_field", "f line 1: turn 2 has no 'answer'")


def test_split_names_and_layouts(tmp_path):
    """Partition keys and the published split names find the same files, in the dataset's
    layout, its data folder, or the project's flat export folder."""
    conv = {"id": "ex_1", "turns": [{"turn_id": 1, "query": "q", "answer": "a", "gold_doc_ids": ["d1"]}]}
    write_jsonl(tmp_path / "flat" / "Drones_benchmark.jsonl", [conv])
    write_jsonl(
        tmp_path / "flat" / "Drones_documents.jsonl", [{"doc_id": "d1", "content": "A quadcopter has four rotors."}]
    )
    shutil.copytree(tmp_path / "flat", tmp_path / "data_folder" / "benchmark")
    shutil.copytree(tmp_path / "flat", tmp_path / "data_folder" / "corpus")
    for root in ("flat", "data_folder"):
        for name in ("drones", "Drones"):
            benchmark, corpus, rejects = load_release(str(tmp_path / root), name)
            assert (
                rejects.height == 0
                and benchmark["domain"].to_list() == ["drones"]
                and corpus["domain"].to_list() == ["drones"]
            )
    with pytest.raises(FileNotFoundError, match="no RECOR release of 'medicalsciences'"):
        load_release(str(tmp_path / "flat"), "medical_sciences")


def test_an_export_by_the_project_writer_reads_back(tmp_path):
    questions = pl.DataFrame(
        [
            {
                "domain": "medical_sciences",
                "source": "stackexchange",
                "question_id": "medical_sciences_7",
                "query": "Why do antibiotics not work on colds?",
                "answer": "Colds are viral.",
                "reasoning": "",
                "gold_ids": ["d1", "d2"],
                "excluded_ids": [],
            }
        ]
    )
    rows = [
        {
            "domain": "medical_sciences",
            "conversation_id": "medical_sciences_7",
            "turn_id": i,
            "aspect_id": f"a{i}",
            "query": q,
            "answer": a,
            "gold_doc_ids": g,
            "doc_scores": "{}",
            "conversation_history": "built history",
            "target": t,
            "relevance_signals": r,
            "irrelevance_signals": x,
            "facts": ["f"],
            "llm_on_aspect": True,
            "llm_natural": True,
            "question_origin": "follow_up",
            "answer_origin": "model",
        }
        for i, (q, a, g, t, r, x) in enumerate(
            [
                ("What causes a cold?", "Mostly rhinoviruses.", ["d1"], "the viruses behind colds", ["rhinovirus"], []),
                (
                    "Why don't antibiotics help?",
                    "They act on bacteria, not viruses.",
                    ["d2", "d1"],
                    "how antibiotics work",
                    ["bacterial cell wall"],
                    ["antiviral drugs"],
                ),
                ("What does help?", "Rest and fluids while it passes.", ["d2"], "", [], []),
            ],
            1,
        )
    ]
    turns = pl.DataFrame(rows, schema=steps.TURN_SCHEMA)
    records = release.conversation_records(turns, questions, {})
    (tmp_path / "medicalsciences_benchmark.jsonl").write_text(release.jsonl(records))
    (tmp_path / "medicalsciences_documents.jsonl").write_text(
        release.jsonl([{"doc_id": d, "content": f"text of {d}"} for d in ("d1", "d2")])
    )
    back, corpus, rejects = load_release(str(tmp_path), "medical_sciences")
    assert rejects.height == 0 and back["domain"].unique().to_list() == ["medical_sciences"]
    same = [
        "conversation_id",
        "turn_id",
        "query",
        "answer",
        "gold_doc_ids",
        "target",
        "relevance_signals",
        "irrelevance_signals",
    ]
    assert back.select(same).to_dicts() == turns.select(same).to_dicts()
    assert back["qid"].to_list() == [f"medical_sciences_7_turn_{i}" for i in (1, 2, 3)]
    # the release's history and guidance, as the writer composed them
    assert back["conversation_history"].to_list() == [
        "No previous conversation.",
        "Q: What causes a cold?\nA: Mostly rhinoviruses.",
        "Q: What causes a cold?\nA: Mostly rhinoviruses.\n"
        "Q: Why don't antibiotics help?\nA: They act on bacteria, not viruses.",
    ]
    assert back["subquestion_reasoning"].to_list() == [
        "Find documents that contain the viruses behind colds. Relevant signals: rhinovirus.",
        "Find documents that contain how antibiotics work. Relevant signals: bacterial cell wall. Irrelevant signals: antiviral drugs.",
        "",
    ]
    # written again from what was read, the release is the same bytes
    again = release.conversation_records(back.drop("qid"), questions, {})
    assert release.jsonl(again) == release.jsonl(records)


def test_the_loaded_tables_pass_the_benchmark_checks_and_feed_the_evaluation():
    from assets.eval.recor import rules as conversational
    from assets.eval.recor import steps as generation
    from assets.recor.settings import RecorSettings
    from checks.recor import release as rrelease
    from checks.recor import steps as rsteps

    for domain in ("biology", "law"):
        benchmark, corpus, _ = load_release(str(SAMPLE), domain)
        conversations = (
            benchmark.group_by("domain", "conversation_id")
            .agg(pl.len().cast(pl.Int32).alias("num_turns"))
            .with_columns(pl.lit(True).alias("coherent"), pl.lit(True).alias("valid"), pl.lit("").alias("problems"))
            .select(list(rsteps.CONVERSATION_SCHEMA))
        )
        results = {
            "benchmark schema": rrelease.benchmark_schema(frame=benchmark),
            "benchmark conversations": rrelease.benchmark_conversations(
                benchmark=benchmark, conversations=conversations, recor_settings=RecorSettings(profile="demo")
            ),
            "gold in corpus": rrelease.benchmark_gold_in_corpus(benchmark=benchmark, corpus=corpus),
            "corpus schema": rsteps.corpus_schema(frame=corpus),
        }
        assert {name: r.passed for name, r in results.items()} == dict.fromkeys(results, True), {
            name: r.metadata for name, r in results.items() if not r.passed
        }
        # the evaluation's own readers take the tables as they are: the history it composes is the one released
        queries = conversational.strategy_queries(benchmark, {}, {})
        assert queries.height == benchmark.height * len(conversational.STRATEGY_TEXT)
        assert not queries.filter(pl.col("strategy").is_in(["reasoning", "history_reasoning"]))["fallback"].any()
        first = benchmark.sort("conversation_id", "turn_id").row(0, named=True)
        reasoning = queries.filter((pl.col("qid") == first["qid"]) & (pl.col("strategy") == "reasoning"))["query"][0]
        assert reasoning == f"{first['query']}\n\nReasoning:\n{first['subquestion_reasoning']}"
        recomposed = release.with_release_text(benchmark)
        assert (
            recomposed["history"].to_list()
            == benchmark.sort("conversation_id", "turn_id")["conversation_history"].to_list()
        )
        oracle = [i for i in generation.contexts(benchmark, corpus, {}) if i["mode"] == "oracle"]
        assert len(oracle) == benchmark.height and all(i["passages"] for i in oracle)
