"""RECOR's turns and conversations (paper section 3.2, steps 4-5): each aspect becomes a turn
(its question, validated, its documents scored and selected, the retrieval reasoning and the
answer), and each conversation is validated whole."""

from __future__ import annotations

import dataclasses
import json

import polars as pl

from assets.common.text import sentences
from assets.common.verdicts import RATING, VERDICT, rating, verdict
from assets.recor import rules
from assets.recor.rules import parse_answer, parse_question, parse_reasoning, usable_answer
from assets.recor.settings import Thresholds
from assets.recor.steps.shared import MEDIUM, REJECTS, SHORT, ask_yes_no, history_text, kept_documents, recor_prompt
from resources.llm import CallStats, LLMRequest, Model

# Each step's reasons for a reject, the vocabulary its rejects table is checked against.
# ``turns``: ``_check_question``'s problems (a retry keeps the first try's reason), the
# relevance and flow verdicts, document selection.
NO_QUESTION, REPETITIVE_QUESTION = "no_question", "repetitive_question"
OFF_ASPECT_QUESTION, UNNATURAL_QUESTION, UNANSWERABLE = "off_aspect_question", "unnatural_question", "unanswerable"
TURN_REASONS = frozenset({NO_QUESTION, REPETITIVE_QUESTION, OFF_ASPECT_QUESTION, UNNATURAL_QUESTION, UNANSWERABLE})
# ``conversations``: one reason, the problems in its detail.
INVALID_CONVERSATION = "invalid_conversation"
CONVERSATION_REASONS = frozenset({INVALID_CONVERSATION})

TURN_SCHEMA = {
    "domain": pl.String,
    "conversation_id": pl.String,
    "turn_id": pl.Int32,
    "aspect_id": pl.String,
    "query": pl.String,
    "answer": pl.String,
    "gold_doc_ids": pl.List(pl.String),
    "doc_scores": pl.String,
    "conversation_history": pl.String,
    "target": pl.String,
    "relevance_signals": pl.List(pl.String),
    "irrelevance_signals": pl.List(pl.String),
    "facts": pl.List(pl.String),
    "llm_on_aspect": pl.Boolean,
    "llm_natural": pl.Boolean,
    "question_origin": pl.String,
    "answer_origin": pl.String,
}

CRITERIA = {
    "support": "support: how many of the facts the document backs",
    "completeness": "completeness: how much of the answer could be written from the document alone",
    "clarity": "clarity: how clearly the document explains what is needed",
    "misleading": "misleading: how much the document contains that would lead to a wrong answer",
}


def _check_question(r, earlier: list[str], t: Thresholds) -> tuple[str | None, tuple[str, str] | None, str | None]:
    """(question, None, prompt) when the model's question is usable, else (None, (reason, detail), None)."""
    if not r.ok:
        return None, (NO_QUESTION, r.error or ""), None
    ok, why = rules.distinct_turn(r.value, earlier, t.max_similarity, t.min_new_words)
    if not ok:
        return None, (REPETITIVE_QUESTION, f"{r.value} ({why})"), None
    return r.value, None, "follow_up" if earlier else "first_turn"


@dataclasses.dataclass
class _Build:
    """What the turn stages read (the source tables, indexed by question and aspect) and
    write (each conversation's turns so far, the rejects, each turn's question origin)."""

    model: Model
    t: Thresholds
    stats: CallStats
    log: object
    text: dict[str, str]  # document id -> content
    queries: dict[str, str]  # question id -> the source question
    domain_of: dict[str, str]
    docs_of: dict[str, list[str]]  # question id -> its aligned documents
    facts_of: dict[str, list[str]]  # aspect id -> its verified facts
    fact_docs: dict[str, list[str]]  # aspect id -> the documents holding them
    done: dict[str, list[dict]]
    rejects: list[dict] = dataclasses.field(default_factory=list)
    origins: dict[str, str] = dataclasses.field(default_factory=dict)

    def run(self, reqs: list[LLMRequest], **kw) -> list:
        return self.model.run(reqs, stats=self.stats, log=self.log, **kw)

    def reject(self, qid: str, a: dict, reason: str, detail: str) -> None:
        self.rejects.append(REJECTS.row(self.domain_of[qid], qid, a["aspect_id"], "turns", reason, detail))


def turns(
    questions: pl.DataFrame,
    aspect_rows: pl.DataFrame,
    fact_rows: pl.DataFrame,
    aligned: pl.DataFrame,
    documents: pl.DataFrame,
    model: Model,
    t: Thresholds,
    stats: CallStats,
    log=None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Turn by turn, for every conversation at once: the question (first-turn or follow-up
    prompt, then up to ``question_tries`` tries at the question the aspect answers when that
    one is unusable or repeats an earlier question), its validation (distinct from earlier
    questions by rule; relevant to the aspect and natural by the LLM), document scoring and selection (answerable only if a document
    scores above the threshold; with advisory verdicts the documents holding the verified
    facts, best rated first), the retrieval reasoning and the answer from the verified
    facts (the facts themselves when the model's answer loops or restates the question).
    ``question_origin`` and ``answer_origin`` say which path each turn took. A rejected turn skips its
    aspect; the conversation goes on with the next one."""
    verified = fact_rows.filter(pl.col("verified"))
    facts_of = {a: g["fact"].to_list() for (a,), g in verified.group_by("aspect_id", maintain_order=True)}
    pending = {
        qid: [a for a in g.sort("position").iter_rows(named=True) if a["aspect_id"] in facts_of]
        for (qid,), g in aspect_rows.group_by("question_id", maintain_order=True)
    }
    build = _Build(
        model,
        t,
        stats,
        log,
        text=dict(documents.select("doc_id", "content").iter_rows()),
        queries=dict(questions.select("question_id", "query").iter_rows()),
        domain_of=dict(questions.select("question_id", "domain").iter_rows()),
        docs_of=kept_documents(aligned),
        facts_of=facts_of,
        fact_docs={
            a: list(dict.fromkeys(d for d in g["doc_id"] if d))
            for (a,), g in verified.group_by("aspect_id", maintain_order=True)
        },
        done={qid: [] for qid in pending},
    )
    while any(pending.values()):
        step = [
            (qid, pending[qid].pop(0)) for qid in sorted(pending) if pending[qid] and len(build.done[qid]) < t.max_turns
        ]
        if not step:
            break
        asked = _validated(build, _questions(build, step))
        _answer(build, _with_documents(build, asked))
    return pl.DataFrame(
        [row for qid in sorted(build.done) for row in build.done[qid]], schema=TURN_SCHEMA
    ), build.rejects


def _questions(build: _Build, step: list[tuple[str, dict]]) -> list[tuple[str, dict, str]]:
    """Each turn's question, from the first-turn or follow-up prompt or a retry; the turns
    left without one are rejected."""
    reqs = []
    for qid, a in step:
        history = build.done[qid]
        if history:
            msgs = recor_prompt("follow_up").messages(history=history_text(history), aspect=a["text"])
        else:
            msgs = recor_prompt("first_turn").messages(question=build.queries[qid], aspect=a["text"])
        reqs.append(LLMRequest(a["aspect_id"], msgs, params=SHORT))
    asked = build.run(reqs, parse=parse_question)
    earlier = {qid: [x["query"] for x in build.done[qid]] for qid, _ in step}
    checked = {a["aspect_id"]: _check_question(r, earlier[qid], build.t) for (qid, a), r in zip(step, asked)}
    _retry_questions(build, step, earlier, checked)
    live = []
    for qid, a in step:
        question, problem, origin = checked[a["aspect_id"]]
        if problem:
            build.reject(qid, a, *problem)
            continue
        live.append((qid, a, question))
        build.origins[a["aspect_id"]] = origin
    return live


def _retry_questions(build: _Build, step: list[tuple[str, dict]], earlier: dict[str, list[str]], checked: dict) -> None:
    """More tries, for the turns whose question failed, asking for the question that one
    sentence of the aspect answers (a small model loses its way in a paragraph): the
    aspect's sentences in turn, the first try greedy, the others sampled."""
    statements = {a["aspect_id"]: sentences(a["text"]) or [a["text"]] for _, a in step}
    for attempt in range(build.t.question_tries):
        retry = [(qid, a) for qid, a in step if checked[a["aspect_id"]][1]]
        if not retry:
            break
        params = SHORT if attempt == 0 else {**SHORT, "temperature": 0.8}
        again = build.run(
            [
                LLMRequest(
                    a["aspect_id"],
                    recor_prompt("question_for_point").messages(
                        aspect=statements[a["aspect_id"]][attempt % len(statements[a["aspect_id"]])]
                    ),
                    sample=attempt,
                    params=params,
                )
                for _, a in retry
            ],
            parse=parse_question,
        )
        for (qid, a), r in zip(retry, again):
            before = checked[a["aspect_id"]][1]
            question, problem, _ = _check_question(r, earlier[qid], build.t)
            checked[a["aspect_id"]] = (
                (question, None, "question_for_point")
                if not problem
                else (None, (before[0], f"{before[1]}; try {attempt + 2}: {problem[0]} {problem[1]}"), None)
            )


def _validated(build: _Build, live: list[tuple[str, dict, str]]) -> list[tuple[str, dict, str, tuple]]:
    """The questions relevant to the aspect and natural in the flow, each with the two
    verdicts; with binding verdicts the others are rejected."""
    relevant = ask_yes_no(
        build.model,
        "turn_relevance",
        [(a, {"aspect": a["text"], "query": q}) for qid, a, q in live],
        build.stats,
        build.log,
    )
    natural = ask_yes_no(
        build.model,
        "turn_flow",
        [(a, {"history": history_text(build.done[qid]), "query": q}) for qid, a, q in live],
        build.stats,
        build.log,
    )
    kept = []
    for (qid, a, q), on_aspect, flows in zip(live, relevant, natural):
        if build.t.binding_verdicts and (on_aspect is False or flows is False):
            build.reject(qid, a, OFF_ASPECT_QUESTION if on_aspect is False else UNNATURAL_QUESTION, q)
            continue
        kept.append((qid, a, q, (on_aspect, flows)))
    return kept


def _with_documents(build: _Build, scoring: list[tuple[str, dict, str, tuple]]) -> list[tuple]:
    """Each turn with its selected documents and their scores (:func:`rules.turn_documents`);
    the turns without one are rejected as unanswerable."""
    # Advisory verdicts: only the documents that can be chosen (those holding the facts) are rated.
    candidates = {
        a["aspect_id"]: build.docs_of.get(qid, [])
        if build.t.binding_verdicts
        else build.fact_docs.get(a["aspect_id"], [])
        for qid, a, *_ in scoring
    }
    per_turn = score_documents(
        [(qid, a, q) for qid, a, q, _ in scoring],
        candidates,
        build.text,
        build.facts_of,
        build.model,
        build.stats,
        build.log,
    )
    answerable = []
    for qid, a, q, judged in scoring:
        scores = per_turn.get(a["aspect_id"], {})
        chosen, why = rules.turn_documents(
            scores,
            build.fact_docs.get(a["aspect_id"], []),
            build.t.doc_threshold,
            build.t.max_docs_per_turn,
            build.t.binding_verdicts,
        )
        if not chosen:
            build.reject(qid, a, UNANSWERABLE, why)
            continue
        answerable.append((qid, a, q, judged, chosen, scores))
    return answerable


def _answer(build: _Build, answerable: list[tuple]) -> None:
    """The retrieval reasoning and the answer of each answerable turn, appended to its
    conversation."""
    reasoning_prompt, answer_prompt = recor_prompt("retrieval_reasoning"), recor_prompt("turn_answer")
    facts_of = build.facts_of
    facts_text = {a["aspect_id"]: "\n".join(f"- {f}" for f in facts_of[a["aspect_id"]]) for _, a, *_ in answerable}
    reasons = build.run(
        [
            LLMRequest(
                a["aspect_id"],
                reasoning_prompt.messages(query=q, facts="; ".join(facts_of[a["aspect_id"]])),
                params=MEDIUM,
                output=reasoning_prompt.output,
            )
            for qid, a, q, *_ in answerable
        ],
        parse=parse_reasoning,
    )
    answers = build.run(
        [
            LLMRequest(a["aspect_id"], answer_prompt.messages(query=q, facts=facts_text[a["aspect_id"]]), params=MEDIUM)
            for qid, a, q, *_ in answerable
        ],
        parse=parse_answer,
    )
    for (qid, a, q, judged, chosen, scores), why, ans in zip(answerable, reasons, answers):
        # Without a usable answer from the model, the verified facts are the answer.
        if ans.ok and usable_answer(ans.value, q):
            answer, answer_origin = ans.value, "model"
        else:
            answer, answer_origin = " ".join(f.rstrip(".") + "." for f in facts_of[a["aspect_id"]]), "facts"
        reasoning = why.value if why.ok else {"target": a["text"], "relevance_signals": [], "irrelevance_signals": []}
        done = build.done[qid]
        done.append(
            {
                "domain": build.domain_of[qid],
                "conversation_id": qid,
                "turn_id": len(done) + 1,
                "aspect_id": a["aspect_id"],
                "query": q,
                "answer": answer,
                "gold_doc_ids": chosen,
                "doc_scores": json.dumps(scores, sort_keys=True),
                "conversation_history": history_text(done),
                **reasoning,
                "facts": facts_of[a["aspect_id"]],
                "llm_on_aspect": judged[0],
                "llm_natural": judged[1],
                "question_origin": build.origins[a["aspect_id"]],
                "answer_origin": answer_origin,
            }
        )


def score_documents(
    turns_: list[tuple], candidates: dict, text: dict, facts_of: dict, model: Model, stats, log
) -> dict[str, dict]:
    """Every candidate document of every turn (``candidates[aspect_id]``) rated on the four
    criteria; a document with a criterion the model could not rate gets no score (and
    cannot be selected)."""
    prompt = recor_prompt("document_criterion")
    items = [
        (a["aspect_id"], d, c) for qid, a, q in turns_ for d in candidates.get(a["aspect_id"], []) for c in CRITERIA
    ]
    queries = {a["aspect_id"]: q for qid, a, q in turns_}
    reqs = [
        LLMRequest(
            f"{aid} {d} {c}",
            prompt.messages(
                query=queries[aid],
                facts="\n".join(f"- {f}" for f in facts_of[aid]),
                document=text[d],
                criterion=CRITERIA[c],
            ),
            params=RATING,
        )
        for aid, d, c in items
    ]
    ratings: dict[tuple[str, str], dict[str, float | None]] = {}
    for (aid, d, c), r in zip(items, model.run(reqs, stats=stats, log=log)):
        ratings.setdefault((aid, d), {})[c] = rating(r) if r.ok else None
    out: dict[str, dict] = {}
    for (aid, d), crit in ratings.items():
        if all(v is not None for v in crit.values()):
            out.setdefault(aid, {})[d] = {**crit, "score": rules.document_score(**crit)}
    return out


def conversations(
    turn_rows: pl.DataFrame, model: Model, t: Thresholds, stats: CallStats, log=None
) -> tuple[pl.DataFrame, list[dict]]:
    """Conversation validation: the rules (3-12 turns, every turn grounded, document
    diversity) and the LLM's verdict on logical progression and coherence."""
    groups = [(cid, g.sort("turn_id")) for (cid,), g in turn_rows.group_by("conversation_id", maintain_order=True)]
    problems = {
        cid: rules.conversation_problems(g["gold_doc_ids"].to_list(), t.min_turns, t.max_turns) for cid, g in groups
    }
    ask = [(cid, g) for cid, g in groups if not problems[cid]]
    prompt = recor_prompt("conversation_check")
    reqs = [
        LLMRequest(cid, prompt.messages(conversation=history_text(list(g.iter_rows(named=True)))), params=VERDICT)
        for cid, g in ask
    ]
    verdicts = {cid: (verdict(r) if r.ok else None) for (cid, _), r in zip(ask, model.run(reqs, stats=stats, log=log))}
    rows, rejects = [], []
    for cid, g in groups:
        coherent = verdicts.get(cid)
        if coherent is False and t.binding_verdicts:
            problems[cid].append("judged incoherent")
        valid = not problems[cid]
        rows.append(
            {
                "domain": g["domain"][0],
                "conversation_id": cid,
                "num_turns": g.height,
                "coherent": coherent,
                "valid": valid,
                "problems": "; ".join(problems[cid]),
            }
        )
        if not valid:
            rejects.append(
                REJECTS.row(g["domain"][0], cid, cid, "conversations", INVALID_CONVERSATION, "; ".join(problems[cid]))
            )
    frame = pl.DataFrame(
        rows,
        schema={
            "domain": pl.String,
            "conversation_id": pl.String,
            "num_turns": pl.Int32,
            "coherent": pl.Boolean,
            "valid": pl.Boolean,
            "problems": pl.String,
        },
    )
    return frame, rejects
