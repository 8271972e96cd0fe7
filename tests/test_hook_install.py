"""``ctxcompact hook install``: our entries written once, the diff shown, removed exactly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli

from ctxcompact.agents.install import is_ours

OTHER = {
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "PreCompact": [{"hooks": [{"type": "command", "command": "./backup.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


@pytest.fixture(name="project")
def _project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "home-claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home-codex"))
    return tmp_path


def test_install_writes_the_three_hooks_for_claude_code(project: Path) -> None:
    out = run_cli("hook", "install", "--yes")
    assert out.exit_code == 0, out.stderr
    path = project / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    hooks = settings["hooks"]
    assert set(hooks) == {"PreCompact", "SessionStart", "PostCompact"}
    assert hooks["SessionStart"][0]["matcher"] == "compact"
    command = hooks["PreCompact"][0]["hooks"][0]["command"]
    assert command.endswith("-m ctxcompact hook pre-compact --agent claude-code")
    assert command.startswith(sys.executable)
    assert "+++ " in out.stdout and '"PreCompact"' in out.stdout  # the diff came first


def test_the_installed_command_runs(project: Path) -> None:
    run_cli("hook", "install", "--yes")
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    payload = b'{"session_id": "s", "transcript_path": "x.jsonl", "hook_event_name": "SessionStart", "source": "startup"}'
    done = subprocess.run(command, shell=True, input=payload, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"")


def test_install_twice_changes_nothing_and_keeps_other_entries(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER, indent=4))
    assert run_cli("hook", "install", "--yes").exit_code == 0
    once = path.read_text()
    out = run_cli("hook", "install", "--yes")
    assert out.exit_code == 0 and "installed already" in out.stderr and out.stdout == ""
    assert path.read_text() == once
    settings = json.loads(once)
    assert settings["permissions"] == OTHER["permissions"]
    assert settings["hooks"]["Stop"] == OTHER["hooks"]["Stop"]
    # Ours is added beside the user's own PreCompact hook, not over it.
    assert settings["hooks"]["PreCompact"][0] == OTHER["hooks"]["PreCompact"][0]
    assert is_ours(settings["hooks"]["PreCompact"][1])


def test_install_replace_then_plain_updates_our_entry_in_place(project: Path) -> None:
    assert run_cli("hook", "install", "--replace", "--yes").exit_code == 0
    path = project / ".claude" / "settings.json"
    pre = json.loads(path.read_text())["hooks"]["PreCompact"]
    assert pre[0]["hooks"][0]["command"].endswith("--replace") and pre[0]["hooks"][0]["timeout"] == 600
    assert run_cli("hook", "install", "--yes").exit_code == 0
    pre = json.loads(path.read_text())["hooks"]["PreCompact"]
    assert len(pre) == 1 and not pre[0]["hooks"][0]["command"].endswith("--replace")


def test_uninstall_removes_exactly_our_entries(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(OTHER, indent=2) + "\n")
    run_cli("hook", "install", "--yes")
    out = run_cli("hook", "install", "--uninstall", "--yes")
    assert out.exit_code == 0, out.stderr
    assert json.loads(path.read_text()) == OTHER
    out = run_cli("hook", "install", "--uninstall", "--yes")
    assert out.exit_code == 0 and "no ctxcompact hooks to remove" in out.stderr


def test_without_a_terminal_it_asks_for_yes_and_writes_nothing(project: Path) -> None:
    out = run_cli("hook", "install")
    assert out.exit_code == 2 and "pass --yes" in out.stderr
    assert "+++ " in out.stdout  # the diff is still shown
    assert not (project / ".claude").exists()


def test_codex_hooks_go_to_hooks_json(project: Path) -> None:
    out = run_cli("hook", "install", "--agent", "codex", "--yes")
    assert out.exit_code == 0, out.stderr
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["PostCompact"][0]["hooks"][0]["command"].endswith("hook post-compact --agent codex")
    assert "trust" in out.stderr
    out = run_cli("hook", "install", "--agent", "codex", "--user", "--yes")
    assert (project / "home-codex" / "hooks.json").is_file()


def test_user_scope_for_claude_code(project: Path) -> None:
    assert run_cli("hook", "install", "--user", "--yes").exit_code == 0
    assert (project / "home-claude" / "settings.json").is_file()
    assert not (project / ".claude").exists()


def test_a_broken_settings_file_is_named_and_left_alone(project: Path) -> None:
    path = project / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    out = run_cli("hook", "install", "--yes")
    assert out.exit_code == 2 and "settings.json: is not valid JSON" in out.stderr
    assert path.read_text() == "{not json"
