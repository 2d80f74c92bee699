"""A RECOR release as the RETECO commands read it (assets/recor/published.py,
``reteco.release_targets``, ``pipelines.reteco``): every file of the release read or named,
the target turns counted, and a release that cannot be scored as asked refused with a message
that says what to do, never a traceback. Each release is a few lines under tmp_path."""

import json
from pathlib import Path

import pytest

from assets.eval.recor.reteco import rules as reteco
from assets.recor import published
from pipelines import reteco as cli


def conversation(cid: str, turns: int = 1, gold: str = "d1") -> dict:
    return {
        "id": cid,
        "turns": [
            {"turn_id": n, "query": f"q{n}", "answer": f"a{n}", "gold_doc_ids": [f"{gold}"]}
            for n in range(1, turns + 1)
        ],
    }


def write(root: Path, spelled: str, conversations: list, documents: list | None = None) -> None:
    """A domain's two files in the dataset layout, named ``spelled`` as given."""
    documents = [{"doc_id": "d1", "content": "A quadcopter has four rotors."}] if documents is None else documents
    for folder, kind, rows in (("benchmark", "benchmark", conversations), ("corpus", "documents", documents)):
        path = root / "data" / folder / f"{spelled}_{kind}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def run_file(path: Path, targets: reteco.Targets) -> Path:
    path.write_text(
        "".join(
            f"{q} Q0 {sorted(targets.gold[p])[0]} 1 1.0 mine\n"
            for p, q in targets.turns.select("qid", "task_qid").iter_rows()
        )
    )
    return path


def test_a_domain_spelled_in_lower_case_is_read_and_each_file_named(tmp_path):
    write(tmp_path, "biology", [conversation("b1", 3)])
    write(tmp_path, "drones", [conversation("ex_1", 4)])  # the published split name is Drones
    said = []
    targets = reteco.release_targets(str(tmp_path), log=said.append)
    assert targets.turns.group_by("domain").len().sort("domain").rows() == [("biology", 3), ("drones", 4)]
    assert targets.total == 7 and "7 of 7 target turns in the files read are scored" in targets.coverage()
    assert any(str(tmp_path / "data" / "benchmark" / "drones_benchmark.jsonl") in line for line in said)
    assert published.release_domains(str(tmp_path)) == ["biology", "drones"]


def test_a_release_file_that_names_no_domain_is_an_error_unless_domains_are_named(tmp_path):
    write(tmp_path, "biology", [conversation("b1", 3)])
    write(tmp_path, "Dronez", [conversation("ex_1", 4)])
    (tmp_path / "data" / "benchmark" / "law-benchmark.jsonl").write_text("{}\n")
    stray = str(tmp_path / "data" / "benchmark" / "Dronez_benchmark.jsonl")
    with pytest.raises(reteco.ReleaseError, match="--domain") as refused:
        reteco.release_targets(str(tmp_path))
    assert stray in str(refused.value) and "'Dronez' is no RECOR domain" in str(refused.value)
    assert str(refused.value).startswith(f"3 files under {tmp_path} would not be read")
    assert "law-benchmark.jsonl (named neither <domain>_benchmark.jsonl" in str(refused.value)
    said = []
    targets = reteco.release_targets(str(tmp_path), ["biology"], log=said.append)
    assert targets.turns.height == 3 and any(stray in line and "not read" in line for line in said)


def test_the_count_says_which_target_turns_of_the_files_are_not_scored(tmp_path):
    broken = conversation("b2", 2)
    broken["turns"][1]["turn_id"] = 5  # turns 1 and 5: rejected whole, both turns unscored
    write(tmp_path, "biology", [conversation("b1", 3), broken])
    targets = reteco.release_targets(str(tmp_path))
    assert (targets.turns.height, targets.total) == (3, 5)
    assert targets.coverage().startswith("3 of 5 target turns in the files read are scored (biology 3)")


def test_conversation_ids_shared_by_two_domains_end_the_command_with_a_message(tmp_path, capsys):
    # BRIGHT numbers its questions per domain: "2" is a conversation of both
    write(tmp_path, "biology", [conversation("2", 2)])
    write(tmp_path, "economics", [conversation("2", 1), conversation("7", 1)])
    with pytest.raises(ValueError, match=r"2#turn1 in biology, economics"):
        reteco.release_targets(str(tmp_path))
    run = tmp_path / "mine.trec"
    run.write_text("2#turn1 Q0 d1 1 1.0 mine\n")
    assert cli.main(["score", "--release", str(tmp_path), str(run)]) == 2
    err = capsys.readouterr().err
    assert "2#turn1 in biology, economics" in err and "--domain biology" in err and "Traceback" not in err
    assert cli.main(["check", "--release", str(tmp_path), "--domain", "economics", str(run)]) == 0


def test_a_relative_release_is_read_from_the_current_folder(tmp_path, monkeypatch, capsys):
    write(tmp_path / "RECOR", "law", [conversation("ex_1", 2)])
    targets = reteco.release_targets(str(tmp_path / "RECOR"))
    run = run_file(tmp_path / "mine.trec", targets)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--release", "RECOR", str(run)]) == 0
    assert "2 of 2 target turns" in capsys.readouterr().err
    assert cli.main(["check", "--release", "nowhere", str(run)]) == 2
    assert f"no RECOR domain under {tmp_path / 'nowhere'}" in capsys.readouterr().err


def test_an_empty_benchmark_file_is_a_reject_and_an_error_naming_it(tmp_path, capsys):
    write(tmp_path, "law", [conversation("ex_1", 2)])
    write(tmp_path, "biology", [])
    empty = str(tmp_path / "data" / "benchmark" / "biology_benchmark.jsonl")
    loaded = published.load_release(str(tmp_path), "biology")
    assert loaded.benchmark.height == 0 and loaded.rejects.select("reason", "item").rows() == [("empty_file", empty)]
    with pytest.raises(reteco.ReleaseError, match="no turn of biology") as refused:
        reteco.release_targets(str(tmp_path))
    assert f"{empty} holds no conversation" in str(refused.value)
    run = tmp_path / "mine.trec"
    run.write_text("ex_1#turn1 Q0 d1 1 1.0 mine\n")
    assert cli.main(["check", "--release", str(tmp_path), str(run)]) == 2
    assert empty in capsys.readouterr().err
