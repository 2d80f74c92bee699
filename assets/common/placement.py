"""Which steps need a GPU node, as one op tag that Kubernetes reads.

The rule: a step is GPU-bound when it runs a torch model in its own process. That is every
step that encodes with a dense or multi-vector encoder (``resources/encoders.py``,
``resources/multi_vector.py``: the FAISS and token indexes, dense and late-interaction
searches, QUIT's question difficulties and statistics), reranks with a seq2seq or
cross-encoder model, fine-tunes (``assets/eval/quit/finetune/steps.py``), or runs the bundled MiniLM as
part of an LLM step (RECOR's similarity filter in its builder steps, BERTScore in the
generation evaluations): sentence-transformers and bert-score put a model on the GPU when
torch sees one, so such a step on a CPU node runs there at CPU speed.

LLM calls alone do not make a step GPU-bound. Served models are vLLM replicas in their own GPU
Deployment (``deploy/helm/vllm.yaml``, one replica per GPU); a step that only calls them is an
HTTP client and runs on a CPU node, as do the QUIT labeling steps. The embedded llama.cpp
model runs on the CPU.

GPU-bound assets carry ``op_tags=GPU_STEP_TAGS``; dagster-k8s's ``k8s_job_executor``
(``pipelines.cluster_k8s``) merges the tag over the step pod's defaults, which put every
other pod on the CPU pool (``runLauncher.config.k8sRunLauncher.runK8sConfig`` in
``deploy/helm/values.yaml``). Other executors ignore the tag. ``tests/deploy/test_placement.py``
finds the GPU-bound steps from what their code reaches, not from the tag, and checks that
exactly those ask for a GPU.
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

GPU_STEP_TAGS = {
    "dagster-k8s/config": {
        "container_config": {"resources": {"limits": {"nvidia.com/gpu": 1}}},
        "pod_spec_config": {
            "node_selector": {POOL_LABEL: GPU_POOL},
            "tolerations": [{"key": GPU_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
        },
    }
}
