"""Which steps need a GPU node, as one op tag that Kubernetes reads.

The rule: a step is GPU-bound when it runs a torch model in its own process. That is every
step that encodes with a dense or multi-vector encoder (``resources/encoders.py``,
``resources/multi_vector.py``: the FAISS and token indexes, dense and late-interaction
searches, QUIT's question difficulties and statistics), reranks with a seq2seq or
cross-encoder model, or fine-tunes (``assets/eval/quit/finetune/steps.py``):
sentence-transformers and bert-score put a model on the GPU when torch sees one, so such a
step on a CPU node runs there at CPU speed.

The exception: a step whose only model work is in ``CPU_MODEL_CALLS`` runs on a CPU node.
Those calls pin the bundled MiniLM to the CPU inside LLM steps: RECOR's similarity filter in
its builder steps (``aligned_documents``, ``aspects``, ``facts``) and BERTScore in the
generation evaluations (``eval/recor_generation``, ``eval/reteco_generation``). At RECOR's
size (2,971 turns) those steps spend hours waiting on LLM calls, which a GPU node would idle
through, and their model work is small. On the bundled RECOR sample (22 questions, scripted
LLM) the filter encodes 38 texts a question in ``aligned_documents``, 28 in ``aspects`` and
26 in ``facts`` (their ``similarity/texts_encoded`` over the questions). ``bertscore_f1``
scored 1,000 distinct pairs of 49-word answers in 123 to 150 s on a two-core machine at load
average 5 (a benchmark beside it), so about 20 minutes for a generator's 9k pairs there.

QUIT's ``question_metadata`` stays GPU-bound although it calls an LLM too: beside one LLM
call per question for its type it encodes up to about 74k reference passages with MiniLM
for the difficulties, work a GPU shortens.

LLM calls alone do not make a step GPU-bound. Served models are vLLM replicas in their own GPU
Deployment (``deploy/helm/vllm.yaml``, one replica per GPU); a step that only calls them is an
HTTP client and runs on a CPU node, as do the QUIT labeling steps. The embedded llama.cpp
model runs on the CPU.

GPU-bound assets carry ``op_tags=GPU_STEP_TAGS``; dagster-k8s's ``k8s_job_executor``
(``pipelines.cluster_k8s``) merges the tag over the step pod's defaults, which put every
other pod on the CPU pool (``runLauncher.config.k8sRunLauncher.runK8sConfig`` in
``deploy/helm/values.yaml``). Other executors ignore the tag. ``tests/deploy/test_placement.py``
finds the GPU-bound steps from what their code reaches (stopping at ``CPU_MODEL_CALLS``), not
from the tag, and checks that exactly those ask for a GPU.
"""

from __future__ import annotations

# The node label that names a node's pool, and its two values: label the node groups
# (`kubectl label nodes <node> benchfoundry/pool=gpu`) or set it on the node pools.
POOL_LABEL = "benchfoundry/pool"
CPU_POOL = "cpu"
GPU_POOL = "gpu"
# GPU node pools carry this taint (GKE and the NVIDIA GPU operator set it), so only pods
# that tolerate it (GPU steps, vLLM replicas) are scheduled there.
GPU_TAINT = "nvidia.com/gpu"

# The functions that run a torch model pinned to the CPU, by qualified name (strings: this
# floor imports no benchmark's module). The placement test stops at them.
CPU_MODEL_CALLS = frozenset({"assets.recor.assets._similarity", "assets.eval.recor.steps.bertscore_f1"})

GPU_STEP_TAGS = {
    "dagster-k8s/config": {
        "container_config": {"resources": {"limits": {"nvidia.com/gpu": 1}}},
        "pod_spec_config": {
            "node_selector": {POOL_LABEL: GPU_POOL},
            "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
}
