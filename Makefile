# The two quick-start commands: `make run` and `make test` (see README.md).
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: run test venv system-deps lint migrate bench-help clean fuzz

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned to the local CPU build: a looser request would pull a CUDA wheel.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## run: set up, migrate, load the demo pack on first start, print demo users, serve web + worker + beat
## (GRAPH=neo4j: on the neo4j backend, beside a local Neo4j with GDS: scripts/run-neo4j.sh)
GRAPH ?= sql
# The demo pack's action handlers (side-effect-free simulations); the product default registers none.
run: export ARG_ACTION_HANDLER_MODULES ?= packs.demo.handlers
run: venv
ifeq ($(GRAPH),neo4j)
	bash scripts/ensure-system-deps.sh
	bash scripts/run-neo4j.sh $(PY) $(PORT)
else
	$(PY) manage.py migrate --noinput
	$(PY) manage.py bootstrap_demo --port $(PORT)
	$(PY) manage.py run_embedded --port $(PORT)
endif

## test: set up (system packages too) and run the whole suite with the linters: on SQLite (the embedded
## default), then again on a throwaway PostgreSQL (the production database); the tests marked neo4j
## talk to a real local Neo4j with GDS in both passes (tests/neo4j_server.py starts it). Then the
## graph half once more with the platform itself on the neo4j backend (NEO4J_PASS below).
MYPY_PACKAGES := platform/arg_platform projects taxonomy ontology memory inference review
NEO4J_PASS ?= tests/ontology tests/taxonomy tests/review tests/inference tests/memory tests/security
test: system-deps venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports
	MYPYPATH=platform $(PY) -m mypy $(MYPY_PACKAGES)
	$(PY) -m pytest
	bash scripts/with-postgres.sh $(PY) -m pytest -p no:cacheprovider
	ARG_GRAPH_BACKEND=neo4j bash scripts/with-neo4j.sh $(PY) -m pytest -p no:cacheprovider -m "not browser" $(NEO4J_PASS)

system-deps:
	bash scripts/ensure-system-deps.sh

## fuzz: schemathesis on every API operation, FUZZ_EXAMPLES positive + negative cases each, random seeds
FUZZ_EXAMPLES ?= 50
fuzz: venv
	ARG_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) ARG_FUZZ_RANDOM=1 $(PY) -m pytest tests/fuzz/test_schemathesis.py -q -s -p no:logging

lint:
	$(PY) -m ruff check .
	$(VENV)/bin/lint-imports
	MYPYPATH=platform $(PY) -m mypy $(MYPY_PACKAGES)
	$(PY) -m ruff format --check .

clean:
	rm -rf var .pytest_cache
