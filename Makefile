# One-command set-up: every target creates the virtualenv when it is missing.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@echo "== ctxcompact count sample_transcripts/anthropic-session.json =="
	$(BIN)/ctxcompact count sample_transcripts/anthropic-session.json --model claude-sonnet-4-5 --top 5
	@echo "== ctxcompact check (exit 0 = fits, 1 = compaction due) =="
	$(BIN)/ctxcompact check sample_transcripts/anthropic-session.json --model gpt-4 || true

lint: $(STAMP)
	$(BIN)/ruff check ctxcompact tests bench
	$(BIN)/ruff format --check ctxcompact tests bench
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
