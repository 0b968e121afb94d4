# tao-slurm-tui — `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CLUSTER := scripts/sandbox-cluster
# Cluster tests are independent and mostly wait on SLURM: run them side by side.
PYTEST_WORKERS ?= 6
# The newest Python the project supports: its unit and TUI tiers run in a venv of their own.
PY_NEWEST ?= 3.13
NEWEST_VENV := .venv-$(PY_NEWEST)

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2}'

$(BIN)/tao-slurm-tui: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

.PHONY: venv
venv: $(BIN)/tao-slurm-tui ## Create .venv and install the app with its test extra

.PHONY: cluster-up
cluster-up: ## Install (apt, enroot + Pyxis build, registry, image) and start the sandbox cluster
	$(CLUSTER) install
	TAO_SLURM_TUI_PYTHON=$(BIN)/python $(CLUSTER) up

.PHONY: cluster-down
cluster-down: ## Stop the sandbox cluster's daemons
	$(CLUSTER) down

.PHONY: demo
demo: venv cluster-up ## Bring up the sandbox, install its NGC key, open the app with a TAO job (classification_pyt train)
	$(BIN)/tao-slurm-tui --profile sandbox creds install < "$$($(CLUSTER) info --json | jq -r .ngc_key_file)"
	$(BIN)/tao-slurm-tui --profile sandbox --spec examples/tao-classification.toml

.PHONY: test-tools
test-tools: ## apt-get what the tests drive besides the cluster (tmux: the app in a real terminal; tcsh: a csh login shell)
	@command -v tmux >/dev/null 2>&1 && command -v tcsh >/dev/null 2>&1 || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tmux tcsh </dev/null; }

.PHONY: test
test: venv test-tools ## Install what the tests need, bring up the sandbox, run the whole suite, stop the sandbox
	$(CLUSTER) install
	trap '$(CLUSTER) down' EXIT; \
	TAO_SLURM_TUI_PYTHON=$(BIN)/python $(CLUSTER) up && \
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -ra --durations=15 -m "not serial" $(PYTEST_ARGS) && \
	$(BIN)/python -m pytest -ra --durations=10 -m serial $(PYTEST_ARGS)

.PHONY: watch-first-hour
watch-first-hour: venv test-tools ## Type the first-hour journey into the real app on the sandbox (tmux attach -r -t first-hour)
	flock -s /tmp/tao-cluster.lock $(BIN)/python scripts/first-hour-watch $(WATCH_ARGS)

.PHONY: test-unit
test-unit: venv ## Unit and TUI tests only: no cluster, no root (tmux/tcsh tests skip where missing)
	$(BIN)/python -m pytest -n 2 -m "not cluster" -ra $(PYTEST_ARGS)

.PHONY: venv-newest
venv-newest: ## A venv on the newest supported Python (.venv-3.13; found on PATH, in pyenv or uv)
	scripts/newest-python-venv $(PY_NEWEST) $(NEWEST_VENV)

.PHONY: test-newest
test-newest: venv-newest ## Unit and TUI tests on the newest supported Python (no cluster, no root)
	$(NEWEST_VENV)/bin/python -m pytest -n 2 -m "not cluster" -ra -p no:cacheprovider tests/unit tests/tui $(PYTEST_ARGS)

.PHONY: check
check: venv ## Lint, format check and mypy --strict
	$(BIN)/ruff check tao_slurm_tui tests bench scripts/sandbox scripts/sandbox/bin/nvidia-smi
	$(BIN)/ruff format --check tao_slurm_tui tests bench scripts/sandbox scripts/sandbox/bin/nvidia-smi
	$(BIN)/mypy

.PHONY: bench
bench: venv ## Benchmarks on the sandbox (prints side-by-side ratios)
	TAO_SLURM_TUI_PYTHON=$(BIN)/python $(CLUSTER) up
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

.PHONY: screenshots
screenshots: venv ## Regenerate screenshots/*.svg from the app (the real back end on a fake cluster)
	$(BIN)/python scripts/screenshots.py

.PHONY: readme-bindings
readme-bindings: venv ## Regenerate the README's key-binding tables from the app
	$(BIN)/python scripts/readme_bindings.py

.PHONY: snapshot-update
snapshot-update: venv ## Regenerate TUI snapshots (look at them before committing!)
	$(BIN)/python -m pytest tests/tui --snapshot-update

.PHONY: clean
clean: ## Remove the venv and caches
	rm -rf $(VENV) $(NEWEST_VENV) .pytest_cache .mypy_cache .ruff_cache dist build
