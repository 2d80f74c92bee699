"""How many threads the embedded model (llama.cpp) should run on, alone and beside another
busy process: what the test suite's one-thread rule (tests/conftest.py) and
``BENCHFOUNDRY_LLM_THREADS`` rest on.

Each variant answers the same reader-sized prompts (a passage of about 250 tokens and a
question, 16 answer tokens at most, greedy) in a fresh process:

- ``threads=1``: one thread for the prompt's batch and for each answer token (what
  ``BENCHFOUNDRY_LLM_THREADS=1`` gives);
- ``threads=2``: two for both (the default on two cores);
- ``1+batch=2``: one thread per answer token, two for the prompt: what llama-cpp-python does
  when told ``n_threads`` alone (its ``n_threads_batch`` defaults to every core), which the
  embedded model did before it set both.

and each variant once alone and once beside a busy process (a second process answering the
same prompts on one thread, as the suite's background end-to-end run does), with the
variants in alternating order. The figures are seconds for the prompts and the ratio to
``threads=1`` alone.

    .venv/bin/python bench/llama_threads.py [--prompts 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = "smollm2-135m-instruct"
PASSAGE = " ".join(["The river flows past the old mill where the miller's family lived for generations."] * 12)
VARIANTS = {"threads=1": (1, 1), "threads=2": (2, 2), "1+batch=2": (1, 2)}


def answer(threads: int, batch: int, prompts: int) -> float:
    """Seconds to answer ``prompts`` prompts, each with its own first words (no shared
    prefix for the KV cache to reuse)."""
    from llama_cpp import Llama

    from resources.llm.embedded import embedded_model_path

    model = Llama(
        model_path=embedded_model_path(MODEL), n_ctx=2048, n_threads=threads, n_threads_batch=batch, verbose=False
    )
    started = time.perf_counter()
    for i in range(prompts):
        question = f"Question {i}: {PASSAGE} Which person is described? Answer briefly."
        model.create_chat_completion(messages=[{"role": "user", "content": question}], max_tokens=16, temperature=0)
    return time.perf_counter() - started


def run(threads: int, batch: int, prompts: int) -> subprocess.Popen:
    code = f"from bench.llama_threads import answer; print(answer({threads}, {batch}, {prompts}))"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)


def measure(variant: str, prompts: int, beside: bool) -> float:
    """The variant's seconds; ``beside``: with a one-thread neighbour busy all the while (it
    answers more prompts than the variant, and is stopped when the variant is done)."""
    neighbour = run(1, 1, prompts * 4) if beside else None
    try:
        process = run(*VARIANTS[variant], prompts)
        out, _ = process.communicate()
        return float(out.strip().splitlines()[-1])
    finally:
        if neighbour is not None:
            neighbour.kill()
            neighbour.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=30)
    args = parser.parse_args()
    results: dict[tuple[str, bool], float] = {}
    order = list(VARIANTS)
    for beside in (False, True):
        for variant in order:
            results[(variant, beside)] = measure(variant, args.prompts, beside)
        order.reverse()
    base = results[("threads=1", False)]
    print(f"| variant | alone | beside a busy process | (seconds for {args.prompts} prompts; ratio to threads=1 alone)")
    print("|---|---|---|")
    for variant in VARIANTS:
        alone, beside = results[(variant, False)], results[(variant, True)]
        print(f"| {variant} | {alone:.1f} s ({alone / base:.2f}x) | {beside:.1f} s ({beside / base:.2f}x) |")


if __name__ == "__main__":
    main()
