"""Rerankers over the head of a ranked list: pointwise LLM relevance, UPR, RankGPT,
seq2seq (monoT5 / RankT5), a cross-encoder and a Python entry point, behind one verb,
:func:`rerank`; and reranked lists read from TREC run files, :func:`from_run_files`.

Each takes ``{qid: [passage_id, ...]}`` (the head of a run, best first) and returns the same
ids reordered. Scores that tie keep the retrieved order, and a passage the model could not
score (an error) sinks below the scored ones in retrieved order, so a failed call never
promotes a passage.
"""

from __future__ import annotations

import dataclasses
import math

from assets.common.prompts import load_prompt
from assets.common.verdicts import yes_probability
from assets.eval import rankgpt
from resources.llm import CallStats, LLMRequest, Model, ScoreRequest
from resources.retrieval import ENTRYPOINT, checked_ranking, load_function, read_run_files
from resources.retrieval.registry import LLM_RERANKERS


@dataclasses.dataclass
class Reranked:
    lists: dict[str, list[str]]
    # What the model could not score or order (RankGPT: repaired permutations).
    unscored: int = 0
    repaired: int = 0
    # Run files: which files, and what in them did not match the heads (for the metadata).
    found: dict = dataclasses.field(default_factory=dict)


def order_by_scores(ids: list[str], scores: list[float | None]) -> list[str]:
    """Highest score first; ties keep the given order; unscored items last, in order."""
    keyed = [(-(s if s is not None else -math.inf), s is None, i) for i, s in enumerate(scores)]
    return [ids[i] for *_, i in sorted(keyed)]


def mean_logprob(values: list[float] | None) -> float | None:
    """UPR's score: the question's log-likelihood averaged over its tokens."""
    return sum(values) / len(values) if values else None


def _pairs(queries: dict[str, str], head: dict[str, list[str]], texts: dict[str, str]):
    return [(q, pid, queries[q], texts[pid]) for q in sorted(head) for pid in head[q]]


def _regroup(head: dict[str, list[str]], scores: dict[tuple[str, str], float | None]) -> dict[str, list[str]]:
    return {q: order_by_scores(ids, [scores[(q, p)] for p in ids]) for q, ids in head.items()}


def pointwise(model: Model, queries, head, texts, top_logprobs: int, stats: CallStats, log=None) -> Reranked:
    prompt = load_prompt("eval", "relevance")
    pairs = _pairs(queries, head, texts)
    params = {"logprobs": True, "top_logprobs": top_logprobs, "max_tokens": 1, "temperature": 0.0}
    reqs = [
        LLMRequest(f"{q} {pid}", prompt.messages(question=query, passage=text), params=params)
        for q, pid, query, text in pairs
    ]
    results = model.run(reqs, stats=stats, log=log)
    scores = {(q, pid): (yes_probability(r.top_logprobs) if r.ok else None) for (q, pid, *_), r in zip(pairs, results)}
    return Reranked(_regroup(head, scores), unscored=sum(s is None for s in scores.values()))


def upr(model: Model, queries, head, texts, stats: CallStats, log=None) -> Reranked:
    prompt = load_prompt("eval", "upr")
    pairs = _pairs(queries, head, texts)
    reqs = [
        ScoreRequest(f"{q} {pid}", prompt.user.format(passage=text), prompt.continuation.format(question=query))
        for q, pid, query, text in pairs
    ]
    results = model.score(reqs, stats=stats, log=log)
    scores = {(q, pid): (mean_logprob(r.value) if r.ok else None) for (q, pid, *_), r in zip(pairs, results)}
    return Reranked(_regroup(head, scores), unscored=sum(s is None for s in scores.values()))


def seq2seq(spec, queries, head, texts) -> Reranked:
    from resources import seq2seq as s2s

    template = load_prompt("eval", "seq2seq").user
    pairs = _pairs(queries, head, texts)
    values = s2s.score(
        spec.model,
        [template.format(question=query, passage=text) for _, _, query, text in pairs],
        spec.true_token,
        spec.false_token,
        spec.score,
        spec.batch_size,
    )
    scores = {(q, pid): v for (q, pid, *_), v in zip(pairs, values)}
    return Reranked(_regroup(head, scores))


def cross_encoder(spec, queries, head, texts) -> Reranked:
    """Each (question, passage) of the head scored by the cross-encoder in ``spec.model`` (a
    local folder), highest first."""
    from resources import cross_encoder as ce

    pairs = _pairs(queries, head, texts)
    values = ce.score(spec.model, [(query, text) for _, _, query, text in pairs], spec.batch_size)
    return Reranked(_regroup(head, {(q, pid): v for (q, pid, *_), v in zip(pairs, values)}))


def entrypoint(spec, queries, head, texts) -> Reranked:
    """The reranker's function, called once per question as ``f(query, candidates)`` with
    ``candidates`` the head as ``[(passage_id, text), ...]`` in retrieved order; it returns
    ``[(passage_id, score), ...]`` best first. A candidate it leaves out sinks below the
    returned ones in retrieved order (counted as unscored); an id outside the candidates, one
    listed twice or scores rising down the list are errors naming the reranker and question."""
    owner = f"reranker {spec.alias!r}"
    function = load_function(owner, spec.function)
    lists, unscored = {}, 0
    for q in sorted(head):
        candidates = [(pid, texts[pid]) for pid in head[q]]
        ranked = [pid for pid, _ in checked_ranking(owner, q, function(queries[q], candidates), set(head[q]))]
        returned = set(ranked)
        rest = [pid for pid in head[q] if pid not in returned]
        lists[q], unscored = ranked + rest, unscored + len(rest)
    return Reranked(lists, unscored=unscored)


def from_run_files(
    spec, retriever: str, benchmark: str, parts: dict[str, list[str]], head: dict[str, list[str]]
) -> Reranked:
    """Each head reordered by the reranker's run file for this retriever and part (its
    template may name ``{retriever}``), in the file's order as trec_eval reads it (score
    descending, ties by docid descending). A head passage the file does not list sinks below
    in retrieved order (unscored, as a passage a model failed on); file rows for passages
    outside the head, or for query ids outside the benchmark, are ignored and counted."""
    wanted = {part: [q for q in qids if q in head] for part, qids in parts.items()}
    files = read_run_files(spec, benchmark, wanted, retriever=retriever)
    lists, unscored, outside = {}, 0, 0
    for q, ids in head.items():
        listed = [h.docid for h in files.hits.get(q, [])]
        candidates = set(ids)
        ranked = [pid for pid in listed if pid in candidates]
        returned = set(ranked)
        rest = [pid for pid in ids if pid not in returned]
        lists[q] = ranked + rest
        unscored, outside = unscored + len(rest), outside + len(listed) - len(ranked)
    return Reranked(lists, unscored=unscored, found={**files.metadata(), "run_rows_outside_head": outside})


def rerank(
    spec, llm, queries: dict[str, str], head: dict[str, list[str]], texts: dict[str, str], stats: CallStats, log=None
) -> Reranked:
    """Reorder every question's head with the reranker ``spec`` describes (a run file
    reranker needs the retriever and split: :func:`from_run_files`). An LLM reranker calls
    the model registry's alias its ``model`` names through ``llm``; the others never touch it."""
    if spec.kind == ENTRYPOINT:
        return entrypoint(spec, queries, head, texts)
    if spec.kind in LLM_RERANKERS:
        model = llm.named(spec.model)
        if spec.kind == "pointwise":
            return pointwise(model, queries, head, texts, spec.top_logprobs, stats, log)
        if spec.kind == "upr":
            return upr(model, queries, head, texts, stats, log)
        lists, repaired = rankgpt.rerank(model, queries, head, texts, spec.window, spec.step, stats, log)
        return Reranked(lists, repaired=repaired)
    if spec.kind == "seq2seq":
        return seq2seq(spec, queries, head, texts)
    if spec.kind == "cross_encoder":
        return cross_encoder(spec, queries, head, texts)
    raise ValueError(f"reranker {spec.alias!r} has unknown kind {spec.kind!r}")
