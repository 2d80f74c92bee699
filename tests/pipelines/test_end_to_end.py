"""``make run``'s default (the quick preset), end to end with the real embedded model, Lucene,
MiniLM, e5-small and FAISS: run once per test session, then checked benchmark by benchmark.
What a run restricted with ``--benchmarks`` leaves out is checked on its plan."""

import dataclasses
import json
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from assets.recor.release import release_name
from pipelines.run_default import PRESETS, main
from tests.pipelines.default_run import DefaultRun

ROOT = Path(__file__).resolve().parents[2]
QUICK = PRESETS["quick"]
DOMAINS = QUICK["recor_domains"].split(",")


@dataclasses.dataclass(frozen=True)
class Run(DefaultRun):
    """The run's folders (instance, storage) and the summary it printed."""

    stdout: str = ""

    def metadata(self, *key: str) -> dict:
        return self.instance().get_latest_materialization_event(dg.AssetKey(list(key))).asset_materialization.metadata


def cells(table: dg.TableMetadataValue, column: str) -> list:
    """One column of a report table shown inline (``assets.common.metadata.report_table``)."""
    return [record.data[column] for record in table.records]


@pytest.fixture(scope="session")
def default_run(background_builds) -> Run:
    """The default ``make run``, started in the background when the session began
    (``tests/pipelines/default_run.py``)."""
    build = background_builds["default_run"]
    return Run(build.log.parent, build.wait())


@pytest.fixture
def plan(monkeypatch, capsys):
    """``make run ARGS --plan``'s output, from ``main`` in this process (the same parse and
    summary as the command; a process each cost 8 s of imports)."""
    monkeypatch.chdir(ROOT)

    def run(*args: str) -> str:
        assert main([*args, "--plan"]) == 0
        return capsys.readouterr().out

    return run


def test_the_default_run_says_what_its_slice_is_and_how_to_run_the_full_one(plan):
    stdout = plan()
    first = stdout.splitlines()[0]
    assert first.startswith(
        'make run, the demo slice (preset quick; the papers\' configuration: make run ARGS="--profile paper", '
        "or materialize from the web UI with no config): QUIT takes 1 question of each source, labels 65 of the "
        "325 passages of 1 question "
        "(convergence over 2 wrong candidates; rerankers reorder the top 10) and evaluates the test questions of the release sample "
        "data/releases/quit (passages of both labels; tables on the test split);"
    )
    assert "RECOR builds and evaluates law from 1 source question each (at most 4 aspects of 2 facts)" in first
    assert f"WikiProfile reads up to 6 pages, keeps up to {QUICK['wikiprofile_facts']} facts" in first
    assert 'make run ARGS="--preset full"' in stdout
    jobs = [line.split(" x ")[0] for line in stdout.splitlines()[2:]]
    assert (
        jobs[0] == "quit_prepare"
        and "recor_generation" in jobs
        and jobs[-2:] == ["wikiprofile_report", "eval_leaderboard"]
    )
    assert "recor_retrieval x 3: " in stdout and "law|minilm" in stdout

    full = plan("--preset", "full")
    assert "RECOR builds and evaluates all 11 domains" in full and "recor_build x 11:" in full
    assert "--preset full" not in full.splitlines()[1]

    paper = plan("--profile", "paper").splitlines()[0]
    assert paper.startswith(
        "make run, the papers' configuration (hours with the embedded model): QUIT labels the 325 "
        "passages of all questions (convergence over 10 wrong candidates);"
    )
    assert (
        "RECOR builds and evaluates all 11 domains from all source questions each (at most 12 aspects of 5 facts)"
        in paper
    )
    assert "WikiProfile reads up to 10000 pages, keeps up to 5000 facts and samples each question 8 times" in paper


@pytest.mark.parametrize(
    ("benchmark", "others"),
    [
        ("quit", ("RECOR", "WikiProfile", "recor_", "wikiprofile_")),
        ("recor", ("QUIT", "WikiProfile", "quit_", "wikiprofile_")),
        ("wikiprofile", ("QUIT", "RECOR", "quit_", "recor_")),
    ],
)
def test_one_benchmark_runs_its_stages_alone(plan, benchmark, others):
    stdout = plan("--benchmarks", benchmark)
    assert f"{benchmark}_" in stdout
    assert not [o for o in others if o in stdout], stdout


def test_unknown_domains_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--recor-domains", "biology,astrology", "--plan"])
    assert exit_.value.code == 2 and "unknown domains ['astrology']" in capsys.readouterr().err


@pytest.mark.slow
def test_default_run_prints_where_everything_is(default_run):
    stdout = default_run.stdout
    assert stdout.splitlines()[1].startswith("make run, the demo slice (preset quick;")
    for line in (
        "QUIT benchmark files",
        "Total Passages",
        "RECOR statistics",
        "RECOR benchmark files",
        "QUIT export",
        "RECOR export",
        "WikiProfile export",
        "WikiProfile:",
        "WikiProfile reports",
        "make ui",
        "make verify",
    ):
        assert line in stdout, line


@pytest.mark.slow
def test_default_run_prints_no_java_line_nor_beta_warning_and_its_log_has_them(default_run):
    """Issue 50: the terminal gets the project's lines, a line per stage run; the log file the
    first line names (under the run's cache folder) gets Anserini's INFO lines, Dagster's step
    lines and its warnings on the beta and preview APIs the project uses."""
    log = Path(re.match(r"the log of this run: (\S+) \(", default_run.stdout).group(1))
    assert log.parent == default_run.cache / "logs"
    assert default_run.stdout.splitlines()[-1] == f"log of this run:          {log}"
    assert re.search(r"^\[1/\d+\] quit_prepare: ok in \d+s, \d+m\d\ds elapsed$", default_run.stdout, re.M)
    terminal = default_run.stdout + default_run.errors.read_text()
    logged = log.read_text()
    for line in ("INFO  [main] index.", "BetaWarning", "PreviewWarning", " - dagster - "):
        assert line not in terminal and line in logged, line


@pytest.mark.slow
def test_default_run_builds_and_exports_quit(default_run):
    storage, instance = default_run.storage, default_run.instance()
    release = storage / "quit" / "release"
    corpus = [json.loads(line) for line in (release / "corpus.jsonl").read_text().splitlines()]
    questions = [q for split in ("train", "dev", "test") for q in json.loads((release / f"{split}.json").read_text())]
    # the quick preset labels a seeded sample of the question's 325 hint orders; the release holds those
    assert len(questions) == QUICK["max_labeled_questions"] == 1 and len(corpus) == QUICK["labeled_passages"] == 65
    assert {c["title"] for c in corpus} == {questions[0]["id"]}
    assert len(questions[0]["hints"]) == 5 and questions[0]["answers"]
    qrels = [
        line.split()
        for split in ("train", "dev", "test")
        for line in (release / f"qrels.{split}.txt").read_text().splitlines()
    ]
    assert {q[2] for q in qrels} == {c["id"] for c in corpus} and {q[3] for q in qrels} <= {"1", "2"}
    # the build in the formats others load (tests/assets/quit/test_export.py reads them back)
    export = storage / "quit" / "export"
    assert (export / "hf" / "README.md").is_file() and (export / "hf" / "croissant.json").is_file()
    assert len((export / "beir" / "corpus.jsonl").read_text().splitlines()) == len(corpus)

    rejects = pl.read_parquet(storage / "quit" / "source_rejects.parquet")
    assert {"duplicate_id", "duplicate_question", "too_few_hints"} <= set(rejects["reason"])
    assert pl.read_parquet(storage / "quit" / "leakage_rejects.parquet").height >= 3

    meta = default_run.metadata("quit", "passage_answers")
    assert meta["llm/calls"].value >= 65 and meta["labeled_passages_per_question"].value == 65
    assert "llm/served_from_cache" in meta and "llm/parse_failures" in meta
    assert default_run.metadata("quit", "statistics")["table1/Total Passages"].value == 65.0
    # the encoder that weighed the references' similarity, in the precision it computed in
    assert default_run.metadata("quit", "question_metadata")["difficulty_encoder"].value == "minilm, float32"

    # every check of the passages ran in the run and passed (tests/checks shows a broken table fails it)
    from pipelines.definitions import defs

    passages = dg.AssetKey(["quit", "passages"])
    checks = [key for key in defs.resolve_asset_graph().asset_check_keys if key.asset_key == passages]
    assert checks
    for check in checks:
        record = instance.get_latest_asset_check_evaluation_record(check)
        assert record is not None and record.status.value == "SUCCEEDED", check
        assert record.event.dagster_event.event_specific_data.passed, check


@pytest.mark.slow
def test_default_run_evaluates_quit(default_run):
    # every reranker on every retriever, the Oracle rows, the reader table
    retrieval, rerank, reading = (
        default_run.metadata("eval", key)
        for key in ("quit_retrieval_metrics", "quit_rerank_metrics", "quit_reader_metrics")
    )
    assert "bm25" in cells(retrieval["table_2"], "retriever") and "oracle" not in cells(
        retrieval["table_2"], "retriever"
    )
    for reranker in ("rankgpt", "pointwise", "upr"):
        assert reranker in cells(rerank["table_7"], "reranker")
        assert f"e5-small+{reranker}" in cells(rerank["table_5"], "system")
        assert f"oracle+{reranker}" in cells(reading["table_8"], "retriever")
    assert "Optimal" in cells(reading["table_8"], "retriever") and "data:image/png" in reading["figure_6"].value


@pytest.mark.slow
def test_default_run_evaluates_quit_on_questions_the_retrievers_tell_apart(default_run):
    """The built question's passages are all label 1 (the embedded model's labels), so the
    evaluation reads the release sample's test questions: both labels, and retrievers that
    differ on the test split the tables report."""
    storage = default_run.storage
    questions = pl.read_parquet(storage / "eval" / "quit_questions.parquet")
    assert questions.height == 2 and default_run.metadata("eval", "quit_questions")["source"].value.startswith(
        "release "
    )
    qrels = pl.read_parquet(storage / "eval" / "quit_qrels.parquet")
    assert set(qrels["label"]) == {1, 2}
    assert qrels.group_by("question_id").agg(pl.col("label").n_unique())["label"].to_list() == [2, 2]
    scores = pl.read_parquet(storage / "eval" / "quit_retrieval_metrics.parquet").filter(pl.col("split") == "test")
    assert sorted(scores["retriever"]) == ["bm25", "e5-small", "minilm"]
    assert scores["ndcg_burges@10"].n_unique() > 1 and scores["mrr"].n_unique() > 1, scores
    report = default_run.metadata("eval", "quit_retrieval_metrics")
    assert len(set(cells(report["table_4"], "ndcg_burges@10"))) > 1
    # make run tags its runs with its profile, and the report says so
    assert report["slice"].value == (
        "2 QUIT questions (test: 2); 3 retrievers (bm25, e5-small, minilm), the Oracle left out; "
        "tables on the test split; profile demo (the run's benchfoundry/profile tag)"
    )
    assert (
        "QUIT retrieval (Table 2 of the paper), test split, the release sample data/releases/quit:"
        in default_run.stdout
    )


@pytest.mark.slow
def test_default_run_builds_recor_conversations_from_mined_negatives(default_run):
    storage, instance = default_run.storage, default_run.instance()
    for asset in ("benchmark", "turns", "quality_scores"):
        assert instance.get_materialized_partitions(dg.AssetKey(["recor", asset])) == set(DOMAINS)
    assert instance.get_materialized_partitions(dg.AssetKey(["eval", "recor_generation"])) == set(DOMAINS)
    stats = pl.read_parquet(storage / "recor" / "statistics.parquet")
    assert stats["domain"].to_list() == DOMAINS
    # the slice's domains are ones where the embedded model keeps a conversation (BENCHMARKS.md)
    assert (stats["#Conv."] > 0).all(), stats
    assert "earth_science" in default_run.metadata("recor", "statistics")["domains_not_built"].value
    for domain in DOMAINS:
        records = [
            json.loads(r)
            for r in (storage / "recor" / "release" / f"{release_name(domain)}_benchmark.jsonl")
            .read_text()
            .splitlines()
        ]
        assert records and all(3 <= r["metadata"]["num_turns"] <= 12 for r in records)
        assert all(len(r["turns"]) == r["metadata"]["num_turns"] for r in records)
        # the retrieval reasoning of every turn
        assert all(t["subquestion_reasoning"] and t["gold_doc_ids"] for r in records for t in r["turns"])
    # the StackExchange domain mined its negatives from the pool
    assert (
        pl.read_parquet(storage / "recor" / "hard_negatives" / "law.parquet")["doc_id"]
        .str.starts_with("law_pool_")
        .all()
    )
    assert "table_31" in default_run.metadata("recor", "quality_report")


@pytest.mark.slow
def test_default_run_evaluates_recor(default_run):
    retrieval = default_run.metadata("eval", "recor_retrieval_metrics")
    table_3 = retrieval["table_3"].value
    assert [c.name for c in table_3.schema.columns][:8] == [
        "retriever",
        "Base",
        "QR",
        "Reas",
        "Hist",
        "H+R",
        "Prev",
        "LLM-Reas",
    ]
    assert "turn -> domain -> macro" in table_3.schema.columns[1].description
    for retriever in ("bm25", "minilm", "e5-small"):
        assert retriever in cells(table_3, "retriever")
    assert "data:image/png" in retrieval["per_domain"].value and "data:image/png" in retrieval["figure_2"].value
    generation = default_run.metadata("eval", "recor_generation_metrics")
    for mode in ("oracle", "retrieved", "no_retrieval"):
        assert mode in cells(generation["table_8"], "mode")
    assert "smollm2" in str(generation["dimensions"].value) and "smollm2" in str(generation["table_25_lexical"].value)


@pytest.mark.slow
def test_default_run_builds_wikiprofile_facts_with_ten_tasks(default_run):
    storage = default_run.storage
    bench = pl.read_parquet(storage / "wikiprofile" / "benchmark.parquet")
    facts = bench["fact_id"].n_unique()
    assert 1 <= facts <= QUICK["wikiprofile_facts"] and bench.height == 10 * facts
    # every fact lost on the way is kept with its step and reason
    lost = pl.concat(
        [
            pl.read_parquet(storage / "wikiprofile" / f"{name}.parquet").select("item", "step", "reason")
            for name in (
                "direct_question_rejects",
                "reverse_question_rejects",
                "natural_question_rejects",
                "final_rejects",
            )
        ]
    )
    assert lost["reason"].null_count() == 0
    funnel = default_run.metadata("wikiprofile", "benchmark")["funnel"].value
    assert f"| 1. pages | {QUICK['wikiprofile_pages']} |" in funnel
    assert f"| 6. facts (downsampled) | {QUICK['wikiprofile_facts']} |" in funnel
    assert f"| 19. distractors (final facts) | {facts} |" in funnel


@pytest.mark.slow
def test_default_run_profiles_the_embedded_model(default_run):
    storage, instance = default_run.storage, default_run.instance()

    def meta(key):
        return default_run.metadata("eval", f"wikiprofile_{key}")

    # the profiling reads the release sample's slice (facts 0 and 8), not the build
    facts = pl.read_parquet(storage / "eval" / "wikiprofile_tasks.parquet")["fact_id"].n_unique()
    assert instance.get_dynamic_partitions("wikiprofile_subjects") == ["smollm2"]
    samples = QUICK["wikiprofile_samples"]

    # the embedded model profiled with 4 samples per question, thinking through the CoT prompts
    responses = pl.read_parquet(storage / "eval" / "wikiprofile_responses" / "smollm2.parquet")
    assert responses.height == facts * (6 + 4 * 2) * samples and responses["error"].null_count() == responses.height
    cot = responses.filter(pl.col("thinking"))
    assert (
        cot.height == facts * 4 * samples
        and cot["response"].str.len_chars().mean()
        > responses.filter(~pl.col("thinking") & pl.col("task").is_in(["direct", "reverse"]))["response"]
        .str.len_chars()
        .mean()
    )
    mc = responses.filter(pl.col("task") == "mc_direct")
    assert mc.group_by("fact_id").agg(pl.col("gold_slot").n_unique())["gold_slot"].to_list() == [4] * facts
    graded = pl.read_parquet(storage / "eval" / "wikiprofile_graded_responses" / "smollm2.parquet")
    assert graded.height == responses.height and graded["label"].null_count() == 0
    assert meta("graded_responses")["grader"].value == "rules (smollm2 is advisory)"
    assert pl.read_parquet(storage / "eval" / "wikiprofile_profiles" / "smollm2.parquet").height == facts

    assert "smollm2" in cells(meta("profile_report")["table_2"], "model")
    for key, plot in (
        ("profile_report", "figure_4"),
        ("popularity_report", "figure_5"),
        ("direction_report", "figures_6_14"),
        ("thinking_report", "figures_8_12"),
        ("robustness_report", "figures_18_19"),
    ):
        assert meta(key)[plot].value.startswith("![plot](data:image/png;base64,"), key
    popularity, direction = (
        meta("popularity_report")["popularity"].value,
        meta("direction_report")["direct_vs_reverse"].value,
    )
    assert ("smollm2", "top") in zip(cells(popularity, "model"), cells(popularity, "tier"))
    assert ("smollm2", "verify") in zip(cells(direction, "model"), cells(direction, "condition"))


@pytest.mark.slow
def test_default_run_profiles_a_fact_the_embedded_model_knows(default_run):
    """The profiling reads facts 0 and 8 of the WikiProfile release sample; the embedded model
    knows fact 8 (Tokyo, the capital of Japan), so Table 2's Knows is not 0 as it is on the
    built facts."""
    storage = default_run.storage
    tasks = pl.read_parquet(storage / "eval" / "wikiprofile_tasks.parquet")
    assert sorted(tasks["fact_id"].unique()) == ["0", "8"]
    assert default_run.metadata("eval", "wikiprofile_tasks")["source"].value.startswith("release ")
    profiles = pl.read_parquet(storage / "eval" / "wikiprofile_profiles" / "smollm2.parquet")
    known = profiles.filter(pl.col("knows").fill_null(False))["fact_id"].to_list()
    assert len(known) >= 1, profiles
    report = pl.read_parquet(storage / "eval" / "wikiprofile_profile_report.parquet").filter(
        pl.col("model") == "smollm2"
    )
    assert report["knows"][0] > 0, report
    assert (
        "WikiProfile: 2 facts of the release sample data/releases/wikiprofile with ten tasks each" in default_run.stdout
    )


@pytest.mark.slow
def test_every_check_of_the_default_run_ran_and_passed_or_only_warned(default_run):
    """The checks ran inside the materializations of the real run; an ERROR-severity failure
    of a non-blocking check would not stop the run, so it is looked for here. The run
    materializes every asset of its stages, so each of their checks ran at least once; the
    fine-tuning stages are the release run's (``test_release_evaluation``), and
    ``test_definitions`` holds that the two runs' stages cover every check of the graph."""
    from pipelines.definitions import defs
    from pipelines.stages import run_plan
    from tests.pipelines.checks_ran import checks_of_stages, failed_and_missing_checks

    failed, missing = failed_and_missing_checks(default_run.instance(), checks_of_stages(defs, run_plan()))
    assert not failed, failed
    assert not missing, missing
