"""Reading Wikimedia's files as they are downloaded: gzip, bzip2 or plain, told apart by their
first bytes (a renamed file still reads), line by line, never whole."""

from __future__ import annotations

import bz2
import gzip
import os
import queue
import re
import threading
import zlib
from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 24  # 16 MiB of decompressed bytes at a time
NEWLINE = b"\n"


class WikipediaFileError(ValueError):
    """A file that cannot be read on (truncated, corrupt, no usable header): the message names
    the file and the line it stopped after."""


def open_binary(path: str) -> BinaryIO:
    """``path`` opened for reading its decompressed bytes."""
    with open(path, "rb") as f:
        magic = f.read(3)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    if magic == b"BZh":
        return bz2.open(path, "rb")
    return open(path, "rb")


def compression(path: str) -> str:
    with open(path, "rb") as f:
        magic = f.read(3)
    return "gzip" if magic[:2] == b"\x1f\x8b" else "bz2" if magic == b"BZh" else "none"


def _decompressed(path: str, size: int) -> Iterator[bytes]:
    """The decompressed bytes of ``path``, a block at a time. zlib and bz2 decompress with the
    GIL released, so run in a thread (:func:`chunks`) this overlaps the parsing of the last
    block. Several gzip members one after another (as ``cat a.gz b.gz`` makes) read as one."""
    kind = compression(path)
    with open(path, "rb") as f:
        if kind == "none":
            while block := f.read(size):
                yield block
            return
        new = (lambda: zlib.decompressobj(wbits=31)) if kind == "gzip" else bz2.BZ2Decompressor
        unpack, ended = new(), False
        while raw := f.read(size // 4):
            while raw:
                out = unpack.decompress(raw)
                if out:
                    yield out
                ended = unpack.eof
                raw = unpack.unused_data if ended else b""
                if ended and raw:
                    unpack, ended = new(), False
                elif ended:
                    unpack = new()
        if not ended:
            raise EOFError("the compressed stream ends before its end marker")


def chunks(path: str, size: int = CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of ``path`` in chunks that end at a line end (the last may not),
    decompressed in a thread a block ahead. A truncated or corrupt compressed file is a
    :class:`WikipediaFileError` naming the file and the last whole line read."""
    blocks: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                blocks.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for block in _decompressed(path, size):
                if not put(block):
                    return  # the reader stopped early
            put(None)
        except (EOFError, OSError, ValueError, zlib.error) as e:
            put(e)

    threading.Thread(target=produce, daemon=True, name=f"decompress {os.path.basename(path)}").start()
    try:
        yield from _whole_lines(path, blocks)
    finally:
        stop.set()


def _whole_lines(path: str, blocks: queue.Queue) -> Iterator[bytes]:
    lines, rest = 0, b""
    while True:
        block = blocks.get()
        if isinstance(block, Exception):
            whole = lines + rest.count(NEWLINE)
            raise WikipediaFileError(
                f"{path}: the compressed data ends or breaks after line {whole} ({block}); download the file again"
            )
        if block is None:
            break
        cut = block.rfind(NEWLINE) + 1
        if not cut:
            rest += block
            continue
        head = rest + block[:cut] if rest else block[:cut]
        rest = block[cut:]
        lines += head.count(NEWLINE)
        yield head
    if rest:
        yield rest


def numbered_lines(path: str) -> Iterator[tuple[int, bytes]]:
    """``(line number, line without its end)`` for each line of ``path``, from 1."""
    n = 0
    for block in chunks(path):
        pieces = block.split(NEWLINE)
        if block.endswith(NEWLINE):
            pieces.pop()  # the empty piece after the last line end is not a line
        for line in pieces:
            n += 1
            yield n, line.rstrip(b"\r")


def normalize_title(title: str) -> str:
    """A title as MediaWiki compares them: underscores as spaces, runs of white space as one,
    the first letter in upper case (English Wikipedia's titles are case-sensitive after it)."""
    title = re.sub(r"[\s_]+", " ", title).strip()
    return title[:1].upper() + title[1:]
