"""The generation judge of RETECO Track 2 (sub-tracks 2b and 2c): each answer of a checked
generation file rated on the task's five dimensions, one focused prompt per dimension with
a fixed 1-5 rubric (``assets/eval/prompts/reteco_<dimension>.yaml``), an integer per
(turn, dimension), normalized and averaged by :mod:`assets.eval.recor.reteco.rules`'s rules.

What each prompt shows the judge:
- correctness, completeness: the question, the release's reference answer, the response;
- relevance, conversational coherence: the conversation so far (the release's
  ``conversation_history``), the current question, the response;
- faithfulness: the passages the system answered from, the question, the response. In 2b
  they are the turn's gold passages (in the release's order); in 2c the system's own top
  five documents of its run for that turn (the run read by the task's rules; a turn the run
  misses has none, and the prompt says so).

This differs from the RECOR paper's judge (:mod:`assets.eval.recor.steps`, one prompt with a
dimension line and a probability-weighted rating): the task asks for integer scores, so a
reply is read as text and must hold exactly one whole number from 1 to 5
(:func:`parse_score`). A reply that does not, or a call that fails, leaves that dimension
without a score: the task's rule scores it 0, and the failure is counted with its reason.

ROUGE-L, METEOR and BERTScore F1 against the reference answer are the task's diagnostics,
computed as the paper-side evaluation computes them (:func:`generation.lexical`,
:func:`generation.bertscore_f1`). A target turn without an answer scores 0 on them, as on
the dimensions: every column of the table is a mean over the same target turns.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

import polars as pl

from assets.common.prompts import code_version, load_prompt
from assets.common.records import read_records
from assets.common.verdicts import first_token_only, number_distribution
from assets.eval.recor import steps as generation
from assets.eval.recor.reteco import rules as reteco
from assets.eval.recor.reteco.submissions import shown
from assets.eval.uncertainty import UncertaintySettings, definitions, summarize
from resources.llm import CallStats, LLMRequest, Model, ParseError
from resources.storage import filesystem

SUBTRACKS = ("2b", "2c")
DIMENSIONS = reteco.DIMENSIONS
PROMPTS = tuple(f"eval/reteco_{d}" for d in DIMENSIONS)
# The rules' version with the five prompts' versions: the code version of an asset that judges.
CODE_VERSION = code_version("1", *PROMPTS)
# 2c's evidence boundary: the answer is generated from the run's top five passages.
TOP_K = 5
# A deterministic judge; a lone number and a little lead-in ("Score: 4") fit in 8 tokens. The
# log-probabilities read a reply that holds no score (most_probable_score).
PARAMS = {"temperature": 0.0, "max_tokens": 8, "logprobs": True, "top_logprobs": 20}
LOW, HIGH = 1, 5
DIAGNOSTICS = list(generation.REFERENCE_METRICS)
NO_PASSAGES = "(no passages)"
TURN_COLUMNS = [
    "qid",
    "task_qid",
    "domain",
    "conversation_id",
    "turn_id",
    "depth",
    "query",
    "reference",
    "history",
    "gold_doc_ids",
]
JUDGMENT_SCHEMA = {
    "qid": pl.String,
    "dimension": pl.String,
    "score": pl.Int8,
    "read_from": pl.String,
    "reason": pl.String,
    "reply": pl.String,
}
# Where a score was read: the reply's text, or the log-probabilities of a reply holding none.
READ_FROM = ("text", "log-probs")


# --- What the judge reads from a release -------------------------------------------------


def release_turns(root: str, targets: reteco.Targets) -> pl.DataFrame:
    """Per target turn of ``targets`` (read from the release at ``root``, a folder or
    ``s3://`` prefix): its question, reference answer (``reference``), conversation history
    (``history``) and gold documents in the release's order. Only the benchmark files are
    read."""
    from assets.recor.published import parse_release, release_files

    frames = []
    for domain in targets.turns["domain"].unique(maintain_order=True):
        ours = targets.turns.filter(pl.col("domain") == domain)
        bench, _ = release_files(root, domain)
        # The loader keeps the gold documents the documents file holds; the targets hold
        # exactly those, so their ids stand in for the file, which is left unread.
        gold = sorted({d for q in ours["qid"] for d in targets.gold[q]})
        stand_in = [(f"{domain} targets", {"doc_id": d, "content": "(not read)"}) for d in gold]
        release = parse_release(domain, read_records(bench), stand_in)
        texts = release.benchmark.select(
            "qid",
            "query",
            pl.col("answer").alias("reference"),
            pl.col("conversation_history").alias("history"),
            "gold_doc_ids",
        )
        frames.append(ours.join(texts, on="qid", how="left"))
    turns = (
        pl.concat(frames)
        if frames
        else pl.DataFrame(
            schema={
                **reteco.TURN_SCHEMA,
                "query": pl.String,
                "reference": pl.String,
                "history": pl.String,
                "gold_doc_ids": pl.List(pl.String),
            }
        )
    )
    lost = turns.filter(pl.col("query").is_null())
    if lost.height:
        raise ValueError(
            f"{lost.height} target turns are not in the release's benchmark files at {root} (e.g. "
            f"{lost['task_qid'][0]}): the targets were read from another release"
        )
    return turns.select(TURN_COLUMNS)


def passage_ids(
    turns: pl.DataFrame, subtrack: str, rankings: Mapping[str, Sequence[str]] | None = None, k: int = TOP_K
) -> dict[str, list[str]]:
    """The documents each target turn's answer is judged faithful to: its gold documents
    (2b), or the first ``k`` of the run's ranking for it (2c: ``rankings`` as
    :attr:`reteco.Checked.rankings`; a turn the run misses has none)."""
    if subtrack == "2b":
        return {q: list(g) for q, g in turns.select("qid", "gold_doc_ids").iter_rows()}
    if subtrack == "2c":
        if rankings is None:
            raise ValueError("sub-track 2c judges faithfulness to the run's top five passages: give the checked run")
        return {q: list(rankings.get(q, []))[:k] for q in turns["qid"]}
    raise ValueError(f"sub-track {subtrack!r}: the judged sub-tracks are {', '.join(SUBTRACKS)}")


def passage_texts(root: str, domains: Iterable[str], wanted: Iterable[str]) -> dict[str, str]:
    """The texts of the ``wanted`` documents, read line by line from the documents files of
    ``domains`` under ``root``: no more than one line and the wanted texts are held. As in
    the official corpus (the union of the domains' documents), an id names one document: the
    first line holding it, in the order of ``domains``, counts. A line the release loader
    rejects (not JSON, no ``doc_id`` or ``content``) is skipped here too."""
    from assets.recor.published import release_files

    wanted = set(wanted)
    texts: dict[str, str] = {}
    for domain in domains:
        if len(texts) == len(wanted):
            break
        _, docs = release_files(root, domain)
        for record in _json_lines(docs):
            if not isinstance(record, dict):
                continue
            doc_id, content = record.get("doc_id"), record.get("content")
            doc_id = str(doc_id) if isinstance(doc_id, (str, int)) and not isinstance(doc_id, bool) else None
            if doc_id in wanted and doc_id not in texts and isinstance(content, str) and content.strip():
                texts[doc_id] = content
    return texts


def _json_lines(uri: str) -> Iterator[object]:
    """The JSON records of a JSON Lines file, streamed; a line that is not JSON yields None.
    Lines end at ``\\n`` only, as :func:`assets.common.records.json_lines` reads them."""
    fs, path = filesystem(uri)
    with fs.open_input_stream(path) as raw:
        for line in io.BufferedReader(raw, buffer_size=1 << 20):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except (ValueError, RecursionError):
                yield None


# --- Judging -------------------------------------------------------------------------------


def judge_items(
    turns: pl.DataFrame, answers: Mapping[str, str], passages: Mapping[str, Sequence[str]], texts: Mapping[str, str]
) -> list[dict]:
    """One item per answered target turn (``answers``: project qid -> answer, as
    :attr:`reteco.Checked.answers`), in the order of ``turns``: what the five prompts show.
    A turn without an answer has no item: it scores 0 without asking the judge."""
    items = []
    for t in turns.iter_rows(named=True):
        if t["qid"] not in answers:
            continue
        ids = list(passages.get(t["qid"], []))
        unread = [d for d in ids if d not in texts]
        if unread:
            raise ValueError(
                f"{t['task_qid']}: no text for document {unread[0]!r}; read the passages of the same "
                "release the targets came from (passage_texts)"
            )
        items.append(
            {
                "qid": t["qid"],
                "task_qid": t["task_qid"],
                "query": t["query"],
                "reference": t["reference"],
                "history": t["history"],
                "answer": answers[t["qid"]],
                "passage_ids": ids,
                "passages": [texts[d] for d in ids],
            }
        )
    return items


def requests(items: Sequence[dict]) -> list[LLMRequest]:
    """One request per item and dimension, item by item in :data:`DIMENSIONS` order; the
    key names the turn (task id) and the dimension."""
    prompts = {d: load_prompt(*p.split("/")) for d, p in zip(DIMENSIONS, PROMPTS)}
    out = []
    for item in items:
        passages = "\n".join(f"[{n}] {p}" for n, p in enumerate(item["passages"], start=1)) or NO_PASSAGES
        fields = {
            "query": item["query"],
            "reference": item["reference"],
            "history": item["history"],
            "answer": item["answer"],
            "passages": passages,
        }
        out += [
            LLMRequest(f"{item['task_qid']} {d}", prompts[d].messages(**fields), params=dict(PARAMS))
            for d in DIMENSIONS
        ]
    return out


def parse_score(text: str) -> int:
    """The judge's score in a reply: exactly one whole number from 1 to 5, with anything
    around it but other numbers ("4", "4.", "Score: 4", "**4**", "4/5", "4 out of 5").
    Raises :class:`ParseError` (the reply is model output: never trusted) for no number, a
    number that is not whole ("4.5"), one outside 1-5, or two different numbers."""
    numbers = _NUMBER.findall(_OUT_OF_FIVE.sub(" ", text or ""))
    if not numbers:
        raise ParseError(f"no score in {shown(text or '')}")
    if len(set(numbers)) > 1:
        raise ParseError(f"{len(set(numbers))} different numbers in {shown(text or '')}")
    number = numbers[0]
    if not _WHOLE.fullmatch(number):
        raise ParseError(f"{number} is not a whole number")
    if not LOW <= int(number) <= HIGH:
        raise ParseError(f"{number} is outside {LOW}-{HIGH}")
    return int(number)


# A number not inside a word ("GPT4", "4th") nor written as part of another ("4.5", "1,000");
# "out of 5" and "/5" are the scale, not a second number.
_NUMBER = re.compile(r"(?<![\w.,])[-+]?\d+(?:[.,]\d+)*(?!\w)")
_OUT_OF_FIVE = re.compile(r"\s*(?:/|\bout\s+of)\s*5(?![\w.,]*\d)", re.I)
_WHOLE = re.compile(r"[-+]?\d+")


def most_probable_score(result) -> int | None:
    """The score the judge most likely meant where its reply holds none: of the whole
    numbers 1-5, the one its log-probabilities favour where the reply's number would stand
    (:func:`number_distribution` over the generated tokens), as a decoder held to the five
    allowed replies would answer. None without log-probabilities or any mass on 1-5."""
    tokens, alternatives = result.tokens, result.token_logprobs
    if tokens is None or alternatives is None:
        tokens, alternatives = first_token_only(result.text or "", result.top_logprobs)
    distribution = number_distribution(tokens, alternatives, LOW, HIGH)
    if not distribution or max(distribution.values()) <= 0:
        return None
    return max(sorted(distribution), key=distribution.__getitem__)  # a tie goes to the lower score


def judge(items: Sequence[dict], model: Model, stats: CallStats | None = None, log=None) -> pl.DataFrame:
    """The judgments (:data:`JUDGMENT_SCHEMA`): one row per item and dimension with its
    score and where it was read (``read_from``), or no score and the reason (the reply held
    none and its log-probabilities gave none, or the call failed after its retries), with
    the reply as written (first 200 characters). A reply is read as text first
    (:func:`parse_score`); one that holds no score counts as unparsable in ``stats`` even
    where :func:`most_probable_score` then reads it. One request each through the LLM
    resource (cached, retried); a reply never raises."""
    asked = requests(items)
    results = model.run(asked, parse=parse_score, stats=stats if stats is not None else CallStats(), log=log)
    rows = []
    for n, result in enumerate(results):
        item, dimension = items[n // len(DIMENSIONS)], DIMENSIONS[n % len(DIMENSIONS)]
        score, read_from = (result.value, "text") if result.ok and isinstance(result.value, int) else (None, None)
        if result.error and result.error.startswith("unparsable") and result.text is not None:
            score = most_probable_score(result)
            read_from = "log-probs" if score is not None else None
        reason = None if score is not None else (result.error or "no score")
        rows.append(
            {
                "qid": item["qid"],
                "dimension": dimension,
                "score": score,
                "read_from": read_from,
                "reason": reason,
                "reply": None if result.text is None else result.text[:200],
            }
        )
    return pl.DataFrame(rows, schema=JUDGMENT_SCHEMA)


def judged_turns(judgments: pl.DataFrame) -> pl.DataFrame:
    """Per judged turn: the five integer scores (null where the judge gave none), which
    :func:`reteco.generation_scores` normalizes, and ``judge_failures`` (dimensions without
    a score)."""
    schema = {"qid": pl.String, **{d: pl.Int8 for d in DIMENSIONS}, "judge_failures": pl.UInt32}
    if not judgments.height:
        return pl.DataFrame(schema=schema)
    wide = judgments.pivot(on="dimension", index="qid", values="score", aggregate_function="first")
    failures = judgments.group_by("qid", maintain_order=True).agg(
        pl.col("score").is_null().sum().alias("judge_failures")
    )
    wide = wide.with_columns(pl.lit(None, dtype=pl.Int8).alias(d) for d in DIMENSIONS if d not in wide.columns)
    return wide.join(failures, on="qid").select(pl.col(c).cast(t) for c, t in schema.items())


def diagnostics(items: Sequence[dict]) -> pl.DataFrame:
    """ROUGE-L, METEOR and BERTScore F1 of each item's answer against its reference answer
    (:mod:`assets.eval.recor.steps`'s definitions; an empty answer scores 0). Loads WordNet
    and the bundled MiniLM encoder."""
    bert = generation.bertscore_f1([i["reference"] for i in items], [i["answer"] for i in items])
    rows = [
        {"qid": i["qid"], **generation.lexical(i["reference"], i["answer"]), "bertscore_f1": f}
        for i, f in zip(items, bert)
    ]
    return pl.DataFrame(rows, schema={"qid": pl.String, **{m: pl.Float64 for m in DIAGNOSTICS}})


def turn_scores(
    judged: pl.DataFrame, targets: reteco.Targets, system: str, subtrack: str, diagnostic: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Per target turn of one system: the five normalized dimensions (:func:`reteco.generation_scores`:
    a turn without an answer, or a dimension without a score, is 0), whether it was
    answered, its judge failures, and the diagnostics (0 for a turn without an answer;
    null throughout when ``diagnostic`` is None, i.e. not computed)."""
    scores = reteco.generation_scores(judged, targets, system)
    counted = judged.select(
        pl.col("qid").map_elements(reteco.project_qid, return_dtype=pl.String),
        "judge_failures",
        pl.lit(True).alias("answered"),
    )
    scores = scores.join(counted, on="qid", how="left").with_columns(
        pl.col("answered").fill_null(False), pl.col("judge_failures").fill_null(0), pl.lit(subtrack).alias("subtrack")
    )
    if diagnostic is None:
        return scores.with_columns(pl.lit(None, dtype=pl.Float64).alias(m) for m in DIAGNOSTICS)
    scores = scores.join(diagnostic.select("qid", *DIAGNOSTICS), on="qid", how="left")
    return scores.with_columns(pl.when(pl.col("answered")).then(pl.col(m)).otherwise(0.0).alias(m) for m in DIAGNOSTICS)


def judge_table(scores: pl.DataFrame) -> pl.DataFrame:
    """Per sub-track and system (``scores``: :func:`turn_scores` frames): each dimension's
    normalized score averaged over the target turns and their macro average
    (:func:`reteco.generation_table`), the diagnostics' means, the target turns, the turns
    judged (answered) and the judge failures (dimensions left without a score)."""
    tables = []
    for (subtrack,), part in scores.group_by("subtrack", maintain_order=True):
        extra = part.group_by("system").agg(
            pl.col("answered").sum().alias("turns_judged"),
            pl.col("judge_failures").sum(),
            *(pl.col(m).mean() for m in DIAGNOSTICS),
        )
        tables.append(
            reteco.generation_table(part)
            .join(extra, on="system", maintain_order="left")
            .with_columns(pl.lit(subtrack).alias("subtrack"))
        )
    columns = ["subtrack", "system", "turns", "turns_judged", *DIMENSIONS, "macro", *DIAGNOSTICS, "judge_failures"]
    if not tables:
        return pl.DataFrame(schema={c: pl.String if c in ("subtrack", "system") else pl.Float64 for c in columns})
    return pl.concat(tables).select(columns)


# --- From the evaluation's own tables ----------------------------------------------------


def table_turns(benchmark: pl.DataFrame, targets: reteco.Targets) -> pl.DataFrame:
    """:func:`release_turns` from the evaluation's turn table (``eval/recor_turns``: ``qid``,
    ``query``, ``answer``, ``conversation_history``, ``gold_doc_ids``) instead of a release
    folder."""
    texts = benchmark.select(
        "qid",
        "query",
        pl.col("answer").alias("reference"),
        pl.col("conversation_history").alias("history"),
        "gold_doc_ids",
    )
    return targets.turns.join(texts, on="qid", how="left").select(TURN_COLUMNS)


def leaderboard(retrieval: pl.DataFrame, generation: pl.DataFrame) -> pl.DataFrame:
    """One row per sub-track and run, as the task reports them side by side and never
    combined: 2a a retrieval run's nDCG@10 (official) and diagnostics; 2b a system's five
    normalized dimensions and their macro average; 2c both, the retrieval figures those of
    the run whose top five it answered from. ``retrieval``: per-turn scores
    (:func:`reteco.score_runs`); ``generation``: per-turn scores (:func:`turn_scores`) with
    ``run`` (a 2c system's retrieval run, null for 2b) and, for 2c, that run's per-turn
    retrieval metrics."""
    metrics = [reteco.METRIC_NAMES[m] for m in reteco.METRICS]
    columns = {
        "subtrack": pl.String,
        "run": pl.String,
        "retrieval_run": pl.String,
        "turns": pl.Int64,
        **{m: pl.Float64 for m in metrics},
        **{d: pl.Float64 for d in DIMENSIONS},
        "macro": pl.Float64,
    }
    a = reteco.official_table(retrieval).select(
        pl.lit("2a").alias("subtrack"), "run", pl.col("run").alias("retrieval_run"), "turns", *metrics
    )
    judged = judge_table(generation).select("subtrack", pl.col("system").alias("run"), "turns", *DIMENSIONS, "macro")
    retrieved = (
        generation.filter(pl.col("subtrack") == "2c")
        .group_by("system")
        .agg(pl.col("run").first().alias("retrieval_run"), *(pl.col(m).mean() for m in reteco.METRICS))
        .rename({"system": "run", **reteco.METRIC_NAMES})
    )
    bc = judged.join(retrieved.with_columns(pl.lit("2c").alias("subtrack")), on=["subtrack", "run"], how="left")
    frames = [
        f.with_columns(pl.lit(None, dtype=t).alias(n) for n, t in columns.items() if n not in f.columns).select(
            pl.col(n).cast(t) for n, t in columns.items()
        )
        for f in (a, bc)
    ]
    # each sub-track ranked by its own official figure: 2a by nDCG@10, 2b and 2c by the macro
    ranked_by = (
        pl.when(pl.col("subtrack") == "2a")
        .then(pl.col(reteco.METRIC_NAMES[reteco.OFFICIAL]))
        .otherwise(pl.col("macro"))
    )
    return pl.concat(frames).sort("subtrack", ranked_by, "run", descending=[False, True, False], nulls_last=True)


# Each sub-track's official figure, as the leaderboard names it: the one its intervals are of.
OFFICIAL_FIGURE = {"2a": reteco.METRIC_NAMES[reteco.OFFICIAL], "2b": "macro", "2c": "macro"}


def leaderboard_uncertainty(
    retrieval: pl.DataFrame, generation: pl.DataFrame, settings: UncertaintySettings
) -> pl.DataFrame:
    """Issue 48's intervals and tests of each sub-track's official figure (``OFFICIAL_FIGURE``),
    the runs of a sub-track compared with its best (:func:`leaderboard`'s inputs): 2a's
    nDCG@10 over the target turns, and :func:`judged_uncertainty`. A turn is named with its
    domain (two domains may number their conversations alike)."""
    figure = OFFICIAL_FIGURE["2a"]
    runs = retrieval.select(pl.lit("2a").alias("subtrack"), "run", _item(), pl.col(reteco.OFFICIAL).alias(figure))
    return pl.concat(
        [summarize(runs, ["subtrack", "run"], "item", [figure], settings), judged_uncertainty(generation, settings)]
    )


def judged_uncertainty(generation: pl.DataFrame, settings: UncertaintySettings) -> pl.DataFrame:
    """The intervals and tests of 2b's and 2c's macro (each turn's mean of the five
    dimensions) over their target turns, the systems of a sub-track compared with its best."""
    judged = generation.select(
        "subtrack", pl.col("system").alias("run"), _item(), pl.mean_horizontal(*DIMENSIONS).alias("macro")
    )
    return summarize(judged, ["subtrack", "run"], "item", ["macro"], settings, within=["subtrack"])


def _item() -> pl.Expr:
    return pl.format("{}/{}", "domain", "qid").alias("item")


def leaderboard_uncertainty_definitions(settings: UncertaintySettings) -> dict[str, str]:
    """What the columns of :func:`leaderboard_uncertainty` hold."""
    return {
        **definitions(
            {"subtrack": "2a, 2b or 2c", "run": "a run or system, compared with the best of its sub-track"},
            settings,
            "target turns",
        ),
        "metric": "the sub-track's official figure: nDCG@10 for 2a, the macro of the five judge dimensions for 2b and 2c",
        "value": "the figure as the leaderboard reports it, the mean over the target turns",
    }


def generator_systems(
    answers: pl.DataFrame, best_run: reteco.Checked
) -> tuple[list[tuple], dict[tuple[str, str], pl.DataFrame]]:
    """RECOR's generators as the task's systems, from ``eval/recor_generation``'s ``answers``:
    each one's Oracle answers a 2b system, its Retrieved answers a 2c system answered from
    ``best_run``, as (system, sub-track, answers by turn, run or None); and each system's
    diagnostics (ROUGE-L, METEOR, BERTScore F1) as the generation step computed them."""
    systems, diagnostics = [], {}
    for (generator, mode), answered in answers.filter(pl.col("mode") != "no_retrieval").group_by(
        ["generator", "mode"], maintain_order=True
    ):
        subtrack = "2b" if mode == "oracle" else "2c"
        # a failed generation call has no answer: the task scores the turn 0
        by_turn = dict(answered.filter(pl.col("answer").is_not_null()).select("qid", "answer").iter_rows())
        systems.append((generator, subtrack, by_turn, best_run if subtrack == "2c" else None))
        diagnostics[generator, subtrack] = answered.select("qid", *DIAGNOSTICS)
    return systems, diagnostics


def judge_systems(
    systems: Sequence[tuple],
    given: Mapping[tuple[str, str], pl.DataFrame],
    turns: pl.DataFrame,
    targets: reteco.Targets,
    text: Mapping[str, str],
    model: Model,
    stats: CallStats,
    log=None,
) -> tuple[list[pl.DataFrame], pl.DataFrame]:
    """Each system (as :func:`generator_systems` gives them) judged by ``model`` on its
    sub-track's passages (``text``: each document's content): one frame of per-turn scores a
    system, beside the retrieval figures of the run a 2c system answered from (blank for 2b),
    and every judgment with its system and sub-track. Diagnostics a system lacks in
    ``given`` (as :func:`generator_systems` gives them) are computed from its answers."""
    frames, judged_all, retrieved = [], [], {}
    for system, subtrack, answers, run in systems:
        passages = passage_ids(turns, subtrack, run.rankings if run else None)
        items = judge_items(turns, answers, passages, text)
        judgments = judge(items, model, stats, log)
        judged_all.append(judgments.with_columns(pl.lit(system).alias("system"), pl.lit(subtrack).alias("subtrack")))
        diagnostic = given.get((system, subtrack))
        scores = turn_scores(
            judged_turns(judgments),
            targets,
            system,
            subtrack,
            diagnostic if diagnostic is not None else diagnostics(items),
        )
        if run is not None and run.source not in retrieved:
            # every generator's 2c answers come from the one best configuration: scored once
            retrieved[run.source] = reteco.score_runs([(run.source, run, targets)]).select("qid", *reteco.METRICS)
        retrieval = (
            retrieved[run.source]
            if run
            else pl.DataFrame({"qid": targets.turns["qid"]}).with_columns(
                pl.lit(None, dtype=pl.Float64).alias(m) for m in reteco.METRICS
            )
        )
        frames.append(
            scores.with_columns(pl.lit(run.source if run else None, dtype=pl.String).alias("run")).join(
                retrieval, on="qid", how="left"
            )
        )
    return frames, pl.concat(judged_all) if judged_all else pl.DataFrame()
