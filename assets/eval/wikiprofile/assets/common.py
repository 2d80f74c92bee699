"""What WikiProfile's evaluation assets share: their key prefix and group, and how a report
states what it counts, Table 2 and the other inline tables, and the models profiled without
a thinking run."""

import dagster as dg
import polars as pl

from assets.common.metadata import report_slice, report_table, run_profile, why_empty
from assets.common.wiring import Wiring
from assets.eval.wikiprofile import analysis
from assets.eval.wikiprofile import rules as method

# Keyed as QUIT's and RECOR's evaluations are (eval/wikiprofile_<name>), shown beside the build.
PREFIX, GROUP = "eval", "wikiprofile"
wiring = Wiring(PREFIX, GROUP)


def profiles_slice(profiles: pl.DataFrame, context) -> str:
    """The subject models and facts a WikiProfile report counts, and the run's profile."""
    models = sorted(profiles["model"].unique().to_list()) if profiles.height else []
    return report_slice(
        f"{len(models)} subject models ({', '.join(models) or 'none'}), "
        f"{profiles['fact_id'].n_unique() if profiles.height else 0} facts",
        run_profile(context),
    )


NO_MODEL = "no model is profiled: materialize eval/wikiprofile_profiles for a subject model"
NO_GRADED = "no question is graded: materialize eval/wikiprofile_graded_responses for a subject model"


def inline_tables(tables: dict[str, tuple[pl.DataFrame, dict[str, str], str]]) -> dict:
    """Each analysis table inline under its name, its columns described, with ``why_empty``
    naming the empty ones and their reason."""
    return {
        **{name: report_table(frame, definitions) for name, (frame, definitions, _) in tables.items()},
        **why_empty({name: (frame, reason) for name, (frame, _, reason) in tables.items()}),
    }


def plot_widths(ax, stability: pl.DataFrame) -> None:
    """Figure 19 on ``ax``: the 90% width of the share of questions with g > tau against the
    samples per question, a line per model and task (:func:`analysis.bootstrap_stability`),
    with the paper's bound at n = 8."""
    for (model, task), part in sorted(stability.group_by("model", "task"), key=lambda kv: kv[0]):
        ax.plot(part["n"], part["width"], marker="o", label=f"{model} {task}")
    ax.axhline(analysis.D4_BOUND, color="grey", linestyle=":", linewidth=1)
    ax.axvline(analysis.D4_N, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("samples per question (n)")
    ax.set_ylabel("90% interval width (share of questions)")
    ax.set_title("Figure 19: bootstrap width by n", fontsize=9)
    if stability.height:
        ax.legend(fontsize=7)


def thinking_metadata(missing: list[str]) -> dict:
    """Names the models profiled without their thinking run: their Knows(+Think) and the
    profiles that need it are null, not zero."""
    if not missing:
        return {"thinking_run_missing": "none"}
    return {
        "thinking_run_missing": ", ".join(missing),
        "thinking_run_missing_reason": "no knowledge question was graded with thinking (a model without a thinking "
        "setting, or a run not asked); KT is unknown, so Knows(+Think), the Figure 4 "
        "bar and the four profiles that KT separates are null",
    }


# Table 2's headers name what each share counts (the full wording is in the ``definitions``
# metadata, from :data:`method.DEFINITIONS`).
TABLE_2_HEADERS = {
    "encodes": "Encodes",
    "knows": "Knows (incl. direct inf.)",
    "knows_thinking": "Knows(+Think) (incl. direct inf.)",
    "knows_thinking_excl_direct": "Knows, Fig. 4 (excl. direct inf.)",
    "encoding_failure": "Enc. Fail",
    "recall_failure": "Recall Fail",
    "direct_recall": "Direct Recall",
    "recall_with_thinking": "Recall w/ Think",
    "inference_without_encoding": "Inf. w/o Enc",
    method.UNDECIDED[True]: "E, not K0 (Recall Fail + w/ Think)",
    method.UNDECIDED[False]: "not E, not K0 (Enc. Fail + Inf. w/o Enc)",
    "excluded_ungradable": "Excluded: ungradable (O/P)",
    "excluded_direct_inference": "Excluded: direct inf.",
}


def table_2(table: pl.DataFrame, **more: str) -> dg.TableMetadataValue:
    """Table 2 rendered inline, under the paper's headers, each described as
    :data:`method.DEFINITIONS` says (a share over no facts, NaN, is left blank); ``more``
    describes the columns a variant adds (the thresholds of the sweep)."""
    described = {
        "model": analysis.MODEL,
        "facts": "the model's facts, the excluded ones included",
        "profiled": "facts given a profile (one of the five, or an undecided union without a thinking "
        "run): neither ungradable nor direct inference",
        **{TABLE_2_HEADERS.get(c, c): d for c, d in method.DEFINITIONS.items()},
        **more,
    }
    return report_table(table.rename(TABLE_2_HEADERS), described)
