"""RECOR's decomposition (paper section 3.2, steps 1-3): each gold document checked against
the answer, the answer decomposed into aspects, and each aspect into atomic facts verified
against the documents."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from assets.common.parsing import parse_list, parse_permutation
from assets.common.text import sentences
from assets.common.verdicts import VERDICT, verdict
from assets.recor.rules import answer_segments, parse_aspects
from assets.recor.settings import Thresholds
from assets.recor.steps.shared import (
    LONG,
    MEDIUM,
    REJECTS,
    SHORT,
    Similarity,
    ask_yes_no,
    doc_sentences,
    kept_documents,
    recor_prompt,
)
from resources.llm import CallStats, LLMRequest, LLMResult, Model

# Each step's reasons for a reject, the vocabulary its rejects table is checked against.
# ``alignment``.
WEAK_DOCUMENT, NO_ALIGNED_DOCUMENT = "weak_document", "no_aligned_document"
ALIGNMENT_REASONS = frozenset({WEAK_DOCUMENT, NO_ALIGNED_DOCUMENT})
# ``aspects``: its checks, an unparsable round, the suitability filter; ``facts``.
UNPARSABLE = "unparsable"
OVERLAPPING_ASPECT, LOW_COVERAGE, UNSUITABLE_ASPECT = "overlapping_aspect", "low_coverage", "unsuitable_aspect"
ASPECT_REASONS = frozenset({OVERLAPPING_ASPECT, LOW_COVERAGE, UNPARSABLE, UNSUITABLE_ASPECT})
UNSUPPORTED_FACT, NO_VERIFIED_FACT = "unsupported_fact", "no_verified_fact"
FACT_REASONS = frozenset({UNPARSABLE, UNSUPPORTED_FACT, NO_VERIFIED_FACT})

ASPECT_SCHEMA = {
    "domain": pl.String,
    "question_id": pl.String,
    "aspect_id": pl.String,
    "position": pl.Int32,
    "title": pl.String,
    "text": pl.String,
    "coverage": pl.Float64,
    "origin": pl.String,
    "llm_suitable": pl.Boolean,
}
FACT_SCHEMA = {
    "domain": pl.String,
    "question_id": pl.String,
    "aspect_id": pl.String,
    "fact_id": pl.String,
    "fact": pl.String,
    "similarity": pl.Float64,
    "doc_id": pl.String,
    "llm_supports": pl.Boolean,
    "verified": pl.Boolean,
}


# --- 1. document-answer alignment --------------------------------------------------------------


def alignment(
    questions: pl.DataFrame,
    documents: pl.DataFrame,
    model: Model,
    sim: Similarity,
    t: Thresholds,
    stats: CallStats,
    log=None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Each gold document of each question checked against the answer: kept when the LLM
    finds the answer's content in it, or when it covers part of the answer (the answer
    sentences it matches best reach the minimum coverage on average). Questions left with no document are
    rejected."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    pairs = [(q, d) for q in questions.iter_rows(named=True) for d in q["gold_ids"]]
    prompt = recor_prompt("alignment")
    # An advisory verdict here would not decide and costs a whole document's prompt: not asked.
    reqs = (
        [
            LLMRequest(f"{q['question_id']} {d}", prompt.messages(answer=q["answer"], document=text[d]), params=VERDICT)
            for q, d in pairs
        ]
        if t.binding_verdicts
        else []
    )
    results = model.run(reqs, stats=stats, log=log) if reqs else [LLMResult("", None, error="not asked")] * len(pairs)
    rows, rejects = [], []
    for (q, d), r in zip(pairs, results):
        answer_sents = sentences(q["answer"]) or [q["answer"]]
        doc_sents = sentences(text[d]) or [text[d]]
        best = sorted((sim.best(s, doc_sents)[0] for s in answer_sents), reverse=True)
        coverage = float(np.mean(best[: t.alignment_top]))
        supports = verdict(r) if r.ok else None
        kept = (bool(supports) and t.binding_verdicts) or coverage >= t.alignment_min_coverage
        rows.append(
            {
                "domain": q["domain"],
                "question_id": q["question_id"],
                "doc_id": d,
                "llm_supports": supports,
                "coverage": coverage,
                "kept": kept,
            }
        )
        if not kept:
            rejects.append(
                REJECTS.row(
                    q["domain"],
                    q["question_id"],
                    d,
                    "alignment",
                    WEAK_DOCUMENT,
                    f"judge said {supports} ({'binding' if t.binding_verdicts else 'advisory'}) and coverage "
                    f"{coverage:.2f} < {t.alignment_min_coverage}",
                )
            )
    frame = pl.DataFrame(
        rows,
        schema={
            "domain": pl.String,
            "question_id": pl.String,
            "doc_id": pl.String,
            "llm_supports": pl.Boolean,
            "coverage": pl.Float64,
            "kept": pl.Boolean,
        },
    )
    left = set(frame.filter(pl.col("kept"))["question_id"])
    for q in questions.iter_rows(named=True):
        if q["question_id"] not in left:
            rejects.append(
                REJECTS.row(q["domain"], q["question_id"], q["question_id"], "alignment", NO_ALIGNED_DOCUMENT)
            )
    return frame, rejects


# --- 2. aspects --------------------------------------------------------------------------------


@dataclasses.dataclass
class _Candidates:
    """The aspects accepted so far per question and the rejected proposals: a proposal is kept
    if it does not overlap an accepted aspect and the question's documents cover it."""

    sim: Similarity
    t: Thresholds
    sentences_of: dict[str, list[str]]  # question id -> its aligned documents' sentences
    accepted: dict[str, list[dict]]
    rejects: list[dict]

    def room(self, q: dict) -> bool:
        return len(self.accepted[q["question_id"]]) < self.t.max_aspects

    def consider(self, q: dict, title: str, body: str, origin: str) -> None:
        qid, have, t = q["question_id"], self.accepted[q["question_id"]], self.t
        overlap = self.sim.best(body, [a["text"] for a in have])[0] if have else 0.0
        coverage = self.sim.best(body, self.sentences_of[qid])[0]
        item = f"{title}: {body}"
        if overlap >= t.aspect_overlap:
            self.rejects.append(
                REJECTS.row(q["domain"], qid, item, "aspects", OVERLAPPING_ASPECT, f"similarity {overlap:.2f}")
            )
        elif coverage < t.aspect_min_coverage:
            self.rejects.append(
                REJECTS.row(q["domain"], qid, item, "aspects", LOW_COVERAGE, f"coverage {coverage:.2f}")
            )
        elif len(have) < t.max_aspects:
            have.append(
                {
                    "domain": q["domain"],
                    "question_id": qid,
                    "title": title,
                    "text": body,
                    "coverage": coverage,
                    "origin": origin,
                }
            )


def aspects(
    questions: pl.DataFrame,
    aligned: pl.DataFrame,
    documents: pl.DataFrame,
    model: Model,
    sim: Similarity,
    t: Thresholds,
    stats: CallStats,
    log=None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Iterative decomposition: each round proposes aspects (with the accepted ones listed),
    each proposal is kept if it does not overlap an accepted aspect (similarity below the
    overlap threshold) and the question's documents cover it (best sentence similarity at
    least the minimum coverage). Then the suitability filter and the reordering."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    docs_of = kept_documents(aligned)
    live = [q for q in questions.iter_rows(named=True) if docs_of.get(q["question_id"])]
    found = _Candidates(
        sim,
        t,
        {q["question_id"]: doc_sentences([text[d] for d in docs_of[q["question_id"]]]) for q in live},
        {q["question_id"]: [] for q in live},
        [],
    )
    for round_ in range(t.aspect_rounds):
        if not _propose(live, round_, found, model, stats, log):
            break
    # The answer's own paragraphs are candidates too, through the same checks, when the
    # model's proposals leave room: a small model often proposes one point, or none.
    for q in live:
        for segment in answer_segments(q["answer"]):
            if found.room(q):
                found.consider(q, " ".join(segment.split()[:8]), segment, "answer_segment")
    kept = _suitable([a for q in live for a in found.accepted[q["question_id"]]], live, found, model, stats, log)
    return pl.DataFrame(_reorder(kept, live, model, stats, log), schema=ASPECT_SCHEMA), found.rejects


def _propose(live: list[dict], round_: int, found: _Candidates, model: Model, stats, log) -> bool:
    """One round of proposals for the questions with room left; False when none has."""
    t, prompt = found.t, recor_prompt("aspects")
    todo = [q for q in live if found.room(q)]
    if not todo:
        return False
    reqs = []
    for q in todo:
        have = found.accepted[q["question_id"]]
        listing = (
            ("\nPoints already listed (find others):\n" + "\n".join(f"- {a['title']}: {a['text']}" for a in have))
            if have
            else ""
        )
        reqs.append(
            LLMRequest(
                f"{q['question_id']} round {round_}",
                prompt.messages(
                    question=q["query"], answer=q["answer"], accepted=listing, n=str(t.max_aspects - len(have))
                ),
                params=LONG,
                output=prompt.output,
            )
        )
    results = model.run(reqs, parse=lambda s: parse_aspects(s, t.max_aspects), stats=stats, log=log)
    for q, r in zip(todo, results):
        for title, body in r.value if r.ok else []:
            found.consider(q, title, body, "llm")
        if not r.ok:
            found.rejects.append(
                REJECTS.row(q["domain"], q["question_id"], f"round {round_}", "aspects", UNPARSABLE, r.error or "")
            )
    return True


def _suitable(flat: list[dict], live: list[dict], found: _Candidates, model: Model, stats, log) -> list[dict]:
    """The suitability filter: each aspect with the builder's verdict, those it calls
    unsuitable rejected when verdicts bind."""
    suitable = ask_yes_no(
        model, "aspect_suitability", [(a, {"question": _query(live, a), "aspect": a["text"]}) for a in flat], stats, log
    )
    kept = []
    for a, ok in zip(flat, suitable):
        if ok is False and found.t.binding_verdicts:
            found.rejects.append(
                REJECTS.row(a["domain"], a["question_id"], f"{a['title']}: {a['text']}", "aspects", UNSUITABLE_ASPECT)
            )
        else:
            kept.append({**a, "llm_suitable": ok})
    return kept


def _query(questions: list[dict], item: dict) -> str:
    return next(q["query"] for q in questions if q["question_id"] == item["question_id"])


def _reorder(kept: list[dict], questions: list[dict], model: Model, stats, log) -> list[dict]:
    by_q: dict[str, list[dict]] = {}
    for a in kept:
        by_q.setdefault(a["question_id"], []).append(a)
    prompt = recor_prompt("aspect_order")
    todo = [(qid, items) for qid, items in by_q.items() if len(items) > 1]
    reqs = [
        LLMRequest(
            qid,
            prompt.messages(
                question=_query(questions, items[0]),
                listing="\n".join(f"[{i + 1}] {a['title']}: {a['text']}" for i, a in enumerate(items)),
            ),
            params=SHORT,
            output=prompt.output,
        )
        for qid, items in todo
    ]
    results = dict(zip([qid for qid, _ in todo], model.run(reqs, stats=stats, log=log)))
    out = []
    for qid, items in by_q.items():
        order = parse_permutation(results[qid].text or "", len(items))[0] if qid in results else [0]
        for pos, i in enumerate(order, start=1):
            out.append({**items[i], "aspect_id": f"{qid}_a{pos}", "position": pos})
    return out


# --- 3. atomic facts -----------------------------------------------------------------------------


def facts(
    questions: pl.DataFrame,
    aspect_rows: pl.DataFrame,
    aligned: pl.DataFrame,
    documents: pl.DataFrame,
    model: Model,
    sim: Similarity,
    t: Thresholds,
    stats: CallStats,
    log=None,
) -> tuple[pl.DataFrame, list[dict]]:
    """Atomic facts per aspect, each verified against the question's documents: similarity at
    or above ``fact_accept`` passes, below ``fact_reject`` fails, in between the LLM decides
    whether the best-matching document states, implies or paraphrases it (with advisory
    verdicts it is asked and recorded, and ``fact_similarity`` decides). Aspects with no
    verified fact are rejected (the paper's Table 14 case)."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    queries = dict(questions.select("question_id", "query").iter_rows())
    items = list(aspect_rows.iter_rows(named=True))
    prompt = recor_prompt("facts")
    reqs = [
        LLMRequest(
            a["aspect_id"],
            prompt.messages(question=queries[a["question_id"]], aspect=a["text"], n=str(t.max_facts)),
            params=MEDIUM,
            output=prompt.output,
        )
        for a in items
    ]
    results = model.run(reqs, parse=lambda s: parse_list(s, t.max_facts), stats=stats, log=log)
    rows, rejects, ask = _scored_facts(items, results, kept_documents(aligned), text, sim, t)
    _decide_the_uncertain(ask, text, model, t, stats, log)
    for row in rows:
        if not row["verified"]:
            rejects.append(
                REJECTS.row(
                    row["domain"],
                    row["question_id"],
                    row["fact_id"],
                    "facts",
                    UNSUPPORTED_FACT,
                    f"similarity {row['similarity']:.2f}, judge {row['llm_supports']}",
                )
            )
    frame = pl.DataFrame(rows, schema=FACT_SCHEMA)
    with_fact = set(frame.filter(pl.col("verified"))["aspect_id"])
    for a in items:
        if a["aspect_id"] not in with_fact:
            rejects.append(
                REJECTS.row(a["domain"], a["question_id"], a["aspect_id"], "facts", NO_VERIFIED_FACT, a["text"])
            )
    return frame, rejects


def _scored_facts(
    items: list[dict],
    results: list,
    docs_of: dict[str, list[str]],
    text: dict[str, str],
    sim: Similarity,
    t: Thresholds,
) -> tuple[list[dict], list[dict], list[dict]]:
    """Each proposed fact with its best-matching document sentence's similarity, verified at
    ``fact_accept``; the unparsable lists' rejects; and the facts the LLM is to decide."""
    rows, rejects, ask = [], [], []
    for a, r in zip(items, results):
        candidates = [(d, s) for d in docs_of.get(a["question_id"], []) for s in sentences(text[d])]
        # Without a usable list the aspect's own sentences are the candidate facts.
        proposed = r.value if r.ok else sentences(a["text"])[: t.max_facts]
        for n, fact in enumerate(proposed, start=1):
            score, i = sim.best(fact, [s for _, s in candidates])
            row = {
                "domain": a["domain"],
                "question_id": a["question_id"],
                "aspect_id": a["aspect_id"],
                "fact_id": f"{a['aspect_id']}_f{n}",
                "fact": fact,
                "similarity": score,
                "doc_id": candidates[i][0] if i >= 0 else None,
                "llm_supports": None,
                "verified": score >= t.fact_accept,
            }
            rows.append(row)
            if t.fact_reject <= score < t.fact_accept and row["doc_id"]:
                ask.append(row)
        if not r.ok:
            rejects.append(
                REJECTS.row(a["domain"], a["question_id"], a["aspect_id"], "facts", UNPARSABLE, r.error or "")
            )
    return rows, rejects, ask


def _decide_the_uncertain(ask: list[dict], text: dict[str, str], model: Model, t: Thresholds, stats, log) -> None:
    """The facts between the two similarities verified in place: by the LLM's fact check when
    verdicts bind, else at ``fact_similarity``."""
    if t.binding_verdicts:
        verdicts = ask_yes_no(
            model,
            "fact_check",
            [(row, {"document": text[row["doc_id"]], "fact": row["fact"]}) for row in ask],
            stats,
            log,
        )
        for row, ok in zip(ask, verdicts):
            row["llm_supports"] = ok
            row["verified"] = bool(ok)
    else:  # as for alignment: a whole document's prompt for a verdict that would not decide
        for row in ask:
            row["verified"] = row["similarity"] >= t.fact_similarity
