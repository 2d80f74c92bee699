"""WikiProfile's fact extraction (notes, steps 2-6): categorization, entity tagging, object
selection, the three verifications and the balanced downsampling."""

from __future__ import annotations

import random

import polars as pl

from assets.common.verdicts import VERDICT, verdict
from assets.wikiprofile import rules
from assets.wikiprofile.steps.shared import REJECTS, SHORT, wikiprofile_prompt
from resources.llm import CallStats, LLMRequest, Model

# Prompt -> the column its verdict is stored in.
VERIFICATIONS = {
    "verify_with_target": "with_target",
    "verify_left_context": "left_context_alone",
    "verify_difficulty": "difficulty",
}
# Budget: a tagged paragraph is the paragraph again, plus its tags.
NER_TOKENS = {"max_tokens": 400}

ENTITY_SCHEMA = {
    "page_id": pl.String,
    "entity_id": pl.String,
    "name": pl.String,
    "type": pl.String,
    "start": pl.Int32,
    "end": pl.Int32,
    "origin": pl.String,
}
OBJECT_SCHEMA = {
    "page_id": pl.String,
    "fact_id": pl.String,
    "object": pl.String,
    "type": pl.String,
    "start": pl.Int32,
    "rank": pl.Int32,
    "ends_clause": pl.Boolean,
    "origin": pl.String,
    "left_context": pl.String,
}

# Each step's reasons for a reject, the vocabulary its rejects table is checked against.
# ``tag_entities``.
DROPPED_TAG, NO_ENTITIES = "dropped_tag", "no_entities"
ENTITY_REASONS = frozenset({DROPPED_TAG, NO_ENTITIES})
# ``select_objects``.
BAD_POSITION, NOT_A_CANDIDATE, NO_ELIGIBLE_ENTITY = "bad_position", "not_a_candidate", "no_eligible_entity"
OBJECT_REASONS = frozenset({BAD_POSITION, NOT_A_CANDIDATE, NO_ELIGIBLE_ENTITY})
# ``verify``.
UNSUITABLE_OBJECT = "unsuitable_object"
VERIFICATION_REASONS = frozenset({UNSUITABLE_OBJECT})


# --- 2. categories ----------------------------------------------------------------------------


def categorize(pages: pl.DataFrame, model: Model, stats: CallStats, log=None, binding: bool = True) -> pl.DataFrame:
    """One category per page. A reply that names none is kept as Other, marked unparsed.
    With advisory verdicts the source's own category (``reference_category``), where the
    page has one, decides and the model's answer is kept beside it (``llm_category``)."""
    prompt = wikiprofile_prompt("categorize")
    reqs = [
        LLMRequest(
            p["page_id"], prompt.messages(title=p["title"], summary=p["summary"]), params=SHORT, output=prompt.output
        )
        for p in pages.iter_rows(named=True)
    ]
    rows = []
    for p, r in zip(pages.iter_rows(named=True), model.run(reqs, stats=stats, log=log)):
        category = rules.parse_category(r.text or "") if r.ok else None
        reference = p.get("reference_category")
        use_reference = not binding and reference is not None
        rows.append(
            {
                "page_id": p["page_id"],
                "category": reference if use_reference else category or rules.OTHER_CATEGORY,
                "parsed": category is not None,
                "llm_category": category,
                "origin": "reference" if use_reference else "model",
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "page_id": pl.String,
            "category": pl.String,
            "parsed": pl.Boolean,
            "llm_category": pl.String,
            "origin": pl.String,
        },
    )


# --- 3. entities ------------------------------------------------------------------------------


def tag_entities(
    pages: pl.DataFrame, model: Model, stats: CallStats, log=None, binding: bool = True
) -> tuple[pl.DataFrame, list[dict]]:
    """Entities of each summary, from the model's inline tags checked against the text. A
    builder with advisory verdicts that tags nothing usable (the embedded model copies the
    paragraph back) gets the rule-based entities instead, marked ``origin = rules``."""
    prompt = wikiprofile_prompt("ner")
    reqs = [
        LLMRequest(
            p["page_id"],
            prompt.messages(title=p["title"], summary=p["summary"]),
            params=NER_TOKENS,
            output=prompt.output,
        )
        for p in pages.iter_rows(named=True)
    ]
    rows, rejects = [], []
    for p, r in zip(pages.iter_rows(named=True), model.run(reqs, stats=stats, log=log)):
        found, problems = rules.parse_markup(r.text or "", p["summary"]) if r.ok else ([], [r.error or "no reply"])
        rejects += [
            REJECTS.row(p["page_id"], problem.split(":")[0], "entities", DROPPED_TAG, problem) for problem in problems
        ]
        origin = "model"
        if not found and not binding:
            found, origin = rules.spot_entities(p["summary"]), "rules"
        if not found:
            rejects.append(
                REJECTS.row(p["page_id"], p["page_id"], "entities", NO_ENTITIES, (r.text or r.error or "")[:200])
            )
        for n, e in enumerate(found, start=1):
            rows.append({"page_id": p["page_id"], "entity_id": f"{p['page_id']}_e{n}", **e, "origin": origin})
    return pl.DataFrame(rows, schema=ENTITY_SCHEMA), rejects


# --- 4. objects -------------------------------------------------------------------------------


def select_objects(
    pages: pl.DataFrame, entity_rows: pl.DataFrame, model: Model, n: int, stats: CallStats, log=None
) -> tuple[pl.DataFrame, list[dict]]:
    """Up to ``n`` objects per page: the model ranks the entities that meet the position
    rules; names it gives that are not such entities are rejected. When it gives none,
    the rule-ranked entities stand in (those closing a clause first, then the later ones),
    marked ``origin = rules``."""
    text = dict(pages.select("page_id", "summary").iter_rows())
    eligible: dict[str, list[dict]] = {}
    rejects = []
    for e in entity_rows.iter_rows(named=True):
        problem = rules.position_problem(text[e["page_id"]], e["start"], e["end"])
        if problem:
            rejects.append(REJECTS.row(e["page_id"], e["name"], "objects", BAD_POSITION, problem))
        else:
            eligible.setdefault(e["page_id"], []).append(e)
    prompt = wikiprofile_prompt("select_objects")
    todo = [pid for pid in text if eligible.get(pid)]
    reqs = [
        LLMRequest(
            pid,
            prompt.messages(summary=text[pid], candidates="; ".join(e["name"] for e in eligible[pid]), n=str(n)),
            params=SHORT,
            output=prompt.output,
        )
        for pid in todo
    ]
    rows = []
    for pid, r in zip(todo, model.run(reqs, stats=stats, log=log)):
        by_name = {e["name"].lower(): e for e in eligible[pid]}
        chosen, origin = [], "model"
        for name in rules.parse_names(r.text or "") if r.ok else []:
            e = by_name.get(name.lower())
            if e is None:
                rejects.append(
                    REJECTS.row(
                        pid,
                        name,
                        "objects",
                        NOT_A_CANDIDATE,
                        "the model named something that is not an eligible entity",
                    )
                )
            elif e not in chosen:
                chosen.append(e)
        if not chosen:
            origin = "rules"
            chosen = sorted(eligible[pid], key=lambda e: (not rules.ends_clause(text[pid], e["end"]), -e["start"]))
        for rank, e in enumerate(chosen[:n], start=1):
            rows.append(
                {
                    "page_id": pid,
                    "fact_id": f"{pid}_o{rank}",
                    "object": e["name"],
                    "type": e["type"],
                    "start": e["start"],
                    "rank": rank,
                    "ends_clause": rules.ends_clause(text[pid], e["end"]),
                    "origin": origin,
                    "left_context": rules.left_context(text[pid], e["start"]),
                }
            )
    for pid in text:
        if not eligible.get(pid):
            rejects.append(REJECTS.row(pid, pid, "objects", NO_ELIGIBLE_ENTITY))
    return pl.DataFrame(rows, schema=OBJECT_SCHEMA), rejects


# --- 5. verification --------------------------------------------------------------------------


def verify(
    objects: pl.DataFrame, model: Model, binding: bool, stats: CallStats, log=None
) -> tuple[pl.DataFrame, list[dict]]:
    """The three verdicts per candidate (suitable with the target; the left context alone;
    difficulty). With binding verdicts a candidate passes only when all three say yes; with
    advisory ones the verdicts are recorded and every candidate passes."""
    items = list(objects.iter_rows(named=True))
    verdicts = {}
    for name in VERIFICATIONS:
        prompt = wikiprofile_prompt(name)
        reqs = [
            LLMRequest(
                o["fact_id"], prompt.messages(left_context=o["left_context"], target=o["object"]), params=VERDICT
            )
            for o in items
        ]
        verdicts[name] = [verdict(r) if r.ok else None for r in model.run(reqs, stats=stats, log=log)]
    rows, rejects = [], []
    for k, o in enumerate(items):
        said = {name: verdicts[name][k] for name in VERIFICATIONS}
        failed = [name for name, v in said.items() if v is not True]
        passed = not failed or not binding
        rows.append({**o, **{VERIFICATIONS[name]: v for name, v in said.items()}, "verified": passed})
        if not passed:
            rejects.append(
                REJECTS.row(
                    o["page_id"],
                    o["fact_id"],
                    "verification",
                    UNSUITABLE_OBJECT,
                    f"{o['object']!r}: " + ", ".join(f"{n} said {said[n]}" for n in failed),
                )
            )
    schema = {
        **OBJECT_SCHEMA,
        "with_target": pl.Boolean,
        "left_context_alone": pl.Boolean,
        "difficulty": pl.Boolean,
        "verified": pl.Boolean,
    }
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return frame, rejects


# --- 6. downsampling --------------------------------------------------------------------------


def downsample(facts: pl.DataFrame, categories: pl.DataFrame, target: int | None, seed: int = 0) -> pl.DataFrame:
    """At most ``target`` facts, balanced over categories and entity type groups: the
    (category, type group) cells are drawn from in turn, each cell's facts in a seeded
    shuffle, so small cells are kept whole and large ones are cut. ``None`` keeps all."""
    frame = facts.join(categories.select("page_id", "category"), on="page_id", how="left")
    frame = frame.with_columns(
        pl.col("type").map_elements(rules.type_group, return_dtype=pl.String).alias("type_group")
    )
    if target is None or frame.height <= target:
        return frame
    rng = random.Random(seed)
    cells: dict[tuple, list[dict]] = {}
    for row in frame.sort("fact_id").iter_rows(named=True):
        cells.setdefault((row["category"], row["type_group"]), []).append(row)
    for rows in cells.values():
        rng.shuffle(rows)
    kept: list[dict] = []
    while len(kept) < target and any(cells.values()):
        for key in sorted(cells):
            if cells[key] and len(kept) < target:
                kept.append(cells[key].pop())
    return pl.DataFrame(kept, schema=frame.schema).sort("fact_id")
