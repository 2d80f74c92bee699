"""The LLM-driven steps of QUIT construction, as functions of frames and model handles.

Each function takes the :class:`~resources.llm.Model` handles it calls (a labeler, the judge:
tests bind scripted clients) and a :class:`~resources.llm.CallStats` to account into,
and returns frames. Failed or unparsable calls are kept in the output with their error and
raw text. An unparsable reply is still an answer: it is counted as not correct. A call that
got no reply after its retries (:func:`failed`) leaves what it would have decided undecided
(null), so that nothing is labeled on a guess. A rerun asks exactly those calls again,
because failed calls are not cached.

``binding`` says whether the judge's verdicts may decide (the registry's ``verdicts`` of the
``quit.judge`` model). With an advisory judge a verdict is recorded beside the answer and
decides nothing. An answer is then correct only when it matches the gold answer or an alias
after normalization, and a span of a hint leaks only when it names the answer outright.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable

import numpy as np
import polars as pl

from assets.common.parsing import parse_list, parse_yes_no
from assets.common.prompts import load_prompt
from assets.common.text import contains_phrase, exact_match, normalize
from assets.quit import rules
from assets.quit.sources import REJECTS
from resources.llm import CallStats, LLMRequest, Model

# A verdict needs one word; capping the output keeps small models from rambling.
VERDICT = {"max_tokens": 3}
# ``screen_leakage``'s one reason (the human verification runs it again on newly accepted answers).
ANSWER_LEAKAGE = "answer_leakage"
LEAKAGE_REASONS = frozenset({ANSWER_LEAKAGE})


def _prompt(name: str):
    return load_prompt("quit", name)


def gold_text(answers: list[str]) -> str:
    return answers[0] if len(answers) == 1 else f"{answers[0]} (also: {'; '.join(answers[1:])})"


def failed(error: str | None) -> bool:
    """Whether a result's error is a call that got no reply after its retries, as
    :class:`~resources.llm.CallStats` counts ``errors`` (an unparsable reply is a reply)."""
    return error is not None and not error.startswith("unparsable")


def judged(
    judge: Model, items: list[tuple[str, str, list[str], str]], stats: CallStats, log=None
) -> dict[tuple[str, str], tuple[bool | None, str | None]]:
    """GPT-Eval ``(verdict, error)`` for ``(question_id, question, golds, candidate)`` items,
    by ``(question_id, normalized candidate)``.

    Exact matches are decided without a call. Other candidates are asked once per distinct
    normalized (question, candidate) pair. An unparsable verdict or a failed call has verdict
    None, with the result's error.
    """
    verdicts: dict[tuple[str, str], tuple[bool | None, str | None]] = {}
    pending: dict[tuple[str, str], LLMRequest] = {}
    prompt = _prompt("judge")
    for qid, question, golds, candidate in items:
        key = (qid, normalize(candidate))
        if key in verdicts or key in pending:
            continue
        if exact_match(candidate, golds):
            verdicts[key] = (True, None)
            continue
        msgs = prompt.messages(question=question, gold=gold_text(golds), candidate=candidate)
        pending[key] = LLMRequest(key=f"{qid} | {candidate}", messages=msgs, params=VERDICT, output=prompt.output)
    keys = list(pending)
    results = judge.run([pending[k] for k in keys], parse=parse_yes_no, stats=stats, log=log)
    for k, r in zip(keys, results):
        verdicts[k] = (r.value if r.ok else None, r.error)
    return verdicts


def judge(
    judge: Model, items: list[tuple[str, str, list[str], str]], stats: CallStats, log=None
) -> dict[tuple[str, str], bool | None]:
    """The verdicts of :func:`judged` alone (None: unparsable, or the call failed)."""
    return {k: v for k, (v, _) in judged(judge, items, stats, log).items()}


# --- 3.1.2 leakage -------------------------------------------------------------------------


LEAK_SPAN_SCHEMA = {
    "question_id": pl.String,
    "hint_index": pl.Int64,
    "span": pl.String,
    "verdict": pl.Boolean,
    "error": pl.String,
}


def screen_leakage(
    questions: pl.DataFrame, judge: Model, stats: CallStats, step: str = "leakage", log=None, binding: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Drop questions any of whose hints names the answer (or an equivalent of it).

    The paper used BEM on the words of each hint. Offline, a normalized match of the answer
    or an alias decides at once. Spans that nearly match (see :func:`rules.leakage_spans`)
    go to the LLM judge, and a binding Yes discards the question. Returns the kept
    questions, the rejects, and the judged spans that discarded nothing: an advisory Yes, or
    a call that failed (its question is kept unchecked).
    """
    rejects, keep = [], []
    span_requests: list[LLMRequest] = []
    span_owner: list[tuple[int, int, str]] = []
    prompt = _prompt("leakage_span")
    rows = questions.to_dicts()
    for qi, row in enumerate(rows):
        answers = row["aliases"] or [row["answer"]]
        for hi, hint in enumerate(row["hints"]):
            alias = rules.leaking_alias(hint, answers)
            if alias is not None:
                rejects.append((qi, f"hint {hi + 1} names the answer {alias!r}: {hint}"))
                break
        else:
            for hi, hint in enumerate(row["hints"]):
                for span in rules.leakage_spans(hint, answers):
                    span_requests.append(
                        LLMRequest(
                            key=f"{row['question_id']} hint {hi + 1}",
                            messages=prompt.messages(answer=gold_text(answers), span=span),
                            params=VERDICT,
                            output=prompt.output,
                        )
                    )
                    span_owner.append((qi, hi, span))
    results = judge.run(span_requests, parse=parse_yes_no, stats=stats, log=log)
    judged_leaks: dict[int, str] = {}
    unresolved = []
    for (qi, hi, span), r in zip(span_owner, results):
        said_yes = r.ok and r.value
        if said_yes and binding:
            judged_leaks.setdefault(qi, f"hint {hi + 1} span {span!r} judged equivalent to the answer")
        elif said_yes or failed(r.error):
            unresolved.append(
                {
                    "question_id": rows[qi]["question_id"],
                    "hint_index": hi,
                    "span": span,
                    "verdict": r.value if r.ok else None,
                    "error": r.error,
                }
            )
    rejected = {qi: why for qi, why in rejects}
    rejected.update({qi: why for qi, why in judged_leaks.items() if qi not in rejected})
    reject_rows = []
    for qi, row in enumerate(rows):
        if qi in rejected:
            reject_rows.append(_reject(row, step, ANSWER_LEAKAGE, rejected[qi]))
        else:
            keep.append(qi)
    kept_ids = {rows[qi]["question_id"] for qi in keep}
    spans = pl.DataFrame(unresolved, schema=LEAK_SPAN_SCHEMA).filter(pl.col("question_id").is_in(sorted(kept_ids)))
    return questions[keep], REJECTS.frame(reject_rows), spans


def _reject(row: dict, step: str, reason: str, detail: str) -> dict:
    record = {k: row[k] for k in ("question", "answer", "hints") if k in row}
    return REJECTS.row(row["question_id"], row["source"], step, reason, detail, record)


# --- 3.1.2 convergence -----------------------------------------------------------------------


def hint_convergence(
    questions: pl.DataFrame, model: Model, distractors: int, stats: CallStats, log=None
) -> pl.DataFrame:
    """Convergence of every hint: from the source when it has it (WikiHint), else computed
    as HintEval defines it over the gold answer and wrong candidates (the source's
    candidates when present, otherwise ones the LLM proposes)."""
    rows = questions.to_dicts()
    # Candidates first: one generation call per question lacking source candidates.
    need_gen = [r for r in rows if r["hint_convergence"] is None and not _wrong(r["candidate_answers"], r["aliases"])]
    gen_prompt = _prompt("distractors")
    gen = model.run(
        [
            LLMRequest(
                r["question_id"],
                gen_prompt.messages(question=r["question"], answer=r["answer"], count=str(distractors)),
                output=gen_prompt.output,
            )
            for r in need_gen
        ],
        parse=lambda t: parse_list(t, distractors * 2),
        stats=stats,
        log=log,
    )
    generated = {r["question_id"]: (res.value if res.ok else []) for r, res in zip(need_gen, gen)}

    out = []
    fit_requests, fit_index = [], []
    fits_prompt = _prompt("hint_fits")
    for r in rows:
        qid = r["question_id"]
        if r["hint_convergence"] is not None:
            for hi, (hint, conv) in enumerate(zip(r["hints"], r["hint_convergence"])):
                out.append(_conv_row(qid, hi, hint, conv, "source", []))
            continue
        cands = _wrong(r["candidate_answers"], r["aliases"]) or _wrong(generated.get(qid, []), r["aliases"])
        cands = cands[:distractors]
        for hi, hint in enumerate(r["hints"]):
            out.append(_conv_row(qid, hi, hint, None, "computed", cands))
            for ci, cand in enumerate([r["answer"]] + cands):
                fit_requests.append(
                    LLMRequest(
                        f"{qid} hint {hi + 1} | {cand}",
                        fits_prompt.messages(question=r["question"], hint=hint, candidate=cand),
                        params=VERDICT,
                        output=fits_prompt.output,
                    )
                )
                fit_index.append((len(out) - 1, ci))
    results = model.run(fit_requests, parse=parse_yes_no, stats=stats, log=log)
    answers: dict[int, dict[int, bool | None]] = {}
    for (oi, ci), res in zip(fit_index, results):
        answers.setdefault(oi, {})[ci] = res.value if res.ok else None
    for oi, verdicts in answers.items():
        row = out[oi]
        # An unparsable verdict leaves the candidate in play: it rules nothing out.
        gold_fits = verdicts.get(0) is not False
        fits = [verdicts.get(ci) is not False for ci in range(1, len(row["candidates"]) + 1)]
        row["convergence"] = rules.convergence(gold_fits, fits)
        row["unparsable_verdicts"] = sum(v is None for v in verdicts.values())
    return pl.DataFrame(out, schema=CONVERGENCE_SCHEMA)


CONVERGENCE_SCHEMA = {
    "question_id": pl.String,
    "hint_index": pl.Int64,
    "hint": pl.String,
    "convergence": pl.Float64,
    "origin": pl.String,
    "candidates": pl.List(pl.String),
    "unparsable_verdicts": pl.Int64,
}


def _conv_row(qid, hi, hint, conv, origin, cands):
    return {
        "question_id": qid,
        "hint_index": hi,
        "hint": hint,
        "convergence": conv,
        "origin": origin,
        "candidates": cands,
        "unparsable_verdicts": 0,
    }


def _wrong(candidates: list[str], golds: list[str]) -> list[str]:
    return [c for c in candidates if not exact_match(c, golds)]


def source_slice(questions: pl.DataFrame, per_source: int | None) -> pl.DataFrame:
    """The first ``per_source`` questions of each source, in the frame's order (all for None)."""
    if per_source is None:
        return questions
    return questions.filter(pl.int_range(pl.len()).over("source") < per_source)


def select_hints(questions: pl.DataFrame, convergence: pl.DataFrame) -> pl.DataFrame:
    """Keep each question's top-5 hints by convergence, best first."""
    by_q: dict[str, list[dict]] = {}
    for row in convergence.sort(["question_id", "hint_index"]).iter_rows(named=True):
        by_q.setdefault(row["question_id"], []).append(row)
    hints, scores = [], []
    for qid in questions["question_id"]:
        rows = by_q.get(qid, [])
        h, s = rules.top_hints([r["hint"] for r in rows], [r["convergence"] for r in rows])
        hints.append(h)
        scores.append(s)
    return questions.with_columns(
        pl.Series("hints", hints, dtype=pl.List(pl.String)),
        pl.Series("hint_convergence", scores, dtype=pl.List(pl.Float64)),
    )


# --- 3.1.3 type and difficulty ---------------------------------------------------------------


def question_types(questions: pl.DataFrame, model: Model, stats: CallStats, log=None) -> pl.DataFrame:
    """coarse:fine type per question: the source's when given, else the LLM's label."""
    rows = questions.select("question_id", "question", "major_type", "minor_type").to_dicts()
    missing = [r for r in rows if not rules.coarse_type(r["major_type"])]
    prompt = _prompt("question_type")
    results = model.run(
        [LLMRequest(r["question_id"], prompt.messages(question=r["question"]), output=prompt.output) for r in missing],
        parse=rules.parse_type_label,
        stats=stats,
        log=log,
    )
    labelled = {r["question_id"]: res for r, res in zip(missing, results)}
    out = []
    for r in rows:
        res = labelled.get(r["question_id"])
        if res is None:
            coarse, fine, origin, raw = (
                rules.coarse_type(r["major_type"]),
                rules.fine_type(r["minor_type"]),
                "source",
                None,
            )
        elif res.ok:
            (coarse, fine), origin, raw = res.value, "llm", res.text
        else:
            coarse, fine, origin, raw = None, None, "llm_unparsable", res.text
        out.append(
            {
                "question_id": r["question_id"],
                "question_type": f"{coarse}:{fine}" if coarse else None,
                "type_origin": origin,
                "type_raw": raw,
            }
        )
    return pl.DataFrame(
        out,
        schema={"question_id": pl.String, "question_type": pl.String, "type_origin": pl.String, "type_raw": pl.String},
    )


def difficulties(questions: pl.DataFrame, hits: dict[str, list[str]], encode) -> pl.DataFrame:
    """Difficulty per question: the source's value when given, otherwise reference-based
    complexity over the passages BM25 retrieved for the question (``hits``: id -> texts).

    The questions with hits and their passages go to ``encode`` in one call, each distinct
    text once (questions often retrieve the same references): a call per question padded its
    short question to its longest passage and paid the call's own cost for ten-odd texts, three
    times slower than one length-sorted call (bench/encoding_bench.py)."""
    rows = list(questions.select("question_id", "question", "aliases", "difficulty").iter_rows(named=True))
    texts = list(
        dict.fromkeys(t for r in rows if hits.get(r["question_id"]) for t in [r["question"], *hits[r["question_id"]]])
    )
    at = {t: i for i, t in enumerate(texts)}
    vecs = np.asarray(encode(texts), dtype=np.float32) if texts else None
    out = []
    for r in rows:
        docs = hits.get(r["question_id"], [])
        sims = (vecs[[at[d] for d in docs]] @ vecs[at[r["question"]]]).tolist() if docs else []
        contains = [any(contains_phrase(d, a) for a in r["aliases"]) for d in docs]
        source = r["difficulty"]
        complexity = None if source else rules.reference_complexity(contains, sims)
        out.append(
            {
                "question_id": r["question_id"],
                "difficulty": source.lower() if source else rules.difficulty_bucket(complexity),
                "difficulty_origin": "source" if source else "reference_complexity",
                "reference_complexity": complexity,
                "references_with_answer": sum(contains),
                "references_retrieved": len(docs),
            }
        )
    return pl.DataFrame(
        out,
        schema={
            "question_id": pl.String,
            "difficulty": pl.String,
            "difficulty_origin": pl.String,
            "reference_complexity": pl.Float64,
            "references_with_answer": pl.Int64,
            "references_retrieved": pl.Int64,
        },
    )


# --- 3.1.4 parametric answerability -------------------------------------------------------------


ANSWER_SCHEMA = {
    "question_id": pl.String,
    "model": pl.String,
    "item": pl.String,
    "raw": pl.String,
    "answer": pl.String,
    "error": pl.String,
    "exact_match": pl.Boolean,
    "judge": pl.Boolean,
    "judge_error": pl.String,
    "correct": pl.Boolean,
}


def closed_book_answers(
    questions: pl.DataFrame,
    model: Model,
    judge: Model,
    repeats: int,
    temperature: float,
    stats: CallStats,
    log=None,
    binding: bool = True,
) -> pl.DataFrame:
    """Each question answered without context ``repeats`` times, sampled at ``temperature``
    with the repeat as the sample index (the seed), so the repeats are distinct draws."""
    prompt = _prompt("closed_book")
    rows = questions.select("question_id", "question", "aliases").to_dicts()
    reqs, owners = [], []
    for r in rows:
        for k in range(repeats):
            reqs.append(
                LLMRequest(
                    f"{r['question_id']} repeat {k}",
                    prompt.messages(question=r["question"]),
                    sample=k,
                    params={"temperature": temperature},
                )
            )
            owners.append((r, f"repeat{k}"))
    results = model.run(reqs, parse=rules.parse_short_answer, stats=stats, log=log)
    return _graded(owners, results, model.alias, judge, binding, stats, log)


def _graded(owners, results, alias: str, judge: Model, binding, stats, log) -> pl.DataFrame:
    """Answers with their verdicts. ``correct`` is null when the answer's call failed, or when
    a binding judge had to decide and its call failed."""
    items = [
        (r["question_id"], r["question"], r["aliases"], res.value)
        for (r, _), res in zip(owners, results)
        if res.ok and res.value
    ]
    verdicts = judged(judge, items, stats, log)
    out = []
    for (r, item), res in zip(owners, results):
        answer = res.value if res.ok else None
        verdict, judge_error = (
            verdicts.get((r["question_id"], normalize(answer)), (None, None)) if answer else (None, None)
        )
        em = exact_match(answer, r["aliases"])
        undecided = failed(res.error) or (binding and answer is not None and not em and failed(judge_error))
        out.append(
            {
                "question_id": r["question_id"],
                "model": alias,
                "item": item,
                "raw": res.text,
                "answer": answer,
                "error": res.error,
                "exact_match": em,
                "judge": verdict,
                "judge_error": judge_error,
                "correct": None if undecided else rules.is_correct(answer, r["aliases"], verdict if binding else None),
            }
        )
    return pl.DataFrame(out, schema=ANSWER_SCHEMA)


# --- 3.2.2 passage labeling ----------------------------------------------------------------------


def passage_answers(
    passages: pl.DataFrame | Iterable[pl.DataFrame],
    questions: pl.DataFrame,
    model: Model,
    judge: Model,
    stats: CallStats,
    log=None,
    binding: bool = True,
    judge_stats: CallStats | None = None,
    total: int | None = None,
    parse=rules.parse_short_answer,
) -> pl.DataFrame:
    """One labeler's answer for every passage (``passage_id``, ``question_id``, ``text``: a
    frame, or frames read a batch at a time, ``total`` rows in all), read from each reply by
    ``parse`` (its first line; the evaluation's reader passes its own), judged against the
    gold answers.

    Calls go question by question, in passage order, so consecutive prompts share the
    few-shot prefix and the question. Requests are made as the LLM resource takes them, a
    chunk at a time, and each chunk is judged before the next is asked: at 2.4M passages no
    partition holds every prompt, nor every passage's text, in memory. The judge's calls are
    counted in ``judge_stats`` when given (its tokens apart from the labeler's)."""
    prompt = _prompt("reader")
    q = {r["question_id"]: r for r in questions.select("question_id", "question", "aliases").iter_rows(named=True)}
    if isinstance(passages, pl.DataFrame):
        total, passages = passages.height, [passages]
    # The owners of the requests made and not yet answered: the resource reads ahead of the
    # answers it yields, in order, so each answered chunk is the front of this queue.
    pending: collections.deque[tuple[str, str]] = collections.deque()

    def requests():
        for batch in passages:
            for pid, qid, text in batch.select("passage_id", "question_id", "text").iter_rows():
                pending.append((qid, pid))
                yield LLMRequest(pid, prompt.messages(question=q[qid]["question"], context=text))

    frames = []
    for results in model.stream(requests(), parse=parse, stats=stats, log=log, total=total):
        owners = [(q[qid], pid) for qid, pid in (pending.popleft() for _ in results)]
        frames.append(_graded(owners, results, model.alias, judge, binding, judge_stats or stats, log))
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=ANSWER_SCHEMA)
    return frame.rename({"item": "passage_id"})


# The label update of 3.2.4 from the human verification decisions.
@dataclasses.dataclass
class Verified:
    labels: pl.DataFrame
    pools: pl.DataFrame
    rejects: pl.DataFrame
    verified: bool
    decided: int
    demoted: int


def apply(
    decisions, answers, labels, pools, questions, judge: Model, stats, log=None, binding: bool = True
) -> Verified:
    """The label update of 3.2.4 for questions with decisions; others pass through."""
    empty_rejects = REJECTS.empty()
    if not decisions:
        return Verified(labels, pools, empty_rejects, False, 0, 0)
    new_labels, demoted = rules.relabeled(decisions, answers, labels, questions)
    new_pools = rules.revised_pools(decisions, pools, questions)
    # Newly accepted answers may leak through a hint: screen those questions again.
    newly = rules.newly_accepted(decisions, pools, questions)
    rejects = empty_rejects
    if newly:
        recheck = (
            questions.filter(pl.col("question_id").is_in(newly))
            .drop("aliases")
            .join(new_pools.select("question_id", pl.col("answer_pool").alias("aliases")), on="question_id")
        )
        _, rejects, _ = screen_leakage(recheck, judge, stats, step="human_verification", log=log, binding=binding)
    return Verified(new_labels, new_pools, rejects, True, len(decisions), demoted)
