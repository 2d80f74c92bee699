"""Croissant 1.1 metadata (JSON-LD, ``croissant.json``) for the data files of an exported
folder: the distribution (one ``cr:FileObject`` per file, with its SHA-256 and size) and one
record set per table, its fields typed from the file's schema and read from its columns.

Types map from Arrow: strings to ``sc:Text``, integers to ``sc:Integer``, floats to
``sc:Float``, booleans to ``sc:Boolean``, dates and timestamps to ``sc:Date`` and
``sc:DateTime``; a list column is a field with ``isArray: true`` (Croissant 1.1's array
flag, ``arrayShape`` "-1": one dimension of any length) and the type of its items. A column
of nulls only is ``sc:Text``: it holds no value to type. Other types (structs, maps, binary)
are an error naming the column, since a reader could not be told how to read them."""

from __future__ import annotations

import dataclasses
import itertools
import json
import posixpath
from collections.abc import Mapping

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from assets.common.formats._files import read_lines, sha256_of
from resources.storage import filesystem, join, write_bytes

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
# The @context of the specification's appendix (Croissant 1.1), with schema.org over https
# as mlcroissant and the Hub write it: mlcroissant matches types such as sc:Text against the
# https IRIs, and would not recognise the http ones.
CONTEXT = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "annotation": "cr:annotation",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "excludes": "cr:excludes",
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "readLines": "cr:readLines",
    "sdVersion": "cr:sdVersion",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
    "unArchive": "cr:unArchive",
    "value": "cr:value",
    # Croissant 1.0's terms that the 1.1 appendix leaves out, still in mlcroissant's reference
    # context (it warns that a context without them is not standard); they name cr: terms only.
    "path": "cr:path",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
}
ENCODING_FORMATS = {
    ".parquet": "application/x-parquet",
    ".jsonl": "application/jsonlines",
    ".tsv": "text/tab-separated-values",
}
# Rows polars reads to infer the columns of a JSON Lines or TSV file that has no schema of its own.
INFER_ROWS = 1000


@dataclasses.dataclass(frozen=True)
class TableFile:
    """A record set: a table stored in one file of the folder (``path``, relative to it).
    ``schema`` (column -> polars type) names the columns to describe and their types; when
    None they are read from a Parquet file's footer, or inferred from the first rows of a
    JSON Lines or TSV file (where ids that look like numbers would be typed as integers: give
    the schema for those)."""

    path: str
    description: str = ""
    schema: Mapping[str, pl.DataType] | None = None


def croissant_metadata(
    folder: str,
    name: str,
    description: str,
    license: str,
    citation: str,
    url: str,
    version: str,
    tables: Mapping[str, TableFile],
    *,
    date_published: str | None = None,
) -> dict:
    """Croissant JSON-LD describing ``tables`` (record set name -> :class:`TableFile`) under
    ``folder`` (a local path or ``s3://`` URI), written there as ``croissant.json`` and
    returned. ``license`` is a URL (an SPDX one, e.g. https://spdx.org/licenses/CC-BY-4.0),
    ``citation`` the BibTeX to cite, ``version`` MAJOR.MINOR.PATCH, ``date_published`` an ISO
    date (the build's), which Croissant recommends."""
    if not tables:
        raise ValueError(f"no tables to describe under {folder}")
    distribution: dict[str, dict] = {}  # one FileObject a file, however many record sets read it
    record_sets = []
    for record_set, table in tables.items():
        uri = join(folder, *table.path.split("/"))
        if table.path not in distribution:
            distribution[table.path] = file_object(uri, table.path)
        record_sets.append(_record_set(record_set, table, _schema(uri, table)))
    metadata = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "name": name,
        "description": description,
        "conformsTo": CONFORMS_TO,
        "citeAs": citation,
        "license": license,
        "url": url,
        "version": version,
        **({"datePublished": date_published} if date_published else {}),
        "distribution": list(distribution.values()),
        "recordSet": record_sets,
    }
    write_bytes(join(folder, "croissant.json"), json.dumps(metadata, indent=2, ensure_ascii=False).encode("utf-8"))
    return metadata


def file_object(uri: str, path: str) -> dict:
    """The ``cr:FileObject`` of one data file: its path relative to the metadata, format,
    size and SHA-256 (read in chunks, so a large file is never held whole)."""
    suffix = posixpath.splitext(path)[1]
    if suffix not in ENCODING_FORMATS:
        raise ValueError(f"{path}: no Croissant encoding format for {suffix!r} files ({sorted(ENCODING_FORMATS)})")
    digest, size = sha256_of(uri)
    return {
        "@type": "cr:FileObject",
        "@id": path,
        "name": path,
        "contentUrl": path,
        "contentSize": f"{size} B",
        "encodingFormat": ENCODING_FORMATS[suffix],
        "sha256": digest,
    }


def _schema(uri: str, table: TableFile) -> pa.Schema:
    if table.schema is not None:
        return pl.DataFrame(schema=dict(table.schema)).to_arrow().schema
    if table.path.endswith(".parquet"):
        fs, path = filesystem(uri)
        with fs.open_input_file(path) as f:
            return pq.read_schema(f)
    head = b"\n".join(itertools.islice(read_lines(uri), INFER_ROWS + 1))
    if table.path.endswith(".jsonl"):
        frame = pl.read_ndjson(head, infer_schema_length=INFER_ROWS)
    else:
        frame = pl.read_csv(head, separator="\t", infer_schema_length=INFER_ROWS)
    return frame.to_arrow().schema


def _record_set(name: str, table: TableFile, schema: pa.Schema) -> dict:
    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        "description": table.description or f"The rows of {table.path}.",
        "field": [_field(name, table.path, f) for f in schema],
    }


def _field(record_set: str, path: str, arrow_field: pa.Field) -> dict:
    kind = arrow_field.type
    repeated = pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_list_view(kind)
    item = kind.value_type if repeated else kind
    field = {
        "@type": "cr:Field",
        "@id": f"{record_set}/{arrow_field.name}",
        "name": arrow_field.name,
        "dataType": data_type(item, f"{path} column {arrow_field.name!r}"),
        "source": {"fileObject": {"@id": path}, "extract": {"column": arrow_field.name}},
    }
    if repeated:
        field |= {"isArray": True, "arrayShape": "-1"}
    return field


def data_type(kind: pa.DataType, where: str) -> str:
    """The Croissant ``dataType`` of an Arrow type (of a list's items, for a list column)."""
    if pa.types.is_dictionary(kind):  # polars' categorical and enum columns: typed by their values
        return data_type(kind.value_type, where)
    for check, name in _DATA_TYPES:
        if check(kind):
            return name
    raise ValueError(f"{where}: no Croissant data type for {kind} (select the columns to describe in the schema)")


_DATA_TYPES = (
    (pa.types.is_boolean, "sc:Boolean"),
    (pa.types.is_integer, "sc:Integer"),
    (pa.types.is_floating, "sc:Float"),
    (pa.types.is_decimal, "sc:Float"),
    (pa.types.is_string, "sc:Text"),
    (pa.types.is_large_string, "sc:Text"),
    (pa.types.is_string_view, "sc:Text"),
    (pa.types.is_null, "sc:Text"),
    (pa.types.is_date, "sc:Date"),
    (pa.types.is_timestamp, "sc:DateTime"),
)
