import json

import polars as pl
import pytest

from assets.common.records import SourceFormatError
from assets.recor.sources import html_text, load_bright, load_stackexchange


def write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return str(path)


def test_bright_keeps_good_queries_and_rejects_by_name(tmp_path):
    docs = write_jsonl(
        tmp_path / "documents.jsonl",
        [
            {"id": "aging/Aging_0.txt", "content": "Mutation accumulation explains ageing."},
            {"id": "aging/Evolution_1.txt", "content": "Selection weakens with age."},
            {"id": "aging/Other_2.txt", "content": "Telomeres shorten."},
            {"id": "aging/Other_2.txt", "content": "a duplicate"},
            {"id": "aging/Empty.txt", "content": "  "},
        ],
    )
    examples = write_jsonl(
        tmp_path / "examples.jsonl",
        [
            {
                "id": "0",
                "query": "Why no longer life?",
                "reasoning": "Needs ageing theory.",
                "gold_ids": ["aging/Aging_0.txt", "aging/Evolution_1.txt"],
                "gold_answer": "Selection is weak late in life.",
                "excluded_ids": ["N/A"],
            },
            {"id": "1", "query": "Q?", "gold_ids": ["aging/Missing.txt"], "gold_answer": "A."},
            {"id": "2", "query": "", "gold_ids": ["aging/Aging_0.txt"], "gold_answer": "A."},
            "{not json",
        ],
    )
    questions, documents, rejects = load_bright("biology", examples, docs).frames()
    assert questions["question_id"].to_list() == ["biology_0"]
    assert questions.row(0, named=True)["excluded_ids"] == [] and questions["reasoning"][0] == "Needs ageing theory."
    roles = dict(documents.select("doc_id", "role").iter_rows())
    assert roles == {
        "aging/Aging_0.txt": "positive",
        "aging/Evolution_1.txt": "positive",
        "aging/Other_2.txt": "negative",
    }
    reasons = dict(zip(rejects["question_id"], rejects["reason"]))
    assert reasons["biology_1"] == "gold_not_in_corpus" and reasons["biology_2"] == "malformed_record"
    assert reasons["aging/Other_2.txt"] == "duplicate_document"
    assert any(r.endswith("line 4") for r in rejects["question_id"]) and rejects.height == 5
    assert "aging/Missing.txt" in rejects.filter(pl.col("reason") == "gold_not_in_corpus")["detail"][0]


def test_stackexchange_takes_the_accepted_answer_and_positives(tmp_path):
    records = [
        {
            "question_id": 101,
            "site": "law.stackexchange.com",
            "title": "Can a verbal contract bind?",
            "body": "<p>I agreed by phone.</p><ul><li>No paper</li></ul>",
            "tags": ["contracts"],
            "answers": [
                {"answer_id": 1, "is_accepted": False, "body": "<p>No idea.</p>"},
                {"answer_id": 2, "is_accepted": True, "body": "<p>Often yes &amp; here is why.</p>"},
            ],
            "positive_passages": [
                {"passage_index": 0, "passage": "Oral contracts are generally enforceable."},
                {"passage_index": 1, "passage": "Some contracts must be in writing."},
            ],
        },
        {
            "question_id": 102,
            "title": "No accepted",
            "body": "<p>x</p>",
            "answers": [{"body": "<p>y</p>"}],
            "positive_passages": [{"passage_index": 2, "passage": "p"}],
        },
        {
            "question_id": 103,
            "title": "No positives",
            "body": "<p>x</p>",
            "answers": [{"is_accepted": True, "body": "<p>y</p>"}],
        },
    ]
    path = tmp_path / "law.json"
    path.write_text(json.dumps(records))
    pool = write_jsonl(
        tmp_path / "law_pool.jsonl", [{"id": "law_pool_0", "content": "The statute of frauds dates from 1677."}]
    )
    questions, documents, rejects = load_stackexchange("law", str(path), pool).frames()
    q = questions.row(0, named=True)
    assert q["question_id"] == "law_101" and q["answer"] == "Often yes & here is why."
    assert q["query"] == "Can a verbal contract bind?\nI agreed by phone.\nNo paper"
    assert q["gold_ids"] == ["law_101_p0", "law_101_p1"]
    assert documents.filter(pl.col("role") == "pool")["doc_id"].to_list() == ["law_pool_0"]
    assert dict(zip(rejects["question_id"], rejects["reason"])) == {
        "law_102": "no_accepted_answer",
        "law_103": "no_positive_passages",
    }


def test_a_file_that_is_not_a_json_list_is_an_error_naming_it(tmp_path):
    path = tmp_path / "drones.json"
    path.write_text('{"question_id": 1}')
    with pytest.raises(SourceFormatError, match="drones.json: expected a JSON list"):
        load_stackexchange("drones", str(path))
    assert html_text("<p>a</p><p>b<br>c</p>") == "a\nb\nc"


@pytest.mark.parametrize(
    "domain",
    [
        "biology",
        "earth_science",
        "economics",
        "psychology",
        "robotics",
        "sustainable_living",
        "drones",
        "hardware",
        "law",
        "medical_sciences",
        "politics",
    ],
)
def test_every_bundled_domain_loads_cleanly(domain):
    from assets.recor.settings import RecorSettings

    questions, documents, rejects = RecorSettings().load(domain).frames()
    assert rejects.is_empty(), rejects.to_dicts()
    assert questions.height >= 2 and all(len(g) >= 2 for g in questions["gold_ids"])
    assert all(len(a.split()) >= 150 for a in questions["answer"])
    roles = dict(documents.group_by("role").len().iter_rows())
    assert roles["positive"] >= 4 and roles.get("negative", 0) + roles.get("pool", 0) >= 20


def test_a_domains_fingerprint_changes_with_its_files_only(tmp_path):
    import shutil

    from assets.recor.settings import ROOT, RecorSettings

    shutil.copytree(ROOT / "data" / "recor", tmp_path / "recor")
    registry = tmp_path / "sources.yaml"
    registry.write_text(
        (ROOT / "assets" / "recor" / "sources.yaml").read_text().replace("data/recor/", f"{tmp_path}/recor/")
    )
    settings = RecorSettings(sources_path=str(registry))
    before = {d: settings.fingerprint(d) for d in ("law", "biology", "politics")}
    pool = tmp_path / "recor" / "stackexchange" / "law_pool.jsonl"
    pool.write_text(pool.read_text() + '{"id": "law_pool_new", "content": "A new document about bailment."}\n')
    after = {d: settings.fingerprint(d) for d in ("law", "biology", "politics")}
    assert after["law"] != before["law"]
    assert after["biology"] == before["biology"] and after["politics"] == before["politics"]
    # the same files elsewhere are the same sources
    assert (
        RecorSettings().fingerprint("biology") == before["biology"]
        and RecorSettings().fingerprint("law") == before["law"]
    )


def test_the_source_files_are_observed_per_domain_upstream_of_the_build():
    import dagster as dg

    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    node = graph.get(dg.AssetKey(["recor", "source_questions"]))
    assert dg.AssetKey(["recor", "source_files"]) in node.parent_keys
    assert (
        graph.get(dg.AssetKey(["recor", "source_files"])).partitions_def.get_partition_keys()
        == node.partitions_def.get_partition_keys()
    )
