# Two commands do all set-up: `make run` and `make test` create .venv with pip when missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export FLWR_TELEMETRY_ENABLED := 0
export FLWR_DISABLE_UPDATE_CHECK := 1
export RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO := 0
# Real data: use ../shared/datasets when it sits beside the checkout and nothing else is set.
FEDGRAPH_DATA_ROOT ?= $(shell test -d ../shared/datasets && cd ../shared/datasets && pwd)
ifneq ($(FEDGRAPH_DATA_ROOT),)
export FEDGRAPH_DATA_ROOT
endif

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

.PHONY: run test test-integration bench docs flwr-run
run: $(VENV)/.installed
	$(PY) experiments/run_round.py

# The suite in two tiers, both run by CI (.ci/run): the unit tests (tests/unit, about 4 minutes on
# 2 cores), then the end-to-end federations, sweeps and deployments (tests/integration, about 10).
# Each pytest-xdist worker runs torch on one thread (tests/conftest.py).
test: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m pytest -q -n auto tests/unit

test-integration: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --dist loadfile tests/integration

# The README's attack table and defense and metric lists, from the registries (a test keeps them equal).
docs: $(VENV)/.installed
	$(PY) -m fedgraph_sim attacks --write README.md

bench: $(VENV)/.installed
	$(PY) benchmarks/bench_foundation.py
	$(PY) benchmarks/bench_round.py
	$(PY) benchmarks/bench_dp_sgd.py

# The same apps through Flower's CLI (a local SuperLink with the simulation engine). The SuperLink
# stays up after the run and installs the app's dependencies into its own runtime env the first
# time; stop it with `pkill -f flower-superlink`.
flwr-run: $(VENV)/.installed
	mkdir -p .flwr && test -f .flwr/config.toml || cp experiments/flwr_config.toml .flwr/config.toml
	FLWR_HOME=$(CURDIR)/.flwr PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/flwr run . --stream
