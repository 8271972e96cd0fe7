# One-command set-up: every target creates the virtualenv when it is missing.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench install clean interop

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

DEMO := .ctxcompact/demo
demo: $(STAMP)
	@echo "== 1. where do the tokens go? =="
	$(BIN)/ctxcompact count sample_transcripts/anthropic-session.json --model claude-sonnet-4-5 --top 5
	@echo "== 2. does it fit gpt-4's 8K window? (exit 1 = compaction due) =="
	-$(BIN)/ctxcompact check sample_transcripts/anthropic-session.json --model gpt-4
	@echo "== 3. compact it: offline summary + restored files, originals archived =="
	mkdir -p $(DEMO)
	env -u ANTHROPIC_API_KEY $(BIN)/ctxcompact compact sample_transcripts/anthropic-session.json \
	    --work-dir sample_transcripts/workspace --archive-dir $(DEMO)/archive \
	    --model gpt-4 --stats-json $(DEMO)/stats.json -o $(DEMO)/compacted.json
	@echo "== 4. the result fits =="
	$(BIN)/ctxcompact check $(DEMO)/compacted.json --model gpt-4
	@echo "compacted transcript: $(DEMO)/compacted.json   stats: $(DEMO)/stats.json"

lint: $(STAMP)
	$(BIN)/ruff check ctxcompact tests bench
	$(BIN)/ruff format --check ctxcompact tests bench
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

# The real Claude Code and Codex CLIs (pinned in tests/interop/package-lock.json, installed
# with npm into ~/.cache/ctxcompact-interop) resume what ctxcompact writes, offline (README,
# "Checked against the real clients"). INTEROP_ARGS='-m "not interop_full"': .ci/run's subset.
INTEROP_ARGS ?=
interop: $(STAMP)
	$(BIN)/python tests/interop/install.py
	$(BIN)/python -m pytest -q tests/interop $(INTEROP_ARGS)

BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $(BENCH_STAMP)

# ccusage (npm; pinned with its native build, which the registry publishes a little later than
# the package) for bench/bench_session_tools.py's `count` comparison; skipped without npm.
CCUSAGE := ccusage@20.0.24
BENCH_NODE := $(VENV)/bench-node
$(BENCH_NODE)/.installed: $(BENCH_STAMP)
	-command -v npm >/dev/null && npm install -q --no-audit --no-fund --prefix $(BENCH_NODE) $(CCUSAGE) && touch $@

bench: $(BENCH_STAMP) $(BENCH_NODE)/.installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
