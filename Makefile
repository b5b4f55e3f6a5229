# Two commands do all the set-up on a fresh machine:
#   make demo   # installs into .venv, then runs the main job on the embedded default worlds
#   make test   # installs into .venv (with dev tools), then lint, types and the test suite

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test setup lint typecheck pytest bench clean

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --disable-pip-version-check uv \
	  && $(BIN)/uv pip install --python $(BIN)/python -q -e '.[dev]' \
	  || $(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/envfactory demo

lint: setup
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: setup
	$(BIN)/mypy src

pytest: setup
	$(BIN)/pytest

test: lint typecheck pytest

bench: setup
	$(BIN)/envfactory bench --json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
