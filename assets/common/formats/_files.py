"""Files of an export read and written as streams, locally or on S3 (``resources.storage``):
a corpus of millions of passages is never held whole as bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator

import polars as pl

from resources.storage import exists, filesystem, open_output

CHUNK = 1 << 20
# A table to export: one frame, or frames streamed batch by batch so that it is never held whole.
Frames = pl.DataFrame | Iterable[pl.DataFrame]


def read_chunks(uri: str) -> Iterator[bytes]:
    """The bytes of a file, a chunk at a time; a missing file is an error naming it."""
    fs, path = filesystem(uri)
    try:
        stream = fs.open_input_stream(path)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"no file at {uri}") from e
    with stream:
        while chunk := stream.read(CHUNK):
            yield chunk


def read_lines(uri: str) -> Iterator[bytes]:
    r"""The lines of a file, without their ``\n`` or ``\r\n``. Lines end at ``\n`` only, as
    Python's text files and BEIR's loader read them: U+2028 inside a JSON string (which
    ``ensure_ascii=False`` leaves raw) stays part of its line."""
    rest = b""
    for chunk in read_chunks(uri):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line.removesuffix(b"\r")
    if rest:
        yield rest.removesuffix(b"\r")


def sha256_of(uri: str) -> tuple[str, int]:
    """The SHA-256 hex digest and the size in bytes of a file, read in chunks."""
    digest, size = hashlib.sha256(), 0
    for chunk in read_chunks(uri):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def write_chunks(uri: str, chunks: Iterable[bytes]) -> None:
    """Write a file from chunks, beside its destination first and moved into place once
    whole, so that a killed run never leaves half a file under the real name."""
    fs, path = filesystem(uri)
    tmp = uri + ".tmp"
    try:
        with open_output(tmp) as out:
            for chunk in chunks:
                out.write(chunk)
    except BaseException:
        # The chunks failed (a frame refused part way): leave no stray half file either.
        if exists(tmp):
            fs.delete_file(filesystem(tmp)[1])
        raise
    fs.move(filesystem(tmp)[1], path)
