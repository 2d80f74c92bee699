"""Keys, aliases and names that become paths: one allowed set, checked where they enter; the IO
manager never writes outside its root; the trained registry loads only what the project signed;
errors never quote a file they could not parse, and an entry point that raises is named."""

from __future__ import annotations

import logging
import os
import re
import stat
import textwrap

import dagster as dg
import polars as pl
import pytest

from assets.partitions import DOMAINS, partition_changes
from resources.finetuning import load_bases
from resources.llm import load_registry
from resources.redact import SECRET_NAME, redact
from resources.retrieval import (
    RetrieverSpec,
    entrypoint_search,
    load_function,
    load_rerankers,
    load_retrievers,
    read_run_files,
    register_trained,
    run_file_uri,
    trained_path,
)
from resources.retrieval.registry import read_trained
from resources.signing import KEY_VARIABLE, sign, signing_key, verify
from resources.storage import ParquetIOManager, StorageResource, table_uri
from tests.conftest import SCRIPTED_REGISTRY

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"
FRAME = pl.DataFrame({"a": [1]})
# The deployment's signing key in these tests (and another deployment's).
KEY = "k" * 40
OTHER_KEY = "o" * 40


@pytest.fixture(autouse=True)
def deployment_key(monkeypatch):
    """Every test here signs with KEY, set as a cluster sets it: none makes a key file in the
    working directory."""
    monkeypatch.setenv(KEY_VARIABLE, KEY)


def write(io: ParquetIOManager, key: str, partition) -> None:
    io.handle_output(dg.build_output_context(asset_key=dg.AssetKey(key), partition_key=partition), FRAME)


# --- The IO manager's root -----------------------------------------------------------------


def test_the_io_manager_refuses_a_partition_key_that_leaves_its_root(tmp_path):
    root = tmp_path / "a" / "b" / "c" / "root"
    with pytest.raises(ValueError, match=re.escape("partition key '../../../../x'") + ".*letters, digits"):
        write(ParquetIOManager(root=str(root)), "t", "../../../../x")
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet")] == []
    multi = dg.MultiPartitionKey({"domain": "law", "retriever": "../../x"})
    with pytest.raises(ValueError, match=re.escape("partition key '../../x'")):
        write(ParquetIOManager(root=str(root)), "t", multi)


def test_the_io_manager_writes_the_names_the_project_uses(tmp_path):
    io = ParquetIOManager(root=str(tmp_path))
    law_e5 = dg.MultiPartitionKey({"domain": "law", "retriever": "e5-small"})
    for partition in ["earth_science", "llama3.1-8b", "ft-dpr-minilm", law_e5]:
        write(io, "t", partition)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.parquet")) == [
        "t/earth_science.parquet",
        "t/ft-dpr-minilm.parquet",
        "t/law/e5-small.parquet",
        "t/llama3.1-8b.parquet",
    ]


def test_a_link_out_of_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "t").symlink_to(outside)
    with pytest.raises(ValueError, match=re.escape(f"resolves outside the storage root {root}")):
        write(ParquetIOManager(root=str(root)), "t", "p")
    assert list(outside.iterdir()) == []
    with pytest.raises(ValueError, match="outside the storage root"):
        StorageResource(root=str(root)).path("t", "leaderboard.csv")


def test_an_s3_key_with_a_parent_segment_is_refused():
    from resources.storage import inside_root

    assert inside_root("s3://bucket/root", "s3://bucket/root/eval/a..b.parquet") == "s3://bucket/root/eval/a..b.parquet"
    for uri in ["s3://bucket/root/../x.parquet", "s3://bucket/other/x.parquet"]:
        with pytest.raises(ValueError, match=re.escape(f"{uri} is outside the storage root s3://bucket/root")):
            inside_root("s3://bucket/root", uri)
    with pytest.raises(ValueError, match="partition key '..'"):
        table_uri("s3://bucket/root", ["t"], "..")


# --- One allowed set -----------------------------------------------------------------------


def test_every_name_the_project_ships_is_allowed():
    from resources.names import check_name

    names = [
        *load_registry(),
        *load_registry(SCRIPTED_REGISTRY),
        *load_retrievers(),
        *load_rerankers(),
        *load_bases(),
        *DOMAINS,
        "ft-colbert-minilm",
        "qwen3-4b",
        "llama3.1-8b",
    ]
    assert [n for n in names if check_name(n, "name") != n] == []


@pytest.mark.parametrize("name", ["", "../x", "a/b", "a\\b", ".hidden", "-flag", "a..b", "a b", "a|b", "x" * 65, 7])
def test_names_outside_the_allowed_set_are_refused(name):
    from resources.names import check_name

    with pytest.raises(ValueError, match=re.escape(f"retriever alias {name!r}: a name is letters, digits")):
        check_name(name, "retriever alias")


@pytest.mark.parametrize(
    "registry, load, error",
    [
        ("models:\n  ../../x: {model: hosted_vllm/x}\n", load_registry, "model alias '../../x'"),
        ("retrievers:\n  a/b: {kind: bm25}\n", lambda p: load_retrievers(p, trained=None), "retriever alias 'a/b'"),
        (
            "rerankers:\n  ../r: {kind: run, path: 'runs/{part}.trec'}\n",
            lambda p: load_rerankers(p, SCRIPTED_REGISTRY, trained=None),
            "reranker alias '../r'",
        ),
    ],
)
def test_registries_refuse_an_alias_outside_the_allowed_set(tmp_path, registry, load, error):
    p = tmp_path / "registry.yaml"
    p.write_text(registry)
    with pytest.raises(ValueError, match=re.escape(f"{p}: {error}: a name is letters, digits")):
        load(str(p))


def test_names_that_become_paths_are_checked_there(tmp_path):
    spec = RetrieverSpec(alias="mine", kind="run", path="runs/{benchmark}/{retriever}.{part}.trec")
    assert run_file_uri(spec, "recor", "earth_science") == "runs/recor/mine.earth_science.trec"
    with pytest.raises(ValueError, match=re.escape("retriever '../../x'")):
        run_file_uri(spec, "quit", "dev", retriever="../../x")
    with pytest.raises(ValueError, match=re.escape("part '../dev'")):
        run_file_uri(spec, "quit", "../dev")
    with pytest.raises(ValueError, match=re.escape("trained alias '../../x'")):
        register_trained("retrievers", "../../x", {"kind": "dense", "encoder": "/m"}, str(tmp_path / "registry"))
    assert list(tmp_path.rglob("*.yaml")) == []
    with pytest.raises(ValueError, match=re.escape("new partition of retrievers '../x'")):
        partition_changes({"retrievers": ["bm25", "../x"]}, {"retrievers": ["bm25"]})


# --- The trained registry ------------------------------------------------------------------


def static_registry(tmp_path) -> str:
    p = tmp_path / "retrievers.yaml"
    p.write_text("retrievers:\n  bm25: {kind: bm25}\n")
    return str(p)


def write_signed(path, text: str, key: str = KEY) -> None:
    """A file in register_trained's format: ``text`` and the line of its signature."""
    body = text.encode()
    path.write_bytes(body + f"signature: {sign(body, key.encode())}\n".encode())


def test_only_files_the_project_signed_become_trained_retrievers(tmp_path, caplog):
    folder = tmp_path / "registry"
    entry = {"kind": "dense", "encoder": "/m/dpr", "trained_on": "quit"}
    written = register_trained("retrievers", "ft-dpr-minilm", entry, str(folder))
    assert written == trained_path("retrievers", "ft-dpr-minilm", str(folder))
    # a file in the registry's own format, but dropped there by hand: its entry point would run
    (folder / "retrievers.evil.yaml").write_text("retrievers:\n  evil: {kind: entrypoint, function: 'os:system'}\n")
    # signed with the deployment's key, but a kind the project never trains, or another alias
    # than its name
    write_signed(folder / "retrievers.runner.yaml", "retrievers:\n  runner: {kind: run, path: '.env'}\n")
    write_signed(folder / "retrievers.named.yaml", "retrievers:\n  other: {kind: dense, encoder: /m}\n")
    (folder / "notes.txt").write_text("not a registry file\n")
    with caplog.at_level(logging.WARNING):
        specs = load_retrievers(static_registry(tmp_path), trained=str(folder))
    assert sorted(specs) == ["bm25", "ft-dpr-minilm"]
    assert specs["ft-dpr-minilm"] == RetrieverSpec("ft-dpr-minilm", "dense", encoder="/m/dpr", trained_on="quit")
    log = caplog.text
    assert "retrievers.evil.yaml: ignored: no signature" in log
    assert "retrievers.runner.yaml: ignored: kind 'run'" in log
    assert "retrievers.named.yaml: ignored: expected one 'retrievers' entry, 'named' as the file is named" in log
    assert "notes.txt: ignored: not a trained registry file" in log


def test_the_old_mark_alone_makes_no_trained_retriever(tmp_path):
    folder = tmp_path / "registry"
    folder.mkdir()
    dropped = folder / "retrievers.dropped.yaml"
    dropped.write_text("written_by: benchfoundry\nretrievers:\n  dropped: {kind: dense, encoder: /some/path}\n")
    found = read_trained("retrievers", RetrieverSpec, str(folder))
    assert found.specs == {}
    assert found.ignored[str(dropped)].startswith("no signature (register_trained signs every file it writes")


def test_a_signed_file_edited_or_signed_with_another_key_is_ignored(tmp_path, monkeypatch):
    folder = str(tmp_path / "registry")
    edited = register_trained("retrievers", "ft-edited", {"kind": "dense", "encoder": "/m/dpr"}, folder)
    with open(edited, "rb") as f:
        data = f.read()
    with open(edited, "wb") as f:
        f.write(data.replace(b"/m/dpr", b"/some/path"))
    monkeypatch.setenv(KEY_VARIABLE, OTHER_KEY)
    elsewhere = register_trained("retrievers", "ft-elsewhere", {"kind": "dense", "encoder": "/m/dpr"}, folder)
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    kept = register_trained("retrievers", "ft-kept", {"kind": "dense", "encoder": "/m/dpr"}, folder)
    found = read_trained("retrievers", RetrieverSpec, folder)
    assert list(found.specs) == ["ft-kept"] and kept not in found.ignored
    reason = f"signature does not verify with this deployment's key ({KEY_VARIABLE}): the file was changed"
    assert found.ignored[edited].startswith(reason)
    assert found.ignored[elsewhere].startswith(reason)
    # the other deployment reads its own file, and not this one's
    monkeypatch.setenv(KEY_VARIABLE, OTHER_KEY)
    assert list(read_trained("retrievers", RetrieverSpec, folder).specs) == ["ft-elsewhere"]


def test_sign_and_verify_are_hmac_sha256():
    # RFC 4231, test case 2
    signature = sign(b"what do ya want for nothing?", b"Jefe")
    assert signature == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    assert verify(b"what do ya want for nothing?", signature, b"Jefe")
    assert not verify(b"what do ya want for nothing!", signature, b"Jefe")
    assert not verify(b"what do ya want for nothing?", signature, b"Jeff")
    assert not verify(b"what do ya want for nothing?", "", b"Jefe")


def test_the_signing_key_comes_from_the_environment_and_is_redacted():
    assert signing_key() == KEY.encode()
    assert SECRET_NAME.search(KEY_VARIABLE)
    assert redact(f"worker failed with key {KEY}") == f"worker failed with key [redacted {KEY_VARIABLE}]"


def test_without_the_variable_a_key_file_is_made_once_readable_by_its_owner_only(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_VARIABLE)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    key = signing_key()
    path = tmp_path / ".benchfoundry" / "signing.key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(key) == 64 and path.read_text() == key.decode() + "\n"
    assert signing_key() == key
    assert os.listdir(path.parent) == ["signing.key"]
    # the variable, where set, is the key, the file's left as it is
    monkeypatch.setenv(KEY_VARIABLE, KEY)
    assert signing_key() == KEY.encode()
    monkeypatch.delenv(KEY_VARIABLE)
    assert signing_key() == key
    # a key others may read is no secret
    path.chmod(0o644)
    with pytest.raises(PermissionError, match=re.escape(f"{path}: the signing key may be read by others (mode 644)")):
        signing_key()


def test_a_short_signing_key_is_refused_without_being_quoted(monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, "hunter2")
    with pytest.raises(ValueError, match=f"{KEY_VARIABLE}: the signing key has 7 characters, fewer than 32") as raised:
        signing_key()
    assert "hunter2" not in str(raised.value)


def test_registry_parse_errors_name_the_file_and_line_never_its_text(tmp_path, caplog):
    env = tmp_path / ".env"
    env.write_text(f"{SECRET}\n")
    # a run file template pointing at a file that is not a run
    spec = RetrieverSpec(alias="mine", kind="run", path=str(env))
    with pytest.raises(ValueError, match=re.escape(f"{env} line 1: expected 6 columns")) as raised:
        read_run_files(spec, "quit", {"dev": ["q1"]})
    assert "wJalr" not in str(raised.value)
    # a model registry file pointing at a file that is not YAML
    env.write_text(f"models: [{SECRET}\nother: x\n")
    with pytest.raises(ValueError, match=re.escape(f"{env}: not valid YAML (line ")) as raised:
        load_registry(str(env))
    assert "wJalr" not in str(raised.value)
    # a file in the trained registry that is not YAML, unsigned or signed
    folder = tmp_path / "registry"
    folder.mkdir()
    (folder / "retrievers.x.yaml").write_text(f"retrievers: [{SECRET}\nx: y\n")
    write_signed(folder / "retrievers.y.yaml", f"retrievers: [{SECRET}\nx: y\n")
    with caplog.at_level(logging.WARNING):
        assert sorted(load_retrievers(static_registry(tmp_path), trained=str(folder))) == ["bm25"]
    assert "retrievers.x.yaml: ignored: no signature" in caplog.text
    assert "retrievers.y.yaml: ignored: signed, but not valid YAML" in caplog.text
    assert "wJalr" not in caplog.text


# --- Entry points --------------------------------------------------------------------------


def test_an_entry_point_that_raises_is_named_with_its_error_as_the_cause(tmp_path, monkeypatch):
    (tmp_path / "raising_retriever_28.py").write_text(
        textwrap.dedent("""
        def search(queries, corpus, k):
            return {q: corpus["missing"] for q in queries}

        def rerank(query, candidates):
            raise KeyError("missing")
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = RetrieverSpec(alias="mine", kind="entrypoint", function="raising_retriever_28:search")
    with pytest.raises(
        RuntimeError,
        match=re.escape("retriever 'mine': entry point 'raising_retriever_28:search' raised KeyError: 'missing'"),
    ) as raised:
        entrypoint_search(spec, {"q1": "a question"}, {"d1": "a passage"}, 10)
    assert isinstance(raised.value.__cause__, KeyError)
    error = "reranker 'r': entry point 'raising_retriever_28:rerank' raised KeyError"
    with pytest.raises(RuntimeError, match=re.escape(error)):
        load_function("reranker 'r'", "raising_retriever_28:rerank")("a question", [("d1", "a passage")])
