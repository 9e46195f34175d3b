.POSIX:

PYTHON = python3
VENV = .venv

.PHONY: run test bench

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install -e '.[test]'
	touch $@

$(VENV)/.installed-bench: pyproject.toml $(VENV)/bin/python
	$(VENV)/bin/pip install -e '.[test,bench]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/python manage.py migrate
	$(VENV)/bin/python manage.py runserver 0.0.0.0:$${PORT:-8000}

test: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed-bench
	for f in bench/*.py; do [ -e "$$f" ] || continue; echo "== $$f"; $(VENV)/bin/python "$$f" || exit 1; done
