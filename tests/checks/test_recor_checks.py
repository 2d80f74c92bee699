"""Every RECOR check passes a sound hand-built domain (one StackExchange question, one valid
three-turn conversation, in the steps' own schemas) and fails the same domain broken the way
it guards against."""

import inspect
import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.partitions import domain_partitions
from assets.recor import sources, steps
from assets.recor.assets import source_files
from assets.recor.settings import RecorSettings
from checks.factories import CheckSettings
from checks.recor import recor_checks
from checks.recor import release as rrelease
from checks.recor import sources as rsources
from checks.recor import steps as rsteps
from checks.recor.shared import key
from resources.llm import LLMResource
from tests.conftest import SCRIPTED_REGISTRY

ROOT = Path(__file__).resolve().parents[2]
# The default registry's builder gives advisory verdicts, the scripted one's binding ones.
ADVISORY = str(ROOT / "resources" / "models.yaml")
DOMAIN, QID = "law", "law_1"
GOLD = ["law_1_p1", "law_1_p2"]
ASPECTS = [f"{QID}_a{i}" for i in (1, 2, 3)]
SCORES = {"law_1_p1": 6.0, "law_1_p2": 5.0}


def _turn(i: int, gold: list[str]) -> dict:
    scores = {
        d: {"support": 8.0, "completeness": 6.0, "clarity": 6.0, "misleading": 1.0, "score": s}
        for d, s in SCORES.items()
    }
    return {
        "domain": DOMAIN,
        "conversation_id": QID,
        "turn_id": i,
        "aspect_id": ASPECTS[i - 1],
        "query": f"What does point {i} of the search rules say about cars?",
        "answer": f"Point {i} says officers may search.",
        "gold_doc_ids": gold,
        "doc_scores": json.dumps(scores, sort_keys=True),
        "conversation_history": "No previous conversation.",
        "target": f"point {i}",
        "relevance_signals": ["search"],
        "irrelevance_signals": [],
        "facts": [f"Fact {i}."],
        "llm_on_aspect": True,
        "llm_natural": True,
        "question_origin": "first_turn" if i == 1 else "follow_up",
        "answer_origin": "model",
    }


def sound() -> dict[str, pl.DataFrame]:
    """One domain built soundly, table by table."""
    rejects = steps.REJECTS
    questions = pl.DataFrame(
        [
            {
                "domain": DOMAIN,
                "source": "stackexchange",
                "question_id": QID,
                "query": "Can police search my car?",
                "answer": "Yes, under the automobile exception.",
                "reasoning": None,
                "gold_ids": GOLD,
                "excluded_ids": [],
            }
        ],
        schema=sources.QUESTION_SCHEMA,
    )
    positives = [
        {
            "domain": DOMAIN,
            "doc_id": d,
            "content": f"Passage {d}: the automobile exception lets police search a car.",
            "role": "positive",
            "question_id": QID,
        }
        for d in GOLD
    ]
    pool = {
        "domain": DOMAIN,
        "doc_id": "law_pool_1",
        "content": "Tenants may withhold rent when the landlord fails to repair.",
        "role": "pool",
        "question_id": None,
    }
    negatives = pl.DataFrame(
        [{**pool, "doc_id": "law_pool_1#0", "role": "negative", "question_id": QID}], schema=sources.DOCUMENT_SCHEMA
    )
    documents = pl.DataFrame([*positives, pool], schema=sources.DOCUMENT_SCHEMA)
    turns = pl.DataFrame([_turn(1, GOLD), _turn(2, ["law_1_p1"]), _turn(3, ["law_1_p2"])], schema=steps.TURN_SCHEMA)
    benchmark = turns.with_columns(pl.format("{}_turn_{}", "conversation_id", "turn_id").alias("qid"))
    return {
        "source_questions": questions,
        "source_documents": documents,
        "source_rejects": sources.REJECTS.frame(
            [
                sources.REJECTS.row(
                    DOMAIN,
                    "law_2",
                    "stackexchange",
                    "ingest",
                    "no_accepted_answer",
                    "no accepted answer with text",
                    {"question_id": 2},
                )
            ]
        ),
        "hard_negatives": negatives,
        "negative_rejects": rejects.frame(
            [rejects.row(DOMAIN, QID, "law_pool_2#0", "negatives", "overlaps_positive", "0.90 > 0.5")]
        ),
        "corpus": pl.concat([documents.filter(pl.col("role") == "positive"), negatives]),
        "aligned_documents": pl.DataFrame(
            [
                {"domain": DOMAIN, "question_id": QID, "doc_id": d, "llm_supports": None, "coverage": 0.8, "kept": True}
                for d in GOLD
            ],
            schema=rsteps.ALIGNED_SCHEMA,
        ),
        "alignment_rejects": rejects.frame([]),
        "aspects": pl.DataFrame(
            [
                {
                    "domain": DOMAIN,
                    "question_id": QID,
                    "aspect_id": a,
                    "position": i,
                    "title": f"Point {i}",
                    "text": f"Point {i} of the rules.",
                    "coverage": 0.6,
                    "origin": "answer_segment",
                    "llm_suitable": True,
                }
                for i, a in enumerate(ASPECTS, start=1)
            ],
            schema=steps.ASPECT_SCHEMA,
        ),
        "aspect_rejects": rejects.frame(
            [rejects.row(DOMAIN, QID, "Off: topic", "aspects", "low_coverage", "coverage 0.20")]
        ),
        "facts": pl.DataFrame(
            [
                {
                    "domain": DOMAIN,
                    "question_id": QID,
                    "aspect_id": a,
                    "fact_id": f"{a}_f1",
                    "fact": f"Fact {i}.",
                    "similarity": 0.8,
                    "doc_id": "law_1_p1",
                    "llm_supports": None,
                    "verified": True,
                }
                for i, a in enumerate(ASPECTS, start=1)
            ],
            schema=steps.FACT_SCHEMA,
        ),
        "fact_rejects": rejects.frame(
            [rejects.row(DOMAIN, QID, f"{QID}_a1_f2", "facts", "unsupported_fact", "similarity 0.10")]
        ),
        "turns": turns,
        "turn_rejects": rejects.frame(
            [rejects.row(DOMAIN, QID, f"{QID}_a4", "turns", "repetitive_question", "overlap 0.9")]
        ),
        "conversations": pl.DataFrame(
            [
                {
                    "domain": DOMAIN,
                    "conversation_id": QID,
                    "num_turns": 3,
                    "coherent": True,
                    "valid": True,
                    "problems": "",
                }
            ],
            schema=rsteps.CONVERSATION_SCHEMA,
        ),
        "conversation_rejects": rejects.frame([]),
        "benchmark": benchmark,
        "quality_scores": pl.DataFrame(
            [
                {
                    "domain": DOMAIN,
                    "conversation_id": QID,
                    "turns": 3,
                    "naturalness": 4.2,
                    "coherence": 3.9,
                    "question_quality": 4.0,
                    "groundedness": 4.5,
                }
            ],
            schema=rrelease.SCORE_SCHEMA,
        ),
        "turn_labels": pl.DataFrame(
            [
                {"domain": DOMAIN, "conversation_id": QID, "turn_id": i, "dependency": d, "pattern": p}
                for i, d, p in ((1, "self_contained", "what"), (2, "coreference", "how"), (3, "ellipsis", None))
            ],
            schema=rrelease.LABEL_SCHEMA,
        ),
        "quality_report": pl.DataFrame(
            [
                {
                    "domain": DOMAIN,
                    "#C": 1,
                    "#T": 3,
                    "Nat": 4.2,
                    "Coh": 3.9,
                    "QQ": 4.0,
                    "Grd": 4.5,
                    "DE": 1.0,
                    "QE": 0.32,
                }
            ],
            schema=rrelease.REPORT_SCHEMA,
        ),
        "statistics": pl.DataFrame(
            [
                {
                    "domain": "biology",
                    "#Conv.": 0,
                    "#Turns": 0,
                    "Avg #T": None,
                    "Avg #A": None,
                    "Avg #D": None,
                    "positives": 6,
                    "negatives": 22,
                },
                {
                    "domain": DOMAIN,
                    "#Conv.": 1,
                    "#Turns": 3,
                    "Avg #T": 3.0,
                    "Avg #A": 3.0,
                    "Avg #D": 4 / 3,
                    "positives": 2,
                    "negatives": 1,
                },
            ]
        ),
    }


def resources(registry: str = ADVISORY) -> dict:
    return {"recor_settings": RecorSettings(profile="demo"), "llm": LLMResource(registry_path=registry)}


def run(check: dg.AssetChecksDefinition, registry: str = ADVISORY, **tables: pl.DataFrame) -> dg.AssetCheckResult:
    """The check invoked directly on the sound tables, with ``tables`` replacing some."""
    frames = {**sound(), **tables}
    (check_key,) = check.check_keys
    inputs = {name: key.path[-1] for name, key in check.keys_by_input_name.items()}
    kwargs = {}
    for name in inspect.signature(check.op.compute_fn.decorated_fn).parameters:
        kwargs[name] = (
            resources(registry)[name]
            if name in ("recor_settings", "llm")
            else frames[inputs.get(name, check_key.asset_key.path[-1])]
        )
    return check(**kwargs)


def edit(name: str, **columns) -> pl.DataFrame:
    """The sound table ``name`` with ``columns`` replaced (a value, a list or an expression)."""
    frame = sound()[name]
    return frame.with_columns(
        **{
            k: (
                v
                if isinstance(v, pl.Expr)
                else pl.Series(k, v, frame.schema[k])
                if isinstance(v, list)
                else pl.lit(v, frame.schema[k])
            )
            for k, v in columns.items()
        }
    )


def reject(name: str, reason: str) -> pl.DataFrame:
    return steps.REJECTS.frame([steps.REJECTS.row(DOMAIN, QID, "x", name, reason)])


def _invalid_conversation() -> dict[str, pl.DataFrame]:
    problems = "2 turns (needs 3-12)"
    return {
        "conversations": edit("conversations", valid=False, problems=problems),
        "conversation_rejects": steps.REJECTS.frame(
            [steps.REJECTS.row(DOMAIN, QID, QID, "conversations", "invalid_conversation", problems)]
        ),
    }


# (asset, check name, why it is broken, the broken tables)
BROKEN = [
    (
        "source_questions",
        "schema",
        "a repeated question id",
        lambda: {"source_questions": pl.concat([sound()["source_questions"]] * 2)},
    ),
    (
        "source_questions",
        "gold_documents",
        "a gold id that is no positive",
        lambda: {"source_questions": edit("source_questions", gold_ids=[["law_1_p1", "law_9_p1"]])},
    ),
    (
        "source_questions",
        "gold_documents",
        "an unknown source",
        lambda: {"source_questions": edit("source_questions", source="reddit")},
    ),
    (
        "source_questions",
        "gold_documents",
        "no gold",
        lambda: {"source_questions": edit("source_questions", gold_ids=[[]])},
    ),
    (
        "source_documents",
        "schema",
        "a null content",
        lambda: {"source_documents": edit("source_documents", content=pl.lit(None, pl.String))},
    ),
    (
        "source_documents",
        "roles",
        "an unknown role",
        lambda: {"source_documents": edit("source_documents", role="gold")},
    ),
    (
        "source_rejects",
        "reasons",
        "an unknown reason",
        lambda: {
            "source_rejects": sources.REJECTS.frame([sources.REJECTS.row(DOMAIN, QID, "bright", "ingest", "too_long")])
        },
    ),
    (
        "hard_negatives",
        "schema",
        "a negative without its question",
        lambda: {"hard_negatives": edit("hard_negatives", question_id=pl.lit(None, pl.String))},
    ),
    (
        "hard_negatives",
        "mined",
        "a negative that repeats a positive",
        lambda: {"hard_negatives": edit("hard_negatives", content=sound()["source_documents"]["content"][0])},
    ),
    (
        "hard_negatives",
        "mined",
        "a negative of an unknown question",
        lambda: {"hard_negatives": edit("hard_negatives", question_id="law_9")},
    ),
    (
        "negative_rejects",
        "reasons",
        "a reason of another step",
        lambda: {"negative_rejects": reject("negatives", "low_coverage")},
    ),
    ("corpus", "schema", "a repeated document", lambda: {"corpus": pl.concat([sound()["corpus"]] * 2)}),
    (
        "corpus",
        "gold_in_corpus",
        "a gold document missing",
        lambda: {"corpus": sound()["corpus"].filter(pl.col("doc_id") != "law_1_p2")},
    ),
    (
        "corpus",
        "gold_in_corpus",
        "a pool document",
        lambda: {
            "corpus": pl.concat([sound()["corpus"], sound()["source_documents"].filter(pl.col("role") == "pool")])
        },
    ),
    (
        "aligned_documents",
        "schema",
        "coverage as text",
        lambda: {"aligned_documents": edit("aligned_documents").with_columns(pl.col("coverage").cast(pl.String))},
    ),
    (
        "aligned_documents",
        "alignment",
        "a weak document kept",
        lambda: {"aligned_documents": edit("aligned_documents", coverage=[0.8, 0.3])},
    ),
    (
        "aligned_documents",
        "alignment",
        "a covered document dropped",
        lambda: {"aligned_documents": edit("aligned_documents", kept=[True, False])},
    ),
    (
        "aligned_documents",
        "alignment",
        "a document that is not gold",
        lambda: {"aligned_documents": edit("aligned_documents", doc_id=["law_1_p1", "law_pool_1"])},
    ),
    ("alignment_rejects", "reasons", "an unknown reason", lambda: {"alignment_rejects": reject("alignment", "weak")}),
    ("aspects", "schema", "a repeated aspect id", lambda: {"aspects": edit("aspects", aspect_id=f"{QID}_a1")}),
    (
        "aspects",
        "decomposition",
        "a gap in the positions",
        lambda: {"aspects": edit("aspects", position=[1, 2, 4], aspect_id=[f"{QID}_a{i}" for i in (1, 2, 4)])},
    ),
    (
        "aspects",
        "decomposition",
        "more aspects than max_aspects",
        lambda: {
            "aspects": pl.concat(
                [sound()["aspects"], edit("aspects", position=[4, 5, 6], aspect_id=[f"{QID}_a{i}" for i in (4, 5, 6)])]
            )
        },
    ),
    (
        "aspects",
        "decomposition",
        "an aspect the documents do not cover",
        lambda: {"aspects": edit("aspects", coverage=[0.6, 0.2, 0.6])},
    ),
    (
        "aspects",
        "decomposition",
        "an aspect of a question without aligned documents",
        lambda: {"aligned_documents": edit("aligned_documents", kept=False, coverage=0.1)},
    ),
    ("aspect_rejects", "reasons", "an unknown reason", lambda: {"aspect_rejects": reject("aspects", "boring")}),
    ("facts", "schema", "a null verification", lambda: {"facts": edit("facts", verified=pl.lit(None, pl.Boolean))}),
    (
        "facts",
        "verification",
        "a fact of an unknown aspect",
        lambda: {
            "facts": edit(
                "facts",
                aspect_id=[f"{QID}_a1", f"{QID}_a2", f"{QID}_a9"],
                fact_id=[f"{QID}_a1_f1", f"{QID}_a2_f1", f"{QID}_a9_f1"],
            )
        },
    ),
    (
        "facts",
        "verification",
        "a dissimilar fact verified",
        lambda: {"facts": edit("facts", similarity=[0.8, 0.05, 0.8])},
    ),
    (
        "facts",
        "verification",
        "a similar fact unverified",
        lambda: {"facts": edit("facts", verified=[True, False, True])},
    ),
    (
        "facts",
        "verification",
        "more facts than max_facts",
        lambda: {"facts": edit("facts", aspect_id=f"{QID}_a1", fact_id=[f"{QID}_a1_f{i}" for i in (1, 2, 3)])},
    ),
    ("fact_rejects", "reasons", "an unknown reason", lambda: {"fact_rejects": reject("facts", "false")}),
    ("turns", "schema", "a missing column", lambda: {"turns": sound()["turns"].drop("doc_scores")}),
    ("turns", "turn_sequence", "a gap in the turn ids", lambda: {"turns": edit("turns", turn_id=[1, 2, 4])}),
    (
        "turns",
        "turn_sequence",
        "two turns on one aspect",
        lambda: {"turns": edit("turns", aspect_id=[ASPECTS[0], ASPECTS[1], ASPECTS[1]])},
    ),
    (
        "turns",
        "turn_sequence",
        "an aspect of another question",
        lambda: {"turns": edit("turns", aspect_id=[ASPECTS[0], ASPECTS[1], "law_2_a1"])},
    ),
    ("turns", "turn_sequence", "an unknown question origin", lambda: {"turns": edit("turns", question_origin="guess")}),
    (
        "turns",
        "turn_sequence",
        "an answer without facts",
        lambda: {"turns": edit("turns", facts=[["Fact 1."], [], ["Fact 3."]])},
    ),
    (
        "turns",
        "gold_documents",
        "six gold documents",
        lambda: {"turns": edit("turns", gold_doc_ids=[GOLD, GOLD * 3, GOLD])},
    ),
    ("turns", "gold_documents", "no gold document", lambda: {"turns": edit("turns", gold_doc_ids=[GOLD, [], GOLD])}),
    (
        "turns",
        "gold_documents",
        "the worse document first",
        lambda: {"turns": edit("turns", gold_doc_ids=[GOLD[::-1], GOLD, GOLD])},
    ),
    (
        "turns",
        "gold_documents",
        "an unrated gold document",
        lambda: {"turns": edit("turns", gold_doc_ids=[GOLD, ["law_pool_1#0"], GOLD])},
    ),
    (
        "turns",
        "gold_in_corpus",
        "a gold document outside the corpus",
        lambda: {"turns": edit("turns", gold_doc_ids=[GOLD, ["law_9_p1"], GOLD])},
    ),
    ("turn_rejects", "reasons", "an unknown reason", lambda: {"turn_rejects": reject("turns", "rude")}),
    (
        "conversations",
        "schema",
        "a null validity",
        lambda: {"conversations": edit("conversations", valid=pl.lit(None, pl.Boolean))},
    ),
    (
        "conversations",
        "validation",
        "a conversation the turns do not have",
        lambda: {"turns": edit("turns", conversation_id="law_2")},
    ),
    (
        "conversations",
        "validation",
        "a miscounted conversation",
        lambda: {"conversations": edit("conversations", num_turns=4)},
    ),
    (
        "conversations",
        "validation",
        "valid with a problem",
        lambda: {"conversations": edit("conversations", problems="judged incoherent")},
    ),
    (
        "conversations",
        "validation",
        "an unknown problem",
        lambda: {"conversations": edit("conversations", valid=False, problems="too boring")},
    ),
    (
        "conversations",
        "validation",
        "a valid conversation with 2 turns",
        lambda: {"turns": sound()["turns"].head(2), "conversations": edit("conversations", num_turns=2)},
    ),
    (
        "conversation_rejects",
        "reasons",
        "an unknown reason",
        lambda: {"conversation_rejects": reject("conversations", "incoherent")},
    ),
    (
        "conversation_rejects",
        "problems",
        "an invalid conversation not rejected",
        lambda: {**_invalid_conversation(), "conversation_rejects": steps.REJECTS.frame([])},
    ),
    (
        "conversation_rejects",
        "problems",
        "a valid conversation rejected",
        lambda: {"conversation_rejects": _invalid_conversation()["conversation_rejects"]},
    ),
    ("benchmark", "schema", "a repeated qid", lambda: {"benchmark": edit("benchmark", qid=f"{QID}_turn1")}),
    ("benchmark", "conversations", "an invalid conversation released", lambda: _invalid_conversation()),
    (
        "benchmark",
        "conversations",
        "a valid conversation left out",
        lambda: {"benchmark": sound()["benchmark"].clear()},
    ),
    ("benchmark", "conversations", "a conversation of 2 turns", lambda: {"benchmark": sound()["benchmark"].head(2)}),
    (
        "benchmark",
        "conversations",
        "a qid of another turn",
        lambda: {"benchmark": edit("benchmark", qid=[f"{QID}_turn{i}" for i in (3, 2, 1)])},
    ),
    (
        "benchmark",
        "conversations",
        "six gold documents",
        lambda: {"benchmark": edit("benchmark", gold_doc_ids=[GOLD, GOLD * 3, GOLD])},
    ),
    (
        "benchmark",
        "gold_in_corpus",
        "a gold document outside the corpus",
        lambda: {"corpus": sound()["corpus"].filter(pl.col("doc_id") != "law_1_p1")},
    ),
    (
        "quality_scores",
        "schema",
        "a repeated conversation",
        lambda: {"quality_scores": pl.concat([sound()["quality_scores"]] * 2)},
    ),
    ("quality_scores", "scores", "a score above 5", lambda: {"quality_scores": edit("quality_scores", coherence=7.5)}),
    (
        "quality_scores",
        "scores",
        "a score below 1",
        lambda: {"quality_scores": edit("quality_scores", naturalness=0.0)},
    ),
    (
        "quality_scores",
        "scores",
        "a benchmark conversation not scored",
        lambda: {"quality_scores": sound()["quality_scores"].clear()},
    ),
    ("quality_scores", "scores", "the wrong turn count", lambda: {"quality_scores": edit("quality_scores", turns=4)}),
    (
        "turn_labels",
        "schema",
        "labels as numbers",
        lambda: {"turn_labels": edit("turn_labels").with_columns(pl.lit(1).alias("pattern"))},
    ),
    (
        "turn_labels",
        "labels",
        "an unknown dependency type",
        lambda: {"turn_labels": edit("turn_labels", dependency=["anaphora", None, None])},
    ),
    (
        "turn_labels",
        "labels",
        "an unknown question pattern",
        lambda: {"turn_labels": edit("turn_labels", pattern=["who", None, None])},
    ),
    ("turn_labels", "labels", "a benchmark turn not labeled", lambda: {"turn_labels": sound()["turn_labels"].head(2)}),
    (
        "quality_report",
        "schema",
        "a repeated domain",
        lambda: {"quality_report": pl.concat([sound()["quality_report"]] * 2)},
    ),
    ("quality_report", "ranges", "an entropy above 1", lambda: {"quality_report": edit("quality_report", DE=1.4)}),
    ("quality_report", "ranges", "a mean score above 5", lambda: {"quality_report": edit("quality_report", Grd=5.5)}),
    (
        "quality_report",
        "ranges",
        "fewer than 3 turns a conversation",
        lambda: {"quality_report": edit("quality_report", **{"#T": 2})},
    ),
    (
        "quality_report",
        "ranges",
        "an unknown domain",
        lambda: {"quality_report": edit("quality_report", domain="cooking")},
    ),
    (
        "quality_report",
        "ranges",
        "an entropy of 0 where no turn is labelled",
        lambda: {"turn_labels": edit("turn_labels", dependency=None), "quality_report": edit("quality_report", DE=0.0)},
    ),
    (
        "quality_report",
        "ranges",
        "an entropy n/a where turns are labelled",
        lambda: {"quality_report": edit("quality_report", QE=None)},
    ),
    ("statistics", "schema", "a null count", lambda: {"statistics": edit("statistics", **{"#Turns": [0, None]})}),
    ("statistics", "table_2", "domains out of order", lambda: {"statistics": sound()["statistics"].reverse()}),
    (
        "statistics",
        "table_2",
        "an average that is not #Turns over #Conv.",
        lambda: {"statistics": edit("statistics", **{"Avg #T": [None, 4.0]})},
    ),
    (
        "statistics",
        "table_2",
        "more than 5 documents a turn",
        lambda: {"statistics": edit("statistics", **{"Avg #D": [None, 6.0]})},
    ),
    (
        "statistics",
        "table_2",
        "fewer aspects than turns",
        lambda: {"statistics": edit("statistics", **{"Avg #A": [None, 2.0]})},
    ),
    (
        "statistics",
        "table_2",
        "turns without conversations",
        lambda: {"statistics": edit("statistics", **{"#Turns": [2, 3]})},
    ),
]


def test_a_domain_without_labels_passes_with_entropies_na():
    unlabelled = edit("turn_labels", dependency=None, pattern=None)
    assert run(
        by_name("quality_report", "ranges"),
        turn_labels=unlabelled,
        quality_report=edit("quality_report", DE=None, QE=None),
    ).passed


def by_name(asset: str, name: str) -> dg.AssetChecksDefinition:
    return next(ch for ch in recor_checks if dg.AssetCheckKey(key(asset), name) in ch.check_keys)


# The exports' checks read the files their manifests name: tests/assets/recor/test_export.py
# writes an export, passes it and breaks it.
ON_FILES = {"export_written"}


def direct(check: dg.AssetChecksDefinition) -> bool:
    """Whether the check runs on its tables alone (the LLM accounting and the observation need
    a run's records, the exports' checks the files written)."""
    if {k.name for k in check.check_keys} <= ON_FILES:
        return False
    return "context" not in inspect.signature(check.op.compute_fn.decorated_fn).parameters


def test_every_recor_asset_has_a_check_and_names_are_unique_per_asset():
    from assets.recor.assets import recor_assets
    from assets.recor.export import recor_export_assets

    keys = [k for ch in recor_checks for k in ch.check_keys]
    every = [*recor_assets, *recor_export_assets]
    assets = {k for a in every for k in (a.keys if isinstance(a, dg.AssetsDefinition) else [a.key])}
    assert len(assets) == 24 and {k.asset_key for k in keys} == assets
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize(
    "check", [ch for ch in recor_checks if direct(ch)], ids=lambda ch: next(iter(ch.check_keys)).to_user_string()
)
def test_a_sound_domain_passes(check):
    assert run(check).passed


def test_every_check_on_tables_has_a_broken_case():
    covered = {(a, n) for a, n, *_ in BROKEN}
    assert covered == {(k.asset_key.path[-1], k.name) for ch in recor_checks if direct(ch) for k in ch.check_keys}


@pytest.mark.parametrize(("asset", "name", "why", "tables"), BROKEN, ids=[f"{a}:{n}:{w}" for a, n, w, _ in BROKEN])
def test_a_broken_domain_fails(asset, name, why, tables):
    result = run(by_name(asset, name), **tables())
    assert not result.passed, why


def test_binding_verdicts_need_gold_documents_above_the_threshold_and_advisory_ones_do_not():
    check = by_name("turns", "gold_documents")
    low = edit("turns", doc_scores=json.dumps({d: {"score": s} for d, s in {"law_1_p1": 3.0, "law_1_p2": 2.5}.items()}))
    assert run(check, turns=low).passed
    result = run(check, SCRIPTED_REGISTRY, turns=low)
    assert not result.passed and "scored at most 4.0" in result.metadata["examples"].value
    assert run(check, SCRIPTED_REGISTRY).passed


def test_a_binding_judge_keeps_a_weakly_covered_document():
    check = by_name("aligned_documents", "alignment")
    judged = edit("aligned_documents", coverage=[0.8, 0.3], llm_supports=[None, True])
    assert run(check, SCRIPTED_REGISTRY, aligned_documents=judged).passed
    assert not run(check, aligned_documents=judged).passed


def test_every_step_reason_is_in_its_vocabulary_and_no_other():
    unknown = steps.REJECTS.row(DOMAIN, QID, "item odd", "step", "cosmic_rays")
    for asset, reasons in [
        ("alignment_rejects", steps.ALIGNMENT_REASONS),
        ("aspect_rejects", steps.ASPECT_REASONS),
        ("fact_rejects", steps.FACT_REASONS),
        ("turn_rejects", steps.TURN_REASONS),
        ("conversation_rejects", steps.CONVERSATION_REASONS),
        ("negative_rejects", steps.NEGATIVE_REASONS),
    ]:
        rows = [steps.REJECTS.row(DOMAIN, QID, f"item {r}", "step", r) for r in sorted(reasons)]
        assert run(by_name(asset, "reasons"), **{asset: steps.REJECTS.frame(rows)}).passed, asset
        assert not run(by_name(asset, "reasons"), **{asset: steps.REJECTS.frame([*rows, unknown])}).passed, asset
    rows = [sources.REJECTS.row(DOMAIN, QID, "bright", "ingest", r) for r in sorted(sources.SOURCE_REASONS)]
    assert run(by_name("source_rejects", "reasons"), source_rejects=sources.REJECTS.frame(rows)).passed
    unknown = sources.REJECTS.row(DOMAIN, QID, "bright", "ingest", "cosmic_rays")
    assert not run(by_name("source_rejects", "reasons"), source_rejects=sources.REJECTS.frame([*rows, unknown])).passed


def test_the_conversation_problems_of_the_rules_are_known():
    from assets.recor import rules

    problems = rules.conversation_problems([[], []]) + ["judged incoherent"]
    assert len(problems) == 4
    conversations = edit("conversations", valid=False, problems=rsteps.PROBLEM_SEPARATOR.join(problems))
    assert run(by_name("conversations", "validation"), conversations=conversations).passed


@pytest.mark.parametrize(
    "check",
    [ch for ch in recor_checks if next(iter(ch.check_keys)).name == "llm_accounting"],
    ids=lambda ch: next(iter(ch.check_keys)).to_user_string(),
)
def test_llm_accounting_reads_the_output_that_called_the_model(check):
    (check_key,) = check.check_keys
    table = sound()[check_key.asset_key.path[-1]]

    def accounted(errors: int) -> dg.AssetsDefinition:
        @dg.asset(key=check_key.asset_key, partitions_def=domain_partitions)
        def stand_in() -> dg.Output:
            return dg.Output(table, metadata={"llm/calls": 10, "llm/errors": errors, "llm/parse_failures": 0})

        return stand_in

    outcomes = []
    for errors in (0, 6):
        result = dg.materialize(
            [accounted(errors), check],
            partition_key=DOMAIN,
            instance=dg.DagsterInstance.ephemeral(),
            resources={"check_settings": CheckSettings(), "io_manager": dg.mem_io_manager},
            raise_on_error=False,
        )
        (evaluation,) = result.get_asset_check_evaluations()
        outcomes.append((evaluation.passed, evaluation.severity))
    # calls that got no answer are an error that blocks what is built on the step
    assert outcomes == [(True, dg.AssetCheckSeverity.WARN), (False, dg.AssetCheckSeverity.ERROR)]


def test_the_source_files_check_warns_until_a_domain_is_observed_as_it_is(tmp_path):
    copied = tmp_path / "law.json"
    copied.write_bytes((ROOT / "data" / "recor" / "stackexchange" / "law.json").read_bytes())
    registry = tmp_path / "sources.yaml"
    registry.write_text(
        (ROOT / "assets" / "recor" / "sources.yaml")
        .read_text()
        .replace("data/recor/stackexchange/law.json", str(copied))
    )
    defs = dg.Definitions(
        assets=[source_files],
        asset_checks=[rsources.observed_versions],
        jobs=[
            dg.define_asset_job("observe", selection=dg.AssetSelection.assets(source_files.key)),
            dg.define_asset_job("check", selection=dg.AssetSelection.checks(rsources.observed_versions)),
        ],
        resources={"recor_settings": RecorSettings(sources_path=str(registry))},
    )
    instance = dg.DagsterInstance.ephemeral()

    def evaluation(job: str) -> dg.AssetCheckEvaluation:
        (found,) = defs.resolve_job_def(job).execute_in_process(instance=instance).get_asset_check_evaluations()
        return found

    never = evaluation("check")
    assert (
        not never.passed
        and never.severity == dg.AssetCheckSeverity.WARN
        and "law: never observed" in never.metadata["problems"].value
    )
    assert evaluation("observe").passed
    copied.write_text(copied.read_text() + "\n")
    edited = evaluation("check")
    assert (
        not edited.passed
        and edited.metadata["problems"].value.count("\n") == 0
        and "law: observed" in edited.metadata["problems"].value
    )


def test_a_partitioned_check_reads_the_other_table_of_its_own_domain(tmp_path):
    """Each domain's turns are checked against that domain's corpus, not every domain's."""

    @dg.asset(key=key("corpus"), partitions_def=domain_partitions)
    def corpus(context) -> pl.DataFrame:
        return sound()["corpus"].with_columns(
            pl.lit(context.partition_key).alias("domain"),
            pl.format("{}_{}", pl.lit(context.partition_key), "doc_id").alias("doc_id"),
        )

    @dg.asset(key=key("turns"), partitions_def=domain_partitions)
    def turns() -> pl.DataFrame:
        return edit("turns", gold_doc_ids=[[f"{DOMAIN}_{d}" for d in GOLD]] * 3)

    check = by_name("turns", "gold_in_corpus")
    io = {"io_manager": dg.FilesystemIOManager(base_dir=str(tmp_path))}
    instance = dg.DagsterInstance.ephemeral()
    outcomes = {}
    # biology's run finds law's corpus stored too: only the identity mapping leaves it out
    for domain in (DOMAIN, "biology"):
        result = dg.materialize(
            [corpus, turns, check], partition_key=domain, instance=instance, resources=io, raise_on_error=False
        )
        outcomes[domain] = result.get_asset_check_evaluations()[0].passed
    assert outcomes == {DOMAIN: True, "biology": False}


def test_the_quality_steps_label_failures_are_named_on_the_labels():
    """The scores and the labels come from one step: the labels' own accounting, and the turns
    whose label the judge did not give, are on the labels (the scores' check named none)."""
    table = sound()["turn_labels"]

    @dg.asset(key=key("turn_labels"), partitions_def=domain_partitions)
    def stand_in() -> dg.Output:
        return dg.Output(table, metadata={"llm/calls": 6, "llm/errors": 0, "llm/parse_failures": 4})

    result = dg.materialize(
        [stand_in, rrelease.turn_labels_llm],
        partition_key=DOMAIN,
        instance=dg.DagsterInstance.ephemeral(),
        resources={"check_settings": CheckSettings(), "io_manager": dg.mem_io_manager},
    )
    (evaluation,) = result.get_asset_check_evaluations()
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert evaluation.metadata["failed_items"].value == f"{QID} turn 3"
