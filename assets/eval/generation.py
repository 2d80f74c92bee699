"""RAG generation evaluation (RECOR section 4.2): answers in three retrieval modes, an LLM
judge on five dimensions (1-5, normalized to 0-1), and ROUGE-L and METEOR against the
reference answer."""

from __future__ import annotations

import polars as pl

from assets.common.prompts import load_prompt
from assets.common.verdicts import RATING, rating
from resources.llm import CallStats, LLMRequest

MODES = ["oracle", "retrieved", "no_retrieval"]
DIMENSIONS = {
    "correctness": "correctness: does it say what the reference says, without errors?",
    "completeness": "completeness: does it cover every point the question needs?",
    "relevance": "relevance: does it answer this question rather than something else?",
    "coherence": "coherence: is it clear, well organised and consistent?",
    "faithfulness": "faithfulness: is every claim supported by the passages given?",
}
PASSAGES_K = 5


def contexts(turns: pl.DataFrame, corpus: pl.DataFrame, retrieved: dict[str, list[str]], k: int = PASSAGES_K) -> list[dict]:
    """One item per turn and mode with the passages it gives the generator: the gold
    documents (Oracle), the best configuration's top-k (Retrieved) or none."""
    text = dict(corpus.select("doc_id", "content").iter_rows())
    items = []
    for t in turns.sort("qid").iter_rows(named=True):
        for mode, ids in (("oracle", list(t["gold_doc_ids"])), ("retrieved", retrieved.get(t["qid"], [])[:k]), ("no_retrieval", [])):
            items.append({"domain": t["domain"], "qid": t["qid"], "mode": mode, "query": t["query"], "reference": t["answer"],
                          "history": t["conversation_history"], "passages": [text[d] for d in ids if d in text]})
    return items


def answer(items: list[dict], llm, alias: str, stats: CallStats, log=None) -> list[str | None]:
    rag, closed = load_prompt("eval", "rag_answer"), load_prompt("eval", "closed_answer")
    reqs = []
    for i in items:
        if i["mode"] == "no_retrieval":
            msgs = closed.messages(history=i["history"], query=i["query"])
        else:
            msgs = rag.messages(passages="\n".join(f"[{n}] {p}" for n, p in enumerate(i["passages"], start=1)) or "(none)",
                                history=i["history"], query=i["query"])
        reqs.append(LLMRequest(f"{i['qid']} {i['mode']}", msgs, params={"max_tokens": 120}))
    return [(" ".join((r.value or "").split()) or None) if r.ok else None for r in llm.run(alias, reqs, stats=stats, log=log)]


def judge(items: list[dict], answers: list[str | None], llm, alias: str, stats: CallStats, log=None) -> list[dict]:
    """Each answer graded per dimension (faithfulness only where passages were given);
    1-5 normalized to 0-1. A missing answer or rating stays null."""
    prompt = load_prompt("eval", "rag_judge")
    asks = [(n, dim) for n, (i, a) in enumerate(zip(items, answers)) if a
            for dim in DIMENSIONS if not (dim == "faithfulness" and i["mode"] == "no_retrieval")]
    reqs = []
    for n, dim in asks:
        i = items[n]
        passages = "".join(f"Passage {k}: {p}\n" for k, p in enumerate(i["passages"], start=1))
        reqs.append(LLMRequest(f"{i['qid']} {i['mode']} {dim}", prompt.messages(
            passages=f"{passages}\n" if passages else "", query=i["query"], reference=i["reference"], answer=answers[n],
            dimension=DIMENSIONS[dim]), params=RATING))
    grades: list[dict] = [{} for _ in items]
    for (n, dim), r in zip(asks, llm.run(alias, reqs, stats=stats, log=log)):
        value = rating(r, 1, 5) if r.ok else None
        grades[n][dim] = None if value is None else (value - 1) / 4
    return grades


class _NoSynonyms:
    """METEOR without WordNet (no corpus download at run time): exact and stem matches."""

    def synsets(self, *args, **kwargs):
        return []


def lexical(reference: str, candidate: str | None) -> dict[str, float | None]:
    """ROUGE-L F1 and METEOR (exact and Porter-stem matching) of a candidate answer."""
    if not candidate:
        return {"rouge_l": None, "meteor": None}
    from nltk.translate.meteor_score import meteor_score
    from rouge_score import rouge_scorer

    rouge = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True).score(reference, candidate)["rougeL"].fmeasure
    meteor = meteor_score([reference.lower().split()], candidate.lower().split(), wordnet=_NoSynonyms())
    return {"rouge_l": float(rouge), "meteor": float(meteor)}
