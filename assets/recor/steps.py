"""RECOR's Decomposition-and-Verification steps (paper section 3.2) as functions of frames.

Each step takes the previous step's tables, asks the LLM through the resource (prompts in
``assets/recor/prompts``), applies the rules of :mod:`assets.recor.rules`, and returns the
kept rows and the rejected ones with their step and reason. Semantic similarity is cosine
similarity of the configured encoder's normalised embeddings.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import polars as pl

from assets.common.metadata import report_slice
from assets.common.parsing import parse_list, parse_permutation
from assets.common.prompts import load_prompt
from assets.common.rejects import Rejects
from assets.common.text import normalize, sentences, tokens
from assets.common.verdicts import RATING, VERDICT, rating, verdict  # noqa: F401 (the evaluation reads them from here too)
from assets.recor import rules
from assets.recor.rules import word_overlap
from resources.llm import CallStats, LLMRequest, LLMResult, ParseError

# What a step drops: the domain, the source question and the item (document, aspect, fact, turn).
REJECTS = Rejects(("domain", "question_id", "item"))

# Each step's reasons for a reject, the vocabulary its rejects table is checked against.
# ``select_negatives``.
DUPLICATE_PASSAGE, OVERLAPS_POSITIVE = "duplicate_passage", "overlaps_positive"
NEGATIVE_REASONS = frozenset({DUPLICATE_PASSAGE, OVERLAPS_POSITIVE})
# ``alignment``.
WEAK_DOCUMENT, NO_ALIGNED_DOCUMENT = "weak_document", "no_aligned_document"
ALIGNMENT_REASONS = frozenset({WEAK_DOCUMENT, NO_ALIGNED_DOCUMENT})
# ``aspects``: its checks, an unparsable round, the suitability filter; ``facts``.
UNPARSABLE = "unparsable"
OVERLAPPING_ASPECT, LOW_COVERAGE, UNSUITABLE_ASPECT = "overlapping_aspect", "low_coverage", "unsuitable_aspect"
ASPECT_REASONS = frozenset({OVERLAPPING_ASPECT, LOW_COVERAGE, UNPARSABLE, UNSUITABLE_ASPECT})
UNSUPPORTED_FACT, NO_VERIFIED_FACT = "unsupported_fact", "no_verified_fact"
FACT_REASONS = frozenset({UNPARSABLE, UNSUPPORTED_FACT, NO_VERIFIED_FACT})
# ``turns``: ``_check_question``'s problems (a retry keeps the first try's reason), the
# relevance and flow verdicts, document selection.
NO_QUESTION, REPETITIVE_QUESTION = "no_question", "repetitive_question"
OFF_ASPECT_QUESTION, UNNATURAL_QUESTION, UNANSWERABLE = "off_aspect_question", "unnatural_question", "unanswerable"
TURN_REASONS = frozenset({NO_QUESTION, REPETITIVE_QUESTION, OFF_ASPECT_QUESTION, UNNATURAL_QUESTION, UNANSWERABLE})
# ``conversations``: one reason, the problems in its detail.
INVALID_CONVERSATION = "invalid_conversation"
CONVERSATION_REASONS = frozenset({INVALID_CONVERSATION})


def _prompt(name: str):
    return load_prompt("recor", name)


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The method's knobs; defaults follow the paper and its released configuration."""

    # A gold document usually backs one part of the answer, so its coverage is the mean
    # similarity of the answer sentences it covers best (``alignment_top`` of them). With
    # MiniLM on the sample, positives score 0.63-0.82 (10th-90th percentile) and same-topic
    # negatives 0.26-0.53 (bench/recor_checks.py).
    alignment_min_coverage: float = 0.58
    alignment_top: int = 3
    aspect_overlap: float = 0.8
    aspect_min_coverage: float = 0.5
    max_aspects: int = 6
    aspect_rounds: int = 2
    max_facts: int = 3
    fact_accept: float = 0.70  # similarity at which a fact passes without asking the LLM
    fact_reject: float = 0.15  # similarity below which it fails without asking
    doc_threshold: float = 4.0
    max_docs_per_turn: int = 5
    max_similarity: float = 0.58
    min_new_words: int = 10
    min_turns: int = rules.MIN_TURNS
    max_turns: int = rules.MAX_TURNS
    # Further tries at a turn's question (the question the aspect answers) after the
    # first-turn or follow-up prompt gave an unusable or repeated one.
    question_tries: int = 3
    # Whether the builder's yes/no verdicts may reject (the registry's ``verdicts``). When
    # they are advisory the encoder's evidence decides alone: an answer-covered document is
    # aligned, a fact passes at ``fact_similarity``, a turn's gold documents are those that
    # hold its verified facts (rated, and ordered by their score). The short verdicts
    # (suitability, relevance, flow, coherence) are still asked and recorded; the two that
    # read a whole document (alignment, fact check) are not asked.
    binding_verdicts: bool = True
    fact_similarity: float = 0.5


# --- similarity ------------------------------------------------------------------------------


class Similarity:
    """Cosine similarity through an encoder function ``encode(texts) -> unit vectors``, with
    every text encoded once."""

    def __init__(self, encode):
        self._encode = encode
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for t, v in zip(todo, self._encode(todo)):
                self._cache[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 1), dtype=np.float32)

    def best(self, text: str, candidates: list[str]) -> tuple[float, int]:
        """The highest similarity of ``text`` to any candidate, and that candidate's index."""
        if not candidates:
            return 0.0, -1
        sims = self.vectors(candidates) @ self.vectors([text])[0]
        i = int(np.argmax(sims))
        return float(sims[i]), i


def doc_sentences(texts: list[str]) -> list[str]:
    return [s for t in texts for s in sentences(t)]


# --- parsing ---------------------------------------------------------------------------------


def parse_aspects(text: str, limit: int) -> list[tuple[str, str]]:
    """``Title: sentence`` lines; a line without a title is its own title."""
    out = []
    for item in parse_list(text, limit):
        title, _, body = item.partition(":")
        body = body.strip() or title.strip()
        if len(body.split()) >= 3:
            out.append((title.strip()[:80], body))
    if not out:
        raise ParseError(f"no aspects in {text[:80]!r}")
    return out


def parse_reasoning(text: str) -> dict:
    """``Target: ...`` / ``Relevant signals: a; b`` / ``Irrelevant signals: x; y``."""
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key.startswith("target"):
            fields["target"] = value.strip()
        elif key.startswith("relevan"):
            fields["relevance_signals"] = [s.strip() for s in re.split(r"[;,]", value) if s.strip()]
        elif key.startswith("irrelevan"):
            fields["irrelevance_signals"] = [s.strip() for s in re.split(r"[;,]", value) if s.strip()]
    if not fields.get("target"):
        raise ParseError(f"no Target line in {text[:80]!r}")
    return {"target": fields["target"], "relevance_signals": fields.get("relevance_signals", []),
            "irrelevance_signals": fields.get("irrelevance_signals", [])}


_QUESTION_STOPS = re.compile(r"([\"“”:?])")
_CAPITAL = re.compile(r"[A-Z]")


def parse_question(text: str) -> str:
    """The first question in the reply: a capitalised run of at least four words ending in a
    question mark, so that labels (``Question:``), lead-ins (``The person's next question
    is: "...?"``) and quotes fall away. A reply with no question mark has no question."""
    for line in text.splitlines():
        # The pieces between quotes, colons and question marks, each with the mark after it:
        # a question is the piece before a "?" from its first capital on. (A search for
        # ``[A-Z][^"“”:?]*\?`` rescanned a piece from each of its capitals: quadratic time.)
        pieces = _QUESTION_STOPS.split(line)
        for piece, stop in zip(pieces[::2], pieces[1::2]):
            capital = _CAPITAL.search(piece) if stop == "?" else None
            found = piece[capital.start():] + "?" if capital else ""
            if len(found.split()) >= 4:
                return found.strip()
    raise ParseError(f"no question in {text[:80]!r}")


def parse_answer(text: str) -> str:
    answer = " ".join(text.split())
    if len(answer.split()) < 4:
        raise ParseError(f"answer too short: {text[:80]!r}")
    words = tokens(answer)
    # A model stuck in a loop repeats a phrase until the token limit.
    if len(words) >= 20 and len(set(words)) / len(words) < 0.4:
        raise ParseError(f"answer repeats itself: {text[:80]!r}")
    return answer


def usable_answer(answer: str, query: str, max_overlap: float = 0.6) -> bool:
    """An answer that mostly restates the question answers nothing."""
    return rules.word_overlap(answer, query) <= max_overlap


# --- 1. document-answer alignment --------------------------------------------------------------


def alignment(questions: pl.DataFrame, documents: pl.DataFrame, llm, alias: str, sim: Similarity,
              t: Thresholds, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Each gold document of each question checked against the answer: kept when the LLM
    finds the answer's content in it, or when it covers part of the answer (the answer
    sentences it matches best reach the minimum coverage on average). Questions left with no document are
    rejected."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    pairs = [(q, d) for q in questions.iter_rows(named=True) for d in q["gold_ids"]]
    prompt = _prompt("alignment")
    # An advisory verdict here would not decide and costs a whole document's prompt: not asked.
    reqs = [LLMRequest(f"{q['question_id']} {d}", prompt.messages(answer=q["answer"], document=text[d]), params=VERDICT)
            for q, d in pairs] if t.binding_verdicts else []
    results = llm.run(alias, reqs, stats=stats, log=log) if reqs else [LLMResult("", None, error="not asked")] * len(pairs)
    rows, rejects = [], []
    for (q, d), r in zip(pairs, results):
        answer_sents = sentences(q["answer"]) or [q["answer"]]
        doc_sents = sentences(text[d]) or [text[d]]
        best = sorted((sim.best(s, doc_sents)[0] for s in answer_sents), reverse=True)
        coverage = float(np.mean(best[: t.alignment_top]))
        supports = verdict(r) if r.ok else None
        kept = (bool(supports) and t.binding_verdicts) or coverage >= t.alignment_min_coverage
        rows.append({"domain": q["domain"], "question_id": q["question_id"], "doc_id": d, "llm_supports": supports,
                     "coverage": coverage, "kept": kept})
        if not kept:
            rejects.append(REJECTS.row(q["domain"], q["question_id"], d, "alignment", WEAK_DOCUMENT,
                                  f"judge said {supports} ({'binding' if t.binding_verdicts else 'advisory'}) and coverage "
                                  f"{coverage:.2f} < {t.alignment_min_coverage}"))
    frame = pl.DataFrame(rows, schema={"domain": pl.String, "question_id": pl.String, "doc_id": pl.String,
                                       "llm_supports": pl.Boolean, "coverage": pl.Float64, "kept": pl.Boolean})
    left = set(frame.filter(pl.col("kept"))["question_id"])
    for q in questions.iter_rows(named=True):
        if q["question_id"] not in left:
            rejects.append(REJECTS.row(q["domain"], q["question_id"], q["question_id"], "alignment", NO_ALIGNED_DOCUMENT))
    return frame, rejects


# --- 2. aspects --------------------------------------------------------------------------------


def aspects(questions: pl.DataFrame, aligned: pl.DataFrame, documents: pl.DataFrame, llm, alias: str,
            sim: Similarity, t: Thresholds, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Iterative decomposition: each round proposes aspects (with the accepted ones listed),
    each proposal is kept if it does not overlap an accepted aspect (similarity below the
    overlap threshold) and the question's documents cover it (best sentence similarity at
    least the minimum coverage). Then the suitability filter and the reordering."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    docs_of = {q: aligned.filter((pl.col("question_id") == q) & pl.col("kept"))["doc_id"].to_list()
               for q in aligned["question_id"].unique()}
    live = [q for q in questions.iter_rows(named=True) if docs_of.get(q["question_id"])]
    accepted: dict[str, list[dict]] = {q["question_id"]: [] for q in live}
    rejects: list[dict] = []
    prompt = _prompt("aspects")

    def consider(q: dict, title: str, body: str, origin: str) -> None:
        qid, have = q["question_id"], accepted[q["question_id"]]
        overlap = sim.best(body, [a["text"] for a in have])[0] if have else 0.0
        coverage = sim.best(body, doc_sentences([text[d] for d in docs_of[qid]]))[0]
        item = f"{title}: {body}"
        if overlap >= t.aspect_overlap:
            rejects.append(REJECTS.row(q["domain"], qid, item, "aspects", OVERLAPPING_ASPECT, f"similarity {overlap:.2f}"))
        elif coverage < t.aspect_min_coverage:
            rejects.append(REJECTS.row(q["domain"], qid, item, "aspects", LOW_COVERAGE, f"coverage {coverage:.2f}"))
        elif len(have) < t.max_aspects:
            have.append({"domain": q["domain"], "question_id": qid, "title": title, "text": body, "coverage": coverage,
                         "origin": origin})

    for round_ in range(t.aspect_rounds):
        todo = [q for q in live if len(accepted[q["question_id"]]) < t.max_aspects]
        if not todo:
            break
        reqs = []
        for q in todo:
            have = accepted[q["question_id"]]
            listing = ("\nPoints already listed (find others):\n" + "\n".join(f"- {a['title']}: {a['text']}" for a in have)) if have else ""
            reqs.append(LLMRequest(f"{q['question_id']} round {round_}",
                                   prompt.messages(question=q["query"], answer=q["answer"], accepted=listing,
                                                   n=str(t.max_aspects - len(have))), params=LONG, output=prompt.output))
        results = llm.run(alias, reqs, parse=lambda s: parse_aspects(s, t.max_aspects), stats=stats, log=log)
        for q, r in zip(todo, results):
            for title, body in (r.value if r.ok else []):
                consider(q, title, body, "llm")
            if not r.ok:
                rejects.append(REJECTS.row(q["domain"], q["question_id"], f"round {round_}", "aspects", UNPARSABLE, r.error or ""))
    # The answer's own paragraphs are candidates too, through the same checks, when the
    # model's proposals leave room: a small model often proposes one point, or none.
    for q in live:
        for segment in answer_segments(q["answer"]):
            if len(accepted[q["question_id"]]) < t.max_aspects:
                consider(q, " ".join(segment.split()[:8]), segment, "answer_segment")
    flat = [a for q in live for a in accepted[q["question_id"]]]
    suitable = _ask_yes_no(llm, alias, "aspect_suitability", [(a, {"question": _query(live, a), "aspect": a["text"]}) for a in flat], stats, log)
    kept = []
    for a, ok in zip(flat, suitable):
        if ok is False and t.binding_verdicts:
            rejects.append(REJECTS.row(a["domain"], a["question_id"], f"{a['title']}: {a['text']}", "aspects", UNSUITABLE_ASPECT))
        else:
            kept.append({**a, "llm_suitable": ok})
    ordered = _reorder(kept, live, llm, alias, stats, log)
    frame = pl.DataFrame(ordered, schema={"domain": pl.String, "question_id": pl.String, "aspect_id": pl.String,
                                          "position": pl.Int32, "title": pl.String, "text": pl.String,
                                          "coverage": pl.Float64, "origin": pl.String, "llm_suitable": pl.Boolean})
    return frame, rejects


def answer_segments(answer: str) -> list[str]:
    """The answer's paragraphs, or its sentences when it is one paragraph."""
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", answer) if p.strip()]
    return paragraphs if len(paragraphs) > 1 else sentences(answer)


def _query(questions: list[dict], item: dict) -> str:
    return next(q["query"] for q in questions if q["question_id"] == item["question_id"])


# Output budgets per kind of generation (the registry's default is sized for short answers).
LONG = {"max_tokens": 240}
MEDIUM = {"max_tokens": 120}
SHORT = {"max_tokens": 60}


def _ask_yes_no(llm, alias: str, prompt_name: str, items: list[tuple[dict, dict]], stats, log) -> list[bool | None]:
    prompt = _prompt(prompt_name)
    reqs = [LLMRequest(f"{i}", prompt.messages(**fields), params=VERDICT) for i, (_, fields) in enumerate(items)]
    return [verdict(r) if r.ok else None for r in llm.run(alias, reqs, stats=stats, log=log)]


def _reorder(kept: list[dict], questions: list[dict], llm, alias: str, stats, log) -> list[dict]:
    by_q: dict[str, list[dict]] = {}
    for a in kept:
        by_q.setdefault(a["question_id"], []).append(a)
    prompt = _prompt("aspect_order")
    todo = [(qid, items) for qid, items in by_q.items() if len(items) > 1]
    reqs = [LLMRequest(qid, prompt.messages(question=_query(questions, items[0]),
                                            listing="\n".join(f"[{i + 1}] {a['title']}: {a['text']}" for i, a in enumerate(items))),
                       params=SHORT, output=prompt.output)
            for qid, items in todo]
    results = dict(zip([qid for qid, _ in todo], llm.run(alias, reqs, stats=stats, log=log)))
    out = []
    for qid, items in by_q.items():
        order = parse_permutation(results[qid].text or "", len(items))[0] if qid in results else [0]
        for pos, i in enumerate(order, start=1):
            out.append({**items[i], "aspect_id": f"{qid}_a{pos}", "position": pos})
    return out


# --- 3. atomic facts -----------------------------------------------------------------------------


def facts(questions: pl.DataFrame, aspect_rows: pl.DataFrame, aligned: pl.DataFrame, documents: pl.DataFrame,
          llm, alias: str, sim: Similarity, t: Thresholds, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Atomic facts per aspect, each verified against the question's documents: similarity at
    or above ``fact_accept`` passes, below ``fact_reject`` fails, in between the LLM decides
    whether the best-matching document states, implies or paraphrases it (with advisory
    verdicts it is asked and recorded, and ``fact_similarity`` decides). Aspects with no
    verified fact are rejected (the paper's Table 14 case)."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    queries = dict(questions.select("question_id", "query").iter_rows())
    docs_of = {q: aligned.filter((pl.col("question_id") == q) & pl.col("kept"))["doc_id"].to_list()
               for q in aligned["question_id"].unique()}
    prompt = _prompt("facts")
    items = list(aspect_rows.iter_rows(named=True))
    reqs = [LLMRequest(a["aspect_id"], prompt.messages(question=queries[a["question_id"]], aspect=a["text"], n=str(t.max_facts)),
                       params=MEDIUM, output=prompt.output)
            for a in items]
    results = llm.run(alias, reqs, parse=lambda s: parse_list(s, t.max_facts), stats=stats, log=log)
    rows, rejects, ask = [], [], []
    for a, r in zip(items, results):
        candidates = [(d, s) for d in docs_of.get(a["question_id"], []) for s in sentences(text[d])]
        # Without a usable list the aspect's own sentences are the candidate facts.
        proposed = r.value if r.ok else sentences(a["text"])[: t.max_facts]
        for n, fact in enumerate(proposed, start=1):
            score, i = sim.best(fact, [s for _, s in candidates])
            row = {"domain": a["domain"], "question_id": a["question_id"], "aspect_id": a["aspect_id"],
                   "fact_id": f"{a['aspect_id']}_f{n}", "fact": fact, "similarity": score,
                   "doc_id": candidates[i][0] if i >= 0 else None, "llm_supports": None, "verified": score >= t.fact_accept}
            rows.append(row)
            if t.fact_reject <= score < t.fact_accept and row["doc_id"]:
                ask.append(row)
        if not r.ok:
            rejects.append(REJECTS.row(a["domain"], a["question_id"], a["aspect_id"], "facts", UNPARSABLE, r.error or ""))
    if t.binding_verdicts:
        verdicts = _ask_yes_no(llm, alias, "fact_check", [(row, {"document": text[row["doc_id"]], "fact": row["fact"]}) for row in ask],
                               stats, log)
        for row, ok in zip(ask, verdicts):
            row["llm_supports"] = ok
            row["verified"] = bool(ok)
    else:  # as for alignment: a whole document's prompt for a verdict that would not decide
        for row in ask:
            row["verified"] = row["similarity"] >= t.fact_similarity
    for row in rows:
        if not row["verified"]:
            rejects.append(REJECTS.row(row["domain"], row["question_id"], row["fact_id"], "facts", UNSUPPORTED_FACT,
                                  f"similarity {row['similarity']:.2f}, judge {row['llm_supports']}"))
    frame = pl.DataFrame(rows, schema={"domain": pl.String, "question_id": pl.String, "aspect_id": pl.String,
                                       "fact_id": pl.String, "fact": pl.String, "similarity": pl.Float64,
                                       "doc_id": pl.String, "llm_supports": pl.Boolean, "verified": pl.Boolean})
    with_fact = set(frame.filter(pl.col("verified"))["aspect_id"])
    for a in items:
        if a["aspect_id"] not in with_fact:
            rejects.append(REJECTS.row(a["domain"], a["question_id"], a["aspect_id"], "facts", NO_VERIFIED_FACT, a["text"]))
    return frame, rejects


# --- 4-5. turns and conversations -------------------------------------------------------------------


TURN_SCHEMA = {
    "domain": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32, "aspect_id": pl.String,
    "query": pl.String, "answer": pl.String, "gold_doc_ids": pl.List(pl.String), "doc_scores": pl.String,
    "conversation_history": pl.String, "target": pl.String, "relevance_signals": pl.List(pl.String),
    "irrelevance_signals": pl.List(pl.String), "facts": pl.List(pl.String),
    "llm_on_aspect": pl.Boolean, "llm_natural": pl.Boolean, "question_origin": pl.String, "answer_origin": pl.String,
}


def _check_question(r, earlier: list[str], t: Thresholds) -> tuple[str | None, tuple[str, str] | None, str | None]:
    """(question, None, prompt) when the model's question is usable, else (None, (reason, detail), None)."""
    if not r.ok:
        return None, (NO_QUESTION, r.error or ""), None
    ok, why = rules.distinct_turn(r.value, earlier, t.max_similarity, t.min_new_words)
    if not ok:
        return None, (REPETITIVE_QUESTION, f"{r.value} ({why})"), None
    return r.value, None, "follow_up" if earlier else "first_turn"


def history_text(turns: list[dict]) -> str:
    if not turns:
        return "No previous conversation."
    return "\n".join(f"Turn {t['turn_id']} - User: {t['query']}\nAssistant: {t['answer']}" for t in turns)


def turns(questions: pl.DataFrame, aspect_rows: pl.DataFrame, fact_rows: pl.DataFrame, aligned: pl.DataFrame,
          documents: pl.DataFrame, llm, alias: str, t: Thresholds, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Turn by turn, for every conversation at once: the question (first-turn or follow-up
    prompt, then up to ``question_tries`` tries at the question the aspect answers when that
    one is unusable or repeats an earlier question), its validation (distinct from earlier
    questions by rule; relevant to the aspect and natural by the LLM), document scoring and selection (answerable only if a document
    scores above the threshold; with advisory verdicts the documents holding the verified
    facts, best rated first), the retrieval reasoning and the answer from the verified
    facts (the facts themselves when the model's answer loops or restates the question).
    ``question_origin`` and ``answer_origin`` say which path each turn took. A rejected turn skips its aspect; the conversation goes on with the next one."""
    text = dict(documents.select("doc_id", "content").iter_rows())
    queries = dict(questions.select("question_id", "query").iter_rows())
    domain_of = dict(questions.select("question_id", "domain").iter_rows())
    docs_of = {q: aligned.filter((pl.col("question_id") == q) & pl.col("kept"))["doc_id"].to_list()
               for q in aligned["question_id"].unique()}
    verified = fact_rows.filter(pl.col("verified"))
    facts_of = {a: g["fact"].to_list() for (a,), g in verified.group_by("aspect_id", maintain_order=True)}
    fact_docs = {a: list(dict.fromkeys(d for d in g["doc_id"] if d)) for (a,), g in verified.group_by("aspect_id", maintain_order=True)}
    pending = {qid: [a for a in g.sort("position").iter_rows(named=True) if a["aspect_id"] in facts_of]
               for (qid,), g in aspect_rows.group_by("question_id", maintain_order=True)}
    done: dict[str, list[dict]] = {qid: [] for qid in pending}
    rejects: list[dict] = []
    origins: dict[str, str] = {}
    while any(pending.values()):
        step = [(qid, pending[qid].pop(0)) for qid in sorted(pending) if pending[qid] and len(done[qid]) < t.max_turns]
        if not step:
            break
        # the question
        reqs = []
        for qid, a in step:
            history = done[qid]
            if history:
                msgs = _prompt("follow_up").messages(history=history_text(history), aspect=a["text"])
            else:
                msgs = _prompt("first_turn").messages(question=queries[qid], aspect=a["text"])
            reqs.append(LLMRequest(a["aspect_id"], msgs, params=SHORT))
        asked = llm.run(alias, reqs, parse=parse_question, stats=stats, log=log)
        earlier = {qid: [x["query"] for x in done[qid]] for qid, _ in step}
        checked = {a["aspect_id"]: _check_question(r, earlier[qid], t) for (qid, a), r in zip(step, asked)}
        # More tries, for the turns whose question failed, asking for the question that one
        # sentence of the aspect answers (a small model loses its way in a paragraph): the
        # aspect's sentences in turn, the first try greedy, the others sampled.
        statements = {a["aspect_id"]: sentences(a["text"]) or [a["text"]] for _, a in step}
        for attempt in range(t.question_tries):
            retry = [(qid, a) for qid, a in step if checked[a["aspect_id"]][1]]
            if not retry:
                break
            params = SHORT if attempt == 0 else {**SHORT, "temperature": 0.8}
            again = llm.run(alias, [LLMRequest(a["aspect_id"], _prompt("question_for_point").messages(
                                                   aspect=statements[a["aspect_id"]][attempt % len(statements[a["aspect_id"]])]),
                                               sample=attempt, params=params) for _, a in retry],
                            parse=parse_question, stats=stats, log=log)
            for (qid, a), r in zip(retry, again):
                before = checked[a["aspect_id"]][1]
                question, problem, _ = _check_question(r, earlier[qid], t)
                checked[a["aspect_id"]] = ((question, None, "question_for_point") if not problem else
                                           (None, (before[0], f"{before[1]}; try {attempt + 2}: {problem[0]} {problem[1]}"), None))
        live = []
        for qid, a in step:
            question, problem, origin = checked[a["aspect_id"]]
            if problem:
                rejects.append(REJECTS.row(domain_of[qid], qid, a["aspect_id"], "turns", *problem))
                continue
            live.append((qid, a, question))
            origins[a["aspect_id"]] = origin
        # relevance to the aspect and natural flow
        relevant = _ask_yes_no(llm, alias, "turn_relevance", [(a, {"aspect": a["text"], "query": q}) for qid, a, q in live], stats, log)
        natural = _ask_yes_no(llm, alias, "turn_flow", [(a, {"history": history_text(done[qid]), "query": q}) for qid, a, q in live],
                              stats, log)
        scoring, judged = [], {}
        for (qid, a, q), on_aspect, flows in zip(live, relevant, natural):
            judged[a["aspect_id"]] = (on_aspect, flows)
            if t.binding_verdicts and (on_aspect is False or flows is False):
                reason = OFF_ASPECT_QUESTION if on_aspect is False else UNNATURAL_QUESTION
                rejects.append(REJECTS.row(domain_of[qid], qid, a["aspect_id"], "turns", reason, q))
                continue
            scoring.append((qid, a, q))
        # document scoring and selection
        # Advisory verdicts: only the documents that can be chosen (those holding the facts) are rated.
        candidates = {a["aspect_id"]: docs_of.get(qid, []) if t.binding_verdicts else fact_docs.get(a["aspect_id"], [])
                      for qid, a, _ in scoring}
        per_turn = score_documents(scoring, candidates, text, facts_of, llm, alias, stats, log)
        answerable = []
        for qid, a, q in scoring:
            scores = per_turn.get(a["aspect_id"], {})
            if t.binding_verdicts:
                chosen = rules.select_documents({d: s["score"] for d, s in scores.items()}, t.doc_threshold, t.max_docs_per_turn)
                why = f"no document above {t.doc_threshold}: {json.dumps(scores)}"
            else:
                # The documents that hold the turn's verified facts, best rated first.
                held = {d: scores.get(d, {}).get("score", float("-inf")) for d in fact_docs.get(a["aspect_id"], [])}
                chosen = rules.select_documents(held, float("-inf"), t.max_docs_per_turn)
                why = "no document holds a verified fact of the aspect"
            if not chosen:
                rejects.append(REJECTS.row(domain_of[qid], qid, a["aspect_id"], "turns", UNANSWERABLE, why))
                continue
            answerable.append((qid, a, q, chosen, scores))
        # retrieval reasoning and the answer
        reasoning_prompt, answer_prompt = _prompt("retrieval_reasoning"), _prompt("turn_answer")
        facts_text = {a["aspect_id"]: "\n".join(f"- {f}" for f in facts_of[a["aspect_id"]]) for _, a, *_ in answerable}
        reasons = llm.run(alias, [LLMRequest(a["aspect_id"], reasoning_prompt.messages(query=q, facts="; ".join(facts_of[a["aspect_id"]])), params=MEDIUM,
                                             output=reasoning_prompt.output)
                                  for qid, a, q, *_ in answerable], parse=parse_reasoning, stats=stats, log=log)
        answers = llm.run(alias, [LLMRequest(a["aspect_id"], answer_prompt.messages(query=q, facts=facts_text[a["aspect_id"]]), params=MEDIUM)
                                  for qid, a, q, *_ in answerable], parse=parse_answer, stats=stats, log=log)
        for (qid, a, q, chosen, scores), why, ans in zip(answerable, reasons, answers):
            # Without a usable answer from the model, the verified facts are the answer.
            if ans.ok and usable_answer(ans.value, q):
                answer, answer_origin = ans.value, "model"
            else:
                answer, answer_origin = " ".join(f.rstrip(".") + "." for f in facts_of[a["aspect_id"]]), "facts"
            reasoning = why.value if why.ok else {"target": a["text"], "relevance_signals": [], "irrelevance_signals": []}
            done[qid].append({
                "domain": domain_of[qid], "conversation_id": qid, "turn_id": len(done[qid]) + 1, "aspect_id": a["aspect_id"],
                "query": q, "answer": answer, "gold_doc_ids": chosen, "doc_scores": json.dumps(scores, sort_keys=True),
                "conversation_history": history_text(done[qid]), **reasoning, "facts": facts_of[a["aspect_id"]],
                "llm_on_aspect": judged[a["aspect_id"]][0], "llm_natural": judged[a["aspect_id"]][1],
                "question_origin": origins[a["aspect_id"]], "answer_origin": answer_origin,
            })
    return pl.DataFrame([row for qid in sorted(done) for row in done[qid]], schema=TURN_SCHEMA), rejects


CRITERIA = {
    "support": "support: how many of the facts the document backs",
    "completeness": "completeness: how much of the answer could be written from the document alone",
    "clarity": "clarity: how clearly the document explains what is needed",
    "misleading": "misleading: how much the document contains that would lead to a wrong answer",
}


def score_documents(turns_: list[tuple], candidates: dict, text: dict, facts_of: dict, llm, alias: str, stats, log) -> dict[str, dict]:
    """Every candidate document of every turn (``candidates[aspect_id]``) rated on the four
    criteria; a document with a criterion the model could not rate gets no score (and
    cannot be selected)."""
    prompt = _prompt("document_criterion")
    items = [(a["aspect_id"], d, c) for qid, a, q in turns_ for d in candidates.get(a["aspect_id"], []) for c in CRITERIA]
    queries = {a["aspect_id"]: q for qid, a, q in turns_}
    reqs = [LLMRequest(f"{aid} {d} {c}", prompt.messages(query=queries[aid], facts="\n".join(f"- {f}" for f in facts_of[aid]),
                                                           document=text[d], criterion=CRITERIA[c]), params=RATING)
            for aid, d, c in items]
    ratings: dict[tuple[str, str], dict[str, float | None]] = {}
    for (aid, d, c), r in zip(items, llm.run(alias, reqs, stats=stats, log=log)):
        ratings.setdefault((aid, d), {})[c] = rating(r) if r.ok else None
    out: dict[str, dict] = {}
    for (aid, d), crit in ratings.items():
        if all(v is not None for v in crit.values()):
            out.setdefault(aid, {})[d] = {**crit, "score": rules.document_score(**crit)}
    return out


def conversations(turn_rows: pl.DataFrame, llm, alias: str, t: Thresholds, stats: CallStats, log=None) -> tuple[pl.DataFrame, list[dict]]:
    """Conversation validation: the rules (3-12 turns, every turn grounded, document
    diversity) and the LLM's verdict on logical progression and coherence."""
    groups = [(cid, g.sort("turn_id")) for (cid,), g in turn_rows.group_by("conversation_id", maintain_order=True)]
    problems = {cid: rules.conversation_problems(g["gold_doc_ids"].to_list(), t.min_turns, t.max_turns) for cid, g in groups}
    ask = [(cid, g) for cid, g in groups if not problems[cid]]
    prompt = _prompt("conversation_check")
    reqs = [LLMRequest(cid, prompt.messages(conversation=history_text(list(g.iter_rows(named=True)))), params=VERDICT)
            for cid, g in ask]
    verdicts = {cid: (verdict(r) if r.ok else None) for (cid, _), r in zip(ask, llm.run(alias, reqs, stats=stats, log=log))}
    rows, rejects = [], []
    for cid, g in groups:
        coherent = verdicts.get(cid)
        if coherent is False and t.binding_verdicts:
            problems[cid].append("judged incoherent")
        valid = not problems[cid]
        rows.append({"domain": g["domain"][0], "conversation_id": cid, "num_turns": g.height, "coherent": coherent, "valid": valid,
                     "problems": "; ".join(problems[cid])})
        if not valid:
            rejects.append(REJECTS.row(g["domain"][0], cid, cid, "conversations", INVALID_CONVERSATION, "; ".join(problems[cid])))
    frame = pl.DataFrame(rows, schema={"domain": pl.String, "conversation_id": pl.String, "num_turns": pl.Int32,
                                       "coherent": pl.Boolean, "valid": pl.Boolean, "problems": pl.String})
    return frame, rejects


# Hard-negative mining for the StackExchange domains (paper section 3.1.2).
# The LLM writes search queries on the question's topic about unhelpful aspects; a search
# resource returns candidate documents (BM25 over a local pool by default); candidates are cut
# into passages of about the positives' length, then duplicates and passages that overlap a
# positive heavily (word-set Jaccard above a threshold) are removed -- kept as rejects with the
# reason, like everything the pipeline filters.

def segment(text: str, words: int) -> list[str]:
    """Consecutive sentences grouped into passages of about ``words`` words (a passage ends
    at the sentence that reaches the length; a long last remainder is its own passage)."""
    out, current = [], []
    for s in sentences(text) or [text]:
        current.append(s)
        if sum(len(c.split()) for c in current) >= words:
            out.append(" ".join(current))
            current = []
    if current:
        tail = " ".join(current)
        if out and len(tail.split()) < words // 2:
            out[-1] = f"{out[-1]} {tail}"
        else:
            out.append(tail)
    return out


def mining_queries(questions: pl.DataFrame, llm, alias: str, n: int, stats: CallStats, log=None) -> dict[str, list[str]]:
    prompt = load_prompt("recor", "negative_queries")
    rows = list(questions.iter_rows(named=True))
    reqs = [LLMRequest(q["question_id"], prompt.messages(question=q["query"], answer=q["answer"], n=str(n)),
                       params={"max_tokens": 30 * n}, output=prompt.output) for q in rows]
    results = llm.run(alias, reqs, parse=lambda s: parse_list(s, n), stats=stats, log=log)
    return {q["question_id"]: (r.value if r.ok else []) for q, r in zip(rows, results)}


def select_negatives(questions: pl.DataFrame, positives: pl.DataFrame, hits: dict[str, list[tuple[str, str]]],
                     max_overlap: float) -> tuple[pl.DataFrame, list[dict]]:
    """Passages from each question's search hits: segmented to the positives' mean length,
    without duplicates (within the domain) or passages too close to any positive."""
    pos_texts = positives["content"].to_list()
    length = max(40, int(sum(len(t.split()) for t in pos_texts) / max(len(pos_texts), 1)))
    seen = {normalize(t) for t in pos_texts}
    rows, rejects = [], []
    for q in questions.iter_rows(named=True):
        for doc_id, text in hits.get(q["question_id"], []):
            for i, passage in enumerate(segment(text, length)):
                pid = f"{doc_id}#{i}"
                key = normalize(passage)
                closest = max((word_overlap(passage, p) for p in pos_texts), default=0.0)
                if key in seen:
                    rejects.append(REJECTS.row(q["domain"], q["question_id"], pid, "negatives", DUPLICATE_PASSAGE))
                elif closest > max_overlap:
                    rejects.append(REJECTS.row(q["domain"], q["question_id"], pid, "negatives", OVERLAPS_POSITIVE,
                                          f"word overlap {closest:.2f} > {max_overlap}"))
                else:
                    seen.add(key)
                    rows.append({"domain": q["domain"], "doc_id": pid, "content": passage, "role": "negative",
                                 "question_id": q["question_id"]})
    schema = {"domain": pl.String, "doc_id": pl.String, "content": pl.String, "role": pl.String, "question_id": pl.String}
    return pl.DataFrame(rows, schema=schema), rejects


# RECOR's quality analysis (paper section 3.4, appendix G): LLM judge scores (1-5) per
# conversation on naturalness, turn coherence, question quality and groundedness; each turn's
# dependency type (6 classes) and question pattern (9 classes); normalized entropies and the
# per-domain table of Table 31's shape.

DIMENSIONS = {"naturalness": "quality_naturalness", "coherence": "quality_coherence",
              "question_quality": "quality_questions", "groundedness": "quality_groundedness"}
# Table 31's column order for the dimensions.
DIMENSION_ABBREVIATIONS = {"naturalness": "Nat", "coherence": "Coh", "question_quality": "QQ", "groundedness": "Grd"}
TABLE_31_DEFINITIONS = {
    "domain": "a RECOR domain", "#C": "conversations judged", "#T": "their turns",
    **{short: f"mean {name.replace('_', ' ')} score, judged 1-5 per conversation (the paper's scale)"
       for name, short in DIMENSION_ABBREVIATIONS.items()},
    "DE": "normalized entropy of the turns' dependency types, in [0, 1]; n/a where no turn has one (why_na)",
    "QE": "normalized entropy of the turns' question patterns, in [0, 1]; n/a where no turn has one (why_na)"}


def parse_label(text: str, labels: list[str]) -> str:
    """The first label named in the reply (spaces, hyphens and case ignored); of labels found
    at the same place the longest, since one may begin another (``what`` and ``what_if``)."""
    flat = re.sub(r"[\s\-]+", "_", text.strip().lower())
    found = [(flat.find(label), -len(label), label) for label in labels if label in flat]
    if not found:
        raise ParseError(f"no label of {labels} in {text[:60]!r}")
    return min(found)[2]


def conversation_scores(turns: pl.DataFrame, corpus: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """One row per conversation with the four 1-5 scores (probability-weighted over the
    numbers the judge could have written, :func:`rating`; null when it named no number)."""
    text = dict(corpus.select("doc_id", "content").iter_rows())
    convs = [(cid, list(g.sort("turn_id").iter_rows(named=True))) for (cid,), g in turns.group_by("conversation_id", maintain_order=True)]
    rows = {cid: {"domain": ts[0]["domain"], "conversation_id": cid, "turns": len(ts)} for cid, ts in convs}
    for dim, name in DIMENSIONS.items():
        prompt = load_prompt("recor", name)
        reqs = []
        for cid, ts in convs:
            fields = {"conversation": history_text(ts)}
            if dim == "groundedness":
                docs = dict.fromkeys(d for t in ts for d in t["gold_doc_ids"])
                fields["documents"] = "\n".join(f"[{d}] {text[d]}" for d in docs if d in text)
            reqs.append(LLMRequest(f"{cid} {dim}", prompt.messages(**fields), params=RATING))
        for (cid, _), r in zip(convs, llm.run(alias, reqs, stats=stats, log=log)):
            rows[cid][dim] = rating(r, 1, 5) if r.ok else None
    schema = {"domain": pl.String, "conversation_id": pl.String, "turns": pl.Int64, **{d: pl.Float64 for d in DIMENSIONS}}
    return pl.DataFrame(list(rows.values()), schema=schema)


def turn_labels(turns: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """Each turn's dependency type and question pattern (null when the reply names none)."""
    rows = list(turns.sort("conversation_id", "turn_id").iter_rows(named=True))
    dep, pat = load_prompt("recor", "dependency_type"), load_prompt("recor", "question_pattern")
    params = {"max_tokens": 8, "temperature": 0.0}
    deps = llm.run(alias, [LLMRequest(f"{t['conversation_id']} {t['turn_id']}", dep.messages(history=t["conversation_history"], query=t["query"]),
                                      params=params, output=dep.output) for t in rows],
                   parse=lambda s: parse_label(s, rules.DEPENDENCY_TYPES), stats=stats, log=log)
    pats = llm.run(alias, [LLMRequest(f"{t['conversation_id']} {t['turn_id']}", pat.messages(query=t["query"]), params=params,
                                      output=pat.output) for t in rows],
                   parse=lambda s: parse_label(s, rules.QUESTION_PATTERNS), stats=stats, log=log)
    return pl.DataFrame([{"domain": t["domain"], "conversation_id": t["conversation_id"], "turn_id": t["turn_id"],
                          "dependency": d.value if d.ok else None, "pattern": p.value if p.ok else None}
                         for t, d, p in zip(rows, deps, pats)],
                        schema={"domain": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32,
                                "dependency": pl.String, "pattern": pl.String})


# What Tables 29 and 30 count: each label column, its name in the report, its entropy's
# column in Table 31 and its classes.
LABELS = {"dependency": ("dependency type", "DE", rules.DEPENDENCY_TYPES),
          "pattern": ("question pattern", "QE", rules.QUESTION_PATTERNS)}


def label_counts(labels: pl.DataFrame, column: str) -> dict[str, int]:
    """How many turns have each label of ``column``, most frequent first."""
    counts = labels.drop_nulls(column).group_by(column).len().sort(["len", column], descending=[True, False])
    return dict(counts.iter_rows())


def label_entropy(labels: pl.DataFrame, column: str) -> float | None:
    """The normalized entropy of ``column``'s labels; None (n/a) when no turn has one."""
    return rules.normalized_entropy(label_counts(labels, column), len(LABELS[column][2]))


def unlabeled_turns(labels: pl.DataFrame) -> dict[str, int]:
    """Turns without a dependency type, without a question pattern, and missing either:
    counts of turns (a turn missing both labels is one turn), never more than there are."""
    dependency, pattern = pl.col("dependency").is_null(), pl.col("pattern").is_null()
    row = labels.select(turns_without_dependency=dependency.sum(), turns_without_pattern=pattern.sum(),
                        turns_missing_a_label=(dependency | pattern).sum()).row(0, named=True)
    return {name: int(n) for name, n in row.items()}


def _named_none(labels: pl.DataFrame) -> str:
    return f"{labels.height} turns, the judge's replies named none" if labels.height else "no turn to label"


def why_unlabelled(labels: pl.DataFrame, column: str) -> str | None:
    """Why no turn has a ``column`` label, in the words Table 29 or 30 shows instead of an
    empty table; None when some turn has one."""
    if labels.height == 0:
        return "no turn labelled: no domain has a conversation in the benchmark"
    missing = labels[column].null_count()
    if missing < labels.height:
        return None
    # A null label is a reply that named none of the classes, or a call that failed
    # (recor/turn_labels' llm_accounting check tells them apart).
    return (f"no turn labelled: the judge's replies named no {LABELS[column][0]} "
            f"({missing} of {labels.height} turns unparsable)")


def not_applicable(table: pl.DataFrame, labels: pl.DataFrame) -> list[str]:
    """Why each entropy of the report is n/a: Table 31's DE or QE of a domain, and the
    entropies over all turns, where no turn has that label."""
    reasons = []
    for row in table.iter_rows(named=True):
        for what, short, _ in LABELS.values():
            if row[short] is None:
                reasons.append(f"{row['domain']}: {short} n/a, no turn has a {what} "
                               f"({_named_none(labels.filter(pl.col('domain') == row['domain']))})")
    for column, (what, _, _) in LABELS.items():
        if label_entropy(labels, column) is None:
            reasons.append(f"{column}_entropy n/a, no turn has a {what} ({_named_none(labels)})")
    return reasons


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def quality_slice(table: pl.DataFrame, profile: str | None, max_questions: int | None) -> str:
    """The slice a report covers: its domains, conversations and turns, the source questions
    per domain of the run's settings, and the run's profile (its tag; None without one)."""
    domains = table["domain"].to_list()
    named = f" ({', '.join(domains)})" if domains else ""
    questions = "every source question" if max_questions is None else _count(max_questions, "source question")
    return report_slice(f"{_count(len(domains), 'domain')}{named}, {_count(int(table['#C'].sum()), 'conversation')}, "
                        f"{_count(int(table['#T'].sum()), 'turn')}, {questions} per domain (recor_settings of this run)", profile)


def shown(table: pl.DataFrame) -> pl.DataFrame:
    """A report table as the UI shows it: numbers to 4 significant digits, and a value that
    is undefined (an entropy with no labelled turn) as n/a rather than a blank."""
    numbers = [name for name, dtype in table.schema.items() if dtype == pl.Float64]
    return table.with_columns(pl.col(name).map_elements(lambda v: f"{v:.4g}", return_dtype=pl.String).fill_null("n/a")
                              for name in numbers)


def domain_table(scores: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Table 31's shape: per domain #C, #T, the four mean scores and the normalized
    dependency entropy (DE), plus the question-pattern entropy (QE); an entropy is null
    (n/a) for a domain where no turn has that label."""
    rows = []
    for domain in sorted(set(scores["domain"]) | set(labels["domain"])):
        s = scores.filter(pl.col("domain") == domain)
        lab = labels.filter(pl.col("domain") == domain)
        rows.append({"domain": domain, "#C": s.height, "#T": int(s["turns"].sum() or 0),
                     **{DIMENSION_ABBREVIATIONS[d]: (s[d].mean() if s.height else None) for d in DIMENSIONS},
                     **{short: label_entropy(lab, column) for column, (_, short, _) in LABELS.items()}})
    schema = {"domain": pl.String, "#C": pl.Int64, "#T": pl.Int64, **{DIMENSION_ABBREVIATIONS[d]: pl.Float64 for d in DIMENSIONS},
              "DE": pl.Float64, "QE": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
