"""How well do RECOR's construction checks tell sound records from junk on the sample?

1. The builder's yes/no verdicts: decides whether a registry entry should say
``verdicts: binding`` or ``advisory``. For each
of the 11 sample domains it asks the model, through the pipeline's own prompts and the
pipeline's first-token P(yes):

- aspect suitability: each sentence of the domain's first expert answer (sound) against four
  non-answers a forum reply may contain (junk: a thanks, a pointer to references, advice to
  consult someone, a sign-off);
- fact check: each sentence of a positive document against that document (sound) and a
  sentence of another domain's positive document against it (junk).

It reports the mean P(yes) of each side and the AUC (the probability that a random sound
record gets a higher P(yes) than a random junk one, from scipy's Mann-Whitney U; 0.5 is
chance). Calls go through the LLM resource with a scratch cache, so nothing is reused.

2. The encoder's document-answer alignment (``steps.alignment``): for every sample question,
its positive documents against up to six same-topic negatives, the answer-coverage measures
(mean over all answer sentences of the best sentence similarity; the mean of the best three;
the best one), with their 10th/50th/90th percentiles and AUC. This is what
``Thresholds.alignment_min_coverage`` is set from.

    .venv/bin/python bench/recor_checks.py [--alias smollm2] [--per-domain 4] [--scratch /tmp/recor_checks]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

JUNK_POINTS = [
    "Thanks for asking, this is a great question.",
    "See the references below for more reading on this.",
    "You should consult a professional about your own situation.",
    "Hope this helps, good luck!",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--alias", default="smollm2")
    parser.add_argument("--per-domain", type=int, default=4, help="sound records per domain and check")
    parser.add_argument("--scratch", default="/tmp/recor_checks")
    args = parser.parse_args()

    import numpy as np
    from scipy.stats import mannwhitneyu

    from assets.common.text import sentences
    from assets.common.verdicts import VERDICT, yes_probability
    from assets.partitions import DOMAINS
    from assets.recor.settings import RecorSettings
    from assets.recor.steps import recor_prompt
    from resources.llm import LLMRequest, LLMResource

    settings = RecorSettings()
    loaded = {d: settings.load(d) for d in DOMAINS}
    positives = {d: [doc for doc in loaded[d].documents if doc["role"] == "positive"] for d in DOMAINS}
    cases: dict[str, list[tuple[bool, list[dict]]]] = {"aspect_suitability": [], "fact_check": []}
    suitability, fact_check = recor_prompt("aspect_suitability"), recor_prompt("fact_check")
    for i, d in enumerate(DOMAINS):
        q = loaded[d].questions[0]
        for s in sentences(q["answer"])[: args.per_domain]:
            cases["aspect_suitability"].append((True, suitability.messages(question=q["query"], aspect=s)))
        for junk in JUNK_POINTS:
            cases["aspect_suitability"].append((False, suitability.messages(question=q["query"], aspect=junk)))
        doc = positives[d][0]["content"]
        other = positives[DOMAINS[(i + 1) % len(DOMAINS)]][0]["content"]
        for s in sentences(doc)[: args.per_domain]:
            cases["fact_check"].append((True, fact_check.messages(document=doc, fact=s)))
        for s in sentences(other)[: args.per_domain]:
            cases["fact_check"].append((False, fact_check.messages(document=doc, fact=s)))

    llm = LLMResource(cache_dir=os.path.join(args.scratch, f"cache-{time.time_ns()}"))
    print(f"model {args.alias}; P(yes) from the first answer token\n")
    print("| check | sound: n, mean P(yes) | junk: n, mean P(yes) | AUC | says yes (P > 0.5) sound / junk |")
    print("|---|---|---|---|---|")
    for check, items in cases.items():
        results = llm.run(args.alias, [LLMRequest(f"{check} {n}", m, params=VERDICT) for n, (_, m) in enumerate(items)])
        p = np.array([yes_probability(r.top_logprobs) if r.ok else np.nan for r in results], dtype=float)
        sound = p[[ok for ok, _ in items]]
        junk = p[[not ok for ok, _ in items]]
        sound, junk = sound[~np.isnan(sound)], junk[~np.isnan(junk)]
        auc = mannwhitneyu(sound, junk).statistic / (len(sound) * len(junk))
        print(
            f"| {check} | {len(sound)}, {sound.mean():.3f} | {len(junk)}, {junk.mean():.3f} | {auc:.2f} | "
            f"{(sound > 0.5).mean():.0%} / {(junk > 0.5).mean():.0%} |"
        )
    alignment(loaded, settings.encoder)
    return 0


def alignment(loaded: dict, encoder: str) -> None:
    import numpy as np
    from scipy.stats import mannwhitneyu

    from assets.common.text import sentences
    from assets.recor.steps import Similarity
    from resources.encoders import encode_texts

    sim = Similarity(lambda texts: encode_texts(encoder, texts, "passage"))
    scores: dict[str, list[list[float]]] = {"positive": [], "negative": []}
    for data in loaded.values():
        by_id = {d["doc_id"]: d for d in data.documents}
        for q in data.questions:
            answer = sentences(q["answer"])
            negatives = [
                d
                for d in data.documents
                if d["role"] == "negative" and d.get("question_id") in (None, q["question_id"])
            ][:6]
            for kind, docs in (("positive", [by_id[g] for g in q["gold_ids"] if g in by_id]), ("negative", negatives)):
                for doc in docs:
                    best = np.array([sim.best(s, sentences(doc["content"]))[0] for s in answer])
                    scores[kind].append([best.mean(), np.sort(best)[-3:].mean(), best.max()])
    pos, neg = np.array(scores["positive"]), np.array(scores["negative"])
    print(f"\nalignment coverage with {encoder}: {len(pos)} positive and {len(neg)} negative documents\n")
    print("| measure | positives p10 / p50 / p90 | negatives p10 / p50 / p90 | AUC |")
    print("|---|---|---|---|")
    for i, name in enumerate(["mean of all answer sentences", "mean of the best 3", "best sentence"]):
        p, n = np.percentile(pos[:, i], [10, 50, 90]), np.percentile(neg[:, i], [10, 50, 90])
        auc = mannwhitneyu(pos[:, i], neg[:, i]).statistic / (len(pos) * len(neg))
        print(f"| {name} | {' / '.join(f'{v:.2f}' for v in p)} | {' / '.join(f'{v:.2f}' for v in n)} | {auc:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
