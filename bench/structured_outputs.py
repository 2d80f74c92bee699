"""Share of parseable answers with and without structured outputs, on a vLLM server.

Asks N items of each declared prompt kind (a choice, a list, an object) of the embedded
SmolLM2 served by vLLM's CPU build, once as a plain request and once with the prompt's
declaration sent as ``structured_outputs``, over a fresh cache, and prints per prompt the
share of answers the step's own parser reads, and the path they were read by.

    .venv/bin/python bench/structured_outputs.py [--n 4] [--api-base http://HOST:PORT/v1]

Without ``--api-base`` it starts the server as the tests do (``make vllm`` first).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from assets.common.parsing import parse_list, parse_permutation, parse_yes_no  # noqa: E402
from assets.quit.rules import parse_type_label  # noqa: E402
from assets.recor import rules as recor_rules  # noqa: E402
from assets.recor.rules import parse_aspects, parse_label  # noqa: E402
from assets.wikiprofile.rules import parse_category, parse_names, parse_reverse  # noqa: E402

TOPICS = [
    ("Which planet is known as the Red Planet?", "Mars", "Mars is the fourth planet from the Sun."),
    ("Who wrote Pride and Prejudice?", "Jane Austen", "Jane Austen was an English novelist born in 1775."),
    ("What is the capital of Italy?", "Rome", "Rome is the capital city of Italy, on the river Tiber."),
    ("Which gas do plants absorb from the air?", "Carbon dioxide", "Plants take in carbon dioxide and release oxygen."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci", "Leonardo da Vinci painted the Mona Lisa in Florence."),
    ("What is the largest ocean on Earth?", "Pacific Ocean", "The Pacific Ocean covers about a third of the Earth."),
    ("Which metal is liquid at room temperature?", "Mercury", "Mercury is a metal that is liquid at room temperature."),
    ("In which country is the city of Kyoto?", "Japan", "Kyoto was the capital of Japan for over a thousand years."),
]


def _strict(parse):
    """A parser that must find something: a reader that returns None counts as unparsed."""

    def read(text):
        value = parse(text)
        if value is None or value == []:
            raise ValueError("nothing read")
        return value

    return read


def _permutation(n):
    def read(text):
        order, repaired = parse_permutation(text, n)
        if repaired:
            raise ValueError("order needed repair")
        return order

    return read


# (prompt, fields of item i, the step's parser, request parameters as the step sends them)
CASES = [
    (
        "quit/judge",
        lambda q, a, s: {"question": q, "gold": a, "candidate": a.split()[0]},
        parse_yes_no,
        {"max_tokens": 3},
    ),
    ("quit/question_type", lambda q, a, s: {"question": q}, parse_type_label, {"max_tokens": 16}),
    ("wikiprofile/categorize", lambda q, a, s: {"title": a, "summary": s}, _strict(parse_category), {"max_tokens": 60}),
    (
        "recor/dependency_type",
        lambda q, a, s: {"history": f"User: {q}\nExpert: {s}", "query": "And why is that?"},
        lambda t: parse_label(t, recor_rules.DEPENDENCY_TYPES),
        {"max_tokens": 8, "temperature": 0.0},
    ),
    (
        "quit/distractors",
        lambda q, a, s: {"question": q, "answer": a, "count": "4"},
        lambda t: parse_list(t, 8),
        {"max_tokens": 120},
    ),
    (
        "recor/aspects",
        lambda q, a, s: {"question": q, "answer": f"{a}. {s}", "accepted": "", "n": "3"},
        lambda t: parse_aspects(t, 3),
        {"max_tokens": 300},
    ),
    (
        "eval/rankgpt",
        lambda q, a, s: {
            "question": q,
            "listing": f"[1] {s}\n[2] Bread is baked in an oven.\n[3] The weather was mild in spring.",
            "count": "3",
        },
        _permutation(3),
        {"max_tokens": 60},
    ),
    (
        "wikiprofile/select_objects",
        lambda q, a, s: {"summary": s, "candidates": a, "n": "1"},
        _strict(parse_names),
        {"max_tokens": 60},
    ),
    (
        "wikiprofile/reverse_question",
        lambda q, a, s: {"context": s, "question": q, "target": a},
        _strict(parse_reverse),
        {"max_tokens": 120},
    ),
]


def requests(n: int, constrained: bool):
    """Per case, n requests (one per topic, cycling): with the prompt's declaration or
    without."""
    from assets.common.prompts import load_prompt
    from resources.llm import LLMRequest

    out = {}
    for name, fields, _, params in CASES:
        prompt = load_prompt(*name.split("/"))
        topics = [TOPICS[i % len(TOPICS)] for i in range(n)]
        out[name] = [
            LLMRequest(
                f"{name} {i}",
                prompt.messages(**fields(*t)),
                params={"temperature": 0.0, **params},
                output=prompt.output if constrained else None,
            )
            for i, t in enumerate(topics)
        ]
    return out


def parse_shares(llm, alias: str, n: int, constrained: bool) -> dict[str, tuple[float, int, int]]:
    """Per case: (share parsed, answers read structured, answers read as free text)."""
    from resources.llm import CallStats

    shares = {}
    reqs = requests(n, constrained)
    for name, _, parse, _ in CASES:
        stats = CallStats()
        results = llm.run(alias, reqs[name], stats=stats)
        parsed = 0
        for r in results:
            try:
                parse(r.text or "")
                parsed += int(r.ok)
            except Exception:  # the step's parser refused it: not parseable
                pass
        shares[name] = (parsed / max(1, len(results)), stats.answers_structured, stats.answers_free_text)
    return shares


def main() -> None:
    from resources.llm import LLMResource

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--api-base", default=None)
    args = ap.parse_args()
    server = None
    with tempfile.TemporaryDirectory() as folder:
        url = args.api_base
        if url is None:
            from pathlib import Path

            from tests.servers import start_vllm, vllm_missing

            if vllm_missing():
                sys.exit(vllm_missing())
            t0 = time.monotonic()
            server = start_vllm(Path(folder))
            server.wait()
            url = server.base_url
            print(f"vLLM server up in {time.monotonic() - t0:.0f}s at {url}")
        try:
            registry = os.path.join(folder, "models.yaml")
            with open(registry, "w") as f:
                f.write(f"models:\n  served: {{model: hosted_vllm/smollm2, backend: vllm, api_base: '{url}'}}\n")
            llm = LLMResource(registry_path=registry, cache_dir=os.path.join(folder, "cache"))
            t0 = time.monotonic()
            free = parse_shares(llm, "served", args.n, constrained=False)
            held = parse_shares(llm, "served", args.n, constrained=True)
            print(f"{len(CASES)} prompts x {args.n} items, each asked twice, in {time.monotonic() - t0:.0f}s\n")
            print(f"{'prompt':30} {'free text':>10} {'structured':>11} {'read structured':>16}")
            for name, *_ in CASES:
                print(
                    f"{name:30} {free[name][0]:>10.0%} {held[name][0]:>11.0%} "
                    f"{held[name][1]:>8}/{held[name][1] + held[name][2]}"
                )
            total = lambda d: sum(v[0] for v in d.values()) / len(d)  # noqa: E731
            print(f"{'overall':30} {total(free):>10.0%} {total(held):>11.0%}")
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
