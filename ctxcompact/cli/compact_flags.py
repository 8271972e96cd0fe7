"""``compact``'s command-line options, declared once (``cli/compact.py`` stays a thin parser);
the local strategies' own are in :mod:`ctxcompact.cli.local_options`."""

from __future__ import annotations

from pathlib import Path

import typer

from ctxcompact.cli.common import LocalCounterName, OnFailure, SummarizerName
from ctxcompact.restore import DEFAULT_MAX_FILES, DEFAULT_MAX_TOKENS_PER_FILE, DEFAULT_MAX_TOKENS_TOTAL
from ctxcompact.strategies import AUTO_STRATEGIES, DEFAULT_STRATEGIES, STRATEGY_NAMES
from ctxcompact.strategies.clean_tools import DEFAULT_ROUNDS
from ctxcompact.strategies.full import DEFAULT_SUMMARY_MAX_WORDS
from ctxcompact.strategies.prune import DEFAULT_CLEAR_AT_LEAST, DEFAULT_KEEP
from ctxcompact.summarize.llm import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT

FULL = "Full compaction (--strategy full)"
RESTORE = "File restoration"
PRUNE = "Pruning (--strategy prune)"
CLEAN = "Tool cleaning (--strategy clean-tools)"
BUDGET = "Budget (--auto)"
OUTPUT = "Input and output"


# File restoration, shared by compact and restore-files (seed 000 F-005).
RESTORE_PANEL = "File restoration"
WORK_DIR_OPT = typer.Option(
    Path("."),
    "--work-dir",
    help="Files are resolved in, and must stay inside, this directory.",
    rich_help_panel=RESTORE_PANEL,
)
READ_TOOL_OPT = typer.Option(
    None,
    "--read-tool",
    help="TOOL:FIELD that reads a file (repeatable) [default: read_file:path, plus Read:file_path for Claude Code sessions].",
    rich_help_panel=RESTORE_PANEL,
)
MAX_FILES_OPT = typer.Option(
    DEFAULT_MAX_FILES, "--max-files", help="Restore at most this many files.", rich_help_panel=RESTORE_PANEL
)
MAX_TOKENS_PER_FILE_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_PER_FILE,
    "--max-tokens-per-file",
    help="Skip files larger than this.",
    rich_help_panel=RESTORE_PANEL,
)
MAX_TOKENS_TOTAL_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_TOTAL,
    "--max-tokens-total",
    help="Stop restoring past this total.",
    rich_help_panel=RESTORE_PANEL,
)


STRATEGY_OPT = typer.Option(
    None,
    "--strategy",
    "-s",
    help=f"One or more of {', '.join(STRATEGY_NAMES)}, comma-separated, run in order (e.g. prune,full). "
    f"Default {','.join(DEFAULT_STRATEGIES)}; with --auto {','.join(AUTO_STRATEGIES)}.",
    rich_help_panel=OUTPUT,
)
OUT_DIR_OPT = typer.Option(
    None,
    "--out-dir",
    help="Batch mode: write each input's result here under its own name.",
    rich_help_panel=OUTPUT,
)
IN_PLACE_OPT = typer.Option(
    False,
    "--in-place",
    "-i",
    help="Rewrite each input file atomically, keeping FILE.bak.",
    rich_help_panel=OUTPUT,
)
DRY_RUN_OPT = typer.Option(
    False,
    "--dry-run",
    help="Show the plan and before/after figures; write nothing (the summarizer still runs).",
    rich_help_panel=OUTPUT,
)
REPORT_OPT = typer.Option(
    None, "--report", help="Batch mode: write a JSON report of every input here.", rich_help_panel=OUTPUT
)
AUTO_OPT = typer.Option(
    False,
    "--auto",
    help="Compact only when check says it is due; otherwise pass the input through unchanged.",
    rich_help_panel=BUDGET,
)
COUNTER_NAME_OPT = typer.Option(
    LocalCounterName.tiktoken,
    "--counter",
    case_sensitive=False,
    help="Token counter for the figures: tiktoken or estimate.",
    rich_help_panel=BUDGET,
)
SUMMARIZER_OPT = typer.Option(
    SummarizerName.auto,
    "--summarizer",
    case_sensitive=False,
    help="auto (anthropic when ANTHROPIC_API_KEY is set, else extractive), anthropic, or extractive (offline, deterministic).",
    rich_help_panel=FULL,
)
SUMMARY_MODEL_OPT = typer.Option(
    None,
    "--summary-model",
    help="Model that writes the summary [default: a fast Claude model].",
    rich_help_panel=FULL,
)
SUMMARY_MAX_WORDS_OPT = typer.Option(
    DEFAULT_SUMMARY_MAX_WORDS,
    "--summary-max-words",
    help="Word limit for the summary.",
    rich_help_panel=FULL,
)
INSTRUCTIONS_OPT = typer.Option(
    None,
    "--instructions",
    help="Extra focus for the summary, like /compact's argument.",
    rich_help_panel=FULL,
)
ON_FAILURE_OPT = typer.Option(
    OnFailure.fallback,
    "--on-failure",
    case_sensitive=False,
    help="When the LLM fails after retries: fallback (extractive), skip (output = input), error (exit 3).",
    rich_help_panel=FULL,
)
TIMEOUT_OPT = typer.Option(
    DEFAULT_TIMEOUT, "--timeout", help="Seconds per summary request.", rich_help_panel=FULL
)
MAX_RETRIES_OPT = typer.Option(
    DEFAULT_MAX_RETRIES,
    "--max-retries",
    help="Retries on 429/5xx/overloaded/connection errors, with backoff.",
    rich_help_panel=FULL,
)
KEEP_LOOP_OPT = typer.Option(
    False,
    "--keep-loop",
    help="Keep the last user request and its tool loop verbatim after the summary, so the result is a request you can send.",
    rich_help_panel=FULL,
)
ARCHIVE_DIR_OPT = typer.Option(
    None,
    "--archive-dir",
    help="Where replaced messages are archived [default: WORK_DIR/.ctxcompact/archive].",
    rich_help_panel=FULL,
)
RESTORE_OPT = typer.Option(
    True,
    "--restore/--no-restore",
    help="Re-read the files the agent read most recently.",
    rich_help_panel=RESTORE,
)
KEEP_OPT = typer.Option(
    DEFAULT_KEEP, "--keep", help="Keep the N most recent tool uses untouched.", rich_help_panel=PRUNE
)
CLEAR_AT_LEAST_OPT = typer.Option(
    DEFAULT_CLEAR_AT_LEAST,
    "--clear-at-least",
    help="Change nothing unless at least this many tokens can be freed.",
    rich_help_panel=PRUNE,
)
EXCLUDE_TOOLS_OPT = typer.Option(
    None, "--exclude-tools", help="Comma-separated tool names never cleared.", rich_help_panel=PRUNE
)
CLEAR_TOOL_INPUTS_OPT = typer.Option(
    False,
    "--clear-tool-inputs",
    help="Also blank the inputs of cleared tool uses.",
    rich_help_panel=PRUNE,
)
KEEP_THINKING_OPT = typer.Option(
    "all",
    "--keep-thinking",
    help="Keep thinking of the last N assistant turns, or 'all'.",
    rich_help_panel=PRUNE,
)
ROUNDS_OPT = typer.Option(
    DEFAULT_ROUNDS, "--rounds", help="Keep tool calls of the last N rounds.", rich_help_panel=CLEAN
)
INCLUDE_LOOP_OPT = typer.Option(
    False,
    "--include-loop",
    help="Let prune clear inside the current tool loop too (as the API's own edit does).",
    rich_help_panel=PRUNE,
)
