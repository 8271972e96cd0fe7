"""A transcript never chooses what is read (issue 23, defect 4): a Claude Code session saying
``"cwd": "/"`` (or any folder) and a Read of a file there put that file into the output of
``restore-files`` and ``compact``. Restoration reads only under ``--work-dir`` or the current
directory — a session's own folder inside it, one the user re-rooted with ``--path-map``, or
with ``--trust-session-cwd`` — and says so when it skipped a file for that reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from session_builders import SessionBuilder

SECRET = "root:x:0:0:secret-line-that-must-not-leak\n"


def _session(path: Path, cwd: str, read: str) -> Path:
    builder = SessionBuilder(cwd=cwd).user("look at the config")
    builder._entry(
        "assistant",
        message={
            "id": "msg_r",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": read}}],
        },
    )
    builder._entry(
        "user",
        message={
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "…"}],
        },
    )
    builder.assistant("done").user("thanks")
    return builder.write(path)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``outside/secret.txt`` (what a hostile session points at) and the directory the
    command runs from, which is not inside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    return outside, here


@pytest.mark.parametrize("command", ["restore-files", "compact"])
def test_a_sessions_cwd_outside_the_current_directory_is_not_read(
    elsewhere: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    outside, _ = elsewhere
    session = _session(tmp_path / "s.jsonl", str(outside), str(outside / "secret.txt"))
    extra = ["--summarizer", "extractive"] if command == "compact" else []
    done = run_cli(command, session, *extra, "--stats-json", tmp_path / "stats.json")
    assert done.exit_code == 0, done.stderr
    assert "secret-line" not in done.stdout
    assert "--trust-session-cwd" in done.stderr  # says why the file was skipped
    trusted = run_cli(command, session, *extra, "--trust-session-cwd", "-q")
    assert trusted.exit_code == 0, trusted.stderr
    assert "secret-line" in trusted.stdout  # the user's own choice


def test_root_as_cwd_reads_nothing_outside(elsewhere: tuple[Path, Path], tmp_path: Path) -> None:
    session = _session(tmp_path / "s.jsonl", "/", "/etc/passwd")
    done = run_cli("restore-files", session, "--stats-json", tmp_path / "stats.json")
    assert done.exit_code == 0, done.stderr
    assert "root:" not in done.stdout
    skipped = json.loads((tmp_path / "stats.json").read_text())
    assert "session's folder /" in json.dumps(skipped)


def test_a_session_folder_inside_the_current_directory_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hello')\n")
    session = _session(tmp_path / "s.jsonl", str(project), str(project / "app.py"))
    monkeypatch.chdir(tmp_path)
    done = run_cli("restore-files", session, "-q")
    assert done.exit_code == 0, done.stderr
    assert "print('hello')" in done.stdout


def test_path_map_names_the_folder_so_it_is_read(elsewhere: tuple[Path, Path], tmp_path: Path) -> None:
    outside, _ = elsewhere
    session = _session(tmp_path / "s.jsonl", "/home/u/proj", "/home/u/proj/secret.txt")
    done = run_cli("restore-files", session, "--path-map", f"/home/u/proj={outside}", "-q")
    assert done.exit_code == 0, done.stderr
    assert "secret-line" in done.stdout


def test_trust_session_cwd_is_never_a_setting(elsewhere: tuple[Path, Path], tmp_path: Path) -> None:
    """A project's config file must not be able to widen what its transcripts may read."""
    outside, here = elsewhere
    (here / "ctxcompact.toml").write_text("trust-session-cwd = true\n")
    session = _session(tmp_path / "s.jsonl", str(outside), str(outside / "secret.txt"))
    done = run_cli("restore-files", session, "-q")
    assert done.exit_code == 2 or "secret-line" not in done.stdout
