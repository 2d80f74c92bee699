"""WikiProfile's questions (notes, steps 7-9, 11-13 and 15-16): the direct question and its
two refinements, the reverse question with its refinements and the pair check, the natural
rephrasings and the contextual question. With advisory verdicts and the pages, a question
the model cannot write is built by rule from the fact's sentence (``origin = rules``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from assets.common.parsing import is_question
from assets.common.verdicts import VERDICT, verdict
from assets.wikiprofile import rules
from assets.wikiprofile.rules import answer_leaks, only_deletions, parse_entity_type, parse_question, parse_reverse
from assets.wikiprofile.steps.shared import REJECTS, SHORT, Pages, wikiprofile_prompt
from resources.llm import CallStats, LLMRequest, Model, ParseError

# The subject's type for a rule-made reverse question, from the page's category.
CATEGORY_TYPES = {"People": "PERSON", "Geography": "LOCATION", "History": "EVENT"}

QUESTION_SCHEMA = {
    "fact_id": pl.String,
    "kind": pl.String,
    "generated": pl.String,
    "specified": pl.String,
    "question": pl.String,
    "specification": pl.String,
    "minimalism": pl.String,
    "origin": pl.String,
}
REVERSE_SCHEMA = {**QUESTION_SCHEMA, "subject": pl.String, "subject_type": pl.String, "pair_ok": pl.Boolean}
NATURAL_SCHEMA = {"fact_id": pl.String, "kind": pl.String, "question": pl.String, "origin": pl.String}

# Each step's reasons for a reject, the vocabulary its rejects table is checked against.
# ``refine`` rejects a binding REJECT of the specification refinement, for both directions.
REJECTED_BY_MODEL = "rejected_by_model"
# ``direct_questions``, ``reverse_questions`` (with the pair check) and ``natural_questions``.
NO_QUESTION, ANSWER_IN_QUESTION, OFF_TOPIC = "no_question", "answer_in_question", "off_topic"
NO_UNIQUE_REVERSE, SUBJECT_NOT_IN_TEXT = "no_unique_reverse", "subject_not_in_text"
OBJECT_NOT_IN_QUESTION, INVALID_PAIR = "object_not_in_question", "invalid_pair"
# A question built by rule whose rule rephrasing could not be built.
RULES_NOT_REPHRASED = "rules"
DIRECT_QUESTION_REASONS = frozenset({NO_QUESTION, ANSWER_IN_QUESTION, REJECTED_BY_MODEL})
REVERSE_QUESTION_REASONS = frozenset(
    {
        NO_QUESTION,
        NO_UNIQUE_REVERSE,
        SUBJECT_NOT_IN_TEXT,
        OBJECT_NOT_IN_QUESTION,
        ANSWER_IN_QUESTION,
        OFF_TOPIC,
        INVALID_PAIR,
        REJECTED_BY_MODEL,
    }
)
NATURAL_QUESTION_REASONS = frozenset({NO_QUESTION, ANSWER_IN_QUESTION, OFF_TOPIC, RULES_NOT_REPHRASED})


# --- 7-9. direct questions --------------------------------------------------------------------


def _sentence(pages: Pages, f: dict) -> str:
    summary = pages[f["page_id"]][1]
    begin, end = rules.sentence_span(summary, f["start"])
    return summary[begin:end]


def _is_person(f: dict) -> bool:
    """Whether the fact's topic is a person (its page's category), for the pronouns."""
    return CATEGORY_TYPES.get(f.get("category") or "") == "PERSON"


def rules_row(f: dict, kind: str, question: str) -> dict:
    return {
        "fact_id": f["fact_id"],
        "kind": kind,
        "generated": question,
        "specified": question,
        "question": question,
        "specification": "rules",
        "minimalism": "rules",
        "origin": "rules",
    }


def direct_questions(
    facts: pl.DataFrame, model: Model, binding: bool, stats: CallStats, log=None, pages: Pages | None = None
) -> tuple[pl.DataFrame, list[dict]]:
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
    gen = wikiprofile_prompt("direct_question")
    asked = model.run(
        [
            LLMRequest(
                f["fact_id"],
                gen.messages(left_context=f["left_context"], target=f["object"], entity_type=f["type"]),
                params=SHORT,
            )
            for f in items
        ],
        parse=parse_question,
        stats=stats,
        log=log,
    )
    live, ruled = [], []
    for f, r in zip(items, asked):
        fallback = not binding and pages is not None
        usable = r.ok and not answer_leaks(r.value, f["object"])
        if fallback and not (
            usable and is_question(r.value) and rules.on_topic(r.value, _sentence(pages, f), pages[f["page_id"]][0])
        ):
            blanked = rules.direct_cloze(*pages[f["page_id"]], f["start"], f["object"], _is_person(f))
            if blanked is None:
                rejects.append(
                    REJECTS.row(
                        f["page_id"],
                        f["fact_id"],
                        "direct_question",
                        NO_QUESTION,
                        "rules: the sentence's clause around the object is too long for a question",
                    )
                )
            else:
                ruled.append(rules_row(f, "direct", rules.direct_question(blanked, f["type"])))
        elif not r.ok:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "direct_question", NO_QUESTION, r.error or ""))
        elif not usable:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "direct_question", ANSWER_IN_QUESTION, r.value))
        else:
            live.append((f, r.value))
    rows, more = refine([(f, q, f["object"], f["type"]) for f, q in live], "direct", model, binding, stats, log)
    return pl.DataFrame(rows + ruled, schema=QUESTION_SCHEMA).sort("fact_id"), rejects + more


def refine(
    live: list[tuple[dict, str, str, str]], kind: str, model: Model, binding: bool, stats: CallStats, log=None
) -> tuple[list[dict], list[dict]]:
    """Steps 8-9 (and 12 for reverse questions) on ``(fact, question, answer, answer type)``
    items: the specification refinement, then the minimalism refinement, with the checks
    that keep a bad edit from replacing a good question."""
    rejects = []
    spec = wikiprofile_prompt("refine_specification")
    refined = model.run(
        [
            LLMRequest(
                f"{f['fact_id']} {kind}", spec.messages(question=q, target=target, entity_type=etype), params=SHORT
            )
            for f, q, target, etype in live
        ],
        stats=stats,
        log=log,
    )
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
    minimal = wikiprofile_prompt("refine_minimal")
    shortened = model.run(
        [
            LLMRequest(f"{f['fact_id']} {kind}", minimal.messages(question=q, target=target), params=SHORT)
            for f, _, q, target, _ in specified
        ],
        stats=stats,
        log=log,
    )
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
        rows.append(
            {
                "fact_id": f["fact_id"],
                "kind": kind,
                "generated": generated,
                "specified": q,
                "question": final,
                "specification": how,
                "minimalism": note,
                "origin": "model",
            }
        )
    return rows, rejects


# --- 11-13. reverse questions ----------------------------------------------------------------


def reverse_questions(
    facts: pl.DataFrame,
    direct: pl.DataFrame,
    model: Model,
    binding: bool,
    stats: CallStats,
    log=None,
    pages: Pages | None = None,
) -> tuple[pl.DataFrame, list[dict]]:
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
    prompt = wikiprofile_prompt("reverse_question")
    asked = model.run(
        [
            LLMRequest(
                f["fact_id"],
                prompt.messages(context=f["left_context"], question=questions[f["fact_id"]], target=f["object"]),
                params=SHORT,
                output=prompt.output,
            )
            for f in items
        ],
        parse=parse_reverse,
        stats=stats,
        log=log,
    )
    rejects, live, ruled = [], [], []
    for f, r in zip(items, asked):
        problem = _reverse_problem(f, r, binding, pages)
        if problem is None:
            subject, question = r.value
            live.append((f, question, subject))
        elif binding or pages is None:
            rejects.append(REJECTS.row(f["page_id"], f["fact_id"], "reverse_question", *problem))
        else:
            row, reject = _reverse_by_rule(f, problem, pages)
            ruled += [row] if row else []
            rejects += [reject] if reject else []
    typed = model.run(
        [
            LLMRequest(
                f["fact_id"],
                wikiprofile_prompt("answer_type").messages(question=q, target=subj),
                params=SHORT,
                output=wikiprofile_prompt("answer_type").output,
            )
            for f, q, subj in live
        ],
        stats=stats,
        log=log,
    )
    types = {
        f["fact_id"]: (parse_entity_type(r.text or "") if r.ok else None) or "OTHER"
        for (f, _, _), r in zip(live, typed)
    }
    rows, more = refine(
        [(f, q, subj, types[f["fact_id"]]) for f, q, subj in live], "reverse", model, binding, stats, log
    )
    kept, unpaired = _pair_checked(rows, live, questions, types, model, binding, stats, log)
    return pl.DataFrame(kept + ruled, schema=REVERSE_SCHEMA).sort("fact_id"), rejects + more + unpaired


def _reverse_problem(f: dict, r, binding: bool, pages: Pages | None) -> tuple[str, str] | None:
    """Why the model's reverse question for the fact is unusable (reason, detail); None when
    it is usable."""
    if not r.ok:
        return NO_QUESTION, r.error or ""
    if r.value is None:
        return NO_UNIQUE_REVERSE, "the model replied REJECT"
    subject, question = r.value
    if not re.search(rf"(?<!\w){re.escape(subject)}(?!\w)", f["left_context"], flags=re.I):
        return SUBJECT_NOT_IN_TEXT, f"{subject!r} is not in the text before the object"
    if not answer_leaks(question, f["object"]):
        return OBJECT_NOT_IN_QUESTION, f"{question} (object {f['object']!r})"
    if answer_leaks(question, subject):
        return ANSWER_IN_QUESTION, f"{question} (subject {subject!r})"
    if (
        not binding
        and pages is not None
        and not (is_question(question) and rules.on_topic(question, _sentence(pages, f), ""))
    ):
        return OFF_TOPIC, question
    return None


def _reverse_by_rule(f: dict, problem: tuple[str, str], pages: Pages) -> tuple[dict | None, dict | None]:
    """The reverse cloze's question in place of the model's (the row), or the reject when
    the clause is too long for one."""
    title, summary = pages[f["page_id"]]
    subject_type = CATEGORY_TYPES.get(f.get("category") or "", "OTHER")
    blanked = rules.reverse_cloze(title, summary, f["start"], f["object"], person=subject_type == "PERSON")
    if blanked is None:
        return None, REJECTS.row(
            f["page_id"],
            f["fact_id"],
            "reverse_question",
            NO_UNIQUE_REVERSE,
            f"rules: the clause that names the object and refers to {title!r} is too long (model: {problem[0]})",
        )
    return {
        **rules_row(f, "reverse", rules.reverse_question(blanked, subject_type)),
        "subject": title,
        "subject_type": subject_type,
        "pair_ok": None,
    }, None


def _pair_checked(
    rows: list[dict],
    live: list[tuple[dict, str, str]],
    questions: Mapping[str, str],
    types: Mapping[str, str],
    model: Model,
    binding: bool,
    stats: CallStats,
    log,
) -> tuple[list[dict], list[dict]]:
    """Step 13: each refined reverse question with its subject, its answer type and the
    pair check's verdict; with binding verdicts an invalid pair is rejected."""
    subjects = {f["fact_id"]: subj for f, _, subj in live}
    objects = {f["fact_id"]: f for f, _, _ in live}
    pair = wikiprofile_prompt("pair_check")
    verdicts = model.run(
        [
            LLMRequest(
                row["fact_id"],
                pair.messages(
                    direct_question=questions[row["fact_id"]],
                    object=objects[row["fact_id"]]["object"],
                    reverse_question=row["question"],
                    subject=subjects[row["fact_id"]],
                ),
                params=VERDICT,
            )
            for row in rows
        ],
        stats=stats,
        log=log,
    )
    kept, rejects = [], []
    for row, r in zip(rows, verdicts):
        ok = verdict(r) if r.ok else None
        row = {**row, "subject": subjects[row["fact_id"]], "subject_type": types[row["fact_id"]], "pair_ok": ok}
        if ok is False and binding:
            rejects.append(
                REJECTS.row(
                    objects[row["fact_id"]]["page_id"],
                    row["fact_id"],
                    "pair_check",
                    INVALID_PAIR,
                    f"{questions[row['fact_id']]} / {row['question']}",
                )
            )
        else:
            kept.append(row)
    return kept, rejects


# --- 15-16. natural and contextual questions -----------------------------------------------------


def natural_questions(
    items: list[tuple[dict, str, str, str]],
    model: Model,
    stats: CallStats,
    log=None,
    binding: bool = True,
    pages: Pages | None = None,
    origins: Mapping[tuple[str, str], str] | None = None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Step 15 on ``(fact, kind, question, answer)`` items: the natural rephrasing, kept when
    it is a question that does not name its answer (kind ``<kind>_natural``).

    With advisory verdicts and the ``pages``, a question built by rule (``origins[(fact_id,
    kind)] == "rules"``) is rephrased by rule, and so is a model question whose rephrasing
    fails (not a question, naming its answer, or off the question's topic)."""
    fallback = not binding and pages is not None
    origins = origins or {}
    ask = [it for it in items if not (fallback and origins.get((it[0]["fact_id"], it[1])) == "rules")]
    prompt = wikiprofile_prompt("natural_question")
    asked = dict(
        zip(
            [(f["fact_id"], kind) for f, kind, _, _ in ask],
            model.run(
                [
                    LLMRequest(f"{f['fact_id']} {kind}", prompt.messages(question=q, target=answer), params=SHORT)
                    for f, kind, q, answer in ask
                ],
                parse=parse_question,
                stats=stats,
                log=log,
            ),
        )
    )
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
