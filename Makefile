# Two commands: `make demo` and `make test`. Both build .venv from the project's own files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-*))
export GX_ANALYTICS_ENABLED := false
export PYSPARK_PYTHON := $(abspath $(BIN)/python)

.PHONY: demo test lint bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/reprise demo

test: $(STAMP)
	$(BIN)/ruff check engine jobs orchestration tests benchmarks
	$(BIN)/python -m pytest -rs

lint: $(STAMP)
	$(BIN)/ruff check engine jobs orchestration tests benchmarks

bench: $(STAMP)
	$(BIN)/python -m benchmarks.tumbling

clean:
	rm -rf warehouse .pytest_cache .ruff_cache
