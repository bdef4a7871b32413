# Two commands on a fresh machine: `make run` and `make test` (README).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PORT ?= 8000

.PHONY: setup run test test-slow lint format demo bench clean assets fonts messages

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

# axe-core for the browser tests (npm, pinned in package-lock.json); skipped without npm
# (the accessibility test then skips, except in CI where it fails).
assets: node_modules/.installed

node_modules/.installed: package-lock.json
	@if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the axe-core browser test will be skipped"; fi

test: setup assets
	$(BIN)/pytest $(PYTEST_ARGS)

# The served monospace face (static/memory/fonts/, committed) from the npm package.
fonts: assets
	for subset in latin latin-ext vietnamese; do for weight in 400 700; do \
	  cp node_modules/@fontsource/noto-sans-mono/files/noto-sans-mono-$$subset-$$weight-normal.woff2 static/memory/fonts/; \
	done; done
	cp node_modules/@fontsource/noto-sans-mono/LICENSE static/memory/fonts/OFL.txt

# Extract and compile the Vietnamese catalogue (gettext tools: apt-get install gettext).
messages: setup
	$(BIN)/python manage.py makemessages -l vi --no-wrap --ignore=.venv --ignore=node_modules --ignore=var --ignore=tests --ignore=bench --ignore=docs
	$(BIN)/python manage.py compilemessages -l vi --ignore=.venv --ignore=node_modules

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
	PORT=$(PORT) $(BIN)/python manage.py memory_demo

bench: setup
	$(BIN)/python bench/search.py
	$(BIN)/python bench/wiki.py
	$(BIN)/python bench/mcp_roundtrip.py
	$(BIN)/python bench/pages.py

clean:
	rm -rf $(VENV) node_modules var/static var/test-*.sqlite3*
