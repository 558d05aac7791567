# Quick start: `make test` (everything, on a fresh machine) and `make run` (the manager against a local
# simulated GPU cluster). See README.md.
SHELL := /bin/bash
STATE_DIR ?= $(HOME)/.cache/ome/devcluster
PY := .venv/bin/python

.PHONY: test test-unit test-e2e run venv binaries cluster-up cluster-down cluster-status lint crds bench soak

test:
	bash hack/test.sh

venv:
	bash hack/setup-venv.sh

binaries:
	bash ome/devcluster/build_control_plane.sh

test-unit: venv
	$(PY) -m pytest tests/unit -q

test-e2e: venv binaries
	$(PY) -m pytest tests/e2e -q

lint: venv
	.venv/bin/ruff check ome tests bench
	.venv/bin/mypy

run:
	bash hack/run.sh $(ARGS)

cluster-up: venv
	.venv/bin/ome-dev cluster up --state-dir $(STATE_DIR)

cluster-down: venv
	.venv/bin/ome-dev cluster down --state-dir $(STATE_DIR)

cluster-status: venv
	.venv/bin/ome-dev cluster status --state-dir $(STATE_DIR)

crds: venv
	$(PY) -m ome.api.crdgen --out config/crd

bench: venv
	bash hack/bench.sh

# A 20-minute soak at steady churn (bench/bench_soak.py); ARGS="--n 10 --minutes 1" for a quick run.
soak: venv
	$(PY) bench/bench_soak.py $(ARGS)
