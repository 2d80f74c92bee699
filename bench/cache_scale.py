"""The answer cache at QUIT's size: every answer of a 4M-entry run written and read back.

QUIT's paper build asks about 8M calls (three labelers over 2,405,325 passages, their
judges, the readers). diskcache's default cache (a 1 GiB limit, least recently stored out
first) held about 3.1M answers of 346 B before it started dropping them without a word.
This writes ``--entries`` answers shaped like a labeler's (a chat key, a short answer with
its token counts) in the groups the LLM resource commits (``AnswerWriter``), reads every key
back in the chunks the resource looks up, and prints the cache's size, the seconds per
answer each way and the process's peak RSS.

    .venv/bin/python bench/cache_scale.py [--entries 4000000] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from resources.llm.cache import AnswerWriter, ResponseCache, cache_key  # noqa: E402

CHUNK = 4096  # the LLM resource's chunk: the keys it looks up together


def answer(i: int) -> dict:
    return {
        "text": f"The answer number {i} is here",
        "prompt_tokens": 352,
        "completion_tokens": 8,
        "tokens": None,
        "token_logprobs": None,
    }


def key(i: int) -> str:
    return cache_key(
        "chat",
        "hosted_vllm/labeler",
        [{"role": "user", "content": f"passage {i}"}],
        {"temperature": 0.0, "max_tokens": 24, "seed": 0},
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=4_000_000)
    parser.add_argument("--dir", default=None, help="where the cache goes (a temporary folder by default)")
    args = parser.parse_args()
    folder = args.dir or tempfile.mkdtemp(prefix="cache-scale-")
    cache = ResponseCache(folder)
    writer = AnswerWriter(cache)

    start = time.perf_counter()
    for i in range(args.entries):
        writer.add(key(i), answer(i))
    writer.flush()
    wrote = time.perf_counter() - start

    start, found, wrong = time.perf_counter(), 0, 0
    for first in range(0, args.entries, CHUNK):
        ids = range(first, min(first + CHUNK, args.entries))
        hits = cache.get_many([key(i) for i in ids])
        found += len(hits)
        wrong += sum(hits.get(key(i), {}).get("text") != answer(i)["text"] for i in ids)
    read = time.perf_counter() - start
    stats = cache.stats()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10

    print(f"entries written            {args.entries:,}")
    print(f"entries read back          {found:,} ({args.entries - found:,} missing, {wrong:,} wrong)")
    print(
        f"cache entries / size       {stats['entries']:,} / {stats['bytes'] / 2**30:.2f} GiB "
        f"({stats['bytes'] / max(stats['entries'], 1):.0f} B an answer; diskcache's old default: 1 GiB)"
    )
    print(
        f"write                      {wrote:.0f} s, {wrote / args.entries * 1e6:.1f} us an answer (key hash included)"
    )
    print(f"read                       {read:.0f} s, {read / args.entries * 1e6:.1f} us an answer (key hash included)")
    print(f"peak RSS                   {peak:.0f} MiB")
    if not args.dir:
        shutil.rmtree(folder, ignore_errors=True)
    if found != args.entries or wrong:
        sys.exit(1)


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    main()
