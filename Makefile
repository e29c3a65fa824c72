# secondbrain — every target is documented; `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help setup run test lint bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 10

RUNTIME := $(VENV)/.runtime

# What `make run` needs: the packages secondbrain runs on, no test or lint tools. A .venv
# that `make setup` made has them all already.
$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(RUNTIME)

setup: $(STAMP)  ## create .venv and install every package editable, with dev tools

run: $(RUNTIME)  ## start secondbrain on its embedded default (data under ./data); installs the runtime packages only
	$(BIN)/secondbrain up --data-dir ./data

INSPECTOR := tests/e2e/inspector/node_modules

$(INSPECTOR): tests/e2e/inspector/package-lock.json
	npm ci --prefix tests/e2e/inspector --no-audit --no-fund
	touch $(INSPECTOR)

CONFORMANCE := tests/conformance/node_modules

$(CONFORMANCE): tests/conformance/package-lock.json
	npm ci --prefix tests/conformance --no-audit --no-fund
	touch $(CONFORMANCE)

# The test files run side by side in TEST_WORKERS processes (pytest-xdist), each file whole
# in one of them, so a module's servers and fixtures are made once: most tests wait on
# servers, subprocesses and disks, so three processes keep two cores busy. TEST_WORKERS=0
# runs them one after the other in this process.
TEST_WORKERS ?= 3

test: $(STAMP) $(INSPECTOR) $(CONFORMANCE)  ## run the whole test suite, files side by side in TEST_WORKERS processes (creates .venv and installs the MCP Inspector and the conformance runner on first use)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: $(STAMP)  ## ruff (lint + format check) and mypy --strict
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)  ## run the benchmarks under bench/ and print their figures
	$(BIN)/python bench/run.py

clean:  ## remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

.PHONY: images
images: $(STAMP)  ## build the node and center images (and the compose test's stand-ins) with podman from Debian packages; prints sizes
	docker/images.sh --test

.PHONY: docs
docs: $(STAMP)  ## regenerate docs/reference/ (tools, center API and settings) and node.md's tool table from the code
	$(BIN)/python -m vault_node.reference docs/reference
	$(BIN)/python -m center.reference docs/reference
