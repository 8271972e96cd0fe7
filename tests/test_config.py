"""Configuration: file < CTXCOMPACT_* env < flags; `ctxcompact config` says where each came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.config import OptionSpec, find_config_file, load_config

SESSION = SAMPLES / "anthropic-session.json"


def checked_model(*args: str, env: dict[str, str | None] | None = None) -> str:
    result = run_cli("check", SESSION, "--json", *args, env=env)
    assert result.exit_code in (0, 1), result.stderr
    model: str = json.loads(result.stdout)["transcripts"][0]["budget"]["model"]
    return model


def test_file_then_env_then_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.ctxcompact]\nmodel = "gpt-4"\n')
    (tmp_path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "deep" / "er")  # found from the cwd upward
    assert checked_model() == "gpt-4"
    assert checked_model(env={"CTXCOMPACT_MODEL": "gpt-4o"}) == "gpt-4o"
    assert (
        checked_model("--model", "claude-sonnet-4-5", env={"CTXCOMPACT_MODEL": "gpt-4o"})
        == "claude-sonnet-4-5"
    )


def test_a_command_table_beats_the_shared_keys_and_paths_are_relative_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ctxcompact.toml").write_text(
        'model = "gpt-4"\nwork_dir = "ws"\n\n[check]\nmodel = "gpt-4o"\nthreshold = 0.5\n'
    )
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert checked_model() == "gpt-4o"
    result = run_cli("config", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["file"] == str(tmp_path / "ctxcompact.toml")
    rows = {(r["key"], tuple(r["commands"])): r for r in data["settings"]}
    assert rows[("model", ("check",))]["source"] == "ctxcompact.toml [check]"
    assert (
        rows[("model", ("compact", "count", "eval", "sessions", "uncompact"))]["source"] == "ctxcompact.toml"
    )
    assert rows[("work-dir", ("compact", "eval", "restore-files"))]["value"] == str(tmp_path / "ws")
    assert rows[("threshold", ("check",))]["value"] == 0.5
    env = run_cli("config", "--json", env={"CTXCOMPACT_JOBS": "3"})
    jobs = [r for r in json.loads(env.stdout)["settings"] if r["key"] == "jobs"]
    assert [(r["value"], r["source"]) for r in jobs] == [("3", "env CTXCOMPACT_JOBS")]
    table = run_cli("config")
    assert table.exit_code == 0 and "[check]" in table.stdout and "gpt-4o" in table.stdout


def test_an_unknown_key_or_bad_toml_is_exit_2_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxcompact.toml").write_text('modle = "gpt-4"\n')
    result = run_cli("check", SESSION)
    assert result.exit_code == 2 and "ctxcompact.toml: unknown setting 'modle'" in result.stderr
    (tmp_path / "ctxcompact.toml").write_text("model = \n")
    result = run_cli("count", SESSION)
    assert result.exit_code == 2 and "cannot read the configuration" in result.stderr


def test_a_pyproject_without_a_ctxcompact_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "ctxcompact.toml").write_text('read_tool = ["cat:path"]\n')
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    assert find_config_file(tmp_path / "proj") == tmp_path / "ctxcompact.toml"
    specs = [OptionSpec("compact", "read-tool", "read_tool", multiple=True)]
    assert load_config(specs, cwd=tmp_path, environ={}).default_map(specs) == {
        "compact": {"read_tool": ["cat:path"]}
    }
    loaded = load_config(
        specs, cwd=tmp_path / "proj", environ={"CTXCOMPACT_READ_TOOL": "Read:file_path, cat:path"}
    )
    assert loaded.default_map(specs) == {"compact": {"read_tool": ["Read:file_path", "cat:path"]}}


def test_batch_flags_come_from_the_config_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ctxcompact.toml").write_text(
        '[compact]\nsummarizer = "extractive"\nfail_over = 0.01\njobs = 1\n'
    )
    out = tmp_path / "out"
    result = run_cli("compact", SESSION, "--out-dir", out, "--no-restore")
    assert result.exit_code == 1, result.stderr  # the configured --fail-over gate
    assert run_cli("compact", SESSION, "--out-dir", out, "--no-restore", "--fail-over", "0.99").exit_code == 0
