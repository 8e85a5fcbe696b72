# The only entry points: run, test, test-image, lint, bench, test-matrix, generate, screenshots, k8s, chart, wheel (CI runs
# `make test` through .ci/run).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
CONFIG ?=
# make test: WORKERS=<n> runs the tests on n pytest-xdist workers grouped by tests/suite.py. 4 by default: on
# 2 cores 3 took ~25 min, 4 ~22, 5 ~20.5 and 6 ~17.7 (docs/benchmarks.md "The test suite") while the cores were
# still idle 26% of a run. On 2026-12-02 the suite no longer left them idle: three fresh-clone runs on 6 workers
# kept both cores saturated throughout (CPU pressure 86-94%, load 17-36, user+sys ~60 CPU-min) and took 36-40 min
# with 11-20 tests out of time (fault rows' rounds, Admin calls, a JMX read of 8 s), each passing alone; fewer
# lanes side by side give each the CPU its timing needs. Where the CPU went since the 18-min runs is #64's to find.
# GROUP=<group of tests/suite.py> runs one group alone (GROUP=lint: the lint).
WORKERS ?= 4
GROUP ?=
# Python may cache the project's own bytecode (and pytest its rewritten test modules): each pytest-xdist worker
# and the controller import the whole suite, ~15 s each from source vs ~7 s cached (a machine may set
# PYTHONDONTWRITEBYTECODE; __pycache__/ is ignored by git)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test image-for-tests test-image test-matrix lint bench jars wheel system-deps-run system-deps-test unit generate screenshots k8s chart clean

# uv installs the ~90 packages in about half pip's time (fresh clone, 2 cores: 53 s vs 65 s, the bytecode
# compiled in parallel rather than one file at a time). pyspark ships only an sdist, and where the index's answers
# arrive stale (as here) uv downloads and builds it again on every install, keeping each ~1.3 GB build as a new
# revision of its cache: 68 GB in a day of fresh-clone runs filled this disk. The prune keeps the one in use.
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv
	$(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode -e ".[dev,dashboard,pipeline,bench]"
	$(BIN)/uv cache prune -q
	touch $@

system-deps-run:
	tools/install-system-deps.sh run

system-deps-test:
	tools/install-system-deps.sh test

# harness.localkafka needs only the standard library: the system's Python fetches the jars, beside the pip install;
# then tools/client_jars.py places Kafka's client (and its licences) in ctlplane/exporter/sources/admin/jars/, where the
# checkout's ctlplane finds it as an installed wheel does (git-ignored)
jars: system-deps-run
	$(PYTHON) -m harness.localkafka jars --class-archives
	$(PYTHON) -m tools.client_jars

# dist/ctlplane-<version>-py3-none-any.whl, carrying Kafka's client jars (tools/client_jars.py places them
# first): a host with Python and a JDK needs nothing else, no Maven, no network (docs/configuration.md)
wheel: $(INSTALLED) system-deps-run
	$(PYTHON) -m tools.client_jars
	$(BIN)/uv build --quiet --wheel --out-dir dist .

# Exporter + dashboard. Without CONFIG=file.yaml it starts local real Kafka clusters and watches them.
run: $(INSTALLED) jars
	$(BIN)/python -m ctlplane.cli run $(if $(CONFIG),--config $(CONFIG),)  # from the checkout: its harness/ starts the local clusters

# ruff, mypy, the import contracts, hadolint, the alert rules' checks and the manual (mkdocs --strict), side by
# side (tools/suite.py)
lint: $(INSTALLED) system-deps-test
	$(BIN)/python -m tools.suite lint

# Every generated file, in the order they feed each other: the rule files and docs/alerts.md's threshold table
# (from alerts/source/ and ctlplane/exporter/thresholds.py), the Grafana dashboards, deploy/kubernetes/ and
# the Helm chart from the same objects, the docs' tables of releases and of the recorded faults' page
# sweep, and the manual's reference pages and docs/alerts.md's tables of files, alerts and inhibitions
# (tools/docs.py; a unit test fails on any drift)
generate: $(INSTALLED)
	$(BIN)/python -m tools.alert_rules
	$(BIN)/python -m grafana.build
	$(BIN)/python -m tools.k8s
	$(BIN)/python -m tools.helm
	$(BIN)/python -m tools.support_table --write
	$(BIN)/python -m tools.page_sweep --write
	$(BIN)/python -m tools.docs

# The manual's dashboard screenshots (docs/img/), taken by the browser test against the real local KRaft
# cluster (tests/integration/test_dashboard_kraft.py), never by hand
screenshots: $(INSTALLED) system-deps-test jars
	CTLPLANE_UPDATE_DOCS_SCREENSHOTS=1 $(BIN)/pytest -q -p no:randomly tests/integration/test_dashboard_kraft.py

# deploy/kubernetes/ from alerts/, grafana/dashboards/, pyproject.toml and the Dockerfile (tools/k8s.py), and
# the Helm chart deploy/helm/ctlplane/ from the same objects (tools/helm.py)
k8s: $(INSTALLED)
	$(BIN)/python -m tools.k8s
	$(BIN)/python -m tools.helm

# The Helm chart as dist/ctlplane-<version>.tgz (helm package; helm from PATH or built into .cache/bin by
# system-deps-test). Refuses a chart that differs from its sources: run make k8s first.
HELM = $(or $(shell command -v helm),.cache/bin/helm)
chart: $(INSTALLED) system-deps-test
	$(BIN)/python -m tools.helm --check
	$(HELM) package deploy/helm/ctlplane --destination dist

unit: $(INSTALLED)
	$(BIN)/pytest -q tests/unit

# The installs side by side, then the lint beside every test but the matrix's, on $(WORKERS) xdist workers
# grouped by tests/suite.py; prints the time per group at the end.
test:
	CTLPLANE_HELM_BUILD=background $(MAKE) --no-print-directory -j3 --output-sync=target $(INSTALLED) system-deps-test jars \
		image-for-tests
	CTLPLANE_TEST_IMAGE=build $(BIN)/python -m tools.suite test $(if $(GROUP),--group $(GROUP),) -- -q --durations=20 -m "not matrix" \
		-n $(WORKERS) --dist loadscope --no-loadscope-reorder tests/unit tests/integration tests/e2e

# The image of tests/integration/test_image.py built before the suite, beside the installs (which wait on the
# network): from an empty container storage, its bases made from Debian's packages, it took 170 s of 2 quiet
# cores (2026-12-02); inside the suite, at nice 10 under its load, it once ran past its test's 10 min timeout
# and slowed every lane. Built here, the test's own build is the layer cache's (seconds). A no-op where the
# machine cannot build (no buildah, not root): the test skips there with the reason. Its log: $(IMAGE_LOG).
IMAGE_LOG := .cache/image-for-tests.log
image-for-tests: system-deps-test
	mkdir -p .cache
	$(PYTHON) -m tools.image --if-buildable > $(IMAGE_LOG) 2>&1 && tail -n 8 $(IMAGE_LOG) || { tail -n 60 $(IMAGE_LOG); exit 1; }

# The image built from the Dockerfile (tools/image.py: buildah, its bases made from Debian's packages where
# Docker Hub is out of reach) and run against a real cluster (tests/integration/test_image.py), alone. make test
# runs the same test on the image image-for-tests built (CTLPLANE_TEST_IMAGE=build: what is still missing is made
# in its ZooKeeper lane, at nice 10; seconds once the machine's storage has the layers).
test-image: $(INSTALLED) system-deps-test jars
	CTLPLANE_TEST_IMAGE=build $(BIN)/pytest -q -p no:randomly tests/integration/test_image.py

# The real-cluster tests once per Kafka release of ctlplane/exporter/releases.py (not run by CI: docs/kafka-versions.md).
# MATRIX="kraft-3.6 zk-2.8" runs some entries only.
test-matrix: $(INSTALLED) system-deps-test jars
	$(BIN)/python -m tools.matrix $(MATRIX)

bench: $(INSTALLED) system-deps-test jars
	$(BIN)/python -m bench.scrape_cost
	$(BIN)/python -m bench.vs_jmx_exporter
	$(BIN)/python -m bench.fleet
	$(BIN)/python -m bench.read_cost
	$(BIN)/python -m bench.endpoint_read
	$(BIN)/python -m bench.large_broker
	$(BIN)/python -m bench.blackhole
	$(BIN)/python -m bench.dashboard_memory
	$(BIN)/python -m bench.scrapers
	$(BIN)/python -m bench.hostile_values
	$(BIN)/python -m bench.hostile_inputs
	$(BIN)/python -m bench.pipeline
	$(BIN)/python -m bench.paging
	$(BIN)/python -m bench.image
	$(BIN)/python -m bench.wheel

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
