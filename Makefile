# The two commands of the README: `make demo` and `make test`. Both set everything up first.
VENV   ?= .venv
PYTHON ?= python3
BIN     = $(VENV)/bin
PG_URL ?= postgresql://postgres@127.0.0.1:5432/test

.PHONY: setup demo test test-sqlite test-postgres services lint bench screenshots fuzz fuzz-long soak

setup: $(VENV)/.installed

# constraints.txt pins every package to the versions the suite last passed with (see its header).
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	scripts/ensure-build-deps.sh
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,desktop,directory]'
	touch $@

demo: setup
	$(BIN)/campusid demo

services:
	scripts/ensure-test-services.sh

test: setup services lint test-sqlite test-postgres

# lint-imports checks the import contracts in pyproject.toml ([tool.importlinter]); scripts/i18n.py
# check fails on text for people that is not marked for translation or has no translation.
lint: setup
	$(BIN)/ruff check src tests examples bench
	$(BIN)/lint-imports
	$(BIN)/python scripts/i18n.py check

# The suite runs in parallel (each test has its own data dir, database and ports); the few
# tests that measure timing run alone afterwards. Most tests wait on subprocesses and sockets:
# with 4 workers half of this 2-core machine's CPU stayed idle (SQLite pass 10.2 min); 6 took 5.3.
PYTEST = $(BIN)/pytest -q -p no:cacheprovider
PARALLEL = -n 6 --dist loadfile

test-sqlite: setup
	$(PYTEST) $(PARALLEL) -m "not serial"
	$(PYTEST) -m serial

# tests/faults start a PostgreSQL cluster of their own whichever pass runs them: once is enough.
# The pass also leaves out the tests that do not depend on the database (tests/conftest.py, NOT_DATABASE_BOUND).
test-postgres: setup
	CAMPUSID_DATABASE_URL=$(PG_URL) $(PYTEST) $(PARALLEL) -m "not serial" --ignore=tests/faults
	CAMPUSID_DATABASE_URL=$(PG_URL) $(PYTEST) -m serial --ignore=tests/faults

bench: setup
	$(BIN)/python bench/run.py

# The long fuzz run: the same fuzzers as the suite's short pass, with many more examples each
# (FUZZ_EXAMPLES per schemathesis operation, FUZZ_REQUESTS for the IdP's endpoints, FUZZ_SEQUENCES
# stateful sequences of up to 12 steps on a real code, token and session).
FUZZ_EXAMPLES ?= 2000
FUZZ_REQUESTS ?= 200000
FUZZ_SEQUENCES ?= 2000
fuzz: setup services
	CAMPUSID_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) CAMPUSID_FUZZ_EXAMPLES_IDP=$(FUZZ_REQUESTS) CAMPUSID_FUZZ_SEQUENCES=$(FUZZ_SEQUENCES) \
	  $(PYTEST) -s --timeout=0 tests/fuzz

# The long fuzz run through nginx (tests/fuzz/long_run.py): FUZZ_TOTAL requests — fuzzed ones to
# every endpoint, stateful sequences, slow clients — on `campusid serve --workers 2`, PostgreSQL and
# Redis behind the repo's nginx site; stops at FUZZ_TOTAL or after FUZZ_SECONDS, prints progress
# every 10 s and the counts at the end (also written to FUZZ_REPORT).
FUZZ_TOTAL ?= 1000000
FUZZ_SECONDS ?= 7200
FUZZ_CONCURRENCY ?= 24
FUZZ_SLOW ?= 6
FUZZ_REPORT ?= fuzz-long-report.txt
fuzz-long: setup services
	$(BIN)/python -m tests.fuzz.long_run --total $(FUZZ_TOTAL) --seconds $(FUZZ_SECONDS) \
	  --concurrency $(FUZZ_CONCURRENCY) --slow $(FUZZ_SLOW) --report $(FUZZ_REPORT)

# The soak: SOAK_SECONDS of mixed load on `campusid serve --workers 2` (PostgreSQL and Redis of its
# own), the workers' memory sampled every 10 s (tests/faults/test_soak.py).
SOAK_SECONDS ?= 1800
soak: setup services
	CAMPUSID_SOAK_SECONDS=$(SOAK_SECONDS) $(PYTEST) -s tests/faults/test_soak.py
