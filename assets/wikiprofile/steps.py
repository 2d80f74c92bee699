"""WikiProfile's fact extraction (notes, steps 2-6) as functions of frames and the LLM
resource: categorization, entity tagging, object selection, the three verifications and the
balanced downsampling. Each returns its table and the rejected records with the step and
the reason; the assets only wire them."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping

import polars as pl

from assets.common.parsing import is_question, python_literal
from assets.common.prompts import load_prompt
from assets.common.rejects import Rejects
from assets.common.text import words
from assets.common.verdicts import VERDICT, verdict
from assets.wikiprofile import rules
from resources.llm import CallStats, LLMRequest, ParseError

CATEGORIES = ("People", "History", "Geography", "Arts", "Philosophy & Religion", "Everyday Life", "Society", "Science",
              "Technology")
OTHER_CATEGORY = "Other"
# Prompt -> the column its verdict is stored in.
VERIFICATIONS = {"verify_with_target": "with_target", "verify_left_context": "left_context_alone", "verify_difficulty": "difficulty"}
# Budgets: a tagged paragraph is the paragraph again, plus its tags.
NER_TOKENS = {"max_tokens": 400}
SHORT = {"max_tokens": 60}
# The subject's type for a rule-made reverse question, from the page's category.
CATEGORY_TYPES = {"People": "PERSON", "Geography": "LOCATION", "History": "EVENT"}

ENTITY_SCHEMA = {"page_id": pl.String, "entity_id": pl.String, "name": pl.String, "type": pl.String, "start": pl.Int32,
                 "end": pl.Int32, "origin": pl.String}
OBJECT_SCHEMA = {"page_id": pl.String, "fact_id": pl.String, "object": pl.String, "type": pl.String, "start": pl.Int32,
                 "rank": pl.Int32, "ends_clause": pl.Boolean, "origin": pl.String, "left_context": pl.String}


def _prompt(name: str):
    return load_prompt("wikiprofile", name)


# What a step drops: the page and the item (entity, object, fact).
REJECTS = Rejects(("page_id", "item"))
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
# ``refine`` rejects a binding REJECT of the specification refinement, for both directions.
REJECTED_BY_MODEL = "rejected_by_model"
# ``direct_questions``, ``reverse_questions`` (with the pair check) and ``natural_questions``.
NO_QUESTION, ANSWER_IN_QUESTION, OFF_TOPIC = "no_question", "answer_in_question", "off_topic"
NO_UNIQUE_REVERSE, SUBJECT_NOT_IN_TEXT = "no_unique_reverse", "subject_not_in_text"
OBJECT_NOT_IN_QUESTION, INVALID_PAIR = "object_not_in_question", "invalid_pair"
# A question built by rule whose rule rephrasing could not be built.
RULES_NOT_REPHRASED = "rules"
DIRECT_QUESTION_REASONS = frozenset({NO_QUESTION, ANSWER_IN_QUESTION, REJECTED_BY_MODEL})
REVERSE_QUESTION_REASONS = frozenset({NO_QUESTION, NO_UNIQUE_REVERSE, SUBJECT_NOT_IN_TEXT, OBJECT_NOT_IN_QUESTION,
                                      ANSWER_IN_QUESTION, OFF_TOPIC, INVALID_PAIR, REJECTED_BY_MODEL})
NATURAL_QUESTION_REASONS = frozenset({NO_QUESTION, ANSWER_IN_QUESTION, OFF_TOPIC, RULES_NOT_REPHRASED})
# ``search_filter``.
NOT_DEFINITE = "not_definite"
SEARCH_REASONS = frozenset({NOT_DEFINITE})
# ``distractors``: one of the final rejects (``release.FINAL_REASONS``).
TOO_FEW_DISTRACTORS = "too_few_distractors"


# --- 2. categories ----------------------------------------------------------------------------


def parse_category(text: str) -> str | None:
    """The first category named in the reply (``Philosophy and Religion`` is accepted)."""
    reply = text.replace(" and ", " & ").lower()
    hits = [(reply.find(c.lower()), c) for c in (*CATEGORIES, OTHER_CATEGORY) if c.lower() in reply]
    return min(hits)[1] if hits else None


def categorize(pages: pl.DataFrame, llm, alias: str, stats: CallStats, log=None, binding: bool = True) -> pl.DataFrame:
    """One category per page. A reply that names none is kept as Other, marked unparsed.
    With advisory verdicts the source's own category (``reference_category``), where the
    page has one, decides and the model's answer is kept beside it (``llm_category``)."""
    prompt = _prompt("categorize")
    reqs = [LLMRequest(p["page_id"], prompt.messages(title=p["title"], summary=p["summary"]), params=SHORT, output=prompt.output)
            for p in pages.iter_rows(named=True)]
    rows = []
    for p, r in zip(pages.iter_rows(named=True), llm.run(alias, reqs, stats=stats, log=log)):
        category = parse_category(r.text or "") if r.ok else None
        reference = p.get("reference_category")
        use_reference = not binding and reference is not None
        rows.append({"page_id": p["page_id"], "category": reference if use_reference else category or OTHER_CATEGORY,
                     "parsed": category is not None, "llm_category": category,
                     "origin": "reference" if use_reference else "model"})
    return pl.DataFrame(rows, schema={"page_id": pl.String, "category": pl.String, "parsed": pl.Boolean,
                                      "llm_category": pl.String, "origin": pl.String})


# --- 3. entities ------------------------------------------------------------------------------


def tag_entities(pages: pl.DataFrame, llm, alias: str, stats: CallStats, log=None,
                 binding: bool = True) -> tuple[pl.DataFrame, list[dict]]:
    """Entities of each summary, from the model's inline tags checked against the text. A
    builder with advisory verdicts that tags nothing usable (the embedded model copies the
    paragraph back) gets the rule-based entities instead, marked ``origin = rules``."""
    prompt = _prompt("ner")
    reqs = [LLMRequest(p["page_id"], prompt.messages(title=p["title"], summary=p["summary"]), params=NER_TOKENS,
                       output=prompt.output)
            for p in pages.iter_rows(named=True)]
    rows, rejects = [], []
    for p, r in zip(pages.iter_rows(named=True), llm.run(alias, reqs, stats=stats, log=log)):
        found, problems = rules.parse_markup(r.text or "", p["summary"]) if r.ok else ([], [r.error or "no reply"])
        rejects += [REJECTS.row(p["page_id"], problem.split(":")[0], "entities", DROPPED_TAG, problem) for problem in problems]
        origin = "model"
        if not found and not binding:
            found, origin = rules.spot_entities(p["summary"]), "rules"
        if not found:
            rejects.append(REJECTS.row(p["page_id"], p["page_id"], "entities", NO_ENTITIES, (r.text or r.error or "")[:200]))
        for n, e in enumerate(found, start=1):
            rows.append({"page_id": p["page_id"], "entity_id": f"{p['page_id']}_e{n}", **e, "origin": origin})
    return pl.DataFrame(rows, schema=ENTITY_SCHEMA), rejects


# --- 4. objects -------------------------------------------------------------------------------


def parse_names(text: str) -> list[str]:
    """A Python list of names from the reply (the first bracketed list), else one per line.
    Only strings and numbers are names: a list of anything else is read line by line."""
    # The first "[" and the first "]" after it, found without a backtracking search.
    start = text.find("[")
    end = text.find("]", start) if start >= 0 else -1
    if end >= 0:
        value, _ = python_literal(text[start:end + 1])
        names = [_name(v) for v in value] if isinstance(value, list) else [None]
        if None not in names:
            return [n for n in names if n]
    return [line.strip(" -*\"'") for line in text.splitlines() if line.strip(" -*\"'")]


def _name(value) -> str | None:
    """A listed name: a string, or a number as written (a year); None for anything else,
    and for an integer too long to write (a hex literal can be)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64):
        return str(value)
    return None


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
        problem = rules.position_problem(text[e["page_id"]], e["start"], e["end"])
        if problem:
            rejects.append(REJECTS.row(e["page_id"], e["name"], "objects", BAD_POSITION, problem))
        else:
            eligible.setdefault(e["page_id"], []).append(e)
    prompt = _prompt("select_objects")
    todo = [pid for pid in text if eligible.get(pid)]
    reqs = [LLMRequest(pid, prompt.messages(summary=text[pid], candidates="; ".join(e["name"] for e in eligible[pid]), n=str(n)),
                       params=SHORT, output=prompt.output) for pid in todo]
    rows = []
    for pid, r in zip(todo, llm.run(alias, reqs, stats=stats, log=log)):
        by_name = {e["name"].lower(): e for e in eligible[pid]}
        chosen, origin = [], "model"
        for name in parse_names(r.text or "") if r.ok else []:
            e = by_name.get(name.lower())
            if e is None:
                rejects.append(REJECTS.row(pid, name, "objects", NOT_A_CANDIDATE, "the model named something that is not an eligible entity"))
            elif e not in chosen:
                chosen.append(e)
        if not chosen:
            origin = "rules"
            chosen = sorted(eligible[pid], key=lambda e: (not rules.ends_clause(text[pid], e["end"]), -e["start"]))
        for rank, e in enumerate(chosen[:n], start=1):
            rows.append({"page_id": pid, "fact_id": f"{pid}_o{rank}", "object": e["name"], "type": e["type"], "start": e["start"],
                         "rank": rank, "ends_clause": rules.ends_clause(text[pid], e["end"]), "origin": origin,
                         "left_context": rules.left_context(text[pid], e["start"])})
    for pid in text:
        if not eligible.get(pid):
            rejects.append(REJECTS.row(pid, pid, "objects", NO_ELIGIBLE_ENTITY))
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
        rows.append({**o, **{VERIFICATIONS[name]: v for name, v in said.items()}, "verified": passed})
        if not passed:
            rejects.append(REJECTS.row(o["page_id"], o["fact_id"], "verification", UNSUITABLE_OBJECT,
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
    frame = frame.with_columns(pl.col("type").map_elements(rules.type_group, return_dtype=pl.String).alias("type_group"))
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
                   "question": pl.String, "specification": pl.String, "minimalism": pl.String, "origin": pl.String}
# Pages by id: (title, summary), for the questions built by rule (``cloze``).
Pages = Mapping[str, tuple[str, str]]
# Words a minimalism edit may add to mend grammar after its deletions.
MAX_GRAMMAR_WORDS = 2


# A label such as "Question 2:". Possessive: the spaces on either side of the number cannot
# be traded back and forth, which took quadratic time on a long run of spaces.
_QUESTION_LABEL = re.compile(r"^\s*+(?:question|q)\s*+\d*+\s*+[:.]\s*+", flags=re.I)


def parse_question(text: str) -> str:
    """The first line ending in a question mark, without a ``Question:`` label or quotes."""
    for line in text.splitlines():
        line = _QUESTION_LABEL.sub("", line).strip().strip('"“”')
        if line.endswith("?") and len(line.split()) >= 3:
            return line
    raise ParseError(f"no question in {text[:80]!r}")


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


def _sentence(pages: Pages, f: dict) -> str:
    summary = pages[f["page_id"]][1]
    begin, end = rules.sentence_span(summary, f["start"])
    return summary[begin:end]


def _is_person(f: dict) -> bool:
    """Whether the fact's topic is a person (its page's category), for the pronouns."""
    return CATEGORY_TYPES.get(f.get("category") or "") == "PERSON"


def rules_row(f: dict, kind: str, question: str) -> dict:
    return {"fact_id": f["fact_id"], "kind": kind, "generated": question, "specified": question, "question": question,
            "specification": "rules", "minimalism": "rules", "origin": "rules"}


def direct_questions(facts: pl.DataFrame, llm, alias: str, binding: bool, stats: CallStats, log=None,
                     pages: Pages | None = None) -> tuple[pl.DataFrame, list[dict]]:
    """Steps 7-9 for every fact: the direct question from the left context, its
    specification refinement (an edit, or REJECT) and its minimalism refinement (deletions
    only). A question that names its answer is rejected at any stage. A REJECT from advisory
    verdicts is recorded and the question kept; a minimal edit that adds words, leaks the
    answer or does not parse is set aside and the specified question kept.

    With advisory verdicts and the ``pages``, a model question that is not a real question
    or not about the fact's sentence is replaced by the sentence's cloze (``origin =
    rules``), which needs no refinement."""
    items = list(facts.iter_rows(named=True))
    rejects: list[dict] = []
    gen = _prompt("direct_question")
    asked = llm.run(alias, [LLMRequest(f["fact_id"], gen.messages(left_context=f["left_context"], target=f["object"],
                                                                  entity_type=f["type"]), params=SHORT) for f in items],
                    parse=parse_question, stats=stats, log=log)
    live, ruled = [], []
    for f, r in zip(items, asked):
        fallback = not binding and pages is not None
        usable = r.ok and not answer_leaks(r.value, f["object"])
        if fallback and not (usable and is_question(r.value) and rules.on_topic(r.value, _sentence(pages, f), pages[f["page_id"]][0])):
            blanked = rules.direct_cloze(*pages[f["page_id"]], f["start"], f["object"], _is_person(f))
            if blanked is None:
                rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "direct_question", NO_QUESTION,
                                      "rules: the sentence's clause around the object is too long for a question"))
            else:
                ruled.append(rules_row(f, "direct", rules.direct_question(blanked, f["type"])))
        elif not r.ok:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "direct_question", NO_QUESTION, r.error or ""))
        elif not usable:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "direct_question", ANSWER_IN_QUESTION, r.value))
        else:
            live.append((f, r.value))
    rows, more = refine([(f, q, f["object"], f["type"]) for f, q in live], "direct", llm, alias, binding, stats, log)
    return pl.DataFrame(rows + ruled, schema=QUESTION_SCHEMA).sort("fact_id"), rejects + more


def refine(live: list[tuple[dict, str, str, str]], kind: str, llm, alias: str, binding: bool, stats: CallStats,
           log=None) -> tuple[list[dict], list[dict]]:
    """Steps 8-9 (and 12 for reverse questions) on ``(fact, question, answer, answer type)``
    items: the specification refinement, then the minimalism refinement, with the checks
    that keep a bad edit from replacing a good question."""
    rejects = []
    spec = _prompt("refine_specification")
    refined = llm.run(alias, [LLMRequest(f"{f['fact_id']} {kind}", spec.messages(question=q, target=target, entity_type=etype),
                                         params=SHORT) for f, q, target, etype in live], stats=stats, log=log)
    specified = []
    for (f, q, target, _), r in zip(live, refined):
        text = r.text or ""
        if r.ok and "REJECT" in text.upper():
            if binding:
                rejects.append(REJECTS.row(f["page_id"], f["fact_id"], f"{kind}_specification", REJECTED_BY_MODEL, q))
                continue
            specified.append((f, q, q, target, "reject_ignored (advisory)"))
            continue
        try:
            edited = parse_question(text)
        except ParseError:
            specified.append((f, q, q, target, "unparsable, kept"))
            continue
        if answer_leaks(edited, target):
            specified.append((f, q, q, target, "edit leaked the answer, kept"))
        elif not binding and not rules.on_topic(edited, q, ""):
            specified.append((f, q, q, target, "edit off the question's topic, kept"))
        else:
            specified.append((f, q, edited, target, "unchanged" if edited == q else "edited"))
    minimal = _prompt("refine_minimal")
    shortened = llm.run(alias, [LLMRequest(f"{f['fact_id']} {kind}", minimal.messages(question=q, target=target), params=SHORT)
                                for f, _, q, target, _ in specified], stats=stats, log=log)
    rows = []
    for (f, generated, q, target, how), r in zip(specified, shortened):
        try:
            short = parse_question(r.text or "") if r.ok else None
        except ParseError:
            short = None
        if short is None:
            final, note = q, "unparsable, kept"
        elif not only_deletions(q, short):
            final, note = q, "not deletions only, kept"
        elif answer_leaks(short, target):
            final, note = q, "edit leaked the answer, kept"
        else:
            final, note = short, "unchanged" if short == q else "shortened"
        rows.append({"fact_id": f["fact_id"], "kind": kind, "generated": generated, "specified": q, "question": final,
                     "specification": how, "minimalism": note, "origin": "model"})
    return rows, rejects


# --- 11-13. reverse questions ----------------------------------------------------------------

REVERSE_SCHEMA = {**QUESTION_SCHEMA, "subject": pl.String, "subject_type": pl.String, "pair_ok": pl.Boolean}


_SUBJECT = re.compile(r"subject\s*+:\s*+(.+)", flags=re.I)
_QUESTION = re.compile(r"question\s*+:\s*+", flags=re.I)


def parse_reverse(text: str) -> tuple[str, str] | None:
    """(subject, reverse question) from ``Subject: ...`` / ``Question: ...``; None for REJECT.
    The question runs from its label to the last question mark of that line."""
    if re.search(r"\bREJECT\b", text):
        return None
    subject = _SUBJECT.search(text)
    question, searched = None, 0
    # Each line is searched for its last "?" once: a label after one that found none on its
    # line finds none either (a pattern ``(.+\?)`` rescanned the line from every label).
    for label in _QUESTION.finditer(text):
        if label.start() < searched:
            continue
        end = text.find("\n", label.end())
        searched = len(text) if end < 0 else end
        mark = text.rfind("?", label.end() + 1, searched)
        if mark >= 0:
            question = text[label.end():mark + 1]
            break
    if not subject or question is None:
        raise ParseError(f"no Subject and Question lines in {text[:80]!r}")
    return subject.group(1).strip().strip('".'), question.strip().strip('"')


def parse_entity_type(text: str) -> str | None:
    found = [(text.upper().find(t), t) for t in rules.ENTITY_TYPES if re.search(rf"\b{t}\b", text.upper())]
    return min(found)[1] if found else None


def reverse_questions(facts: pl.DataFrame, direct: pl.DataFrame, llm, alias: str, binding: bool, stats: CallStats,
                      log=None, pages: Pages | None = None) -> tuple[pl.DataFrame, list[dict]]:
    """Steps 11-13 for every fact with a direct question: the model names the subject and
    writes the reverse question (or REJECT: no unique reverse exists); the subject must occur
    in the left context and not in the question, and the object must occur in it; the
    answer type, the two refinements, and the pair check. A REJECT always drops the fact
    (there is no question to keep); an advisory pair verdict is recorded.

    With advisory verdicts and the ``pages``, a model reply that fails any of these rules is
    replaced by the reverse cloze of the fact's sentence, whose subject is the page's topic
    (``origin = rules``); a sentence that leaves the topic implicit gets the blank in front,
    and only a clause too long for a question has no reverse."""
    questions = dict(direct.select("fact_id", "question").iter_rows())
    items = [f for f in facts.iter_rows(named=True) if f["fact_id"] in questions]
    prompt = _prompt("reverse_question")
    asked = llm.run(alias, [LLMRequest(f["fact_id"], prompt.messages(context=f["left_context"], question=questions[f["fact_id"]],
                                                                     target=f["object"]), params=SHORT, output=prompt.output)
                           for f in items],
                    parse=parse_reverse, stats=stats, log=log)
    rejects, live, ruled = [], [], []
    for f, r in zip(items, asked):
        item = (f["page_id"], f["fact_id"], "reverse_question")
        if not r.ok:
            problem = (NO_QUESTION, r.error or "")
        elif r.value is None:
            problem = (NO_UNIQUE_REVERSE, "the model replied REJECT")
        else:
            subject, question = r.value
            if not re.search(rf"(?<!\w){re.escape(subject)}(?!\w)", f["left_context"], flags=re.I):
                problem = (SUBJECT_NOT_IN_TEXT, f"{subject!r} is not in the text before the object")
            elif not answer_leaks(question, f["object"]):
                problem = (OBJECT_NOT_IN_QUESTION, f"{question} (object {f['object']!r})")
            elif answer_leaks(question, subject):
                problem = (ANSWER_IN_QUESTION, f"{question} (subject {subject!r})")
            elif not binding and pages is not None and not (is_question(question) and rules.on_topic(question, _sentence(pages, f), "")):
                problem = (OFF_TOPIC, question)
            else:
                problem = None
                live.append((f, question, subject))
        if problem is None:
            continue
        if binding or pages is None:
            rejects.append(REJECTS.row(*item, *problem))
            continue
        title, summary = pages[f["page_id"]]
        subject_type = CATEGORY_TYPES.get(f.get("category") or "", "OTHER")
        blanked = rules.reverse_cloze(title, summary, f["start"], f["object"], person=subject_type == "PERSON")
        if blanked is None:
            rejects.append(REJECTS.row(*item, NO_UNIQUE_REVERSE, f"rules: the clause that names the object and refers to "
                                                             f"{title!r} is too long (model: {problem[0]})"))
        else:
            ruled.append({**rules_row(f, "reverse", rules.reverse_question(blanked, subject_type)), "subject": title,
                          "subject_type": subject_type, "pair_ok": None})
    typed = llm.run(alias, [LLMRequest(f["fact_id"], _prompt("answer_type").messages(question=q, target=subj), params=SHORT,
                                       output=_prompt("answer_type").output)
                            for f, q, subj in live], stats=stats, log=log)
    types = {f["fact_id"]: (parse_entity_type(r.text or "") if r.ok else None) or "OTHER" for (f, _, _), r in zip(live, typed)}
    rows, more = refine([(f, q, subj, types[f["fact_id"]]) for f, q, subj in live], "reverse", llm, alias, binding, stats, log)
    rejects += more
    subjects = {f["fact_id"]: subj for f, _, subj in live}
    objects = {f["fact_id"]: f for f in items}
    pair = _prompt("pair_check")
    verdicts = llm.run(alias, [LLMRequest(row["fact_id"], pair.messages(direct_question=questions[row["fact_id"]],
                                                                      object=objects[row["fact_id"]]["object"],
                                                                      reverse_question=row["question"], subject=subjects[row["fact_id"]]),
                                          params=VERDICT) for row in rows], stats=stats, log=log)
    kept = []
    for row, r in zip(rows, verdicts):
        ok = verdict(r) if r.ok else None
        row = {**row, "subject": subjects[row["fact_id"]], "subject_type": types[row["fact_id"]], "pair_ok": ok}
        if ok is False and binding:
            rejects.append(REJECTS.row(objects[row["fact_id"]]["page_id"], row["fact_id"], "pair_check", INVALID_PAIR,
                                  f"{questions[row['fact_id']]} / {row['question']}"))
        else:
            kept.append(row)
    return pl.DataFrame(kept + ruled, schema=REVERSE_SCHEMA).sort("fact_id"), rejects


# --- 10. search-grounded filter ---------------------------------------------------------------

SEARCH_SCHEMA = {"fact_id": pl.String, "kind": pl.String, "question": pl.String, "search_hits": pl.List(pl.String),
                 "search_answer": pl.String, "definite": pl.Boolean, "kept": pl.Boolean}
SEARCH_K = 3
SEARCH_WORDS = 120  # of each hit shown to the model


def search_filter(questions: pl.DataFrame, hits: dict[str, list[tuple[str, str]]], llm, alias: str, binding: bool,
                  stats: CallStats, log=None, step: str = "search_filter") -> tuple[pl.DataFrame, list[dict]]:
    """Each question answered from its search hits, and the answer judged: one definite
    answer passes; asking for clarification, several answers or answers per reading fail.
    With advisory verdicts the model is not asked (its judgement could not reject anything,
    and the answer costs a prompt of three pages): the hits are recorded and every question
    passes, ``definite`` left empty."""
    items = list(questions.iter_rows(named=True))
    answer_prompt, judge_prompt = _prompt("search_answer"), _prompt("search_judge")

    def shown(q: str) -> str:
        found = hits.get(q, [])[:SEARCH_K]
        return "\n".join(f"[{n}] {' '.join(text.split()[:SEARCH_WORDS])}" for n, (_, text) in enumerate(found, start=1)) or "(nothing found)"

    asked = items if binding else []
    answers = llm.run(alias, [LLMRequest(f"{q['fact_id']} {q['kind']}", answer_prompt.messages(results=shown(q["question"]),
                                                                                                question=q["question"]),
                                         params={"max_tokens": 80}) for q in asked], stats=stats, log=log)
    said = [" ".join((a.text or "").split()) if a.ok else "" for a in answers]
    judged = llm.run(alias, [LLMRequest(f"{q['fact_id']} {q['kind']}", judge_prompt.messages(question=q["question"], search_answer=s),
                                        params=VERDICT) for q, s in zip(asked, said)], stats=stats, log=log)
    verdicts = {id(q): (s, verdict(r) if r.ok and s else None) for q, s, r in zip(asked, said, judged)}
    rows, rejects = [], []
    for q in items:
        s, definite = verdicts.get(id(q), (None, None))
        kept = definite is not False or not binding
        rows.append({"fact_id": q["fact_id"], "kind": q["kind"], "question": q["question"],
                     "search_hits": [d for d, _ in hits.get(q["question"], [])[:SEARCH_K]], "search_answer": s,
                     "definite": definite, "kept": kept})
        if not kept:
            rejects.append(REJECTS.row(q["fact_id"].rsplit("_o", 1)[0], q["fact_id"], step, NOT_DEFINITE, f"{q['question']} -> {s}"))
    return pl.DataFrame(rows, schema=SEARCH_SCHEMA), rejects


# --- 15-19. natural and contextual questions, length filter, options ----------------------------

MAX_QUESTION_WORDS = 40
MIN_LEFT_CONTEXT_WORDS = 30
N_DISTRACTORS = 3
NATURAL_SCHEMA = {"fact_id": pl.String, "kind": pl.String, "question": pl.String, "origin": pl.String}


def natural_questions(items: list[tuple[dict, str, str, str]], llm, alias: str, stats: CallStats, log=None,
                      binding: bool = True, pages: Pages | None = None,
                      origins: Mapping[tuple[str, str], str] | None = None) -> tuple[pl.DataFrame, list[dict]]:
    """Step 15 on ``(fact, kind, question, answer)`` items: the natural rephrasing, kept when
    it is a question that does not name its answer (kind ``<kind>_natural``).

    With advisory verdicts and the ``pages``, a question built by rule (``origins[(fact_id,
    kind)] == "rules"``) is rephrased by rule, and so is a model question whose rephrasing
    fails (not a question, naming its answer, or off the question's topic)."""
    fallback = not binding and pages is not None
    origins = origins or {}
    ask = [it for it in items if not (fallback and origins.get((it[0]["fact_id"], it[1])) == "rules")]
    prompt = _prompt("natural_question")
    asked = dict(zip([(f["fact_id"], kind) for f, kind, _, _ in ask], llm.run(
        alias, [LLMRequest(f"{f['fact_id']} {kind}", prompt.messages(question=q, target=answer), params=SHORT)
                for f, kind, q, answer in ask], parse=parse_question, stats=stats, log=log)))
    rows, rejects = [], []
    for f, kind, q, answer in items:
        r = asked.get((f["fact_id"], kind))
        problem = None
        if r is None:
            problem = (RULES_NOT_REPHRASED, "")
        elif not r.ok:
            problem = (NO_QUESTION, r.error or "")
        elif answer_leaks(r.value, answer):
            problem = (ANSWER_IN_QUESTION, r.value)
        elif fallback and not (is_question(r.value) and rules.on_topic(r.value, q, "")):
            problem = (OFF_TOPIC, r.value)
        if problem is None:
            rows.append({"fact_id": f["fact_id"], "kind": f"{kind}_natural", "question": r.value, "origin": "model"})
            continue
        ruled = _rules_natural(f, kind, pages) if fallback else None
        if ruled is None:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], f"{kind}_natural", *problem))
        else:
            rows.append({"fact_id": f["fact_id"], "kind": f"{kind}_natural", "question": ruled, "origin": "rules"})
    return pl.DataFrame(rows, schema=NATURAL_SCHEMA), rejects


def _rules_natural(f: dict, kind: str, pages: Pages) -> str | None:
    title, summary = pages[f["page_id"]]
    if kind == "direct":
        blanked = rules.direct_cloze(title, summary, f["start"], f["object"], _is_person(f))
        return rules.direct_natural(blanked, title, f["type"]) if blanked else None
    blanked = rules.reverse_cloze(title, summary, f["start"], f["object"], person=_is_person(f))
    return rules.reverse_natural(blanked) if blanked else None


def contextual_question(left_context: str, direct_question: str) -> str:
    """Step 16: the left context without its final, unfinished sentence, then the direct
    question (built here rather than by the model: the edit is mechanical)."""
    starts = rules.sentence_starts(left_context)
    head = left_context[: starts[-1]].strip() if len(starts) > 1 else ""
    return f"{head} {direct_question}".strip()


def length_problems(questions: Mapping[str, str], left_context: str) -> list[str]:
    """Step 18: every question at most 40 words, the left context at least 30 words."""
    problems = [f"{kind} has {len(q.split())} words (at most {MAX_QUESTION_WORDS})"
                for kind, q in questions.items() if kind != "contextual" and len(q.split()) > MAX_QUESTION_WORDS]
    if len(left_context.split()) < MIN_LEFT_CONTEXT_WORDS:
        problems.append(f"left context has {len(left_context.split())} words (at least {MIN_LEFT_CONTEXT_WORDS})")
    return problems


def parse_options(text: str, gold: str) -> list[str]:
    """Three distractors from the reply's lines (numbering and bullets dropped; duplicates,
    and lines that are, contain or lie inside the gold, left out)."""
    seen, out = set(), []
    for line in text.splitlines():
        option = re.sub(r"^\s*(\d+[.)]|[A-Da-d][.)]|[-*•])\s*", "", line).strip().strip('"').rstrip(".")
        if option and option.lower() not in seen and not rules.overlaps_gold(option, gold):
            seen.add(option.lower())
            out.append(option)
    if len(out) < N_DISTRACTORS:
        raise ParseError(f"{len(out)} distractors in {text[:80]!r} (needs {N_DISTRACTORS})")
    return out[:N_DISTRACTORS]


def distractors(items: list[tuple[dict, str, str, str, str]], llm, alias: str, stats: CallStats, log=None,
                binding: bool = True, pools: Mapping[str, list[str]] | None = None) -> tuple[pl.DataFrame, list[dict]]:
    """Step 19 on ``(fact, kind, question, answer, answer type)`` items: the gold and three
    distractors per closed-book question (option 0 is the gold).

    With advisory verdicts and ``pools`` (names by entity type; ``"subject"``, the sample's
    page titles, and ``"subject:<category>"`` those of one category), a reply without three usable options is replaced by three names
    of the same type drawn from the sample (``origin = rules``)."""
    prompt = _prompt("distractors")
    asked = llm.run(alias, [LLMRequest(f"{f['fact_id']} {kind}", prompt.messages(question=q, target=answer, entity_type=etype),
                                       params=SHORT, output=prompt.output) for f, kind, q, answer, etype in items], stats=stats, log=log)
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
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "distractors", TOO_FEW_DISTRACTORS, f"{kind}: {error}"))
        else:
            rows.append({"fact_id": f["fact_id"], "kind": kind, "options": [answer, *options], "origin": origin})
    return pl.DataFrame(rows, schema={"fact_id": pl.String, "kind": pl.String, "options": pl.List(pl.String),
                                      "origin": pl.String}), rejects
