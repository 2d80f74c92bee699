"""Which inputs a report keeps (assets/common/provenance.py): the rules on hand-made builds, and
the builds as an instance records them."""

import dagster as dg

from assets.common import provenance
from assets.common.metadata import PROFILE_TAG

KEY = dg.AssetKey(["eval", "recor_runs"])
PARENT = dg.AssetKey(["eval", "recor_queries"])


def build(profile: str | None = "paper", storage_id: int = 10, code: str | None = "2", **kw) -> provenance.Build:
    return provenance.Build(KEY, "law|bm25", "run-1", profile, code, storage_id, **kw)


def test_an_input_is_kept_only_under_the_report_profile_current_code_and_after_its_upstream():
    assert (
        provenance.leave_out(build(), "paper", "2", [provenance.Build(PARENT, "law", "run-0", "paper", "1", 9)]) is None
    )
    assert (
        provenance.leave_out(build("demo"), "paper")
        == "built under profile demo (run run-1); the report's is profile paper"
    )
    assert provenance.leave_out(build(None), "paper").startswith("built under no profile (run run-1)")
    assert provenance.leave_out(build(), None).endswith("the report's is no profile")
    assert provenance.leave_out(build(code="1"), "paper", "2") == "built by code version 1; its definition's is 2 now"
    # the definition without a code version: Dagster writes the run id, which nothing compares
    assert provenance.leave_out(build(code="run-1"), "paper", None) is None
    newer = [provenance.Build(PARENT, p, "run-2", "paper", "1", 11 + i) for i, p in enumerate("abcd")]
    assert (
        provenance.leave_out(build(), "paper", "2", newer)
        == "stale: eval/recor_queries[a], eval/recor_queries[b], eval/recor_queries[c] and 1 more materialized after it"
    )
    # the profile is judged first: a rebuilt upstream does not hide that another profile built it
    assert provenance.leave_out(build("demo", code="1"), "paper", "2", newer).startswith("built under profile demo")


def test_an_input_without_a_recorded_materialization_has_no_profile():
    unrecorded = provenance.Build(KEY, "law|bm25")
    assert provenance.leave_out(unrecorded, None, "2") is None
    assert provenance.leave_out(unrecorded, "paper", "2") == (
        "no materialization of it is recorded in this instance; the report's is profile paper"
    )


PARTS = dg.StaticPartitionsDefinition(["law", "biology"])


@dg.asset(key=PARENT, partitions_def=PARTS, code_version="1")
def parent() -> int:
    return 1


@dg.asset(key=KEY, partitions_def=PARTS, code_version="2", deps=[parent])
def child() -> int:
    return 2


@dg.asset(deps=[child])
def report(context: dg.AssetExecutionContext) -> dict:
    builds = provenance.Builds(context.instance)
    read = [builds.latest(KEY, p) for p in ("law", "biology")]
    return {
        "read": read,
        "profile": provenance.report_profile(context, read),
        "upstream": {p: builds.upstream(child, KEY, p) for p in ("law", "biology")},
        "whole": builds.upstream(report, report.key),
    }


class Kept(dg.IOManager):
    def handle_output(self, context, obj):
        self.value = obj

    def load_input(self, context):
        return None


def test_builds_read_each_partition_run_profile_and_code_version_and_what_it_was_built_from():
    instance, io = dg.DagsterInstance.ephemeral(), Kept()
    run = {}
    for part, asset, profile in (
        ("law", parent, "demo"),
        ("law", child, "demo"),
        ("biology", parent, "paper"),
        ("biology", child, "paper"),
        ("law", parent, "paper"),
    ):
        result = dg.materialize(
            [asset], partition_key=part, instance=instance, tags={PROFILE_TAG: profile}, resources={"io_manager": io}
        )
        run[part, asset.key] = result.run_id
    dg.materialize([report], instance=instance, resources={"io_manager": io})
    law, biology = io.value["read"]
    assert (law.partition, law.run_id, law.profile, law.code_version) == ("law", run["law", KEY], "demo", "2")
    assert (biology.run_id, biology.profile) == (run["biology", KEY], "paper")
    # an untagged run keeps the newest input's profile
    assert io.value["profile"] == (
        "paper",
        f"paper (the run has no {PROFILE_TAG} tag: the newest input's, eval/recor_runs[biology])",
    )
    upstream = io.value["upstream"]
    assert [(u.name, u.run_id) for u in upstream["law"]] == [("eval/recor_queries[law]", run["law", PARENT])]
    assert (
        provenance.leave_out(law, "demo", "2", upstream["law"])
        == "stale: eval/recor_queries[law] materialized after it"
    )
    assert provenance.leave_out(biology, "paper", "2", upstream["biology"]) is None
    # an unpartitioned report reads every partition of what it is built from
    assert sorted(b.name for b in io.value["whole"]) == ["eval/recor_runs[biology]", "eval/recor_runs[law]"]
