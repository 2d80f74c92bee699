"""QUIT labeling through a served model gives the labels the in-process model gives.

The upstream stages are built once with the scripted LLM; the ``quit/passage_answers``
partition is then materialized twice from copies of that storage: with alias ``smollm2``
answered by a ``hosted_vllm/`` model behind the session's model server, which the vLLM
resource attaches to (llama.cpp's OpenAI-compatible server serving the embedded model
stands in for vLLM), and with the same alias answered in process."""

import shutil

import dagster as dg
import polars as pl
import pytest

from assets.quit.settings import QuitSettings
from pipelines.definitions import build_defs
from pipelines.jobs import QUIT_STAGES
from pipelines.run_default import run_stages
from resources.llm import LLMResource
from resources.lucene import LuceneResource
from resources.storage import StorageResource
from resources.vllm_server import VLLMServerResource
from tests import scripted
from tests.conftest import SCRIPTED_REGISTRY

UPSTREAM = ("quit_prepare", "quit_parametric", "quit_passages")
PASSAGES = 16
# One question, a slice of its passages: on 2 cores the embedded model answers 0.2 to 2
# passages a second, depending on what else runs.
SETTINGS = QuitSettings(max_labeled_questions=1, distractors=2, labeled_passages_per_question=PASSAGES)
# Both registries name the labeler (and judge) ``smollm2``, the partition key the default
# registry's roles give; only the way the alias is reached differs.
SAMPLING = "sampling: {temperature: 0.0, max_tokens: 24%s}"
ROLES = "roles:\n  quit: {labelers: [smollm2], readers: [smollm2], judge: smollm2}\n"
SERVED = ("models:\n  smollm2: {model: hosted_vllm/smollm2, backend: vllm, "
          # llama.cpp's server applies a repeat penalty of 1.1 unless told otherwise; vLLM
          # and the in-process model apply none.
          + SAMPLING % ", extra_body: {repeat_penalty: 1.0}" + "}\n" + ROLES)
EMBEDDED = "models:\n  smollm2: {model: local/smollm2-135m-instruct, backend: embedded, " + SAMPLING % "" + "}\n" + ROLES


def label(root, registry, cache, server=None) -> tuple[pl.DataFrame, dict]:
    llm = LLMResource(registry_path=str(registry), cache_dir=str(cache), server=server)
    defs = build_defs(storage=StorageResource(root=str(root)), llm=llm, quit_settings=SETTINGS)
    instance = dg.DagsterInstance.ephemeral()
    assert run_stages(defs, instance, [s for s in QUIT_STAGES if s[0] == "quit_labeling"])
    event = instance.get_latest_materialization_event(dg.AssetKey(["quit", "passage_answers"]))
    frame = pl.read_parquet(root / "quit" / "passage_answers" / "smollm2.parquet")
    return frame, event.asset_materialization.metadata


@pytest.mark.slow
def test_served_labeler_labels_like_the_in_process_one(tmp_path, llama_cpp_server):
    scripted.install()
    upstream = tmp_path / "upstream"
    defs = build_defs(storage=StorageResource(root=str(upstream)), quit_settings=SETTINGS,
                      llm=LLMResource(registry_path=SCRIPTED_REGISTRY, cache_dir=str(tmp_path / "scripted-cache")),
                      lucene=LuceneResource())
    assert run_stages(defs, dg.DagsterInstance.ephemeral(), [s for s in QUIT_STAGES if s[0] in UPSTREAM])
    for name in ("served", "embedded"):
        shutil.copytree(upstream, tmp_path / name)
    (tmp_path / "served.yaml").write_text(SERVED)
    (tmp_path / "embedded.yaml").write_text(EMBEDDED)

    server = VLLMServerResource(attach_url=llama_cpp_server.url, startup_timeout=30)
    served, served_meta = label(tmp_path / "served", tmp_path / "served.yaml", tmp_path / "served-cache", server)
    local, local_meta = label(tmp_path / "embedded", tmp_path / "embedded.yaml", tmp_path / "embedded-cache")

    assert served.height == local.height == PASSAGES
    assert served["error"].null_count() == served.height and local["error"].null_count() == local.height
    assert served["model"].unique().to_list() == ["smollm2"]
    assert served_meta["labeler_model"].value == "hosted_vllm/smollm2"
    assert local_meta["labeler_model"].value == "local/smollm2-135m-instruct"
    # every call reached a model: nothing came from a cache the two runs might share
    for meta in (served_meta, local_meta):
        assert meta["llm/errors"].value == 0 and meta["llm/served_from_cache"].value == 0
        assert meta["llm/sent_to_model"].value >= PASSAGES
    cols = ["passage_id", "answer", "judge", "correct"]
    assert served.sort("passage_id").select(cols).equals(local.sort("passage_id").select(cols))
    # the slice is the same seeded sample of hint orders for the labeled question
    assert served["passage_id"].str.split("_").list.get(-1).n_unique() == PASSAGES
    assert served["answer"].drop_nulls().len() > 0
