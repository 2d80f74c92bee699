"""Storage under one root, a local path or an ``s3://`` URI, owned by :class:`StorageResource`.

Every table asset is written by the IO manager at ``<root>/<asset key path>.parquet`` or
``<root>/<asset key path>/<partition key>.parquet`` (the storage contract of DESIGN.md). The
same root receives everything else an asset writes: release files and exports, TREC run
files, the human verification decisions, the indexes (``<root>/indexes/<kind>/...``) and
the trained models (``<root>/models/...``).
The IO manager reads its root from the ``storage`` resource, so the deployment's one setting
(``BENCHFOUNDRY_STORAGE``) moves all of it together; a run cannot set it.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Iterable, Iterator

import dagster as dg
import polars as pl
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import yaml

from resources.names import check_name

DEFAULT_ROOT = "./storage"
# Input metadata of a report that reads every partition of its upstream: read the partitions
# that are materialized and name the missing ones, instead of failing on the first one.
MATERIALIZED_PARTITIONS = {"partitions": "materialized"}
# Input metadata of a step that reads a table a few columns or a batch of rows at a time
# (a :class:`StoredTable`), never whole: QUIT's 2.4M passage texts are 1.2 GB as a frame,
# and a frame filtered to the rows a step needs is a second copy.
STREAMED = {"stream": True}
BATCH_ROWS = 100_000


def storage_root() -> str:
    """The root a deployment configures (``BENCHFOUNDRY_STORAGE``): the default of the
    ``storage`` resource, read at wiring time only."""
    return os.environ.get("BENCHFOUNDRY_STORAGE", DEFAULT_ROOT)


class StorageResource(dg.ConfigurableResource):
    """The one storage root, and the paths under it."""

    root: str = DEFAULT_ROOT
    # Lucene writes its indexes, and trained models are saved, to a local disk; under an
    # s3:// root they are kept here.
    local_index_root: str = ".cache/indexes"

    def path(self, *parts: str) -> str:
        """``parts`` joined under the root; an error if they lead out of it."""
        return inside_root(self.root, join(self.root, *parts))

    def index_path(self, kind: str, *parts: str) -> str:
        """Where an index of ``kind`` (faiss, lucene, search) lives: under the root, or for the
        local-disk kinds under ``local_index_root`` when the root is remote."""
        if "://" in self.root and kind != "faiss":
            return inside_root(self.local_index_root, os.path.join(self.local_index_root, kind, *parts))
        return self.path("indexes", kind, *parts)

    def model_path(self, *parts: str) -> str:
        """Where a trained model's folder lives: ``<root>/models/...``, or under
        ``local_index_root`` when the root is remote, as for the local-disk indexes: a model
        loads from a folder on local disk."""
        if "://" in self.root:
            return inside_root(self.local_index_root, os.path.join(self.local_index_root, "models", *parts))
        return self.path("models", *parts)


def inside_root(root: str, uri: str) -> str:
    """``uri`` when it lies under ``root``; else an error naming both. Locally the real path
    counts, links resolved, so a link inside the root cannot lead a write out of it; under a
    URI root the key must extend the root's and have no ``..`` segment (S3 keys are not
    resolved, but tools that copy them to disk do resolve them)."""
    if "://" in root:
        prefix = root.rstrip("/") + "/"
        if not uri.startswith(prefix) or ".." in uri[len(prefix) :].split("/"):
            raise ValueError(
                f"{uri} is outside the storage root {root}: a key under it extends the root's and has no '..' segment"
            )
        return uri
    real_root, real = os.path.realpath(root), os.path.realpath(uri)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise ValueError(
            f"{uri} resolves outside the storage root {root} (to {real}): nothing is read or written there"
        )
    return uri


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """A filesystem and a path within it, for a local path or a URI pyarrow understands."""
    if "://" in uri:
        if uri.startswith("s3://") and os.environ.get("AWS_ENDPOINT_URL"):
            # pyarrow does not read AWS_ENDPOINT_URL by itself; S3-compatible servers
            # (MinIO, moto) are reached through it.
            endpoint = os.environ["AWS_ENDPOINT_URL"]
            fs = pafs.S3FileSystem(
                endpoint_override=endpoint.split("://", 1)[-1],
                scheme=endpoint.split("://", 1)[0] if "://" in endpoint else "https",
                region=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            )
            return fs, uri[len("s3://") :]
        return pafs.FileSystem.from_uri(uri)
    return pafs.LocalFileSystem(), os.path.abspath(uri)


def _make_parent(fs: pafs.FileSystem, uri: str, path: str) -> None:
    fs.create_dir(posixpath.dirname(path) if "://" in uri else os.path.dirname(path), recursive=True)


def join(root: str, *parts: str) -> str:
    if "://" in root:
        return posixpath.join(root, *parts)
    return os.path.join(root, *parts)


def read_bytes(uri: str) -> bytes:
    fs, path = filesystem(uri)
    try:
        with fs.open_input_stream(path) as f:
            return f.read()
    except FileNotFoundError as e:
        raise FileNotFoundError(f"no file at {uri}") from e


def write_bytes(uri: str, data: bytes) -> None:
    with open_output(uri) as f:
        f.write(data)


def open_output(uri: str):
    """A binary stream writing the file at ``uri``, for a file too large to build in memory
    first: a local file, or on S3 a multipart upload. Use it as a context manager."""
    fs, path = filesystem(uri)
    _make_parent(fs, uri, path)
    return fs.open_output_stream(path)


def exists(uri: str) -> bool:
    fs, path = filesystem(uri)
    return fs.get_file_info(path).type != pafs.FileType.NotFound


def write_parquet(uri: str, frame: pl.DataFrame) -> None:
    write_parquet_batches(uri, [frame])


@dataclasses.dataclass
class Batches:
    """A table too large to hold in memory: frames written one row group at a time."""

    frames: Iterable[pl.DataFrame]


def write_parquet_batches(uri: str, frames: Iterable[pl.DataFrame]) -> int:
    """Stream frames into one Parquet file; returns the row count. The file is written
    beside its destination and moved into place, so a killed run never leaves half a table."""
    fs, path = filesystem(uri)
    _make_parent(fs, uri, path)
    tmp = path + ".tmp"
    writer, rows = None, 0
    try:
        for frame in frames:
            table = frame.to_arrow()
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema, filesystem=fs, compression="zstd")
            writer.write_table(table)
            rows += frame.height
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError(f"no batches to write to {uri}")
    fs.move(tmp, path)
    return rows


def stored_table(uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path of a stored table, or an error saying to materialize it."""
    fs, path = filesystem(uri)
    if fs.get_file_info(path).type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no table at {uri}: materialize its asset first")
    return fs, path


def read_parquet(uri: str, columns: list[str] | None = None) -> pl.DataFrame:
    """A stored table, or only its ``columns``. polars decodes the file into its own buffers:
    read through a pyarrow table, every string was held twice while it was converted (the
    texts of 2.4M QUIT passages among them)."""
    fs, path = stored_table(uri)
    if isinstance(fs, pafs.LocalFileSystem):
        return pl.read_parquet(path, columns=columns)
    with fs.open_input_file(path) as f:
        return pl.read_parquet(f, columns=columns)


@dataclasses.dataclass(frozen=True)
class StoredTable:
    """A stored table (one file, or a partitioned asset's files in order) read a few columns
    at a time (:meth:`read`) or a batch of rows at a time (:meth:`batches`). Both give the rows
    in the same order, so a mask computed over :meth:`read`'s ids selects from the batches."""

    uris: tuple[str, ...]

    @property
    def height(self) -> int:
        return sum(_parquet_file(uri, lambda f: f.metadata.num_rows) for uri in self.uris)

    def read(self, *columns: str) -> pl.DataFrame:
        return concat(read_parquet(uri, list(columns)) for uri in self.uris)

    def batches(self, *columns: str, rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
        for uri in self.uris:
            # The file stays open while the caller takes its batches; pyarrow reads one row
            # group at a time, so memory holds a batch and the group it is cut from.
            fs, path = stored_table(uri)
            with fs.open_input_file(path) as f:
                for batch in pq.ParquetFile(f).iter_batches(batch_size=rows, columns=list(columns)):
                    yield pl.from_arrow(batch)


@dataclasses.dataclass(frozen=True)
class FrameTable:
    """A frame in memory behind :class:`StoredTable`'s methods: what a step's tests pass."""

    frame: pl.DataFrame

    @property
    def height(self) -> int:
        return self.frame.height

    def read(self, *columns: str) -> pl.DataFrame:
        return self.frame.select(columns)

    def batches(self, *columns: str, rows: int = BATCH_ROWS) -> Iterator[pl.DataFrame]:
        yield from self.frame.select(columns).iter_slices(rows)


def as_table(table: pl.DataFrame | StoredTable | FrameTable) -> StoredTable | FrameTable:
    """A frame wrapped as a :class:`FrameTable`; a table as it is."""
    return FrameTable(table) if isinstance(table, pl.DataFrame) else table


def _parquet_file(uri: str, read):
    fs, path = stored_table(uri)
    with fs.open_input_file(path) as f:
        return read(pq.ParquetFile(f))


def table_uri(root: str, key_path: Iterable[str], partition: str | dg.MultiPartitionKey | None = None) -> str:
    """Where the IO manager stores an asset's table, or one partition of it. A partition key
    outside the names' allowed set (``resources.names``) is an error naming it: a key is a
    file name here, and one added to the instance by hand has passed no registry."""
    key_path = list(key_path)
    base = join(root, *key_path)
    if partition is None:
        return base + ".parquet"
    return join(base, partition_file_name(partition, f"{'/'.join(key_path)}: partition key") + ".parquet")


def partition_file_name(partition_key: str | dg.MultiPartitionKey, what: str = "partition key") -> str:
    """A partition's file name under its asset's folder; a multi-dimensional key is a folder
    per dimension, in dimension name order."""
    if isinstance(partition_key, dg.MultiPartitionKey):
        dims = partition_key.keys_by_dimension
        return "/".join(check_name(dims[d], what) for d in sorted(dims))
    return check_name(str(partition_key), what)


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores polars DataFrames as Parquet under ``root`` (local path or s3:// URI).

    Reading a partitioned asset into an unpartitioned one concatenates the requested
    partitions, each row tagged with nothing extra: partitioned tables carry their own
    partition column (model alias, domain) so the union stays self-describing.
    """

    root: str = DEFAULT_ROOT

    def _uri(self, key: dg.AssetKey, partition: str | dg.MultiPartitionKey | None) -> str:
        return inside_root(self.root, table_uri(self.root, key.path, partition))

    def handle_output(self, context: dg.OutputContext, obj: pl.DataFrame | Batches | None) -> None:
        if obj is None:
            return
        uri = self._uri(context.asset_key, context.partition_key if context.has_partition_key else None)
        if isinstance(obj, Batches):
            rows = write_parquet_batches(uri, obj.frames)
            context.add_output_metadata({"path": dg.MetadataValue.path(uri), "dagster/row_count": rows})
            return
        if not isinstance(obj, pl.DataFrame):
            raise TypeError(
                f"{context.asset_key.to_user_string()} returned {type(obj).__name__}; "
                "the Parquet IO manager stores polars DataFrames"
            )
        write_parquet(uri, obj)
        context.add_output_metadata({"path": dg.MetadataValue.path(uri)})

    def load_input(self, context: dg.InputContext) -> pl.DataFrame | StoredTable:
        key = context.asset_key
        stream = context.definition_metadata.get("stream")
        # An input's ``columns`` metadata loads only those (as Dagster's database IO managers
        # do): a step that needs a table's ids need not hold its texts.
        columns = context.definition_metadata.get("columns")
        if context.has_asset_partitions:
            uris = {k: self._uri(key, k) for k in context.asset_partition_keys}
            if context.definition_metadata.get("partitions") == MATERIALIZED_PARTITIONS["partitions"]:
                missing = [str(k) for k, uri in uris.items() if not exists(uri)]
                if uris and len(missing) == len(uris):
                    raise FileNotFoundError(
                        f"no partition of {key.to_user_string()} is materialized: materialize one first"
                    )
                if missing:
                    context.log.warning(
                        f"{key.to_user_string()}: {len(missing)} of {len(uris)} partitions not materialized, "
                        f"read without them: {', '.join(sorted(missing))}"
                    )
                uris = {k: uri for k, uri in uris.items() if str(k) not in missing}
            if stream:
                return StoredTable(tuple(uris.values()))
            return concat(read_parquet(uri, columns) for uri in uris.values())
        if stream:
            uri = self._uri(key, None)
            stored_table(uri)  # a missing table fails here, named, not at the step's first read
            return StoredTable((uri,))
        return read_parquet(self._uri(key, None), columns)


# No config: the root is the storage resource's, the deployment's (an empty schema refuses any).
@dg.io_manager(
    config_schema={},
    required_resource_keys={"storage"},
    description="Parquet tables under the storage resource's root.",
)
def parquet_io_manager(init_context) -> ParquetIOManager:
    return ParquetIOManager(root=init_context.resources.storage.root)


def concat(frames: Iterable[pl.DataFrame]) -> pl.DataFrame:
    frames = [f for f in frames if f.width]
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="diagonal_relaxed")


def read_text(uri: str) -> str:
    """A UTF-8 file's text; a byte that is not UTF-8 is an error naming the file and line."""
    return utf8_text(read_bytes(uri), uri)


class NotUtf8(ValueError):
    """A file's bytes that are not UTF-8: the message names the file and line; ``line`` and
    ``detail`` are there for a checker that reports problems rather than raising."""

    def __init__(self, name: str, line: int, detail: str):
        super().__init__(f"{name} line {line}: {detail}")
        self.line, self.detail = line, detail


def utf8_text(data: bytes, name: str) -> str:
    """The UTF-8 text of a whole file's bytes, or a :class:`NotUtf8` naming the file
    (``name``) and the line of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise NotUtf8(name, line, f"not UTF-8 (byte {data[e.start]:#04x}); save the file as UTF-8") from None


def read_yaml(uri: str):
    """A YAML file's value. A file that is not YAML is an error naming the file, line and
    column but not its text: the file may be any file a setting points at (an ``.env`` among
    them), and PyYAML's own message quotes the line it stopped on."""
    text = read_text(uri)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"{uri}: not valid YAML{where}") from None
