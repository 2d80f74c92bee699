"""RECOR's quality analysis (paper section 3.4, appendix G): LLM judge scores (1-5) per
conversation on naturalness, turn coherence, question quality and groundedness; each turn's
dependency type (6 classes) and question pattern (9 classes); normalized entropies and the
per-domain table of Table 31's shape."""

from __future__ import annotations

import re

import polars as pl

from assets.prompts import load_prompt
from assets.recor import method
from assets.recor.steps import VERDICT, history_text, rating
from resources.llm import CallStats, LLMRequest, ParseError

DIMENSIONS = {"naturalness": "quality_naturalness", "coherence": "quality_coherence",
              "question_quality": "quality_questions", "groundedness": "quality_groundedness"}
# Table 31's column order for the dimensions.
SHORT = {"naturalness": "Nat", "coherence": "Coh", "question_quality": "QQ", "groundedness": "Grd"}


def parse_label(text: str, labels: list[str]) -> str:
    """The first label named in the reply (spaces, hyphens and case ignored)."""
    flat = re.sub(r"[\s\-]+", "_", text.strip().lower())
    found = [(flat.find(label), label) for label in labels if label in flat]
    if not found:
        raise ParseError(f"no label of {labels} in {text[:60]!r}")
    return min(found)[1]


def conversation_scores(turns: pl.DataFrame, corpus: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """One row per conversation with the four 1-5 scores (probability-weighted over the
    number tokens of the judge's first answer token; null when it named no number)."""
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
            reqs.append(LLMRequest(f"{cid} {dim}", prompt.messages(**fields), params=VERDICT))
        for (cid, _), r in zip(convs, llm.run(alias, reqs, stats=stats, log=log)):
            rows[cid][dim] = rating(r.top_logprobs, 1, 5) if r.ok else None
    schema = {"domain": pl.String, "conversation_id": pl.String, "turns": pl.Int64, **{d: pl.Float64 for d in DIMENSIONS}}
    return pl.DataFrame(list(rows.values()), schema=schema)


def turn_labels(turns: pl.DataFrame, llm, alias: str, stats: CallStats, log=None) -> pl.DataFrame:
    """Each turn's dependency type and question pattern (null when the reply names none)."""
    rows = list(turns.sort("conversation_id", "turn_id").iter_rows(named=True))
    dep, pat = load_prompt("recor", "dependency_type"), load_prompt("recor", "question_pattern")
    params = {"max_tokens": 8, "temperature": 0.0}
    deps = llm.run(alias, [LLMRequest(f"{t['conversation_id']} {t['turn_id']}", dep.messages(history=t["conversation_history"], query=t["query"]),
                                      params=params) for t in rows],
                   parse=lambda s: parse_label(s, method.DEPENDENCY_TYPES), stats=stats, log=log)
    pats = llm.run(alias, [LLMRequest(f"{t['conversation_id']} {t['turn_id']}", pat.messages(query=t["query"]), params=params) for t in rows],
                   parse=lambda s: parse_label(s, method.QUESTION_PATTERNS), stats=stats, log=log)
    return pl.DataFrame([{"domain": t["domain"], "conversation_id": t["conversation_id"], "turn_id": t["turn_id"],
                          "dependency": d.value if d.ok else None, "pattern": p.value if p.ok else None}
                         for t, d, p in zip(rows, deps, pats)],
                        schema={"domain": pl.String, "conversation_id": pl.String, "turn_id": pl.Int32,
                                "dependency": pl.String, "pattern": pl.String})


def domain_table(scores: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Table 31's shape: per domain #C, #T, the four mean scores and the normalized
    dependency entropy (DE), plus the question-pattern entropy (QE)."""
    rows = []
    for domain in sorted(set(scores["domain"]) | set(labels["domain"])):
        s = scores.filter(pl.col("domain") == domain)
        lab = labels.filter(pl.col("domain") == domain)
        deps = dict(lab.drop_nulls("dependency").group_by("dependency").len().iter_rows())
        pats = dict(lab.drop_nulls("pattern").group_by("pattern").len().iter_rows())
        rows.append({"domain": domain, "#C": s.height, "#T": int(s["turns"].sum() or 0),
                     **{SHORT[d]: (s[d].mean() if s.height else None) for d in DIMENSIONS},
                     "DE": method.normalized_entropy(deps, len(method.DEPENDENCY_TYPES)),
                     "QE": method.normalized_entropy(pats, len(method.QUESTION_PATTERNS))})
    schema = {"domain": pl.String, "#C": pl.Int64, "#T": pl.Int64, **{SHORT[d]: pl.Float64 for d in DIMENSIONS},
              "DE": pl.Float64, "QE": pl.Float64}
    return pl.DataFrame(rows, schema=schema)
