# topogen: every target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help demo test lint fmt tools clean check-generated regenerate venv

help:
	@echo "make demo   analyze and render the bundled examples"
	@echo "make test   run the whole test suite (builds the real tools when missing)"
	@echo "make lint   ruff and mypy"
	@echo "make tools  build the pinned Go tools into ~/.cache/topogen (cached)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

-include tools/tools.mk

demo: $(STAMP)
	@bash examples/demo.sh

test: $(STAMP) tools
	$(BIN)/pytest -n 2

lint: $(STAMP)
	$(BIN)/ruff check generator tests
	$(BIN)/ruff format --check generator tests
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format generator tests
	$(BIN)/ruff check --fix generator tests

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache

# The committed policies/ must equal a fresh render of the bundled example.
check-generated: $(STAMP)
	@rm -rf .check-render && mkdir .check-render && cp -r examples .check-render/
	@$(BIN)/topogen render -c .check-render/examples/zone-split/topogen.yaml --out .check-render 2>/dev/null
	@rm -rf .check-render/examples
	@for d in $$(ls .check-render); do diff -r "$$d" ".check-render/$$d" || { echo "generated output drifted: run make regenerate" >&2; rm -rf .check-render; exit 1; }; done
	@rm -rf .check-render && echo "generated output is up to date"

regenerate: $(STAMP)
	$(BIN)/topogen render -c examples/zone-split/topogen.yaml --out .
