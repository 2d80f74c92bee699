"""WikiProfile's fact extraction (notes, steps 2-6) as functions of frames and the LLM
resource: categorization, entity tagging, object selection, the three verifications and the
balanced downsampling. Each returns its table and the rejected records with the step and
the reason; the assets only wire them."""

from __future__ import annotations

import ast
import random
import re

import polars as pl

from assets.prompts import load_prompt
from assets.verdicts import VERDICT, verdict
from assets.wikiprofile import entities as ent
from resources.llm import CallStats, LLMRequest, ParseError

CATEGORIES = ("People", "History", "Geography", "Arts", "Philosophy & Religion", "Everyday Life", "Society", "Science",
              "Technology")
OTHER_CATEGORY = "Other"
VERIFICATIONS = ("verify_with_target", "verify_left_context", "verify_difficulty")
# Budgets: a tagged paragraph is the paragraph again, plus its tags.
NER_TOKENS = {"max_tokens": 400}
SHORT = {"max_tokens": 60}

ENTITY_SCHEMA = {"page_id": pl.String, "entity_id": pl.String, "name": pl.String, "type": pl.String, "start": pl.Int32,
                 "end": pl.Int32}
OBJECT_SCHEMA = {"page_id": pl.String, "fact_id": pl.String, "object": pl.String, "type": pl.String, "start": pl.Int32,
                 "rank": pl.Int32, "ends_clause": pl.Boolean, "origin": pl.String, "left_context": pl.String}


def _prompt(name: str):
    return load_prompt("wikiprofile", name)


def reject(page_id: str, item: str, step: str, reason: str, detail: str = "") -> dict:
    return {"page_id": page_id, "item": item, "step": step, "reason": reason, "detail": detail}


REJECT_SCHEMA = {"page_id": pl.String, "item": pl.String, "step": pl.String, "reason": pl.String, "detail": pl.String}


def rejects_frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=REJECT_SCHEMA)


# --- 2. categories ----------------------------------------------------------------------------


def parse_category(text: str) -> str | None:
    """The first category named in the reply (``Philosophy and Religion`` is accepted)."""
    reply = text.replace(" and ", " & ").lower()
    hits = [(reply.find(c.lower()), c) for c in (*CATEGORIES, OTHER_CATEGORY) if c.lower() in reply]
    return min(hits)[1] if hits else None


def categorize(pages: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """One category per page. A reply that names none is kept as Other, marked unparsed."""
    prompt = _prompt("categorize")
    reqs = [LLMRequest(p["page_id"], prompt.messages(title=p["title"], summary=p["summary"]), params=SHORT)
            for p in pages.iter_rows(named=True)]
    rows = []
    for p, r in zip(pages.iter_rows(named=True), llm.run(alias, reqs, stats=stats, log=log)):
        category = parse_category(r.text or "") if r.ok else None
        rows.append({"page_id": p["page_id"], "category": category or OTHER_CATEGORY, "parsed": category is not None})
    return pl.DataFrame(rows, schema={"page_id": pl.String, "category": pl.String, "parsed": pl.Boolean})


# --- 3. entities ------------------------------------------------------------------------------


def tag_entities(pages: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Entities of each summary, from the model's inline tags checked against the text."""
    prompt = _prompt("ner")
    reqs = [LLMRequest(p["page_id"], prompt.messages(title=p["title"], summary=p["summary"]), params=NER_TOKENS)
            for p in pages.iter_rows(named=True)]
    rows, rejects = [], []
    for p, r in zip(pages.iter_rows(named=True), llm.run(alias, reqs, stats=stats, log=log)):
        found, problems = ent.parse_markup(r.text or "", p["summary"]) if r.ok else ([], [r.error or "no reply"])
        rejects += [reject(p["page_id"], problem.split(":")[0], "entities", "dropped_tag", problem) for problem in problems]
        if not found:
            rejects.append(reject(p["page_id"], p["page_id"], "entities", "no_entities", (r.text or r.error or "")[:200]))
        for n, e in enumerate(found, start=1):
            rows.append({"page_id": p["page_id"], "entity_id": f"{p['page_id']}_e{n}", **e})
    return pl.DataFrame(rows, schema=ENTITY_SCHEMA), rejects


# --- 4. objects -------------------------------------------------------------------------------


def parse_names(text: str) -> list[str]:
    """A Python list of names from the reply (the first bracketed list), else one per line."""
    m = re.search(r"\[.*?\]", text, flags=re.S)
    if m:
        try:
            value = ast.literal_eval(m.group(0))
            if isinstance(value, list):
                return [str(v).strip() for v in value if str(v).strip()]
        except (ValueError, SyntaxError):
            pass
    return [line.strip(" -*\"'") for line in text.splitlines() if line.strip(" -*\"'")]


def select_objects(pages: pl.DataFrame, entity_rows: pl.DataFrame, llm, alias: str, n: int, stats: CallStats,
                   log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Up to ``n`` objects per page: the model ranks the entities that meet the position
    rules; names it gives that are not such entities are rejected. When it gives none,
    the rule-ranked entities stand in (those closing a clause first, then the later ones),
    marked ``origin = rules``."""
    text = dict(pages.select("page_id", "summary").iter_rows())
    eligible: dict[str, list[dict]] = {}
    rejects = []
    for e in entity_rows.iter_rows(named=True):
        problem = ent.position_problem(text[e["page_id"]], e["start"], e["end"])
        if problem:
            rejects.append(reject(e["page_id"], e["name"], "objects", "bad_position", problem))
        else:
            eligible.setdefault(e["page_id"], []).append(e)
    prompt = _prompt("select_objects")
    todo = [pid for pid in text if eligible.get(pid)]
    reqs = [LLMRequest(pid, prompt.messages(summary=text[pid], candidates="; ".join(e["name"] for e in eligible[pid]), n=str(n)),
                       params=SHORT) for pid in todo]
    rows = []
    for pid, r in zip(todo, llm.run(alias, reqs, stats=stats, log=log)):
        by_name = {e["name"].lower(): e for e in eligible[pid]}
        chosen, origin = [], "model"
        for name in parse_names(r.text or "") if r.ok else []:
            e = by_name.get(name.lower())
            if e is None:
                rejects.append(reject(pid, name, "objects", "not_a_candidate", "the model named something that is not an eligible entity"))
            elif e not in chosen:
                chosen.append(e)
        if not chosen:
            origin = "rules"
            chosen = sorted(eligible[pid], key=lambda e: (not ent.ends_clause(text[pid], e["end"]), -e["start"]))
        for rank, e in enumerate(chosen[:n], start=1):
            rows.append({"page_id": pid, "fact_id": f"{pid}_o{rank}", "object": e["name"], "type": e["type"], "start": e["start"],
                         "rank": rank, "ends_clause": ent.ends_clause(text[pid], e["end"]), "origin": origin,
                         "left_context": ent.left_context(text[pid], e["start"])})
    for pid in text:
        if not eligible.get(pid):
            rejects.append(reject(pid, pid, "objects", "no_eligible_entity"))
    return pl.DataFrame(rows, schema=OBJECT_SCHEMA), rejects


# --- 5. verification --------------------------------------------------------------------------


def verify(objects: pl.DataFrame, llm, alias: str, binding: bool, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """The three verdicts per candidate (suitable with the target; the left context alone;
    difficulty). With binding verdicts a candidate passes only when all three say yes; with
    advisory ones the verdicts are recorded and every candidate passes."""
    items = list(objects.iter_rows(named=True))
    verdicts = {}
    for name in VERIFICATIONS:
        prompt = _prompt(name)
        reqs = [LLMRequest(o["fact_id"], prompt.messages(left_context=o["left_context"], target=o["object"]), params=VERDICT)
                for o in items]
        verdicts[name] = [verdict(r) if r.ok else None for r in llm.run(alias, reqs, stats=stats, log=log)]
    rows, rejects = [], []
    for k, o in enumerate(items):
        said = {name: verdicts[name][k] for name in VERIFICATIONS}
        failed = [name for name, v in said.items() if v is not True]
        passed = not failed or not binding
        rows.append({**o, **{name.removeprefix("verify_"): v for name, v in said.items()}, "verified": passed})
        if not passed:
            rejects.append(reject(o["page_id"], o["fact_id"], "verification", "unsuitable_object",
                                  f"{o['object']!r}: " + ", ".join(f"{n} said {said[n]}" for n in failed)))
    schema = {**OBJECT_SCHEMA, "with_target": pl.Boolean, "left_context_alone": pl.Boolean, "difficulty": pl.Boolean,
              "verified": pl.Boolean}
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    return frame, rejects


# --- 6. downsampling --------------------------------------------------------------------------


def downsample(facts: pl.DataFrame, categories: pl.DataFrame, target: int | None, seed: int = 0) -> pl.DataFrame:
    """At most ``target`` facts, balanced over categories and entity type groups: the
    (category, type group) cells are drawn from in turn, each cell's facts in a seeded
    shuffle, so small cells are kept whole and large ones are cut. ``None`` keeps all."""
    frame = facts.join(categories.select("page_id", "category"), on="page_id", how="left")
    frame = frame.with_columns(pl.col("type").map_elements(ent.type_group, return_dtype=pl.String).alias("type_group"))
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


# --- 7-9. direct questions --------------------------------------------------------------------

QUESTION_SCHEMA = {"fact_id": pl.String, "kind": pl.String, "generated": pl.String, "specified": pl.String,
                   "question": pl.String, "specification": pl.String, "minimalism": pl.String}
# Words a minimalism edit may add to mend grammar after its deletions.
MAX_GRAMMAR_WORDS = 2


def parse_question(text: str) -> str:
    """The first line ending in a question mark, without a ``Question:`` label or quotes."""
    for line in text.splitlines():
        line = re.sub(r"^\s*(question|q)\s*\d*\s*[:.]\s*", "", line, flags=re.I).strip().strip('"“”')
        if line.endswith("?") and len(line.split()) >= 3:
            return line
    raise ParseError(f"no question in {text[:80]!r}")


def words(text: str) -> list[str]:
    return re.findall(r"[\w'’-]+", text.lower())


def only_deletions(original: str, revised: str, allowance: int = MAX_GRAMMAR_WORDS) -> bool:
    """Whether ``revised`` keeps ``original``'s words in order, adding at most ``allowance``
    words (a mended article or verb form)."""
    from difflib import SequenceMatcher

    a, b = words(original), words(revised)
    kept = sum(block.size for block in SequenceMatcher(a=a, b=b, autojunk=False).get_matching_blocks())
    return len(b) - kept <= allowance


def answer_leaks(question: str, target: str) -> bool:
    """The answer, or every word of a multi-word answer, appears in the question."""
    q, t = set(words(question)), [w for w in words(target) if len(w) > 2 or w.isdigit()]
    return bool(t) and all(w in q for w in t)


def direct_questions(facts: pl.DataFrame, llm, alias: str, binding: bool, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Steps 7-9 for every fact: the direct question from the left context, its
    specification refinement (an edit, or REJECT) and its minimalism refinement (deletions
    only). A question that names its answer is rejected at any stage. A REJECT from advisory
    verdicts is recorded and the question kept; a minimal edit that adds words, leaks the
    answer or does not parse is set aside and the specified question kept."""
    items = list(facts.iter_rows(named=True))
    rejects: list[dict] = []
    gen = _prompt("direct_question")
    asked = llm.run(alias, [LLMRequest(f["fact_id"], gen.messages(left_context=f["left_context"], target=f["object"],
                                                                  entity_type=f["type"]), params=SHORT) for f in items],
                    parse=parse_question, stats=stats, log=log)
    live = []
    for f, r in zip(items, asked):
        if not r.ok:
            rejects.append(reject(f["page_id"], f["fact_id"], "direct_question", "no_question", r.error or ""))
        elif answer_leaks(r.value, f["object"]):
            rejects.append(reject(f["page_id"], f["fact_id"], "direct_question", "answer_in_question", r.value))
        else:
            live.append((f, r.value))
    spec = _prompt("refine_specification")
    refined = llm.run(alias, [LLMRequest(f["fact_id"], spec.messages(question=q, target=f["object"], entity_type=f["type"]), params=SHORT)
                              for f, q in live], stats=stats, log=log)
    specified = []
    for (f, q), r in zip(live, refined):
        text = r.text or ""
        if r.ok and "REJECT" in text.upper():
            if binding:
                rejects.append(reject(f["page_id"], f["fact_id"], "specification", "rejected_by_model", q))
                continue
            specified.append((f, q, q, "reject_ignored (advisory)"))
            continue
        try:
            edited = parse_question(text)
        except ParseError:
            specified.append((f, q, q, "unparsable, kept"))
            continue
        if answer_leaks(edited, f["object"]):
            specified.append((f, q, q, "edit leaked the answer, kept"))
        else:
            specified.append((f, q, edited, "unchanged" if edited == q else "edited"))
    minimal = _prompt("refine_minimal")
    shortened = llm.run(alias, [LLMRequest(f["fact_id"], minimal.messages(question=q, target=f["object"]), params=SHORT)
                                for f, _, q, _ in specified], stats=stats, log=log)
    rows = []
    for (f, generated, q, how), r in zip(specified, shortened):
        try:
            short = parse_question(r.text or "") if r.ok else None
        except ParseError:
            short = None
        if short is None:
            final, note = q, "unparsable, kept"
        elif not only_deletions(q, short):
            final, note = q, "not deletions only, kept"
        elif answer_leaks(short, f["object"]):
            final, note = q, "edit leaked the answer, kept"
        else:
            final, note = short, "unchanged" if short == q else "shortened"
        rows.append({"fact_id": f["fact_id"], "kind": "direct", "generated": generated, "specified": q, "question": final,
                     "specification": how, "minimalism": note})
    return pl.DataFrame(rows, schema=QUESTION_SCHEMA), rejects


# --- 10. search-grounded filter ---------------------------------------------------------------

SEARCH_SCHEMA = {"fact_id": pl.String, "kind": pl.String, "question": pl.String, "search_hits": pl.List(pl.String),
                 "search_answer": pl.String, "definite": pl.Boolean, "kept": pl.Boolean}
SEARCH_K = 3
SEARCH_WORDS = 120  # of each hit shown to the model


def search_filter(questions: pl.DataFrame, hits: dict[str, list[tuple[str, str]]], llm, alias: str, binding: bool,
                  stats: CallStats, log=None, step: str = "search_filter") -> tuple[pl.DataFrame, list[dict]]:
    """Each question answered from its search hits, and the answer judged: one definite
    answer passes; asking for clarification, several answers or answers per reading fail.
    With advisory verdicts the judgement is recorded and every question passes."""
    items = list(questions.iter_rows(named=True))
    answer_prompt, judge_prompt = _prompt("search_answer"), _prompt("search_judge")

    def shown(q: str) -> str:
        found = hits.get(q, [])[:SEARCH_K]
        return "\n".join(f"[{n}] {' '.join(text.split()[:SEARCH_WORDS])}" for n, (_, text) in enumerate(found, start=1)) or "(nothing found)"

    answers = llm.run(alias, [LLMRequest(f"{q['fact_id']} {q['kind']}", answer_prompt.messages(results=shown(q["question"]),
                                                                                                question=q["question"]),
                                         params={"max_tokens": 80}) for q in items], stats=stats, log=log)
    said = [" ".join((a.text or "").split()) if a.ok else "" for a in answers]
    judged = llm.run(alias, [LLMRequest(f"{q['fact_id']} {q['kind']}", judge_prompt.messages(question=q["question"], search_answer=s),
                                        params=VERDICT) for q, s in zip(items, said)], stats=stats, log=log)
    rows, rejects = [], []
    for q, s, r in zip(items, said, judged):
        definite = verdict(r) if r.ok and s else None
        kept = definite is not False or not binding
        rows.append({"fact_id": q["fact_id"], "kind": q["kind"], "question": q["question"],
                     "search_hits": [d for d, _ in hits.get(q["question"], [])[:SEARCH_K]], "search_answer": s,
                     "definite": definite, "kept": kept})
        if not kept:
            rejects.append(reject(q["fact_id"].rsplit("_o", 1)[0], q["fact_id"], step, "not_definite", f"{q['question']} -> {s}"))
    return pl.DataFrame(rows, schema=SEARCH_SCHEMA), rejects
