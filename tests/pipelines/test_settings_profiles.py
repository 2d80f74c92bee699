"""The settings resources default to the papers' configuration (what a materialization launched
from the web UI with no config uses); ``profile: demo`` is the slice ``make run`` and the
tests select, and a knob set explicitly overrides the profile."""

import dagster as dg
import pytest

from assets.quit.settings import QuitSettings
from assets.recor.settings import RecorSettings
from assets.wikiprofile.settings import WikiProfileSettings

# The papers' values, with where each is stated.
PAPER = {
    "quit_settings": {
        "max_labeled_questions": None,  # 3.2.2: every generated passage is labeled
        "distractors": 10,  # convergence over 10 wrong candidates, as HintEval
        "parametric_repeats": 3,  # 3.1.4: each answer evaluated three times
        "parametric_temperature": 1.0,  # not stated in the paper: the model's own distribution
        "train_size": 5000,  # 3.1.4: 5,000 answerable questions
        "test_size": 2000,  # 3.1.4: 2,000 non-answerable questions
        "rerank_depth": 100,  # section 5: the top 100 retrieved passages
        "labeled_passages_per_question": None,
    },
    "recor_settings": {
        "max_aspects": 12,
        "max_facts": 5,
        "min_new_words": 10,
        "max_questions": None,
        "doc_threshold": 4.0,
        "max_docs_per_turn": 5,
    },
    "wikiprofile_settings": {
        "max_pages": 10000,
        "downsample_to": 5000,
        "n_samples": 8,
        "temperature": 1.0,
        "tau": 0.5,
        "min_words": 50,
        "objects_per_page": 3,
        "nan_strategy": "S2",
        "bootstrap_resamples": 1000,
    },
}
DEMO = {
    "quit_settings": {"max_labeled_questions": 3, "distractors": 3, "test_size": 12, "rerank_depth": None},
    "recor_settings": {"max_aspects": 4, "max_facts": 2, "min_new_words": 4},
    "wikiprofile_settings": {"max_pages": 12, "downsample_to": 8, "n_samples": 4},
}
SETTINGS = {"quit_settings": QuitSettings, "recor_settings": RecorSettings, "wikiprofile_settings": WikiProfileSettings}


def seen_by_a_run(resources: dict, run_config: dict | None = None) -> dict[str, dict]:
    """The settings an asset gets in a run with these resources and this run config."""
    seen = {}

    @dg.asset(required_resource_keys=set(SETTINGS))
    def probe(context: dg.AssetExecutionContext) -> None:
        seen.update({name: dict(getattr(context.resources, name)) for name in SETTINGS})

    defs = dg.Definitions(assets=[probe], resources=resources, jobs=[dg.define_asset_job("probe_job", [probe])])
    assert defs.resolve_job_def("probe_job").execute_in_process(run_config=run_config or {}).success
    return seen


def test_the_launchpad_defaults_and_a_run_without_config_are_the_papers_configuration():
    from pipelines.definitions import defs

    top = defs.get_repository_def().get_top_level_resources()
    for name, paper in PAPER.items():
        schema = top[name].config_schema
        # the resource's default config, which the launchpad shows, and each field's default
        assert schema.default_value["profile"] == "paper" and {k: schema.default_value[k] for k in paper} == paper, name
        fields = schema.config_type.fields
        assert fields["profile"].default_value == "paper" and {k: fields[k].default_value for k in paper} == paper, name
    seen = seen_by_a_run({name: defs.resources[name] for name in SETTINGS})
    for name, paper in PAPER.items():
        assert seen[name]["profile"] == "paper" and {k: seen[name][k] for k in paper} == paper, name


def test_the_demo_profile_picked_in_the_launchpad_is_overridden_by_a_knob():
    from pipelines.definitions import defs

    resources = {name: defs.resources[name] for name in SETTINGS}
    top = defs.get_repository_def().get_top_level_resources()
    # the profile alone, or switched in the whole default config as the launchpad shows it
    for prefilled in (False, True):
        demo = {
            "resources": {
                name: {"config": {**(top[name].config_schema.default_value if prefilled else {}), "profile": "demo"}}
                for name in SETTINGS
            }
        }
        seen = seen_by_a_run(resources, demo)
        for name, values in DEMO.items():
            assert {k: seen[name][k] for k in values} == values, (name, prefilled)
    demo = {"resources": {name: {"config": {"profile": "demo"}} for name in SETTINGS}}
    demo["resources"]["quit_settings"]["config"]["distractors"] = 5
    seen = seen_by_a_run(resources, demo)["quit_settings"]
    assert seen["distractors"] == 5 and seen["test_size"] == 12 and seen["max_labeled_questions"] == 3


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_demo_settings_built_in_code_reach_the_run_as_built(name):
    cls = SETTINGS[name]
    knob, value = next(iter(DEMO[name].items()))
    other = 7 if value != 7 else 8
    built = {n: SETTINGS[n]() for n in SETTINGS} | {name: cls(profile="demo", **{knob: other})}
    seen = seen_by_a_run(built)[name]
    assert seen["profile"] == "demo" and seen[knob] == other
    assert all(seen[k] == v for k, v in DEMO[name].items() if k != knob)
    # a run cannot tell the paper's value from no value: refused rather than silently replaced
    with pytest.raises(ValueError, match="the paper's value"):
        cls(profile="demo", **{knob: PAPER[name][knob]})


def test_make_run_keeps_a_flag_at_the_papers_value_on_the_demo_slice():
    from pipelines.run_default import profiled

    built = profiled(QuitSettings, "demo", max_labeled_questions=0, distractors=2)
    seen = seen_by_a_run(
        {"quit_settings": built, "recor_settings": RecorSettings(), "wikiprofile_settings": WikiProfileSettings()}
    )
    quit = seen["quit_settings"]
    # 0 = every question (the paper's), the preset's 2 candidates, the rest of the demo slice
    assert (quit["max_labeled_questions"], quit["distractors"], quit["test_size"], quit["rerank_depth"]) == (
        None,
        2,
        12,
        None,
    )
    assert profiled(QuitSettings, "demo", distractors=2).profile == "demo"
    assert profiled(QuitSettings, "paper") == QuitSettings()
