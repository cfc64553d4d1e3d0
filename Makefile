# Two commands: `make demo` and `make test`. Both build .venv from the project's own files.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export JAVA_HOME ?= $(firstword $(wildcard /usr/lib/jvm/java-17-openjdk-*))
export GX_ANALYTICS_ENABLED := false
export PYSPARK_PYTHON := $(abspath $(BIN)/python)
export DAGSTER_HOME ?= $(abspath .dagster_home)

.PHONY: demo test test-slow lint bench bench-cluster bench-scale ui venv jars browser clean docs docs-serve

venv: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

# The Delta Lake jars of the pinned Spark line, for the delta-spark backend: fetched once into
# .venv/delta-jars (checksums pinned in jobs/runtime/delta_jars.py); one error line when the
# download fails.
jars: $(STAMP)
	@$(BIN)/python -m jobs.runtime.delta_jars

# The class-data-sharing archive of the Spark driver's JVM (jobs/runtime/class_archive.py): made
# once per environment; without it (or if it cannot be made) Spark starts as it would.
CLASS_ARCHIVE := $(VENV)/reprise-spark-classes.jsa
$(CLASS_ARCHIVE): $(STAMP)
	$(BIN)/python -m jobs.runtime.make_class_archive || echo "no class archive: Spark starts without one"

$(DAGSTER_HOME)/dagster.yaml:
	mkdir -p $(DAGSTER_HOME) && touch $@

demo: $(STAMP) jars $(CLASS_ARCHIVE) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m orchestration.demo

ui: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	@echo "Dagster UI (with the daemon: schedule and sensor run): open http://127.0.0.1:3000 (Ctrl-C to stop)"
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

# Headless Chromium for the UI test (Debian packages; installed when missing).
browser:
	@command -v chromium >/dev/null || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) jars $(CLASS_ARCHIVE) $(DAGSTER_HOME)/dagster.yaml browser
	$(BIN)/ruff check engine jobs orchestration tests benchmarks
	$(BIN)/python -m pytest -rs

# The slow tests: a Spark standalone cluster on 127.0.0.1 (tests/integration/test_cluster.py).
test-slow: $(STAMP) jars $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m pytest -rs -m slow

lint: $(STAMP)
	$(BIN)/ruff check engine jobs orchestration tests benchmarks

bench: $(STAMP) jars $(CLASS_ARCHIVE)
	$(BIN)/python -m benchmarks.tumbling
	$(BIN)/python -m benchmarks.sliding
	$(BIN)/python -m benchmarks.median
	$(BIN)/python -m benchmarks.qre_kernel
	$(BIN)/python -m benchmarks.qre_operator
	$(BIN)/python -m benchmarks.qre_replay
	$(BIN)/python -m benchmarks.v_shapes
	$(BIN)/python -m benchmarks.spj_memory
	$(BIN)/python -m benchmarks.continuation
	$(BIN)/python -m benchmarks.follow_memory
	$(BIN)/python -m benchmarks.pipeline
	$(BIN)/python -m benchmarks.shared
	$(BIN)/python -m benchmarks.shared --variant derived
	$(BIN)/python -m benchmarks.diff
	$(BIN)/python -m benchmarks.object_store
	$(BIN)/python -m benchmarks.backends
	$(BIN)/python -m benchmarks.startup
	$(BIN)/python -m benchmarks.whole_command

# Tumbling benchmark on a 2-worker standalone cluster vs local[2] (benchmarks/cluster.py).
bench-cluster: $(STAMP)
	$(BIN)/python -m benchmarks.cluster

# Tumbling, sliding and QRE over 1M events with 2, 8, 32 buckets, with and without the key-hash
# layout, and 10M events on Spark and in the driver (benchmarks/scale.py); time per event and
# peak memory at 1M, 10M and 100M events (benchmarks/scale_series.py, about 1.3 GB of disk).
bench-scale: $(STAMP) jars $(CLASS_ARCHIVE)
	$(BIN)/python -m benchmarks.scale
	$(BIN)/python -m benchmarks.scale_series

# The documentation site (MkDocs, strict: a broken link or a page missing from the nav fails).
docs: $(STAMP)
	$(BIN)/python -m benchmarks.report
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:8000

clean:
	rm -rf warehouse site .pytest_cache .ruff_cache
