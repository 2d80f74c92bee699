"""Encoding whole tables against encoding per item: documents/s of each way, in one process,
alternately, best of ``--repeats`` (these machines are noisy: read the ratios).

- RECOR's dense index (``assets.eval.retrieve.build``): the bundled BRIGHT and StackExchange
  documents (about 160 words, 200 MiniLM tokens, some cut at 256: RECOR's lengths), repeated
  to ``--documents``. The streamed build (``encode_corpus`` into ``build_blocks``) at several
  batch sizes, against one encoder call per document and against one call over the whole list
  (the build before, batch 64). Then the streamed build on one thread against both.
- ``quit/statistics``' semantic overlap (``release.semantic_overlap``) against one call per
  question (the question and its 325 passages), on the sample's passages.
- ``quit/question_metadata``'s difficulty (``steps.difficulties``) against one call per
  question, each with ``--references`` retrieved references.

Every way is checked to give the same numbers (largest vector or value difference printed).
``--bf16`` adds a line for MiniLM under bfloat16 autocast: not used by the project (it moves
the vectors), printed to show what a lower precision would buy.

    .venv/bin/python bench/encoding_bench.py [--documents 1000] [--questions 4]
        [--difficulty-questions 39] [--batch-sizes 16,32,64,128] [--repeats 2] [--bf16] [--skip dense,quit]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402


def recor_documents(n: int) -> list[str]:
    files = sorted(
        glob.glob(os.path.join(ROOT, "data/recor/bright/*/documents.jsonl"))
        + glob.glob(os.path.join(ROOT, "data/recor/stackexchange/*_pool.jsonl"))
    )
    docs = [json.loads(line)["content"] for f in files for line in open(f, encoding="utf-8")]
    return (docs * (n // len(docs) + 1))[:n]


def best(ways: dict, repeats: int) -> tuple[dict, dict]:
    """Each way's best (wall seconds, CPU seconds of this process) over ``repeats`` rounds,
    run alternately, and its last result. CPU seconds read steadier than wall seconds on a
    machine others share; wall seconds are what using both cores buys."""
    seconds, results = {name: (float("inf"), float("inf")) for name in ways}, {}
    for _ in range(repeats):
        for name, fn in ways.items():
            wall, cpu = time.perf_counter(), time.process_time()
            results[name] = fn()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            seconds[name] = (min(seconds[name][0], wall), min(seconds[name][1], cpu))
    return seconds, results


def report(title: str, n: int, unit: str, seconds: dict, results: dict, base: str) -> None:
    print(f"\n{title} ({n:,} {unit}, best of each; x: against {base!r}):", flush=True)
    ref = results[base]
    for name, (wall, cpu) in seconds.items():
        diff = float(np.max(np.abs(np.asarray(results[name]) - np.asarray(ref)))) if np.size(ref) else 0.0
        print(
            f"  {name:<40} {n / wall:8.1f} {unit}/s {seconds[base][0] / wall:5.2f}x   {n / cpu:8.1f} {unit}/CPU-s "
            f"{seconds[base][1] / cpu:5.2f}x   max |diff| {diff:.1e}",
            flush=True,
        )


def dense_index(args) -> None:
    import torch

    from resources.encoders import _load, encode_texts
    from resources.faiss_index import FaissIndexResource
    from resources.retrieval import RetrieverSpec, encode_corpus

    docs = recor_documents(args.documents)
    model = _load("minilm", None)
    tokens = [len(ids) for ids in model.tokenizer(docs[:300])["input_ids"]]
    print(
        f"documents: {np.mean(tokens):.0f} MiniLM tokens on average ({sum(t > model.max_seq_length for t in tokens)} "
        f"of {len(tokens)} over max_seq_length {model.max_seq_length}); torch threads {torch.get_num_threads()}, "
        f"device {model.device}",
        flush=True,
    )
    res = FaissIndexResource()

    def vectors(index):
        return index.reconstruct_n(0, index.ntotal)

    def streamed(batch_size):
        spec = RetrieverSpec(alias="minilm", kind="dense", encoder="minilm", batch_size=batch_size)
        return lambda: vectors(res.build_blocks(encode_corpus(spec, docs)))

    ways = {
        "per document (a call each)": lambda: vectors(
            res.build(np.concatenate([encode_texts("minilm", [d]) for d in docs]))
        ),
        "whole list, batch 64 (before)": lambda: vectors(res.build(encode_texts("minilm", docs, block_size=len(docs)))),
    }
    ways |= {f"streamed, batch {b}": streamed(b) for b in args.batch_sizes}
    encode_texts("minilm", docs[:64])  # warm up: first-call allocations
    seconds, results = best(ways, args.repeats)
    report(
        "RECOR dense index, MiniLM, encoded and indexed",
        len(docs),
        "docs",
        seconds,
        results,
        "per document (a call each)",
    )

    threads = torch.get_num_threads()
    fastest = min(args.batch_sizes, key=lambda b: seconds[f"streamed, batch {b}"][0])
    seconds, results = {}, {}
    for count in sorted({1, threads}):
        torch.set_num_threads(count)  # process-wide: each count timed under its own setting
        timed = best({f"streamed, batch {fastest}, {count} thread(s)": streamed(fastest)}, args.repeats)
        seconds, results = seconds | timed[0], results | timed[1]
    torch.set_num_threads(threads)
    report("threads", len(docs), "docs", seconds, results, next(iter(seconds)))

    if args.bf16:
        spec = RetrieverSpec(alias="minilm", kind="dense", encoder="minilm", batch_size=fastest)

        def bf16():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return np.concatenate(list(encode_corpus(spec, docs)))

        seconds, results = best(
            {
                "float32 (the project)": lambda: np.concatenate(list(encode_corpus(spec, docs))),
                "bfloat16 autocast (not used)": bf16,
            },
            args.repeats,
        )
        report("precision", len(docs), "docs", seconds, results, "float32 (the project)")
        a, b = results["float32 (the project)"], results["bfloat16 autocast (not used)"]
        print(f"  bfloat16: cosine to the float32 vector min {float(np.min(np.sum(a * b, axis=1))):.5f}", flush=True)


def quit_tables(args) -> None:
    sample = quit_sample(max(args.questions, args.difficulty_questions))
    text = dict(sample.select("question_id", "question").iter_rows())
    quit_overlap(sample.head(args.questions), text, args.repeats)
    quit_difficulty(sample.head(args.difficulty_questions), text, args.references, args.repeats)


def quit_sample(n: int):
    """The bundled QUIT sample's first ``n`` questions, five hints each."""
    from assets.common.records import parse_json_list
    from assets.quit import sources
    from assets.quit.settings import QuitSettings

    s = QuitSettings()
    loaded = [
        (name, parse_json_list(open(path).read(), path))
        for name, path in (("triviahg", s.triviahg_path), ("wikihint", s.wikihint_path))
    ]
    sample = sources.questions_frame(sources.ingest(loaded).rows).head(n)
    return sample.with_columns(sample["hints"].list.head(5))


def minilm(texts: list[str]) -> np.ndarray:
    from resources.encoders import encode_texts

    return encode_texts("minilm", texts, "passage")


def quit_overlap(sample, text: dict[str, str], repeats: int) -> None:
    from assets.quit import release, rules

    corpus = rules.passages_frame(sample.select("question_id", "hints"))

    def per_question_overlap():
        sims = []
        for (qid,), group in corpus.group_by("question_id", maintain_order=True):
            vecs = minilm([text[qid]] + group["text"].to_list())
            sims.extend((vecs[1:] @ vecs[0]).tolist())
        return float(np.mean(sims))

    seconds, results = best(
        {
            "per question (a call each, before)": per_question_overlap,
            "streamed blocks": lambda: release.semantic_overlap(text, corpus, minilm),
        },
        repeats,
    )
    report(
        "quit/statistics semantic overlap",
        corpus.height,
        "passages",
        seconds,
        results,
        "per question (a call each, before)",
    )


def quit_difficulty(sample, text: dict[str, str], k: int, repeats: int) -> None:
    import polars as pl

    from assets.common.text import contains_phrase
    from assets.quit import rules, steps

    # Every question's references: passages of its own and of the next question, answer appended.
    texts = rules.passages_frame(sample.select("question_id", "hints"))["text"].to_list()
    qids, answers = sample["question_id"].to_list(), sample["answer"].to_list()
    hits = {
        q: [f"{t} {answers[i]}." for t in texts[i * 325 : i * 325 + k // 2]]
        + [f"{t} {answers[i]}." for t in texts[((i + 1) % len(qids)) * 325 :][: k - k // 2]]
        for i, q in enumerate(qids)
    }
    frame = sample.select("question_id", "question", "aliases", pl.lit(None, pl.String).alias("difficulty"))
    aliases = dict(frame.select("question_id", "aliases").iter_rows())

    def per_question_difficulty():
        out = []
        for qid in qids:
            docs = hits[qid]
            vecs = minilm([text[qid]] + docs)
            out.append(
                rules.reference_complexity(
                    [any(contains_phrase(d, a) for a in aliases[qid]) for d in docs], (vecs[1:] @ vecs[0]).tolist()
                )
            )
        return out

    seconds, results = best(
        {
            "per question (a call each, before)": per_question_difficulty,
            "one call": lambda: steps.difficulties(frame, hits, minilm)["reference_complexity"].to_list(),
        },
        repeats,
    )
    report(
        f"quit/question_metadata difficulty ({k} references each)",
        len(qids),
        "questions",
        seconds,
        results,
        "per question (a call each, before)",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--documents", type=int, default=1_000)
    parser.add_argument("--questions", type=int, default=4, help="sample questions for the overlap (325 passages each)")
    parser.add_argument("--difficulty-questions", type=int, default=39, help="sample questions for the difficulty")
    parser.add_argument("--references", type=int, default=10, help="references per question (reference_top_k)")
    parser.add_argument("--batch-sizes", default="16,32,64,128")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--skip", default="", help="dense,quit: parts to leave out")
    args = parser.parse_args()
    args.batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    if "dense" not in args.skip:
        dense_index(args)
    if "quit" not in args.skip:
        quit_tables(args)


if __name__ == "__main__":
    main()
