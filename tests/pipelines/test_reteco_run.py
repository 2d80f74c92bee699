"""``make run ARGS="--reteco RELEASE"``: RETECO Track 2's profile, checked on its plan and
config (in process, nothing run)."""

from pathlib import Path

import dagster as dg
import pytest

from pipelines import run_default, stages, summary
from resources.storage import StorageResource

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "releases" / "recor"


@pytest.fixture
def plan(capsys):
    """``main(args + --plan)``'s exit status and output."""

    def run(*args: str) -> tuple[int, str, str]:
        try:
            status = run_default.main([*args, "--plan"])
        except SystemExit as e:
            status = e.code
        out = capsys.readouterr()
        return status, out.out, out.err

    return run


def test_the_reteco_profile_evaluates_recor_alone_from_its_release_up_to_the_task_table(plan, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, out, _ = plan("--reteco", "data/releases/recor")
    assert status == 0
    lines = out.splitlines()
    # a relative release is the working directory's; every domain it holds, not the preset's law alone
    assert lines[0].startswith(
        f"make run --reteco: RECOR as SemEval-2027 RETECO Track 2 scores it, from the release at {SAMPLE} "
        "(every conversation of biology, law)"
    )
    assert not [line for line in lines if "--preset full" in line]
    stages = [line.split(" x ")[0] for line in lines[2:]]
    assert stages == [
        "recor_eval_source",
        "recor_queries",
        "recor_retrieval",
        "recor_retrieval_report",
        "recor_generation",
        "recor_generation_report",
        "reteco_generation",
        "reteco_report",
    ]
    assert "recor_eval_source x 2: biology, law" in out and "biology|bm25" in out and "law|bm25" in out

    status, out, _ = plan("--reteco", str(SAMPLE), "--recor-domains", "law", "--profile", "paper")
    assert status == 0 and "recor_queries x 1: law" in out and "biology" not in out


@pytest.mark.parametrize(
    "args, error",
    [
        (("--reteco", "/nowhere/recor"), "--reteco: no RECOR domain under /nowhere/recor (expected data/benchmark/"),
        (
            ("--reteco", str(SAMPLE), "--recor-domains", "politics"),
            f"--recor-domains: the release at {SAMPLE} holds biology, law only",
        ),
        (("--reteco", str(SAMPLE), "--benchmarks", "quit"), "--reteco evaluates RECOR alone"),
        (("--reteco", str(SAMPLE), "--from-release"), "--reteco evaluates its own release"),
    ],
)
def test_a_reteco_run_that_cannot_be_is_refused_before_anything_runs(plan, args, error):
    status, out, err = plan(*args)
    assert status == 2 and error in err and "recor_" not in out


def test_the_reteco_source_config_reads_the_whole_release():
    from pipelines.definitions import defs

    config = stages.reteco_configs(str(SAMPLE))
    assert config == {
        "recor_eval_source": {
            "ops": {"eval_recor_source": {"config": {"source": "release", "release_path": str(SAMPLE)}}}
        }
    }
    job = defs.resolve_job_def("recor_eval_source")
    assert dg.validate_run_config(job, config["recor_eval_source"])


def test_the_run_ends_with_the_official_table_of_the_release_domains(tmp_path, capsys):
    import polars as pl

    from assets.eval.recor.reteco import rules as reteco

    # eval/reteco_retrieval's per-turn scores; biology was materialized by an earlier run, and
    # this release holds law alone
    rows = [("c1_turn_1", "law", 1, 1.0), ("c1_turn_2", "law", 2, 0.5), ("c9_turn_1", "biology", 1, 0.0)]
    scores = pl.DataFrame(
        [
            {
                "qid": q,
                "task_qid": reteco.to_task_qid(q),
                "domain": d,
                "conversation_id": q.split("_")[0],
                "turn_id": t,
                "depth": reteco.depth(t),
                "run": "bm25/baseline",
                **dict.fromkeys(reteco.METRICS, v),
            }
            for q, d, t, v in rows
        ],
        schema_overrides={"turn_id": pl.Int32},
    )
    (tmp_path / "eval" / "reteco_generation").mkdir(parents=True)
    scores.write_parquet(tmp_path / "eval" / "reteco_retrieval.parquet")
    # eval/reteco_generation's law partition: one 2b system, 3 on every dimension of turn 1, none for turn 2
    judged = (
        scores.filter(pl.col("domain") == "law")
        .drop("run")
        .with_columns(
            *(pl.lit(None, dtype=pl.Float64).alias(m) for m in reteco.METRICS),
            pl.lit("g").alias("system"),
            pl.lit("2b").alias("subtrack"),
            pl.lit(None, dtype=pl.String).alias("run"),
            *(pl.Series(d, [0.5, 0.0]) for d in reteco.DIMENSIONS),
            pl.Series("answered", [True, False]),
            pl.lit(0, dtype=pl.UInt32).alias("judge_failures"),
            *(pl.lit(0.5).alias(m) for m in ("rouge_l", "meteor", "bertscore_f1")),
        )
    )
    judged.write_parquet(tmp_path / "eval" / "reteco_generation" / "law.parquet")
    summary.print_reteco(StorageResource(root=str(tmp_path)), "/data/RECOR", ["law"])
    out = capsys.readouterr().out
    assert "python -m pipelines.reteco score --release /data/RECOR FILE" in out
    assert "official table, 2 target turns of law" in out
    row = next(line for line in out.splitlines() if "bm25/baseline" in line)
    assert [cell.strip() for cell in row.strip("|").split("|")] == ["bm25/baseline", "2", *["0.7500"] * 4]
    board = next(line for line in out.splitlines() if line.startswith("| 2b"))
    assert [cell.strip() for cell in board.strip("|").split("|")][:2] == ["2b", "g"] and "0.2500" in board
    # each figure with its interval and mark (issue 48): the two turns' 1.0 and 0.5, the best run marked
    assert "The official table's intervals, each run against the best (value [95% interval]; *" in out
    intervals = [line for line in out.splitlines() if "bm25/baseline" in line][1]
    assert [cell.strip() for cell in intervals.strip("|").split("|")] == ["bm25/baseline", *["0.75 [0.5, 1.0]*"] * 4]
    macro = [line for line in out.splitlines() if line.startswith("| 2b")][1]
    assert [cell.strip() for cell in macro.strip("|").split("|")] == ["2b", "g", "0.25 [0.0, 0.5]*"]


def test_a_build_prints_recors_table_3_with_intervals_and_marks(tmp_path, capsys):
    """make run's RECOR lines: Table 3 of eval/recor_retrieval_metrics's per-turn scores, each
    cell with its interval, the strategies of each retriever marked against its best."""
    import numpy as np
    import polars as pl

    (tmp_path / "recor").mkdir()
    (tmp_path / "eval").mkdir()
    pl.DataFrame({"domain": ["law"], "#Turns": [30]}).write_parquet(tmp_path / "recor" / "statistics.parquet")
    good = np.random.default_rng(3).random(30) * 0.4 + 0.6
    pl.concat(
        pl.DataFrame(
            {
                "domain": "law",
                "conversation_id": [f"c{i}" for i in range(30)],
                "qid": [f"c{i}_turn_1" for i in range(30)],
                "turn_id": 1,
                "retriever": "bm25",
                "strategy": strategy,
                **dict.fromkeys(["ndcg@10", "map@10", "recall@10", "mrr"], values),
            }
        )
        for strategy, values in (("baseline", good - 0.5), ("history", good), ("history_reasoning", good))
    ).write_parquet(tmp_path / "eval" / "recor_retrieval_metrics.parquet")
    summary.print_recor_build(StorageResource(root=str(tmp_path)))
    out = capsys.readouterr().out
    assert "RECOR retrieval (Table 3 of the paper)" in out and "(value [95% interval]; * the best" in out
    header = next(line for line in out.splitlines() if line.startswith("| retriever"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == ["retriever", "Base", "Hist", "H+R"]
    cells = [cell.strip() for cell in next(line for line in out.splitlines() if "| bm25" in line).strip("|").split("|")]
    assert not cells[1].endswith("*") and cells[2].endswith("]*") and cells[2] == cells[3]
    assert next(line for line in out.splitlines() if "| Average" in line)
    assert "RECOR benchmark files" in out
