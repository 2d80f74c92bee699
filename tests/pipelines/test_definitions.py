import subprocess
import sys
from pathlib import Path

import dagster as dg

ROOT = Path(__file__).resolve().parents[2]

EXPECTED_QUIT = {
    "source_questions", "source_rejects", "screened_questions", "leakage_rejects", "hint_convergence",
    "selected_questions", "question_metadata", "parametric_answers", "splits", "passages", "passage_answers",
    "passage_labels", "answer_pools", "verification_candidates", "verified_labels", "verified_pools",
    "verification_rejects", "benchmark_questions", "benchmark_corpus", "benchmark_qrels", "release_files", "statistics",
}

EXPECTED_EVAL = {"quit_index", "quit_runs", "quit_retrieval_metrics", "quit_reranked_runs", "quit_rerank_metrics",
                 "quit_reader_answers", "quit_reader_metrics", "recor_queries", "recor_runs", "recor_retrieval_metrics",
                 "recor_generation", "recor_generation_metrics"}

EXPECTED_RECOR = {"source_files", "source_questions", "source_documents", "source_rejects", "hard_negatives", "negative_rejects", "corpus",
                  "aligned_documents", "alignment_rejects", "aspects", "aspect_rejects", "facts", "fact_rejects", "turns",
                  "turn_rejects", "conversations", "conversation_rejects", "benchmark",
                  "quality_scores", "turn_labels", "quality_report", "statistics"}

EXPECTED_WIKIPROFILE = {"source_pages", "source_rejects", "categories", "entities", "entity_rejects", "object_candidates",
                        "object_rejects", "verified_objects", "verification_rejects", "facts", "direct_questions",
                        "direct_question_rejects", "direct_search_filter", "direct_search_rejects",
                        "reverse_questions", "reverse_question_rejects", "reverse_search_filter", "reverse_search_rejects",
                        "natural_questions", "natural_question_rejects", "natural_search_filter", "natural_search_rejects",
                        "benchmark", "final_rejects", "responses", "graded_responses", "profiles", "profile_report",
                        "popularity_report", "direction_report", "thinking_report", "robustness_report"}


def test_asset_graph_snapshot():
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == ({f"quit/{n}" for n in EXPECTED_QUIT} | {f"eval/{n}" for n in EXPECTED_EVAL}
                    | {f"recor/{n}" for n in EXPECTED_RECOR} | {f"wikiprofile/{n}" for n in EXPECTED_WIKIPROFILE})
    assert graph.get(dg.AssetKey(["recor", "turns"])).partitions_def.get_partition_keys()[:2] == ["biology", "earth_science"]
    assert graph.get(dg.AssetKey(["eval", "quit_runs"])).partitions_def.get_partition_keys() == ["bm25", "e5-small", "minilm", "oracle"]
    assert graph.get(dg.AssetKey(["quit", "passage_answers"])).partitions_def.get_partition_keys() == ["smollm2"]
    llm_bound = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).pools == {"llm"}}
    assert {"quit/passage_answers", "quit/parametric_answers", "quit/hint_convergence"} <= llm_bound
    # every asset has a description for the UI and at least the main tables have checks
    assert all(graph.get(k).description for k in graph.get_all_asset_keys())
    checked = {k.asset_key.to_user_string() for k in graph.asset_check_keys}
    assert {"quit/passages", "quit/benchmark_qrels", "quit/benchmark_corpus", "quit/screened_questions"} <= checked


def test_jobs_cover_the_graph_in_stages():
    from pipelines.definitions import defs
    from pipelines.jobs import QUIT_STAGES, RECOR_STAGES, WIKIPROFILE_STAGES

    covered = set()
    for name, _ in QUIT_STAGES + RECOR_STAGES + WIKIPROFILE_STAGES:
        job = defs.resolve_job_def(name)
        covered |= {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    # every asset, RECOR's observed source files included (recor_observe)
    assert covered == ({f"quit/{n}" for n in EXPECTED_QUIT} | {f"eval/{n}" for n in EXPECTED_EVAL}
                       | {f"recor/{n}" for n in EXPECTED_RECOR} | {f"wikiprofile/{n}" for n in EXPECTED_WIKIPROFILE})


def test_dagster_definitions_validate():
    out = subprocess.run([sys.executable, "-m", "dagster", "definitions", "validate", "-w", "workspace.yaml"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
