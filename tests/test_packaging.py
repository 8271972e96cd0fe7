"""Library and packaging edges: py.typed, shell completion, sizes with units, config errors that
name the file and key, TOML-style config values, unknown models named with their nearest known
ones, sessions whose window is a guess, plain text on stdin counted as text."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import plain_rows, run_cli
from conftest import ROOT, SAMPLES
from session_builders import SessionBuilder
from test_codex import line, user

from ctxcompact.accounting.windows import resolve_model
from ctxcompact.cli.sizes import parse_size

SESSION = SAMPLES / "anthropic-session.json"


def test_the_package_declares_its_types() -> None:
    assert (ROOT / "ctxcompact" / "py.typed").is_file()
    assert 'ctxcompact = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()


def test_shell_completion_is_on_and_completes_lazily_loaded_commands() -> None:
    # typer finds the shell in the process tree (shellingham): ``--show-completion`` takes no
    # shell name, and the nearest shell above pytest decides — the user's bash under make
    # (which runs pytest without a shell), sh from /bin/sh, which typer has no script for. So
    # the script is asked for under bash, as a bash user asks for it.
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash to ask for its completion script")
    script = subprocess.run(
        [bash, "-c", '"$0" -m ctxcompact --show-completion; exit $?', sys.executable],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert script.returncode == 0 and "_ctxcompact_completion" in script.stdout, script.stderr
    env = {**os.environ, "COMP_WORDS": "ctxcompact count --ti", "COMP_CWORD": "2"}
    env["_CTXCOMPACT_COMPLETE"] = "complete_bash"
    done = subprocess.run(
        [sys.executable, "-m", "ctxcompact"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "--timeline" in done.stdout.split()


@pytest.mark.parametrize(
    ("text", "value"),
    [("1MiB", 1_048_576), ("512 MiB", 536_870_912), ("500k", 500_000), ("1.5M", 1_500_000), ("200,000", 200_000),
     ("200_000", 200_000), ("8KB", 8_000), ("42", 42)],
)  # fmt: skip
def test_sizes_take_units(text: str, value: int) -> None:
    assert parse_size(text) == value


def test_size_options_accept_units_and_refuse_nonsense() -> None:
    ok = run_cli("check", SESSION, "--max-input-bytes", "1MiB", "-w", "200k", "--output-reserve", "8k")
    assert ok.exit_code == 0, ok.stderr
    assert "window 200,000  output reserve 8,000" in ok.stdout
    small = run_cli("count", SESSION, "--max-input-bytes", "1k")
    assert small.exit_code == 2 and "input limit of 1,000 bytes" in small.stderr
    bad = run_cli("count", SESSION, "--max-input-bytes", "lots")
    assert bad.exit_code == 2 and "'lots' is not a size" in bad.stderr


def test_a_bad_config_value_names_the_file_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.ctxcompact]\ncounter = "anthropic"\nthreshold = "high"\n')
    out = run_cli("check", SESSION)
    assert out.exit_code == 2
    assert (
        f"{tmp_path / 'pyproject.toml'}: threshold = 'high' is not a valid value for --threshold of check"
        in (out.stderr)
    )
    (tmp_path / "pyproject.toml").write_text('[tool.ctxcompact.compact]\ncounter = "anthropic"\n')
    compact = run_cli("compact", SESSION, "--dry-run", "-q")
    assert compact.exit_code == 2
    assert (
        "pyproject.toml [compact]: counter = 'anthropic' is not a valid value for --counter of compact"
        in (compact.stderr)
    )
    env = run_cli("count", SESSION, env={"CTXCOMPACT_MAX_INPUT_BYTES": "huge"})
    assert env.exit_code == 2 and "env CTXCOMPACT_MAX_INPUT_BYTES: max-input-bytes = 'huge'" in env.stderr


def test_config_prints_toml_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxcompact.toml").write_text('model = "gpt-4o"\nread-tool = ["Read:file_path"]\n')
    rows = {r[0]: r[1] for r in plain_rows(run_cli("config").stdout, "setting ")}
    assert rows["model"] == '"gpt-4o"' and rows["read-tool"] == '["Read:file_path"]'
    assert rows["auto"] == "false" and rows["threshold"] == "0.6" and rows["archive-dir"] == "(not set)"
    assert not {"False", "True", "None"} & set(rows.values())


def test_an_unknown_model_is_not_taken_for_a_known_one_and_is_named_once() -> None:
    info = resolve_model("gpt-5-turbo-xl")
    assert not info.known and info.nearest[0] == "gpt-5"
    for variant, key in [
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("llama3.1:8b-instruct-q4_K_M", "llama3.1"),
        ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
        ("gpt-5.5", "gpt-5"),
        ("claude-fable-5-1", "claude"),
    ]:
        assert resolve_model(variant).key == key, variant
    out = run_cli("check", SESSION, SESSION, "-m", "gpt-5-turbo-xl")
    warnings = [w for w in out.stderr.splitlines() if w.startswith("warning: unknown model")]
    assert warnings == [
        "warning: unknown model (gpt-5-turbo-xl) (nearest known: gpt-5, gpt-3.5-turbo, gpt-4-turbo): assuming a "
        "96,000-token window; pass --model or --context-window, or add it with --models-file."
    ]


def test_a_rollout_without_a_model_says_its_window_is_a_guess(tmp_path: Path) -> None:
    root = tmp_path / "codex"
    root.mkdir()
    records = [
        line("session_meta", {"id": "s1", "cwd": "/repo"}),
        {"type": "response_item", "payload": user("hi")},
    ]
    (root / "rollout-1.jsonl").write_text("".join(__import__("json").dumps(r) + "\n" for r in records))
    SessionBuilder().user("hi").assistant("ok", usage=(3, 100, 0, 5)).write(root / "proj" / "known.jsonl")
    out = run_cli("sessions", root)
    assert out.exit_code == 0
    assert "1 session(s) record no model with a known window (rollout-1.jsonl)" in out.stderr
    verdicts = {r[1]: r[-1] for r in plain_rows(out.stdout, "agent ") if r[0] in ("codex", "claude")}
    assert verdicts["/repo"].endswith("(window guessed)")
    data = {d["agent"]: d for d in run_cli("sessions", root, "--json").json()["sessions"]}
    assert data["codex"]["window_known"] is False and data["claude-code"]["window_known"] is True


def test_plain_text_on_stdin_is_counted_as_text() -> None:
    out = run_cli("count", "--json", input="hi there\n")
    assert out.exit_code == 0, out.stderr
    [row] = out.json()["transcripts"]
    assert row["label"] == "<stdin> (plain text)" and row["by_type"]["text"] == 3  # cl100k: hi, " there", \n
    assert "not JSON: counted as plain text" in out.stderr
    broken = run_cli("count", input='{"role": ')  # JSON that is broken stays an error
    assert broken.exit_code == 2 and "invalid JSON" in broken.stderr
    assert run_cli("check", input="hi there\n").exit_code == 2  # only count reads text
