# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV   ?= .venv
PYTHON ?= python3
BIN     = $(VENV)/bin
PG_URL ?= postgresql://postgres@127.0.0.1:5432/test

.PHONY: setup demo test test-sqlite test-postgres services lint bench screenshots

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,desktop]'
	touch $@

demo: setup
	$(BIN)/campusid demo

services:
	scripts/ensure-test-services.sh

test: setup services lint test-sqlite test-postgres

lint: setup
	$(BIN)/ruff check src tests examples bench

test-sqlite: setup
	$(BIN)/pytest -q

test-postgres: setup
	CAMPUSID_DATABASE_URL=$(PG_URL) $(BIN)/pytest -q -m "not browser"

bench: setup
	$(BIN)/python bench/run.py
