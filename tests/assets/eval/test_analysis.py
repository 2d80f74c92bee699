"""The analyses over hand-made profiles and grades, with the figures computed by hand."""

import math

import dagster as dg
import numpy as np
import polars as pl
import pytest
from scipy import stats

from assets.common.metadata import report_slice
from assets.eval import uncertainty as u
from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method

PROFILE_FLAGS = {  # profile -> (encodes, knows, knows_thinking)
    "direct_recall": (True, True, True),
    "recall_failure": (True, False, False),
    "recall_with_thinking": (True, False, True),
    "encoding_failure": (False, False, False),
    "inference_without_encoding": (False, False, True),
    "ungradable": (None, None, None),
    "direct_inference": (False, True, True),
    # without a thinking run
    "encoded_not_known": (True, False, None),
    "not_encoded_not_known": (False, False, None),
}


def profiles(model: str, facts: dict[str, str], thinking_run: str = "present") -> pl.DataFrame:
    """Profiles with their flags; without a thinking run KT is null."""
    rows = []
    for f, p in facts.items():
        e, k0, kt = PROFILE_FLAGS[p]
        rows.append(
            {
                "model": model,
                "fact_id": f,
                "encodes": e,
                "knows": k0,
                "knows_thinking": kt if thinking_run == "present" else None,
                "profile": p,
                "thinking_run": thinking_run,
            }
        )
    return pl.DataFrame(rows, schema=analysis.PROFILE_SCHEMA)


def grades(model: str, table: dict[str, dict[str, float]], thinking: bool = False) -> pl.DataFrame:
    rows = [
        {
            "model": model,
            "fact_id": f,
            "task": t,
            "thinking": thinking,
            "grade": g,
            "correct": 0,
            "incorrect": 0,
            "partially": 0,
            "other": 0,
        }
        for f, tasks in table.items()
        for t, g in tasks.items()
    ]
    return pl.DataFrame(rows)


def test_popularity_rates_and_gaps_per_tier():
    prof = profiles(
        "m",
        {
            "f1": "direct_recall",
            "f2": "recall_failure",
            "f3": "encoding_failure",
            "f4": "recall_with_thinking",
            "f5": "recall_failure",
            "f6": "ungradable",
            "f7": "direct_recall",
        },
    )
    tiers = pl.DataFrame(
        {
            "fact_id": [f"f{i}" for i in range(1, 8)],
            "tier": ["top", "top", "top", "bottom", "bottom", "bottom", "middle"],
        }
    )
    table = analysis.popularity(prof, tiers)
    top = table.filter(pl.col("tier") == "top").row(0, named=True)
    bottom = table.filter(pl.col("tier") == "bottom").row(0, named=True)
    # top: 3 profiled, 2 encoded, 1 of them known; bottom: f6 is excluded, both encoded, one only with thinking
    assert (top["facts"], top["encodes"], top["recall"], top["recall_thinking"]) == (3, pytest.approx(2 / 3), 0.5, 0.5)
    assert (bottom["facts"], bottom["encodes"], bottom["recall"], bottom["recall_thinking"]) == (2, 1.0, 0.0, 0.5)
    gaps = analysis.popularity_gaps(table).row(0, named=True)
    assert (
        gaps["encoding_gap"] == pytest.approx(-1 / 3)
        and gaps["recall_gap"] == 0.5
        and gaps["recall_gap_thinking"] == 0.0
    )


def test_direction_and_error_attribution_count_both_phrasings():
    prof = profiles(
        "m",
        {
            "a": "direct_recall",
            "b": "recall_failure",
            "c": "recall_failure",
            "d": "recall_failure",
            "e": "encoding_failure",
        },
    )
    plain = {
        "a": {
            "direct": 1.0,
            "direct_natural": 0.9,
            "reverse": 0.8,
            "reverse_natural": 0.7,
            "mc_direct": 1.0,
            "mc_direct_natural": 1.0,
            "mc_reverse": 1.0,
            "mc_reverse_natural": 1.0,
        },
        # direct fails on one phrasing only: the direct side is not known
        "b": {
            "direct": 1.0,
            "direct_natural": 0.5,
            "reverse": 0.9,
            "reverse_natural": 0.9,
            "mc_direct": 0.25,
            "mc_direct_natural": 1.0,
            "mc_reverse": 1.0,
            "mc_reverse_natural": 0.75,
        },
        # reverse fails, and one reverse phrasing is ungradable (left out)
        "c": {
            "direct": 1.0,
            "direct_natural": 1.0,
            "reverse": 0.0,
            "reverse_natural": math.nan,
            "mc_direct": 1.0,
            "mc_direct_natural": 1.0,
            "mc_reverse": 0.0,
            "mc_reverse_natural": 0.0,
        },
        "d": {
            "direct": 0.0,
            "direct_natural": 0.0,
            "reverse": 0.0,
            "reverse_natural": 0.0,
            "mc_direct": 1.0,
            "mc_direct_natural": 1.0,
            "mc_reverse": 1.0,
            "mc_reverse_natural": 1.0,
        },
        "e": {"direct": 0.0, "direct_natural": 1.0, "reverse": 1.0, "reverse_natural": 1.0},
    }
    thinking = {
        f: {"direct": 1.0, "direct_natural": 1.0, "reverse": 1.0 if f != "d" else 0.0, "reverse_natural": 1.0}
        for f in plain
    }
    g = pl.concat([grades("m", plain), grades("m", thinking, thinking=True)])
    table = {r["condition"]: r for r in analysis.direction(g, prof).iter_rows(named=True)}
    # over the 4 encoded facts a-d: direct known by a, c; reverse by a, b
    assert table["generate"]["facts"] == 4
    assert (table["generate"]["direct"], table["generate"]["reverse"], table["generate"]["delta"]) == (0.5, 0.5, 0.0)
    # multiple choice: direct known by a, c, d; reverse by a, b, d
    assert (table["verify"]["direct"], table["verify"]["reverse"]) == (0.75, 0.75)
    assert (table["generate_thinking"]["direct"], table["generate_thinking"]["reverse"]) == (1.0, 0.75)

    errors = {r["scope"]: r for r in analysis.error_attribution(g, prof).iter_rows(named=True)}
    # not known without thinking: b (direct only), c (reverse only), d (both), e (direct only, not encoded)
    assert errors["all"]["not_known"] == 4
    assert (errors["all"]["direct_only"], errors["all"]["both"], errors["all"]["reverse_only"]) == (0.5, 0.25, 0.25)
    assert errors["encoded"]["not_known"] == 3
    assert errors["encoded"]["direct_only"] == pytest.approx(1 / 3) and errors["encoded"]["both"] == pytest.approx(
        1 / 3
    )


def test_thinking_recovery_splits_encoded_and_not_encoded():
    prof = profiles(
        "m",
        {
            "a": "recall_with_thinking",
            "b": "recall_failure",
            "c": "recall_with_thinking",
            "d": "encoding_failure",
            "e": "inference_without_encoding",
            "f": "direct_recall",
            "g": "ungradable",
        },
    )
    rows = {r["encoded"]: r for r in analysis.thinking_recovery(prof).iter_rows(named=True)}
    assert (rows[True]["not_known"], rows[True]["recovered"]) == (3, 2)
    assert rows[True]["recovered_share"] == pytest.approx(2 / 3)
    assert (rows[False]["not_known"], rows[False]["recovered"], rows[False]["recovered_share"]) == (2, 1, 0.5)


def test_probability_of_at_least_a_share_correct():
    # Binomial(8, 1/2): P(K >= 4) = 1 - (1 + 8 + 28 + 56) / 256
    assert analysis.prob_at_least(4, 8, 0.5) == pytest.approx(163 / 256)
    assert analysis.prob_at_least(8, 8, 1.0) == 1.0 and analysis.prob_at_least(0, 8, 0.125) == 0.0
    assert math.isnan(analysis.prob_at_least(0, 0, 0.5))


def test_correct_at_least_curve_separates_availability_from_robustness():
    g = pl.DataFrame(
        {
            "model": "m",
            "fact_id": ["a", "b", "c"],
            "task": "direct",
            "thinking": False,
            "grade": 0.0,
            "correct": [8, 4, 0],
            "incorrect": [0, 4, 8],
            "partially": 0,
            "other": 0,
        }
    )
    curve = analysis.correct_at_least(g)
    assert curve["p"].to_list() == [j / 8 for j in range(1, 9)]
    # a always counts; b while P(K >= ceil(8p)) > 0.5, i.e. up to p = 4/8 (P = 163/256; at 5/8, 93/256)
    assert curve["share"].to_list() == pytest.approx([2 / 3] * 4 + [1 / 3] * 4)


def test_tau_sweep_recomputes_profiles_at_each_threshold():
    table = {
        "completion": 0.875,
        "contextual": 0.5,
        "direct": 0.875,
        "direct_natural": 1.0,
        "reverse": 0.875,
        "reverse_natural": 1.0,
    }
    g = pl.concat(
        [grades("m", {"f": table}), grades("m", {"f": {t: table[t] for t in method.KNOWLEDGE_TASKS}}, thinking=True)]
    )
    sweep = {
        (r["tau_enc"], r["tau_know"]): r
        for r in analysis.tau_sweep(g, grid=((0.5, 0.5), (0.5, 0.99), (0.99, 0.99))).iter_rows(named=True)
    }
    assert sweep[(0.5, 0.5)]["direct_recall"] == 1.0
    assert sweep[(0.5, 0.99)]["recall_failure"] == 1.0
    assert sweep[(0.99, 0.99)]["encoding_failure"] == 1.0


def test_bootstrap_is_exact_for_constant_answers_and_narrows_with_n():
    def graded(labels_by_fact):
        return pl.DataFrame(
            [
                {"model": "m", "fact_id": f, "task": "direct", "thinking": False, "sample": k, "label": label}
                for f, labels in labels_by_fact.items()
                for k, label in enumerate(labels)
            ]
        )

    steady = graded({f"f{i}": [method.CORRECT] * 8 for i in range(5)})
    table = analysis.bootstrap_stability(steady, ns=(2, 8), tasks=("direct",), resamples=200)
    assert table["width"].to_list() == [0.0, 0.0] and table["mean"].to_list() == [1.0, 1.0]

    mixed = graded({f"f{i}": [method.CORRECT] * 6 + [method.INCORRECT] * 2 for i in range(20)})
    table = analysis.bootstrap_stability(mixed, ns=(2, 16), tasks=("direct",), resamples=500, seed=1)
    narrow, wide = table.filter(pl.col("n") == 16).row(0, named=True), table.filter(pl.col("n") == 2).row(0, named=True)
    assert narrow["width"] < wide["width"] and narrow["mean"] > wide["mean"]


def graded_direct(labels_by_fact: dict[str, list[str]], model: str = "m") -> pl.DataFrame:
    return pl.DataFrame(
        [
            {"model": model, "fact_id": f, "task": "direct", "thinking": False, "sample": k, "label": label}
            for f, labels in labels_by_fact.items()
            for k, label in enumerate(labels)
        ]
    )


def test_a_questions_chance_above_tau_is_its_multinomial_draw():
    # samples C, C, I, O; two drawn: above 0.5 for CC (1/4) and one C with one O (2 * 1/2 * 1/4)
    assert analysis.above_probability(2, 1, 4, 2) == pytest.approx(0.5)
    assert analysis.above_probability(8, 0, 8, 16) == 1.0 and analysis.above_probability(0, 0, 3, 8) == 0.0
    # 6 C and 2 I, eight drawn: above 0.5 with at least five C, a binomial tail
    assert analysis.above_probability(6, 2, 8, 8) == pytest.approx(float(1 - stats.binom.cdf(4, 8, 0.75)))


def test_the_bootstrap_of_n_draws_as_drawing_each_response_would():
    """The exact draw (a binomial per kind of question) against the draw of every response
    the bootstrap made before: the same mean and spread over many resamples."""
    rng = np.random.default_rng(5)
    labels = rng.choice([1, 0, -1], size=(40, 8), p=[0.55, 0.4, 0.05]).astype(np.int8)

    def response_by_response(n: int, resamples: int) -> np.ndarray:
        picks = (rng.random((resamples, labels.shape[0], n)) * labels.shape[1]).astype(np.int64)
        drawn = np.take_along_axis(np.broadcast_to(labels, (resamples, *labels.shape)), picks, axis=2)
        c, i = (drawn == 1).sum(axis=2), (drawn == 0).sum(axis=2)
        return (np.where(c + i > 0, c / np.maximum(c + i, 1), 0.0) > 0.5).mean(axis=1)

    for n in (2, 8):
        exact, slow = (
            analysis.bootstrap_shares(labels, n, 4000, np.random.default_rng(0)),
            response_by_response(n, 4000),
        )
        assert exact.mean() == pytest.approx(slow.mean(), abs=0.005)
        assert exact.std() == pytest.approx(slow.std(), rel=0.1)


def test_the_d4_claim_is_checked_only_where_the_questions_suffice():
    settled = {f"f{i}": [method.CORRECT] * 8 for i in range(950)} | {
        f"g{i}": [method.CORRECT] * 7 + [method.INCORRECT] for i in range(50)
    }
    coin = {f"f{i}": [method.CORRECT, method.INCORRECT] * 4 for i in range(1000)}
    graded = pl.concat(
        [graded_direct(settled, "settled"), graded_direct(coin, "coin"), graded_direct({"f": ["CORRECT"] * 8}, "few")]
    )
    stability = analysis.bootstrap_stability(graded, ns=(2, 8), tasks=("direct",), resamples=1000)
    claims = {r["model"]: r for r in analysis.d4_claims(stability).iter_rows(named=True)}
    # 50 questions of 1000 can fall under tau, each rarely: a width of a few tenths of a point
    assert claims["settled"]["verdict"] == "holds" and claims["settled"]["width"] < 0.005
    assert claims["settled"]["claim"] == f"width at n=8: {claims['settled']['width']:.1%} (under 1%: holds)"
    # every question a coin flip (above 0.5 with five C of eight: 36%): about five points wide
    assert claims["coin"]["verdict"] == "does not hold" and 0.03 < claims["coin"]["width"] < 0.08
    assert claims["coin"]["claim"].endswith("(under 1%: does not hold)")
    # one question never moves (width 0), which says nothing of the claim
    assert claims["few"]["width"] == 0.0
    assert claims["few"]["claim"] == "not checkable: 1 questions (a 1% width needs at least 1,000 questions)"
    at_two = analysis.d4_claims(stability.filter(pl.col("n") == 2))
    assert set(at_two["claim"]) == {"not checkable: no bootstrap at n=8"}


def test_label_matrix_codes_labels_and_pads():
    g = pl.DataFrame(
        {
            "fact_id": ["a", "a", "a", "b"],
            "task": "direct",
            "thinking": False,
            "sample": [0, 1, 2, 0],
            "label": [method.CORRECT, method.PARTIALLY, method.INCORRECT, method.OTHER],
        }
    )
    assert analysis.label_matrix(g, "direct").tolist() == [[1, -1, 0], [-1, -2, -2]]
    # draws only from a question's own samples: b has one, ungradable, so it is never above tau
    shares = analysis.bootstrap_shares(analysis.label_matrix(g, "direct"), 4, 50, np.random.default_rng(0))
    assert shares.max() <= 0.5


def test_reports_before_any_model_is_profiled_are_empty_tables():
    nothing = pl.DataFrame()
    assert (
        analysis.popularity(
            nothing, pl.DataFrame({"fact_id": [], "tier": []}, schema={"fact_id": pl.String, "tier": pl.String})
        ).height
        == 0
    )
    assert analysis.direction(analysis.model_grades(nothing), nothing).height == 0
    assert analysis.error_attribution(analysis.model_grades(nothing), nothing).height == 0
    assert analysis.thinking_recovery(nothing).height == 0
    assert analysis.correct_at_least(analysis.model_grades(nothing)).height == 0
    assert analysis.tau_sweep(analysis.model_grades(nothing)).height == 0
    assert analysis.bootstrap_stability(nothing).height == 0


def test_report_assets_show_empty_tables_when_no_model_is_profiled():
    from assets.eval.wikiprofile.assets import (
        wikiprofile_direction_report,
        wikiprofile_popularity_report,
        wikiprofile_profile_report,
        wikiprofile_robustness_report,
        wikiprofile_thinking_report,
    )
    from assets.wikiprofile.settings import WikiProfileSettings

    nothing, settings = pl.DataFrame(), WikiProfileSettings(bootstrap_resamples=10)
    bench = pl.DataFrame(schema={"fact_id": pl.String, "page_id": pl.String})
    pages = pl.DataFrame(schema={"page_id": pl.String, "mean_monthly_views": pl.Float64})
    ctx = dg.build_asset_context()
    outputs = [
        wikiprofile_profile_report(
            ctx,
            profiles=nothing,
            graded_responses=nothing,
            wikiprofile_settings=settings,
            uncertainty=u.UncertaintySettings(),
        ),
        wikiprofile_popularity_report(ctx, profiles=nothing, benchmark=bench, source_pages=pages),
        wikiprofile_direction_report(ctx, graded_responses=nothing, profiles=nothing, wikiprofile_settings=settings),
        wikiprofile_thinking_report(ctx, graded_responses=nothing, profiles=nothing, wikiprofile_settings=settings),
        wikiprofile_robustness_report(ctx, graded_responses=nothing, wikiprofile_settings=settings),
    ]
    for out in outputs:
        assert out.value.height == 0 and out.value.width > 0
        assert out.metadata["slice"].value == report_slice("0 subject models (none), 0 facts", None)
    no_model = "no model is profiled: materialize eval/wikiprofile_profiles for a subject model"
    no_graded = "no question is graded: materialize eval/wikiprofile_graded_responses for a subject model"
    assert outputs[0].metadata["why_empty"].value == (
        f"table_2: {no_model}; table_2_uncertainty: {no_model}; "
        f"d4_stability: {no_graded} (of the tasks completion, contextual, direct, reverse)"
    )
    # the interval columns are there, typed, before any model is
    assert outputs[0].value.schema["knows ci_low"] == pl.Float64
    assert outputs[0].value.schema["knows_thinking tied_best"] == pl.Boolean
    assert outputs[0].metadata["d4_claim"].value.startswith(f"{no_graded} (of the tasks")
    # every analysis table inline, each empty one named in why_empty with its reason
    for out, names in zip(outputs[1:], ANALYSIS_TABLES.values()):
        for name in names:
            assert isinstance(out.metadata[name], dg.TableMetadataValue) and out.metadata[name].records == [], name
            assert f"{name}: " in out.metadata["why_empty"].value, name
    assert "tiers: the benchmark read (eval/wikiprofile_tasks) has no fact" in outputs[1].metadata["why_empty"].value
    assert "bootstrap: no question is graded" in outputs[4].metadata["why_empty"].value


# The analysis reports' inline tables, by report.
ANALYSIS_TABLES = {
    "popularity_report": ("popularity", "gaps", "tiers"),
    "direction_report": ("direct_vs_reverse", "error_attribution"),
    "thinking_report": ("recovery", "correct_at_least_p"),
    "robustness_report": ("tau_sweep", "bootstrap"),
}


def inline_rows(table: dg.TableMetadataValue) -> list[dict]:
    """An inline table's rows, after checking that every column has its definition."""
    assert isinstance(table, dg.TableMetadataValue)
    assert all(c.description for c in table.schema.columns), [c.name for c in table.schema.columns if not c.description]
    return [r.data for r in table.records]


def test_analysis_reports_show_their_tables_inline_as_shares():
    from assets.eval.wikiprofile.assets import wikiprofile_popularity_report, wikiprofile_thinking_report
    from assets.wikiprofile.settings import WikiProfileSettings

    settings = WikiProfileSettings()
    prof = profiles(
        "m", {"f1": "direct_recall", "f2": "recall_with_thinking", "f3": "recall_failure", "f4": "direct_inference"}
    )
    # ten facts, one page each: the two most viewed (f1, f2) are the top tier, the two least (f3, f4) the bottom
    views = {"f1": 1000.0, "f2": 900.0, "f3": 1.0, "f4": 2.0, **{f"f{i}": 10.0 * i for i in range(5, 11)}}
    bench = pl.DataFrame({"fact_id": list(views), "page_id": [f"p{f}" for f in views]})
    pages = pl.DataFrame({"page_id": [f"p{f}" for f in views], "mean_monthly_views": list(views.values())})
    meta = wikiprofile_popularity_report(
        dg.build_asset_context(), profiles=prof, benchmark=bench, source_pages=pages
    ).metadata
    # top: f1 and f2 encoded, f1 known, f2 only with thinking; bottom: f3 encoded, not known (f4 is not profiled)
    assert inline_rows(meta["popularity"]) == [
        {
            "model": "m",
            "tier": "top",
            "facts": 2,
            "encodes": 1.0,
            "recall": 0.5,
            "recall_thinking": 1.0,
            "thinking_gain": 0.5,
        },
        {
            "model": "m",
            "tier": "bottom",
            "facts": 1,
            "encodes": 1.0,
            "recall": 0.0,
            "recall_thinking": 0.0,
            "thinking_gain": 0.0,
        },
    ]
    assert inline_rows(meta["gaps"]) == [
        {"model": "m", "encoding_gap": 0.0, "recall_gap": 0.5, "recall_gap_thinking": 1.0}
    ]
    assert inline_rows(meta["tiers"]) == [
        {"tier": "bottom", "min_views": 1.0, "max_views": 2.0, "facts": 2},
        {"tier": "middle", "min_views": 50.0, "max_views": 100.0, "facts": 6},
        {"tier": "top", "min_views": 900.0, "max_views": 1000.0, "facts": 2},
    ]
    assert (
        "share of the tier's encoded facts"
        in {c.name: c.description for c in meta["popularity"].schema.columns}["recall"]
    )
    assert "why_empty" not in meta and meta["slice"].value.startswith("1 subject models (m), 4 facts;")

    # f2 and f3 encoded and not known without thinking, f2 recovered: 1 / 2; nothing not encoded to
    # recover (0 / 0, blank); no grades, so no correct>=p curve, and why_empty says so
    meta = wikiprofile_thinking_report(
        dg.build_asset_context(), graded_responses=pl.DataFrame(), profiles=prof, wikiprofile_settings=settings
    ).metadata
    assert inline_rows(meta["recovery"]) == [
        {"model": "m", "encoded": True, "not_known": 2, "recovered": 1, "recovered_share": 0.5},
        {"model": "m", "encoded": False, "not_known": 0, "recovered": 0, "recovered_share": None},
    ]
    assert meta["why_empty"].value == (
        "correct_at_least_p: no question is graded: materialize eval/wikiprofile_graded_responses for a subject model"
    )
    plain = profiles("p", {"f1": "direct_recall", "f2": "encoded_not_known"}, thinking_run="missing")
    meta = wikiprofile_thinking_report(
        dg.build_asset_context(), graded_responses=pl.DataFrame(), profiles=plain, wikiprofile_settings=settings
    ).metadata
    assert "recovery: no profiled model has a thinking run" in meta["why_empty"].value


def test_a_model_without_a_thinking_run_gets_null_where_thinking_enters():
    prof = pl.concat(
        [
            profiles(
                "plain",
                {
                    "f1": "direct_recall",
                    "f2": "encoded_not_known",
                    "f3": "not_encoded_not_known",
                    "f4": "direct_inference",
                },
                thinking_run="missing",
            ),
            profiles(
                "think",
                {"f1": "direct_recall", "f2": "recall_with_thinking", "f3": "recall_failure", "f4": "direct_inference"},
            ),
        ]
    )
    assert analysis.models_without_thinking(prof) == ["plain"]
    tiers = pl.DataFrame({"fact_id": ["f1", "f2", "f3", "f4"], "tier": ["top", "top", "bottom", "bottom"]})
    table = {(r["model"], r["tier"]): r for r in analysis.popularity(prof, tiers).iter_rows(named=True)}
    # "plain", top: f1 and f2 encoded, f1 known -> recall 0.5; with thinking unknown, not 0
    assert (table[("plain", "top")]["recall"], table[("plain", "top")]["recall_thinking"]) == (0.5, None)
    assert table[("plain", "top")]["thinking_gain"] is None
    # "think", top: f1 known, f2 recovered by thinking -> 0.5 and 1
    assert (table[("think", "top")]["recall"], table[("think", "top")]["recall_thinking"]) == (0.5, 1.0)
    # bottom of "plain": f3 is profiled (undecided), f4 (direct inference) is not
    assert table[("plain", "bottom")]["facts"] == 1
    gaps = {r["model"]: r for r in analysis.popularity_gaps(analysis.popularity(prof, tiers)).iter_rows(named=True)}
    assert gaps["plain"]["recall_gap_thinking"] is None
    recovery = analysis.thinking_recovery(prof)
    assert recovery["model"].unique().to_list() == ["think"]
    thinking = recovery.filter(pl.col("encoded")).row(0, named=True)
    assert (thinking["not_known"], thinking["recovered"]) == (2, 1)  # f2 recovered, f3 not
    grade = {t: 1.0 for t in method.KNOWLEDGE_TASKS}
    g = grades("plain", {"f1": grade, "f2": grade})
    rows = {
        r["condition"]: r for r in analysis.direction(g, prof.filter(pl.col("model") == "plain")).iter_rows(named=True)
    }
    assert rows["generate"]["direct"] == 1.0 and rows["generate_thinking"]["direct"] is None


def test_tau_sweep_of_a_model_without_a_thinking_run():
    table = {
        "completion": 0.875,
        "contextual": 0.5,
        "direct": 0.875,
        "direct_natural": 1.0,
        "reverse": 0.875,
        "reverse_natural": 1.0,
    }
    sweep = analysis.tau_sweep(grades("m", {"f": table}), grid=((0.5, 0.5), (0.5, 0.99)))
    rows = sweep.to_dicts()
    assert [r["thinking_run"] for r in rows] == ["missing", "missing"] and sweep.schema["knows_thinking"] == pl.Float64
    # tau 0.5: E and K0 -> direct recall; tau_know 0.99: 0.875 fails -> encoded, not known (undecided)
    assert (rows[0]["direct_recall"], rows[0]["knows"], rows[0]["knows_thinking"]) == (1.0, 1.0, None)
    assert (rows[1]["direct_recall"], rows[1]["encoded_not_known"], rows[1]["recall_failure"]) == (0.0, 1.0, None)


def table_2_profiles() -> pl.DataFrame:
    """Model a with a thinking run (six facts: one ungradable, one direct inference), b
    without (three facts)."""
    return pl.concat(
        [
            profiles(
                "a",
                {
                    "f1": "direct_recall",
                    "f2": "direct_recall",
                    "f3": "recall_with_thinking",
                    "f4": "recall_failure",
                    "f5": "direct_inference",
                    "f6": "ungradable",
                },
            ),
            profiles(
                "b",
                {"f1": "direct_recall", "f2": "encoded_not_known", "f3": "not_encoded_not_known"},
                thinking_run="missing",
            ),
        ]
    )


def profile_report(prof: pl.DataFrame, graded: pl.DataFrame | None = None, **settings) -> dg.Output:
    from assets.eval.wikiprofile.assets import wikiprofile_profile_report
    from assets.wikiprofile.settings import WikiProfileSettings

    return wikiprofile_profile_report(
        dg.build_asset_context(),
        profiles=prof,
        graded_responses=pl.DataFrame() if graded is None else graded,
        wikiprofile_settings=WikiProfileSettings(**settings),
        uncertainty=u.UncertaintySettings(),
    )


def test_table_2_asset_counts_direct_inference_in_knows_and_names_its_definitions():
    out = profile_report(table_2_profiles())
    rows = {r["model"]: r for r in out.value.iter_rows(named=True)}
    # a: 6 facts, 4 profiled, 5 gradable (4 + f5): Knows = (2 DR + 1 DI) / 5; Knows(+Think) = (2 + 1 RwT + 1 DI) / 5
    assert rows["a"]["knows"] == 0.6 and rows["a"]["knows_thinking"] == 0.8
    # Figure 4's bar: (2 DR + 1 RwT) / 4 profiled
    assert rows["a"]["knows_thinking_excl_direct"] == 0.75
    # b: no thinking run -> Knows from its plain run, 1 / 3; Knows(+Think) null
    assert rows["b"]["knows"] == pytest.approx(1 / 3) and rows["b"]["knows_thinking"] is None
    assert rows["b"]["thinking_run"] == "missing" and rows["b"]["recall_failure"] is None
    meta = out.metadata
    # Table 2 inline under the paper's headers, each with its definition; b's missing KT blank
    table_2 = meta["table_2"]
    assert isinstance(table_2, dg.TableMetadataValue)
    described = {c.name: c.description for c in table_2.schema.columns}
    assert "includes direct inference" in described["Knows(+Think) (incl. direct inf.)"]
    assert "excludes direct inference" in described["Knows, Fig. 4 (excl. direct inf.)"]
    inline = {r.data["model"]: r.data for r in table_2.records}
    # shares, four decimals inline
    assert inline["a"]["Knows (incl. direct inf.)"] == 0.6 and inline["a"]["Knows, Fig. 4 (excl. direct inf.)"] == 0.75
    assert (
        inline["b"]["Knows (incl. direct inf.)"] == 0.3333 and inline["b"]["Knows(+Think) (incl. direct inf.)"] is None
    )
    assert "a share of the gradable facts" in described["Knows (incl. direct inf.)"]
    assert (
        "tau_enc = tau_know = 0.5, strict" in meta["definitions"].value
        and "NaN strategy S2" in meta["definitions"].value
    )
    assert meta["thinking_run_missing"].value == "b" and "Knows(+Think)" in meta["thinking_run_missing_reason"].value
    from checks.eval import wikiprofile as ew

    assert ew.profile_report_shares(out.value).passed


def test_table_2_scores_average_to_table_2s_shares():
    """Each share's per-fact scores average to the share Table 2 reports, over the facts it
    is a share of, whatever mix of profiles (ungradable and direct inference included)."""
    rng = np.random.default_rng(2)
    present = [p for p in PROFILE_FLAGS if p not in method.UNDECIDED.values()]
    missing = ["direct_recall", "ungradable", "direct_inference", *method.UNDECIDED.values()]
    prof = pl.concat(
        [
            profiles(f"m{i}", {f"f{j}": str(rng.choice(kinds)) for j in range(int(rng.integers(1, 30)))}, run)
            for i, (kinds, run) in enumerate([(present, "present")] * 6 + [(missing, "missing")] * 3)
        ]
    )
    prof = pl.concat([prof, profiles("none", {"f1": "ungradable", "f2": "ungradable"})])
    scores = analysis.table_2_scores(prof)
    for (model,), part in prof.group_by("model"):
        summary = method.profile_summary(part.to_dicts())
        own = scores.filter(pl.col("model") == model)
        for share in analysis.TABLE_2_INTERVALS:
            values = own[share].drop_nulls()
            if summary[share] is None:  # no thinking run
                assert values.is_empty(), (model, share)
            elif math.isnan(summary[share]):  # a share over no facts
                assert values.is_empty(), (model, share)
            else:
                assert values.mean() == pytest.approx(summary[share]), (model, share)
                assert set(values) <= {0.0, 1.0}


def test_table_2_carries_intervals_over_facts_and_its_d4_stability():
    settings = u.UncertaintySettings()
    graded = graded_direct({f"f{i}": [method.CORRECT] * 6 + [method.INCORRECT] * 2 for i in range(1, 4)}, "a")
    out = profile_report(table_2_profiles(), graded)
    stored = {r["model"]: r for r in out.value.iter_rows(named=True)}
    # a's Knows over its five gradable facts f1-f5 (the ungradable f6 left out): DR, DR, RwT, RF, DI
    assert stored["a"]["knows"] == 0.6
    low, high = u.interval([1.0, 1.0, 0.0, 0.0, 1.0], settings)
    assert (stored["a"]["knows ci_low"], stored["a"]["knows ci_high"]) == (low, high)
    assert low < 0.6 < high
    # a encodes all four profiled facts: nothing varies, the interval is the value
    assert (stored["a"]["encodes ci_low"], stored["a"]["encodes ci_high"]) == (1.0, 1.0)
    # b encodes f1 and f2 of three; on those three facts it differs from a (the best) once: tied
    assert stored["b"]["encodes ci_low"] <= 2 / 3 <= stored["b"]["encodes ci_high"]
    assert stored["a"]["encodes tied_best"] and stored["b"]["encodes tied_best"]
    # b has no thinking run: no Knows(+Think), no interval
    assert stored["b"]["knows_thinking ci_low"] is None and stored["b"]["knows_thinking tied_best"] is None
    meta = out.metadata
    long = inline_rows(meta["table_2_uncertainty"])
    knows = next(r for r in long if r["model"] == "a" and r["metric"] == "knows")
    assert knows["items"] == 5 and knows["p"] is None and knows["tied_best"]
    described = {c.name: c.description for c in meta["table_2_uncertainty"].schema.columns}
    assert "percentile bootstrap over facts (1,000 resamples, seed 0)" in described["ci_low"]
    assert "percentile bootstrap over facts" in meta["definitions"].value
    assert "the gradable ones (profiled or direct inference) for Knows" in meta["definitions"].value
    from checks.eval import wikiprofile as ew

    assert ew.profile_report_shares(out.value).passed
    # D.4 on a's three questions: the widths per n, the figure, and a claim not checkable on so few
    widths = inline_rows(meta["d4_stability"])
    assert {r["n"] for r in widths} == set(analysis.BOOTSTRAP_NS) and {r["questions"] for r in widths} == {3}
    assert meta["figure_19"].value.startswith("![plot](data:image/png;base64,")
    assert meta["d4_claim"].value.startswith(
        "- a, direct: not checkable: 3 questions (a 1% width needs at least 1,000 questions)"
    )


def test_a_model_far_below_the_best_is_not_tied_with_it():
    facts = {f"f{i}": "direct_recall" for i in range(40)}
    prof = pl.concat([profiles("good", facts), profiles("poor", dict.fromkeys(facts, "recall_failure"))])
    stored = {r["model"]: r for r in profile_report(prof).value.iter_rows(named=True)}
    assert stored["good"]["knows tied_best"] and not stored["poor"]["knows tied_best"]
    # both encode every fact: tied
    assert stored["good"]["encodes tied_best"] and stored["poor"]["encodes tied_best"]
