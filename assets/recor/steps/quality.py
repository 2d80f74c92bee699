"""RECOR's quality analysis (paper section 3.4, appendix G): LLM judge scores (1-5) per
conversation on naturalness, turn coherence, question quality and groundedness; each turn's
dependency type (6 classes) and question pattern (9 classes); normalized entropies and the
per-domain table of Table 31's shape."""

from __future__ import annotations

import polars as pl

from assets.common.verdicts import RATING, rating
from assets.recor import rules
from assets.recor.rules import LABELS, label_entropy, parse_label
from assets.recor.steps.shared import history_text, recor_prompt
from resources.llm import CallStats, LLMRequest, Model

DIMENSIONS = {
    "naturalness": "quality_naturalness",
    "coherence": "quality_coherence",
    "question_quality": "quality_questions",
    "groundedness": "quality_groundedness",
}
# Table 31's column order for the dimensions.
DIMENSION_ABBREVIATIONS = {"naturalness": "Nat", "coherence": "Coh", "question_quality": "QQ", "groundedness": "Grd"}
TABLE_31_DEFINITIONS = {
    "domain": "a RECOR domain",
    "#C": "conversations judged",
    "#T": "their turns",
    **{
        short: f"mean {name.replace('_', ' ')} score, judged 1-5 per conversation (the paper's scale)"
        for name, short in DIMENSION_ABBREVIATIONS.items()
    },
    "DE": "normalized entropy of the turns' dependency types, in [0, 1]; n/a where no turn has one (why_na)",
    "QE": "normalized entropy of the turns' question patterns, in [0, 1]; n/a where no turn has one (why_na)",
}


def conversation_scores(
    turns: pl.DataFrame, corpus: pl.DataFrame, model: Model, stats: CallStats, log=None
) -> pl.DataFrame:
    """One row per conversation with the four 1-5 scores (probability-weighted over the
    numbers the judge could have written, :func:`rating`; null when it named no number)."""
    text = dict(corpus.select("doc_id", "content").iter_rows())
    convs = [
        (cid, list(g.sort("turn_id").iter_rows(named=True)))
        for (cid,), g in turns.group_by("conversation_id", maintain_order=True)
    ]
    rows = {cid: {"domain": ts[0]["domain"], "conversation_id": cid, "turns": len(ts)} for cid, ts in convs}
    for dim, name in DIMENSIONS.items():
        prompt = recor_prompt(name)
        reqs = []
        for cid, ts in convs:
            fields = {"conversation": history_text(ts)}
            if dim == "groundedness":
                docs = dict.fromkeys(d for t in ts for d in t["gold_doc_ids"])
                fields["documents"] = "\n".join(f"[{d}] {text[d]}" for d in docs if d in text)
            reqs.append(LLMRequest(f"{cid} {dim}", prompt.messages(**fields), params=RATING))
        for (cid, _), r in zip(convs, model.run(reqs, stats=stats, log=log)):
            rows[cid][dim] = rating(r, 1, 5) if r.ok else None
    schema = {
        "domain": pl.String,
        "conversation_id": pl.String,
        "turns": pl.Int64,
        **{d: pl.Float64 for d in DIMENSIONS},
    }
    return pl.DataFrame(list(rows.values()), schema=schema)


def turn_labels(turns: pl.DataFrame, model: Model, stats: CallStats, log=None) -> pl.DataFrame:
    """Each turn's dependency type and question pattern (null when the reply names none)."""
    rows = list(turns.sort("conversation_id", "turn_id").iter_rows(named=True))
    dep, pat = recor_prompt("dependency_type"), recor_prompt("question_pattern")
    params = {"max_tokens": 8, "temperature": 0.0}
    deps = model.run(
        [
            LLMRequest(
                f"{t['conversation_id']} {t['turn_id']}",
                dep.messages(history=t["conversation_history"], query=t["query"]),
                params=params,
                output=dep.output,
            )
            for t in rows
        ],
        parse=lambda s: parse_label(s, rules.DEPENDENCY_TYPES),
        stats=stats,
        log=log,
    )
    pats = model.run(
        [
            LLMRequest(
                f"{t['conversation_id']} {t['turn_id']}",
                pat.messages(query=t["query"]),
                params=params,
                output=pat.output,
            )
            for t in rows
        ],
        parse=lambda s: parse_label(s, rules.QUESTION_PATTERNS),
        stats=stats,
        log=log,
    )
    return pl.DataFrame(
        [
            {
                "domain": t["domain"],
                "conversation_id": t["conversation_id"],
                "turn_id": t["turn_id"],
                "dependency": d.value if d.ok else None,
                "pattern": p.value if p.ok else None,
            }
            for t, d, p in zip(rows, deps, pats)
        ],
        schema={
            "domain": pl.String,
            "conversation_id": pl.String,
            "turn_id": pl.Int32,
            "dependency": pl.String,
            "pattern": pl.String,
        },
    )


def domain_table(scores: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Table 31's shape: per domain #C, #T, the four mean scores and the normalized
    dependency entropy (DE), plus the question-pattern entropy (QE); an entropy is null
    (n/a) for a domain where no turn has that label."""
    rows = []
    for domain in sorted(set(scores["domain"]) | set(labels["domain"])):
        s = scores.filter(pl.col("domain") == domain)
        lab = labels.filter(pl.col("domain") == domain)
        rows.append(
            {
                "domain": domain,
                "#C": s.height,
                "#T": int(s["turns"].sum() or 0),
                **{DIMENSION_ABBREVIATIONS[d]: (s[d].mean() if s.height else None) for d in DIMENSIONS},
                **{short: label_entropy(lab, column) for column, (_, short, _) in LABELS.items()},
            }
        )
    schema = {
        "domain": pl.String,
        "#C": pl.Int64,
        "#T": pl.Int64,
        **{DIMENSION_ABBREVIATIONS[d]: pl.Float64 for d in DIMENSIONS},
        "DE": pl.Float64,
        "QE": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)
