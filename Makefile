# Two commands on a fresh machine: `make run` and `make test` (README).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PORT ?= 8000

.PHONY: setup run test test-slow lint format demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $@

run: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	PORT=$(PORT) $(BIN)/python manage.py memory_init
	PORT=$(PORT) BIN=$(BIN) bin/serve

test: setup
	$(BIN)/pytest $(PYTEST_ARGS)

# The process-level tests (worker kills, the fault suite, several hosts): minutes, not
# seconds, so `make test` skips them; .ci/run runs both.
test-slow: setup
	$(BIN)/pytest --run-slow -m slow -s $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

demo: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py memory_demo

bench: setup
	$(BIN)/python bench/search.py
	$(BIN)/python bench/wiki.py
	$(BIN)/python bench/writes.py
	$(BIN)/python bench/mcp_roundtrip.py

clean:
	rm -rf $(VENV) var/static var/test-*.sqlite3*
