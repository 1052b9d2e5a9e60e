# Two commands do all set-up: `make run` and `make test` create .venv with pip when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export FLWR_TELEMETRY_ENABLED := 0
export FLWR_DISABLE_UPDATE_CHECK := 1
export RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO := 0

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

.PHONY: run test bench
run: $(VENV)/.installed
	$(PY) -m fedgraph_sim demo

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_foundation.py
