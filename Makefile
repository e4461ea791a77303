# topogen: every target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help demo test test-live-load lint fmt tools clean check-generated regenerate venv bench lock docs docs-reference

help:
	@echo "make demo   analyze and render the bundled examples"
	@echo "make test   run the whole test suite (builds the real tools when missing)"
	@echo "make lint   ruff and mypy (generator, tests, bench)"
	@echo "make test-live-load  the live suites three times beside 2 busy processes per core"
	@echo "make tools  build the pinned Go tools into ~/.cache/topogen (cached)"
	@echo "make bench  time topogen on synthetic fleets; writes bench/RESULTS.md (~45 min)"
	@echo "make docs   build the documentation site (docs/) into site/, --strict"

# The runtime dependencies at argocd/requirements.lock's versions (its pins, without the
# hashes, as pip constraints): a fresh machine tests what the plugin image ships, whatever
# PyPI has released since the lock; `make lock` moves the pins.
LOCK_PINS = tmp=$$(mktemp); trap 'rm -f $$tmp' EXIT; \
	grep -o '^[A-Za-z0-9._-]*==[^ ;]*' argocd/requirements.lock > $$tmp

$(STAMP): pyproject.toml argocd/requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	@$(LOCK_PINS); $(BIN)/pip install --quiet -c $$tmp -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

-include tools/tools.mk

demo: $(STAMP)
	@bash examples/demo.sh

# The suite runs while `make -j2 tools` builds the real tools beside it; the tests that need
# a tool not built yet run in a second pass once the build is done (tests/run_suite.py).
test: $(STAMP)
	$(BIN)/python tests/run_suite.py

# tests/live three times in a row beside a CPU load (2 busy processes per core for the whole
# run): the live harnesses wait on the thing itself, never on time (CHANGELOG: the runs).
# LOAD_ARGS="--runs 1" for one run; arguments after -- go to pytest.
test-live-load: $(STAMP) tools
	$(BIN)/python tests/live/under_load.py $(LOAD_ARGS)

# The interpreter `make bench` times topogen on, in a venv of its own: a CPython built with
# profile-guided and link-time optimization, as the Argo CD plugin image's is (python:3.11-slim:
# --enable-optimizations --with-lto); the distribution's python3.11 where it can make a venv
# (Debian builds it so), else $(PYTHON). pyenv builds without them unless asked: on this
# machine the large fleet ran 5-14% slower on its build (bench/RESULTS.md: Interpreter).
BENCH_PYTHON ?= $(shell /usr/bin/python3.11 -c 'import ensurepip, venv' 2>/dev/null \
	&& echo /usr/bin/python3.11 || echo $(PYTHON))
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): pyproject.toml argocd/requirements.lock
	$(BENCH_PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install --quiet --upgrade pip
	@$(LOCK_PINS); $(BENCH_VENV)/bin/pip install --quiet -c $$tmp -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# Never part of `make test`. BENCH_ARGS="--quick --skip-kyverno --skip-admission --skip-fleet" for the
# shortest run (README: Performance, with its measured time);
# BENCH_ARGS=--fleet-only for the fleet measure alone (the real kube-scheduler, 20-35 min here).
# BENCH_ARGS=--admission-only for the admission latency alone (Kyverno's admission
# controller and Gatekeeper's controller-manager on kube-apiserver's webhook path).
bench: $(STAMP) $(BENCH_STAMP) tools tools-bench
	$(BENCH_VENV)/bin/python bench/run.py $(BENCH_ARGS)

# bench/ too: its scripts import the live test harnesses (tests/live), checked there;
# docs/*.py: the site's hook and the reference generator
lint: $(STAMP)
	$(BIN)/ruff check generator tests bench docs
	$(BIN)/ruff format --check generator tests bench docs
	$(BIN)/mypy
	MYPYPATH=generator:bench:tests/live:tests $(BIN)/mypy --explicit-package-bases bench/*.py
	MYPYPATH=generator $(BIN)/mypy --explicit-package-bases docs/*.py
	@out=$$(gofmt -l tools/cilium-oracle tools/kyverno-webhooks tools/argocd-cmp tools/gatekeeper-mutation-cost); if [ -n "$$out" ]; then echo "gofmt: $$out" >&2; exit 1; fi

fmt: $(STAMP)
	$(BIN)/ruff format generator tests bench docs
	$(BIN)/ruff check --fix generator tests bench docs

clean:
	rm -rf $(VENV) $(BENCH_VENV) .tools .pytest_cache .mypy_cache .ruff_cache

# argocd/requirements.lock: the plugin image's Python dependencies (and what building
# topogen needs: argocd/build-requirements.in), pinned with every wheel's hash (uv pip
# compile, for every platform), at the versions the tests run with (this venv's, where it
# has them). Rerun after changing pyproject.toml's dependencies.
UV_VERSION := 0.13.9
lock: $(STAMP)
	$(BIN)/pip install --quiet uv==$(UV_VERSION)
	@tmp=$$(mktemp); trap 'rm -f $$tmp' EXIT; \
	$(BIN)/pip freeze --exclude-editable > $$tmp; \
	$(BIN)/uv pip compile pyproject.toml argocd/build-requirements.in --universal \
	  --generate-hashes --python-version 3.11 \
	  --no-annotate --custom-compile-command "make lock" -c $$tmp -o argocd/requirements.lock

# The committed output must mean what a fresh render of the bundled example means, and
# the reference pages of docs/ what the code generates (docs/gen_reference.py --check).
# `topogen diff --check` compares objects and fields (comments, formatting, key order
# and the order of tolerations or selector values aside) in every folder render writes
# plus policies/, kustomize/, monitoring/ and argocd/ (so a stale folder counts), and
# says what drifted.
check-generated: $(STAMP)
	@$(BIN)/python docs/gen_reference.py --check
	@$(BIN)/topogen diff -c examples/zone-split/topogen.yaml --out . --check; rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "generated output drifted: run make regenerate" >&2; \
	elif [ $$rc -eq 0 ]; then echo "generated output is up to date"; fi; exit $$rc

regenerate: $(STAMP) docs-reference
	$(BIN)/topogen render -c examples/zone-split/topogen.yaml --out .

# The documentation site (mkdocs.yml, docs/): the reference pages generated from the code
# (docs/gen_reference.py; tests/docs fails while they are stale), then the site itself,
# which `make test` builds too (tests/docs/test_site.py).
docs-reference: $(STAMP)
	$(BIN)/python docs/gen_reference.py

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
