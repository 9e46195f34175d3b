# Two entry points for people (`make run`, `make test`) plus the benchmark build; see README.md.

PYTHON = python3
VENV = .venv
BENCH_VENV = .venv-bench
COMPILED_SRC = $(wildcard games/engine/*.py bots/*.py)

# Some machines set PYTHONDONTWRITEBYTECODE=1. Then every run compiles every module again and pytest
# rewrites the asserts of every test and plugin module again (over 400: about 7 s per process).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-suite test-fast lint test-compiled bench coverage

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# The service with its test tools, and the Python SDK (clients/python) that tests and examples use.
$(VENV)/.installed: pyproject.toml setup.py clients/python/pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install -e '.[test]' -e clients/python
	touch $@

# A second, non-editable install whose engine and bots are compiled with mypyc (HEARTS_COMPILE=1);
# any change to them reinstalls it (the interpreted bots/strategy.py and tournament.py are copied too).
$(BENCH_VENV)/bin/python:
	$(PYTHON) -m venv $(BENCH_VENV)

$(BENCH_VENV)/.installed: pyproject.toml setup.py $(COMPILED_SRC) $(BENCH_VENV)/bin/python
	HEARTS_COMPILE=1 $(BENCH_VENV)/bin/pip install '.[test,bench]'
	touch $@

run: $(VENV)/.installed
	$(VENV)/bin/python manage.py migrate
	HEARTS_EMBEDDED_WORKER=1 $(VENV)/bin/uvicorn hearts_service.asgi:application \
		--host 0.0.0.0 --port $${PORT:-8000} --lifespan off --ws websockets --ws-ping-interval 10 --ws-ping-timeout 5 --ws-per-message-deflate false

# Style, types and layers: ruff (lint and format), mypy (scope in pyproject.toml), import-linter.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The three parts at once: lint, the whole suite, and the compiled engine's build and tests (the
# suite mostly waits on the processes it starts, so the other two fit beside it). Each part's output
# is printed whole when it ends (--output-sync); the run fails if any part fails.
test: $(VENV)/.installed
	$(MAKE) --no-print-directory -j3 --output-sync=target lint test-suite test-compiled

# The whole suite in two runs: the fast loop's tests traced (coverage.py, the floor CI keeps: see
# `coverage` below), then the slow ones untraced (tracing them, whose games through live servers
# dominate, took the suite past 20 minutes). pytest-xdist runs each on worker processes, each with
# its own test database (pytest-django) and Redis database (tests/parallel.py); the slow tests go
# by whole files (their live servers are per file) to SUITE_WORKERS processes: three on two cores,
# as most of their time is spent waiting for the servers, workers and browsers they start; the
# longest files first, by tests/durations.json (tests/parallel.py).
# Both runs always run; the target fails if either does.
SUITE_WORKERS ?= 3
test-suite: $(VENV)/.installed
	@status=0; \
	$(MAKE) --no-print-directory coverage || status=$$?; \
	$(VENV)/bin/python -m pytest -p tests.parallel -m slow -n $(SUITE_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) || status=$$?; \
	exit $$status

# The coverage floor CI keeps (the first half of test-suite): the tests of the fast loop, traced
# (coverage.py), fail below `fail_under` ([tool.coverage.*] in pyproject.toml); HTML=1 also writes
# htmlcov/. Tracing the whole suite, whose games through live servers dominate, took it past 20
# minutes (docs/architecture.md).
coverage: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -p tests.parallel -m "not slow" -n 2 -q --cov --cov-report=term $(if $(HTML),--cov-report=html) $(PYTEST_ARGS)

# The inner loop: lint and every test not marked slow (no real servers, workers or browsers;
# SQLite and in-process tasks when DATABASE_URL/REDIS_URL are not set), on both cores. CI runs everything.
test-fast: lint
	$(VENV)/bin/python -m pytest -p tests.parallel -m "not slow" -n 2 $(PYTEST_ARGS)

# The engine tests again, against the compiled engine: both builds must behave the same.
# The pytest script (not `python -m`) keeps the source tree off sys.path.
test-compiled: $(BENCH_VENV)/.installed
	HEARTS_EXPECT_COMPILED=1 HEARTS_EXPECT_OPENSPIEL=1 $(BENCH_VENV)/bin/pytest --import-mode=importlib -p no:django -p no:cacheprovider tests/engine

bench: $(BENCH_VENV)/.installed
	# From an empty folder: Celery's Django fixup puts the working directory first on the import path,
	# where bench/graphql.py would shadow the graphql package and the source tree the compiled build.
	d=$$(mktemp -d) && for f in bench/*.py; do echo "== $$f"; (cd $$d && $(CURDIR)/$(BENCH_VENV)/bin/python $(CURDIR)/$$f) || exit 1; done
