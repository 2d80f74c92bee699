"""The retriever and reranker registries: their files, the specs they hold, and the written
registry of the models the project trains itself.

``BENCHFOUNDRY_RETRIEVERS`` and ``BENCHFOUNDRY_RERANKERS`` point a deployment (or a test
instance) at other registry files, as ``BENCHFOUNDRY_MODELS`` does for the model registry.

Models the project trains itself register their aliases in a second, written registry: one
YAML file per alias in ``<storage root>/models/registry`` (``BENCHFOUNDRY_TRAINED`` names
another folder), each in the registry file's own format, merged into the loaded registry.
Only the files the project signed there are read (see :func:`read_trained`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import string
from pathlib import Path

import pyarrow.fs as pafs
import yaml

from resources.names import check_name
from resources.signing import key_source, sign, signing_key, verify
from resources.storage import filesystem, join, read_bytes, read_yaml, storage_root, utf8_text, write_bytes

# The registry files sit beside the resource modules, one folder up from this package.
RESOURCES = Path(__file__).parents[1]

log = logging.getLogger(__name__)

RETRIEVERS_PATH = os.environ.get("BENCHFOUNDRY_RETRIEVERS") or str(RESOURCES / "retrievers.yaml")
# The trained models' registry. It is read where the static files are read, at wiring time and
# by the registry sensor, which see no resource config: so its folder follows the deployment's
# storage root.
TRAINED_DIR = os.environ.get("BENCHFOUNDRY_TRAINED") or join(storage_root(), "models", "registry")

# A system the project does not run itself: its rankings come from a TREC run file, or from
# a function the project imports and calls.
RUN, ENTRYPOINT = "run", "entrypoint"
EXTERNAL_KINDS = {RUN, ENTRYPOINT}
# What a run file template may name: the benchmark (quit, recor), the part (a QUIT split or a
# RECOR domain), the retriever alias and, for a reranker, its own alias.
TEMPLATE_FIELDS = {"benchmark", "part", "retriever", "reranker"}


@dataclasses.dataclass(frozen=True)
class RetrieverSpec:
    alias: str
    kind: str
    k1: float = 0.9
    b: float = 0.4
    encoder: str | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None
    # dense: texts per forward pass of the encoder (a GPU takes far more than the CPU default).
    batch_size: int = 64
    # kind run: a run file template; the one RECOR query strategy its rankings answer.
    path: str | None = None
    strategy: str = "baseline"
    # kind entrypoint: ``package.module:function``.
    function: str | None = None
    # The benchmark a trained model learned from (``quit``): it is evaluated there only.
    trained_on: str | None = None
    # A trained model's positive passages per train question (a count of QUIT's sweep).
    positives: int | None = None


def _load(path: str, section: str, spec_type: type, kinds: set[str]) -> dict:
    """Parse one registry section into specs; errors name the file and the alias."""
    raw = read_yaml(path) or {}
    raw = raw.get(section) if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not raw:
        raise ValueError(f"{path}: expected a non-empty {section!r} mapping")
    return _parse(raw, path, section, spec_type, kinds)


def _parse(raw: dict, path: str, section: str, spec_type: type, kinds: set[str]) -> dict:
    specs = {}
    for alias, entry in raw.items():
        check_name(alias, f"{path}: {section[:-1]} alias")
        if not isinstance(entry, dict) or entry.get("kind") not in kinds:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} needs kind {' or '.join(sorted(kinds))}")
        unknown = set(entry) - {f.name for f in dataclasses.fields(spec_type)}
        if unknown:
            raise ValueError(f"{path}: {section[:-1]} {alias!r} has unknown keys {sorted(unknown)}")
        specs[alias] = spec_type(alias=alias, **entry)
        _check_external(path, section[:-1], specs[alias])
    return specs


def _check_external(path: str, what: str, spec) -> None:
    """A run file kind needs a template naming only known fields; an entry point kind a
    ``module:function`` target. Errors name the registry file, the alias and the key."""
    if spec.kind == RUN:
        if not spec.path:
            raise ValueError(f"{path}: run {what} {spec.alias!r} needs a path (a TREC run file template)")
        try:
            named = {f for _, f, _, _ in string.Formatter().parse(spec.path) if f is not None}
        except ValueError as e:
            raise ValueError(f"{path}: run {what} {spec.alias!r}: path {spec.path!r} is not a template: {e}") from None
        if named - TEMPLATE_FIELDS:
            raise ValueError(
                f"{path}: run {what} {spec.alias!r}: path names unknown fields {sorted(named - TEMPLATE_FIELDS)} "
                f"(use {', '.join(sorted(TEMPLATE_FIELDS))})"
            )
    if spec.kind == ENTRYPOINT:
        if not spec.function:
            raise ValueError(f"{path}: entrypoint {what} {spec.alias!r} needs a function (package.module:function)")
        module, _, name = spec.function.partition(":")
        if not module or not name:
            raise ValueError(
                f"{path}: entrypoint {what} {spec.alias!r}: function {spec.function!r} is not package.module:function"
            )


# The line that ends every file ``register_trained`` writes: the HMAC of the bytes before it,
# under the deployment's key (resources.signing). The trained registry's folder is a folder of
# the storage root anyone may write to, and a file dropped there by hand (or left by another
# tool) must not become a retriever, whatever it says of itself. The signature is in the file,
# not beside it: one object per alias is written in one put and read in one get, so a reader
# never pairs an entry with another version's signature, and the bytes it verified are the
# bytes it parses; the file stays the registry's YAML, ``signature`` a key of its mapping.
SIGNED = re.compile(rb"(?P<body>.*\n)signature: (?P<signature>[0-9a-f]{64})\n", re.S)
# What the project trains: the only kinds a trained registry file may name (never a run file
# or an entry point, even in a signed file).
TRAINED_KINDS = {"retrievers": {"dense", "multi_vector"}, "rerankers": {"cross_encoder"}}


def trained_path(section: str, alias: str, directory: str = TRAINED_DIR) -> str:
    """The one file of a trained alias: a file per alias, so training runs of different
    partitions never write the same file."""
    return join(directory, f"{section}.{check_name(alias, 'trained alias')}.yaml")


def register_trained(section: str, alias: str, entry: dict, directory: str = TRAINED_DIR) -> str:
    """Write (or replace) a trained model's registry entry, signed with the deployment's key
    (:func:`resources.signing.signing_key`); returns the file written."""
    uri = trained_path(section, alias, directory)
    body = yaml.safe_dump({section: {alias: entry}}, sort_keys=False).encode()
    write_bytes(uri, body + f"signature: {sign(body, signing_key())}\n".encode())
    return uri


@dataclasses.dataclass
class TrainedRegistry:
    """A section's trained aliases, and the files of the folder that were not read, each
    with its reason."""

    specs: dict
    ignored: dict[str, str]


def read_trained(section: str, spec_type: type, directory: str = TRAINED_DIR) -> TrainedRegistry:
    """The trained aliases of ``section`` in ``directory`` (none while nothing is trained).
    A file is read when it is what ``register_trained`` writes: named
    ``<section>.<alias>.yaml``, its bytes signed with this deployment's key, holding that one
    alias of a kind the project trains. Any other file is ignored with its reason; another
    section's files are that section's."""
    fs, root = filesystem(directory)
    names = sorted(
        info.base_name
        for info in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
        if info.type == pafs.FileType.File
    )
    found = TrainedRegistry({}, {})
    if not names:
        return found
    # Asked for only now: wiring a deployment that trained nothing never makes a key file.
    key = signing_key()
    for name in names:
        stem, _, alias = name.removesuffix(".yaml").partition(".")
        if name.endswith(".yaml") and stem in TRAINED_KINDS and stem != section:
            continue
        uri = join(directory, name)
        try:
            found.specs |= _trained_file(uri, name, section, alias, spec_type, key)
        except ValueError as e:
            found.ignored[uri] = str(e).removeprefix(f"{uri}: ")
    return found


def _trained_file(uri: str, name: str, section: str, alias: str, spec_type: type, key: bytes) -> dict:
    if not name.startswith(f"{section}.") or not name.endswith(".yaml"):
        raise ValueError("not a trained registry file (<section>.<alias>.yaml)")
    check_name(alias, "the alias its name gives")
    raw = _signed_yaml(uri, key)
    entries = raw.get(section) if isinstance(raw, dict) else None
    if not isinstance(entries, dict) or set(raw) != {section} or list(entries) != [alias]:
        raise ValueError(f"expected one {section!r} entry, {alias!r} as the file is named")
    kinds = TRAINED_KINDS[section]
    if not isinstance(entries[alias], dict) or entries[alias].get("kind") not in kinds:
        kind = entries[alias].get("kind") if isinstance(entries[alias], dict) else None
        raise ValueError(f"kind {kind!r} is not one the project trains ({', '.join(sorted(kinds))})")
    return _parse(entries, uri, section, spec_type, kinds)


def _signed_yaml(uri: str, key: bytes):
    """The YAML a trained registry file holds, parsed from the very bytes whose signature
    verified: its text is not looked at before."""
    signed = SIGNED.fullmatch(read_bytes(uri))
    if not signed:
        raise ValueError(
            "no signature (register_trained signs every file it writes: a file written by hand or "
            "by a version before signatures is never read; materialize its training again)"
        )
    if not verify(signed["body"], signed["signature"].decode(), key):
        raise ValueError(
            f"signature does not verify with this deployment's key ({key_source()}): the file was "
            "changed after it was signed, or signed with another key"
        )
    try:
        return yaml.safe_load(utf8_text(signed["body"], uri))
    except yaml.YAMLError:
        raise ValueError("signed, but not valid YAML") from None


def trained_specs(section: str, spec_type: type, directory: str = TRAINED_DIR) -> dict:
    """The trained aliases of ``section`` (:func:`read_trained`), each ignored file logged
    as a warning with its reason."""
    found = read_trained(section, spec_type, directory)
    for uri, reason in found.ignored.items():
        log.warning(f"{uri}: ignored: {reason}")
    return found.specs


def _merged(specs: dict, path: str, section: str, trained: dict, directory: str) -> dict:
    for alias, spec in trained.items():
        if alias in specs:
            raise ValueError(
                f"{trained_path(section, alias, directory)}: trained alias {alias!r} is already in {path}: "
                "rename one of them"
            )
        specs[alias] = spec
    return specs


# multi_vector: a ColBERT-style model scoring each passage by MaxSim over token vectors.
MULTI_VECTOR = "multi_vector"
ENCODER_KINDS = {"dense", MULTI_VECTOR}
RETRIEVER_KINDS = {"bm25", "oracle", *ENCODER_KINDS, *EXTERNAL_KINDS}


def load_retrievers(path: str = RETRIEVERS_PATH, trained: str | None = TRAINED_DIR) -> dict[str, RetrieverSpec]:
    """The registry file's retrievers and the trained ones in ``trained`` (None: the file only)."""
    specs = _load(path, "retrievers", RetrieverSpec, RETRIEVER_KINDS)
    if trained is not None:
        specs = _merged(specs, path, "retrievers", trained_specs("retrievers", RetrieverSpec, trained), trained)
    for spec in specs.values():
        if spec.kind in ENCODER_KINDS and not spec.encoder:
            raise ValueError(f"{path}: {spec.kind} retriever {spec.alias!r} needs an encoder")
        if spec.kind == MULTI_VECTOR and (spec.query_prefix is not None or spec.passage_prefix is not None):
            raise ValueError(
                f"{path}: multi_vector retriever {spec.alias!r}: the model's own query and document "
                "markers apply; query_prefix and passage_prefix are for dense retrievers"
            )
    return specs


RERANKERS_PATH = os.environ.get("BENCHFOUNDRY_RERANKERS") or str(RESOURCES / "rerankers.yaml")


LLM_RERANKERS = {"rankgpt", "pointwise", "upr"}


@dataclasses.dataclass(frozen=True)
class RerankerSpec:
    alias: str
    kind: str
    # An alias of the model registry for LLM rerankers; a local path (or a cached model
    # name) for seq2seq ones; a local folder for cross-encoders.
    model: str | None = None
    top_k: int = 100
    window: int = 20
    step: int = 10
    top_logprobs: int = 20
    true_token: str = "true"
    false_token: str = "false"
    score: str = "softmax"
    batch_size: int = 16
    # kind run: a run file template of reranked lists; kind entrypoint: package.module:function.
    path: str | None = None
    function: str | None = None
    # The benchmark a trained model learned from (``quit``), as for retrievers.
    trained_on: str | None = None
    positives: int | None = None


RERANKER_KINDS = LLM_RERANKERS | {"seq2seq", "cross_encoder"} | EXTERNAL_KINDS


def load_rerankers(
    path: str = RERANKERS_PATH, models_path: str | None = None, trained: str | None = TRAINED_DIR
) -> dict[str, RerankerSpec]:
    """The registry file's rerankers and the trained ones in ``trained`` (None: the file only)."""
    from resources.llm import REGISTRY_PATH, load_registry

    specs = _load(path, "rerankers", RerankerSpec, RERANKER_KINDS)
    if trained is not None:
        specs = _merged(specs, path, "rerankers", trained_specs("rerankers", RerankerSpec, trained), trained)
    registry = load_registry(models_path or REGISTRY_PATH)
    for spec in specs.values():
        if spec.top_k < 1:
            raise ValueError(f"{path}: reranker {spec.alias!r}: top_k must be positive")
        if spec.kind in EXTERNAL_KINDS:
            continue
        if not spec.model:
            raise ValueError(f"{path}: reranker {spec.alias!r} needs a model")
        if spec.kind in LLM_RERANKERS and spec.model not in registry:
            raise ValueError(f"{path}: reranker {spec.alias!r} names unknown model alias {spec.model!r}")
        if spec.kind == "seq2seq" and spec.score not in {"softmax", "logit"}:
            raise ValueError(f"{path}: reranker {spec.alias!r}: score must be softmax or logit")
    return specs
