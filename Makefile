# The only entry points: run, test, lint, bench, test-matrix, generate, screenshots, k8s (CI runs `make test`
# through .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
CONFIG ?=
# make test: WORKERS=<n> runs the tests on n pytest-xdist workers grouped by tests/suite.py. 3 by default: on
# 2 cores 4 finished in ~20 min but a run in two had timing failures (docs/development.md "Development" has the figures).
# GROUP=<group of tests/suite.py> runs one group alone (GROUP=lint: the lint).
WORKERS ?= 3
GROUP ?=
# Python may cache the project's own bytecode (and pytest its rewritten test modules): each pytest-xdist worker
# and the controller import the whole suite, ~15 s each from source vs ~7 s cached (a machine may set
# PYTHONDONTWRITEBYTECODE; __pycache__/ is ignored by git)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-matrix lint bench jars system-deps-run system-deps-test unit generate screenshots k8s clean

# uv installs the ~90 packages in about half pip's time (fresh clone, 2 cores: 53 s vs 65 s, the bytecode
# compiled in parallel rather than one file at a time)
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode -e ".[dev,dashboard,pipeline,bench]"
	touch $@

system-deps-run:
	tools/install-system-deps.sh run

system-deps-test:
	tools/install-system-deps.sh test

# harness.localkafka needs only the standard library: the system's Python fetches the jars, beside the pip install
jars: system-deps-run
	$(PYTHON) -m harness.localkafka jars --class-archives

# Exporter + dashboard. Without CONFIG=file.yaml it starts local real Kafka clusters and watches them.
run: $(INSTALLED) jars
	$(BIN)/python -m ctlplane.cli run $(if $(CONFIG),--config $(CONFIG),)  # from the checkout: its harness/ starts the local clusters

# ruff, mypy, the import contracts, hadolint, the alert rules' checks and the manual (mkdocs --strict), side by
# side (tools/suite.py)
lint: $(INSTALLED) system-deps-test
	$(BIN)/python -m tools.suite lint

# Every generated file, in the order they feed each other: the rule files and docs/alerts.md's threshold table
# (from alerts/source/ and ctlplane/exporter/thresholds.py), the Grafana dashboards, deploy/kubernetes/, and
# the docs' tables of releases and of the recorded faults' page sweep (a unit test fails on any drift)
generate: $(INSTALLED)
	$(BIN)/python -m tools.alert_rules
	$(BIN)/python -m grafana.build
	$(BIN)/python -m tools.k8s
	$(BIN)/python -m tools.support_table --write
	$(BIN)/python -m tools.page_sweep --write
	$(BIN)/python -m tools.docs

# The manual's dashboard screenshots (docs/img/), taken by the browser test against the real local KRaft
# cluster (tests/integration/test_dashboard_kraft.py), never by hand
screenshots: $(INSTALLED) system-deps-test jars
	CTLPLANE_UPDATE_DOCS_SCREENSHOTS=1 $(BIN)/pytest -q -p no:randomly tests/integration/test_dashboard_kraft.py

# deploy/kubernetes/ from alerts/, grafana/dashboards/, pyproject.toml and the Dockerfile (tools/k8s.py)
k8s: $(INSTALLED)
	$(BIN)/python -m tools.k8s

unit: $(INSTALLED)
	$(BIN)/pytest -q tests/unit

# The installs side by side, then the lint beside every test but the matrix's, on $(WORKERS) xdist workers
# grouped by tests/suite.py; prints the time per group at the end.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(INSTALLED) system-deps-test jars
	$(BIN)/python -m tools.suite test $(if $(GROUP),--group $(GROUP),) -- -q --durations=20 -m "not matrix" \
		-n $(WORKERS) --dist loadscope --no-loadscope-reorder tests/unit tests/integration tests/e2e

# The real-cluster tests once per Kafka release of ctlplane/exporter/releases.py (not run by CI: docs/kafka-versions.md).
# MATRIX="kraft-3.6 zk-2.8" runs some entries only.
test-matrix: $(INSTALLED) system-deps-test jars
	$(BIN)/python -m tools.matrix $(MATRIX)

bench: $(INSTALLED) system-deps-test jars
	$(BIN)/python -m bench.scrape_cost
	$(BIN)/python -m bench.vs_jmx_exporter
	$(BIN)/python -m bench.fleet
	$(BIN)/python -m bench.read_cost
	$(BIN)/python -m bench.blackhole
	$(BIN)/python -m bench.dashboard_memory
	$(BIN)/python -m bench.scrapers
	$(BIN)/python -m bench.hostile_values
	$(BIN)/python -m bench.hostile_inputs
	$(BIN)/python -m bench.pipeline
	$(BIN)/python -m bench.paging

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
