"""Assembling the released benchmark (notes, steps 18-19): a fact is kept only when all five of
its questions passed (one rejected question discards the fact) and the length filter holds;
each kept fact becomes ten tasks, the multiple-choice ones with the distractors."""

from __future__ import annotations

import polars as pl

from assets.wikiprofile import steps

CLOSED_BOOK = ("direct", "direct_natural", "reverse", "reverse_natural")

# ``complete_facts``'s reasons (assembly, length filter); with ``steps.distractors``', the
# vocabulary of the final rejects.
QUESTION_MISSING, TOO_LONG_OR_SHORT = "question_missing", "too_long_or_short"
FINAL_REASONS = frozenset({QUESTION_MISSING, TOO_LONG_OR_SHORT, steps.TOO_FEW_DISTRACTORS})

BENCHMARK_SCHEMA = {
    "fact_id": pl.String,
    "page_id": pl.String,
    "category": pl.String,
    "type_group": pl.String,
    "task": pl.String,
    "question": pl.String,
    "answer": pl.String,
    "options": pl.List(pl.String),
    "subject": pl.String,
    "object": pl.String,
    "question_origin": pl.String,
    "options_origin": pl.String,
}


def complete_facts(
    facts: pl.DataFrame, direct: dict[str, str], reverse: dict[str, dict], natural: dict[tuple[str, str], str]
) -> tuple[list[tuple[dict, dict]], list[dict]]:
    """``(fact, its five questions)`` for every fact with all five passed and within the
    lengths, and the rejects of the others (facts lost before this step have theirs upstream)."""
    rejects, complete = [], []
    for f in facts.filter(pl.col("fact_id").is_in(list(direct))).iter_rows(named=True):
        fid = f["fact_id"]
        qs = {
            "contextual": natural.get((fid, "contextual")),
            "direct": direct.get(fid),
            "direct_natural": natural.get((fid, "direct_natural")),
            "reverse": reverse[fid]["question"] if fid in reverse else None,
            "reverse_natural": natural.get((fid, "reverse_natural")),
        }
        missing = [k for k, v in qs.items() if v is None]
        if missing:
            if fid in reverse:
                rejects.append(steps.REJECTS.row(f["page_id"], fid, "assembly", QUESTION_MISSING, ", ".join(missing)))
            continue
        problems = steps.length_problems(qs, f["left_context"])
        if problems:
            rejects.append(
                steps.REJECTS.row(f["page_id"], fid, "length_filter", TOO_LONG_OR_SHORT, "; ".join(problems))
            )
            continue
        complete.append((f, qs))
    return complete, rejects


def closed_book_items(complete: list[tuple[dict, dict]], reverse: dict[str, dict]) -> list[tuple]:
    """``(fact, kind, question, answer, answer type)`` of each closed-book question, for its distractors."""
    return [
        (
            f,
            kind,
            qs[kind],
            f["object"] if kind.startswith("direct") else reverse[f["fact_id"]]["subject"],
            f["type"] if kind.startswith("direct") else reverse[f["fact_id"]]["subject_type"],
        )
        for f, qs in complete
        for kind in CLOSED_BOOK
    ]


def option_pools(entities: pl.DataFrame, source_pages: pl.DataFrame, categories: pl.DataFrame) -> dict[str, list[str]]:
    """Same-type names of the sample (and page titles, overall and per category, for subjects):
    the options of an advisory builder's failed replies."""
    pools = {etype: group["name"].unique().sort().to_list() for (etype,), group in entities.group_by("type")}
    titled = source_pages.select("page_id", "title").join(
        categories.select("page_id", "category"), on="page_id", how="left"
    )
    pools["subject"] = titled["title"].sort().to_list()
    pools.update({f"subject:{cat}": group["title"].sort().to_list() for (cat,), group in titled.group_by("category")})
    return pools


def tasks_table(
    complete: list[tuple[dict, dict]], reverse: dict[str, dict], options: pl.DataFrame, questions: list[pl.DataFrame]
) -> pl.DataFrame:
    """The ten tasks of every fact that got options for all four closed-book questions."""
    with_options = {(r["fact_id"], r["kind"]): r["options"] for r in options.iter_rows(named=True)}
    option_origin = {(r["fact_id"], r["kind"]): r["origin"] for r in options.iter_rows(named=True)}
    origin = {
        (r["fact_id"], r["kind"]): r["origin"]
        for r in pl.concat([q.select("fact_id", "kind", "origin") for q in questions]).iter_rows(named=True)
    }
    rows = []
    for f, qs in complete:
        fid = f["fact_id"]
        if not all((fid, k) in with_options for k in CLOSED_BOOK):
            continue
        subject = reverse[fid]["subject"]
        tasks = {
            "completion": (f["left_context"], f["object"], None, "source", None),
            "contextual": (qs["contextual"], f["object"], None, origin[(fid, "direct")], None),
        }
        for kind in CLOSED_BOOK:
            answer = f["object"] if kind.startswith("direct") else subject
            tasks[kind] = (qs[kind], answer, None, origin[(fid, kind)], None)
            tasks[f"mc_{kind}"] = (
                qs[kind],
                answer,
                with_options[(fid, kind)],
                origin[(fid, kind)],
                option_origin[(fid, kind)],
            )
        for task, (prompt, answer, opts, how, opts_how) in tasks.items():
            rows.append(
                {
                    "fact_id": fid,
                    "page_id": f["page_id"],
                    "category": f["category"],
                    "type_group": f["type_group"],
                    "task": task,
                    "question": prompt,
                    "answer": answer,
                    "options": opts,
                    "subject": subject,
                    "object": f["object"],
                    "question_origin": how,
                    "options_origin": opts_how,
                }
            )
    return pl.DataFrame(rows, schema=BENCHMARK_SCHEMA)
