# secondbrain — every target is documented; `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help setup run test lint bench clean

help:  ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 10

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install every package editable, with dev tools

run: $(STAMP)  ## start secondbrain on its embedded default (data under ./data)
	$(BIN)/secondbrain up --data-dir ./data

INSPECTOR := tests/e2e/inspector/node_modules

$(INSPECTOR): tests/e2e/inspector/package-lock.json
	npm ci --prefix tests/e2e/inspector --no-audit --no-fund
	touch $(INSPECTOR)

CONFORMANCE := tests/conformance/node_modules

$(CONFORMANCE): tests/conformance/package-lock.json
	npm ci --prefix tests/conformance --no-audit --no-fund
	touch $(CONFORMANCE)

test: $(STAMP) $(INSPECTOR) $(CONFORMANCE)  ## run the whole test suite (creates .venv and installs the MCP Inspector and the conformance runner on first use)
	$(BIN)/python -m pytest

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
docs: $(STAMP)  ## regenerate docs/reference/ (tools, center API and settings) from the code
	$(BIN)/python -m vault_node.reference docs/reference
	$(BIN)/python -m center.reference docs/reference
