"""The fast path (``count``, ``check``, ``compact`` without typer) is the Typer app's twin:
its parameters are what typer builds, it calls the command with the arguments Typer would,
its output is the golden output, and what it cannot read as click would goes to the Typer app."""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli, run_fast
from golden_outputs import Case, cases, load_golden, run_case

from ctxcompact.cli import COMMANDS, FAST_COMMANDS, declared, fast

GOLDEN = load_golden()


def test_the_parameters_are_what_typer_builds_from_the_declarations() -> None:
    assert declared.TARGET.read_text(encoding="utf-8") == declared.source(), (
        "ctxcompact/cli/parameters.py has drifted from the Typer declarations: "
        "run `.venv/bin/python -m ctxcompact.cli.declared`"
    )


def typer_arguments(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> dict[str, Any]:
    """The arguments the Typer app calls the command with (the command itself not run)."""
    module, attr = COMMANDS[argv[0]]
    command = getattr(importlib.import_module(module), attr)
    seen: dict[str, Any] = {}

    @functools.wraps(command)
    def record(**kwargs: Any) -> None:
        kwargs.pop("ctx")
        seen.update(kwargs)

    monkeypatch.setattr(importlib.import_module(module), attr, record)
    outcome = run_cli(*argv)
    monkeypatch.undo()
    assert outcome.exit_code == 0 and seen, outcome.stderr
    return seen


def fast_arguments(argv: list[str]) -> dict[str, Any] | None:
    found = fast.arguments(argv)
    return None if found is None else found[1]


COMMON = [
    ["count", "t.json"],
    ["count", "a.json", "-", "b.jsonl", "--json", "--top", "3"],
    ["count", "--counter", "ESTIMATE", "t.json", "--by=tool", "-n", "0", "--format", "Claude-Code"],
    ["count", "t.json", "--timeline", "--html", "out.html", "--max-input-bytes", "1MiB", "-m", "gpt-4o"],
    ["count", "t.json", "--system-tokens", "24,000", "--deadline", "5", "--encoding", "o200k_base"],
    ["check", "t.json", "--model", "claude-sonnet-4-5", "--json"],
    ["check", "t.json", "-m", "gpt-4", "-w", "200k", "--threshold", "0.75", "--no-validate"],
    ["check", "--output-reserve", "0", "--models-file", "m.toml", "t.json", "--validate", "--no-validate"],
    ["compact", "t.json", "--auto", "-o", "out.json", "-q"],
    ["compact", "s.jsonl", "--auto", "--model", "gpt-4", "--summarizer", "extractive", "--archive-dir", "a"],
    ["compact", "t.json", "--strategy", "prune,full", "--keep-loop", "--read-tool", "Read:file_path"],
    ["compact", "d/", "--out-dir", "o", "--jobs", "2", "--shard", "1/2", "--fail-over", "0.5", "--pin", "a"],
    ["compact", "t.json", "--pin", "x", "--pin", "y", "--no-pin-first", "--target-tokens", "50k", "-i"],
    ["compact", "t.json", "--counter", "estimate", "--path-map", "/a=/b", "--output-format", "github"],
    # click's own readings: a value that looks like an option, empty and dash values, numbers
    # as int() and float() read them, a flag given twice
    ["check", "t.json", "-m", "--json"],
    ["compact", "t.json", "-o", "", "--jobs", "1_0"],
    ["compact", "t.json", "-o", "-", "--target-ratio", "7e-1"],
    ["count", "t.json", "--encoding=", "-n", " 007", "--json", "--json"],
]


@pytest.mark.parametrize("argv", COMMON, ids=lambda a: " ".join(a))
def test_a_common_command_line_gets_the_arguments_typer_gives(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no config file above
    assert fast_arguments(argv) == typer_arguments(monkeypatch, argv)


SETTINGS = """
model = "gpt-4o"
threshold = 0.7
counter = "Estimate"
max-input-bytes = "2MiB"
top = 4

[compact]
strategy = "prune"
read-tool = ["Read:file_path", "View:path"]
work-dir = "project"
keep-loop = true
"""


@pytest.mark.parametrize(
    "argv", [["count", "t.json"], ["check", "t.json", "-t", "0.8"], ["compact", "t.json", "-q"]]
)
def test_settings_from_a_file_and_the_environment_apply_as_in_the_typer_app(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "ctxcompact.toml").write_text(SETTINGS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CTXCOMPACT_SYSTEM_TOKENS", "1k")
    monkeypatch.setenv("CTXCOMPACT_PIN", "keep me,and me")
    found = fast_arguments(argv)
    assert found is not None and found == typer_arguments(monkeypatch, argv)
    assert found["counter"].value == "estimate" and found["system_tokens"] == 1000


@pytest.mark.parametrize(
    "argv",
    [
        ["count", "--help"],
        ["count", "-h"],
        ["count", "t.json", "--top", "-1"],  # below its minimum: click's message
        ["count", "t.json", "--topp", "3"],  # unknown: click's suggestion
        ["count", "t.json", "-n5"],
        ["count", "--", "-t.json"],
        ["check", "t.json", "--json=yes"],
        ["check", "t.json", "-m"],  # a value missing
        ["check", "t.json", "-w", "lots"],  # no size
        ["compact", "t.json", "--summarizer", "gpt"],  # no such choice
        ["compact", "t.json", "-qv"],
        ["sessions"],
        ["count"],  # stdin: run, not handed over (the command says "no input")
    ],
)
def test_what_click_would_refuse_or_read_otherwise_goes_to_the_typer_app(argv: list[str]) -> None:
    assert (fast_arguments(argv) is None) == (argv != ["count"])


def test_a_bad_setting_goes_to_the_typer_app_which_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "ctxcompact.toml").write_text("top = -2\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert fast_arguments(["count", "t.json"]) is None
    monkeypatch.setenv("CTXCOMPACT_THRESHOLD", "high")
    assert fast_arguments(["check", "t.json"]) is None
    out = run_cli("check", "t.json")
    assert out.exit_code == 2 and "CTXCOMPACT_THRESHOLD" in out.stderr


def test_completion_and_tracebacks_stay_with_the_typer_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXCOMPACT_TRACEBACK", "1")
    assert fast_arguments(["count", "t.json"]) is None
    monkeypatch.delenv("CTXCOMPACT_TRACEBACK")
    monkeypatch.setenv("_CTXCOMPACT_COMPLETE", "bash_complete")
    assert fast_arguments(["count", "t.json"]) is None


#: The golden cases of the fast commands on the samples and the Claude Code sessions.
FAST_CASES = [
    c
    for c in cases()
    if c.command.split("-")[0] in FAST_COMMANDS
    and (c.key.startswith("samples/") or c.key.startswith("corpus/claude-code/"))
]


@pytest.mark.parametrize("case", FAST_CASES, ids=lambda c: c.key)
def test_the_fast_path_prints_the_golden_output(case: Case) -> None:
    if case.key not in GOLDEN:
        pytest.skip("not recorded")
    assert run_case(case, run=run_fast) == GOLDEN[case.key]


def test_errors_on_the_fast_path_are_the_typer_apps(tmp_path: Path) -> None:
    """An error the command finds (not the parser) is said and exits the same either way."""
    missing = str(tmp_path / "missing.json")
    for argv in (["count", missing], ["check", missing, "-m", "gpt-4"], ["compact", missing, "-q"]):
        a, b = run_fast(*argv), run_cli(*argv)
        assert (a.exit_code, a.stdout, a.stderr) == (b.exit_code, b.stdout, b.stderr) != (0, "", "")
    assert os.path.exists(tmp_path) and not os.listdir(tmp_path)
