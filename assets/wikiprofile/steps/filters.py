"""WikiProfile's filters and options (notes, steps 10, 14 and 17-19): the search-grounded
filter, the length filter and the distractors."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from assets.common.verdicts import VERDICT, verdict
from assets.wikiprofile import rules
from assets.wikiprofile.rules import answer_leaks, parse_options
from assets.wikiprofile.steps.shared import REJECTS, SHORT, wikiprofile_prompt
from resources.llm import CallStats, LLMRequest, Model, ParseError

# ``search_filter``'s reason for a reject.
NOT_DEFINITE = "not_definite"
SEARCH_REASONS = frozenset({NOT_DEFINITE})
# ``distractors``: one of the final rejects (``release.FINAL_REASONS``).
TOO_FEW_DISTRACTORS = "too_few_distractors"

MAX_QUESTION_WORDS = 40
MIN_LEFT_CONTEXT_WORDS = 30


# --- 10. search-grounded filter ---------------------------------------------------------------

SEARCH_SCHEMA = {
    "fact_id": pl.String,
    "kind": pl.String,
    "question": pl.String,
    "search_hits": pl.List(pl.String),
    "search_answer": pl.String,
    "definite": pl.Boolean,
    "kept": pl.Boolean,
}
SEARCH_K = 3
SEARCH_WORDS = 120  # of each hit shown to the model


def search_filter(
    questions: pl.DataFrame,
    hits: dict[str, list[tuple[str, str]]],
    model: Model,
    binding: bool,
    stats: CallStats,
    log=None,
    step: str = "search_filter",
) -> tuple[pl.DataFrame, list[dict]]:
    """Each question answered from its search hits, and the answer judged: one definite
    answer passes; asking for clarification, several answers or answers per reading fail.
    With advisory verdicts the model is not asked (its judgement could not reject anything,
    and the answer costs a prompt of three pages): the hits are recorded and every question
    passes, ``definite`` left empty."""
    items = list(questions.iter_rows(named=True))
    answer_prompt, judge_prompt = wikiprofile_prompt("search_answer"), wikiprofile_prompt("search_judge")

    def shown(q: str) -> str:
        found = hits.get(q, [])[:SEARCH_K]
        return (
            "\n".join(f"[{n}] {' '.join(text.split()[:SEARCH_WORDS])}" for n, (_, text) in enumerate(found, start=1))
            or "(nothing found)"
        )

    asked = items if binding else []
    answers = model.run(
        [
            LLMRequest(
                f"{q['fact_id']} {q['kind']}",
                answer_prompt.messages(results=shown(q["question"]), question=q["question"]),
                params={"max_tokens": 80},
            )
            for q in asked
        ],
        stats=stats,
        log=log,
    )
    said = [" ".join((a.text or "").split()) if a.ok else "" for a in answers]
    judged = model.run(
        [
            LLMRequest(
                f"{q['fact_id']} {q['kind']}",
                judge_prompt.messages(question=q["question"], search_answer=s),
                params=VERDICT,
            )
            for q, s in zip(asked, said)
        ],
        stats=stats,
        log=log,
    )
    verdicts = {id(q): (s, verdict(r) if r.ok and s else None) for q, s, r in zip(asked, said, judged)}
    rows, rejects = [], []
    for q in items:
        s, definite = verdicts.get(id(q), (None, None))
        kept = definite is not False or not binding
        rows.append(
            {
                "fact_id": q["fact_id"],
                "kind": q["kind"],
                "question": q["question"],
                "search_hits": [d for d, _ in hits.get(q["question"], [])[:SEARCH_K]],
                "search_answer": s,
                "definite": definite,
                "kept": kept,
            }
        )
        if not kept:
            rejects.append(
                REJECTS.row(
                    q["fact_id"].rsplit("_o", 1)[0], q["fact_id"], step, NOT_DEFINITE, f"{q['question']} -> {s}"
                )
            )
    return pl.DataFrame(rows, schema=SEARCH_SCHEMA), rejects


# --- 18-19. length filter and options ------------------------------------------------------------


def length_problems(questions: Mapping[str, str], left_context: str) -> list[str]:
    """Step 18: every question at most 40 words, the left context at least 30 words."""
    problems = [
        f"{kind} has {len(q.split())} words (at most {MAX_QUESTION_WORDS})"
        for kind, q in questions.items()
        if kind != "contextual" and len(q.split()) > MAX_QUESTION_WORDS
    ]
    if len(left_context.split()) < MIN_LEFT_CONTEXT_WORDS:
        problems.append(f"left context has {len(left_context.split())} words (at least {MIN_LEFT_CONTEXT_WORDS})")
    return problems


def distractors(
    items: list[tuple[dict, str, str, str, str]],
    model: Model,
    stats: CallStats,
    log=None,
    binding: bool = True,
    pools: Mapping[str, list[str]] | None = None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Step 19 on ``(fact, kind, question, answer, answer type)`` items: the gold and three
    distractors per closed-book question (option 0 is the gold).

    With advisory verdicts and ``pools`` (names by entity type; ``"subject"``, the sample's
    page titles, and ``"subject:<category>"`` those of one category), a reply without three usable options is replaced by three names
    of the same type drawn from the sample (``origin = rules``)."""
    prompt = wikiprofile_prompt("distractors")
    asked = model.run(
        [
            LLMRequest(
                f"{f['fact_id']} {kind}",
                prompt.messages(question=q, target=answer, entity_type=etype),
                params=SHORT,
                output=prompt.output,
            )
            for f, kind, q, answer, etype in items
        ],
        stats=stats,
        log=log,
    )
    rows, rejects = [], []
    for (f, kind, question, answer, etype), r in zip(items, asked):
        try:
            options = parse_options(r.text or "", answer) if r.ok else None
        except ParseError as e:
            options, error = None, str(e)
        else:
            error = r.error or ""
        origin = "model"
        if options is not None and not binding and pools is not None:
            # the embedded model lists words of the question or numbered junk: keep only options of the answer's kind
            if any(answer_leaks(question, o) for o in options):
                options, error = None, "an option is named in the question"
        if options is None and not binding and pools is not None:
            # same category (subjects) or type (objects) first; when too few, any subject or an OTHER name
            same = pools.get(f"subject:{f.get('category')}", []) if kind.startswith("reverse") else pools.get(etype, [])
            wider = pools.get("subject", []) if kind.startswith("reverse") else pools.get("OTHER", [])
            pool = [p for p in same if not answer_leaks(question, p)]
            if rules.pool_options(answer, pool, "") is None:
                pool += [p for p in wider if not answer_leaks(question, p)]
            options, origin = rules.pool_options(answer, pool, f"{f['fact_id']} {kind}"), "rules"
            error = error or "pool too small"
        if options is None:
            rejects.append(
                REJECTS.row(f["page_id"], f["fact_id"], "distractors", TOO_FEW_DISTRACTORS, f"{kind}: {error}")
            )
        else:
            rows.append({"fact_id": f["fact_id"], "kind": kind, "options": [answer, *options], "origin": origin})
    return pl.DataFrame(
        rows, schema={"fact_id": pl.String, "kind": pl.String, "options": pl.List(pl.String), "origin": pl.String}
    ), rejects
