"""``--in-place`` never loses what another process writes (issue 23, defects 2 and 13; issue
21 item 3 "live sessions are safe"). The races are made deterministic by writing from inside
the step under test; ``test_concurrency_loops.py`` runs the same against real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli
from session_builders import SessionBuilder

import ctxcompact.transcripts.inplace as inplace
from ctxcompact.errors import WorkFailedError
from ctxcompact.transcripts.inplace import (
    FileChangedError,
    live_reason,
    replace_in_place,
    rewrite_in_place,
)

OLD = b'{"n": 1}\n{"n": 2}\n'
NEW = b'{"n": 1}\n{"n": 2, "pruned": true}\n'


def _age(path: Path, seconds: float = 60.0) -> None:
    """Make ``path`` look untouched for ``seconds`` (a session its agent left)."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_result_that_only_adds_is_appended_not_renamed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    inode = path.stat().st_ino
    done = replace_in_place(path, OLD, OLD + b'{"n": 3}\n', lines=True)
    assert done.appended and done.backup is None
    assert path.read_bytes() == OLD + b'{"n": 3}\n'
    assert path.stat().st_ino == inode  # the agent's open file is still the file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


def test_a_file_without_a_final_newline_gets_one_before_the_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD.rstrip(b"\n"))
    session = SessionBuilder().user("fix it").assistant("done").write(tmp_path / "c.jsonl")
    raw = session.read_bytes().rstrip(b"\n")
    session.write_bytes(raw)
    _age(session)
    done = run_cli("compact", session, "--in-place", "--summarizer", "extractive", "--no-restore", "-q")
    assert done.exit_code == 0, done.stderr
    text = session.read_bytes()
    assert text.startswith(raw + b"\n{")  # the history whole, then our entries on new lines
    assert all(line.startswith(b"{") for line in text.splitlines())


def test_an_append_after_the_read_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD + b'{"agent": "wrote this meanwhile"}\n')
    with pytest.raises(FileChangedError):
        replace_in_place(path, OLD, OLD + b'{"n": 3}\n', lines=True)
    with pytest.raises(FileChangedError):
        replace_in_place(path, OLD, NEW, lines=True)
    assert path.read_bytes() == OLD + b'{"agent": "wrote this meanwhile"}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]  # no backup, no temp file


def test_bytes_written_between_the_check_and_the_rename_are_carried_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(OLD)
    real_replace = os.replace

    def append_then_replace(src: str, dst: str) -> None:
        with open(dst, "ab") as other_writer:  # another process, in the last instant
            other_writer.write(b'{"n": "late"}\n')
        real_replace(src, dst)

    monkeypatch.setattr(inplace.os, "replace", append_then_replace)
    done = replace_in_place(path, OLD, NEW, lines=True)
    assert path.read_bytes() == NEW + b'{"n": "late"}\n'
    assert done.backup is not None and done.backup.read_bytes() == OLD + b'{"n": "late"}\n'
    assert done.warnings == ()


def test_a_writer_holding_the_old_file_writes_into_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b"[1]\n")
    with open(path, "ab") as holder:
        done = replace_in_place(path, b"[1]\n", b"[2]\n", lines=False)
        holder.write(b"late\n")
    assert path.read_bytes() == b"[2]\n"
    assert done.backup is not None and done.backup.read_bytes() == b"[1]\nlate\n"


def test_backups_take_the_next_free_name(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    for name in ("t.json.bak", "t.json.bak.1"):
        (tmp_path / name).write_bytes(b"earlier")
    path.write_bytes(b"[1]\n")
    assert replace_in_place(path, b"[1]\n", b"[2]\n", lines=False).backup == tmp_path / "t.json.bak.2"
    assert (tmp_path / "t.json.bak").read_bytes() == b"earlier"


def test_a_backup_name_taken_in_the_race_moves_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 13: a concurrent run takes ``.bak`` between our look and our create."""
    path = tmp_path / "t.json"
    path.write_bytes(b"[1]\n")
    real_link = os.link

    def racing_link(src: str, dst: str, **kwargs: object) -> None:
        if str(dst).endswith(".bak") and not os.path.exists(dst):
            Path(dst).write_bytes(b"the other run's backup")
        real_link(src, dst, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(inplace.os, "link", racing_link)
    done = replace_in_place(path, b"[1]\n", b"[2]\n", lines=False)
    assert done.backup == tmp_path / "t.json.bak.1"
    assert (tmp_path / "t.json.bak").read_bytes() == b"the other run's backup"


def test_a_changed_file_is_read_and_worked_on_again(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b"[1]\n")
    calls = []

    def produce() -> tuple[bytes, bytes, bool]:
        read = path.read_bytes()
        calls.append(read)
        if len(calls) == 1:
            path.write_bytes(b"[1, 2]\n")  # someone else's edit while we worked
        return read, read.replace(b"]", b', "done"]'), False

    rewrite_in_place(path, produce, sleep=lambda _: None)
    assert calls == [b"[1]\n", b"[1, 2]\n"]
    assert path.read_bytes() == b'[1, 2, "done"]\n'


def test_a_file_that_keeps_changing_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b"[0]\n")
    n = 0

    def produce() -> tuple[bytes, bytes, bool]:
        nonlocal n
        read = path.read_bytes()
        n += 1
        path.write_bytes(f"[{n}]\n".encode())
        return read, b"[]\n", False

    with pytest.raises(WorkFailedError, match="kept changing"):
        rewrite_in_place(path, produce, sleep=lambda _: None)
    assert path.read_bytes() == b"[3]\n"


def test_a_session_modified_seconds_ago_is_live(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD)
    assert live_reason(path, OLD, session=True) is not None
    assert live_reason(path, OLD, session=False) is None  # any other file: only a writer counts
    _age(path)
    assert live_reason(path, OLD, session=True) is None


def test_a_session_with_a_half_written_last_line_is_live(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(OLD + b'{"type": "assist')
    _age(path)
    assert "last line" in (live_reason(path, path.read_bytes(), session=True) or "")
    path.write_bytes(OLD.rstrip(b"\n"))  # whole, only the newline missing: not live
    _age(path)
    assert live_reason(path, path.read_bytes(), session=True) is None


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize(("mode", "live"), [("ab", True), ("r+b", True), ("rb", False)])
def test_a_file_another_process_holds_open_for_writing_is_live(tmp_path: Path, mode: str, live: bool) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(OLD)
    _age(path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import sys,time; f=open({str(path)!r}, {mode!r}); print(1, flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        inplace._scan = None
        reason = live_reason(path, OLD, session=False)
        assert (reason is not None and f"process {holder.pid}" in reason) is live
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
        inplace._scan = None


def test_compact_refuses_a_live_session_unless_forced(tmp_path: Path) -> None:
    session = SessionBuilder().user("fix the parser").assistant("done").write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    args = ("compact", session, "--in-place", "--summarizer", "extractive", "--no-restore", "-q")
    refused = run_cli(*args)
    assert refused.exit_code == 3
    assert "looks live" in refused.stderr and "--force" in refused.stderr
    assert session.read_bytes() == before
    forced = run_cli(*args, "--force")
    assert forced.exit_code == 0, forced.stderr
    after = session.read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # appended: history untouched
    assert not list(tmp_path.glob("*.bak*"))


@pytest.mark.parametrize(
    "command",
    [
        ["compact", "--summarizer", "extractive", "--no-restore"],
        ["compact", "--strategy", "prune", "--keep", "0"],
        ["offload", "--min-chars", "10", "--out-dir", "{tmp}/off"],
        ["export"],
        ["restore-files"],
    ],
)
@pytest.mark.parametrize("spelling", ["same", "symlink", "dotdot", "hardlink"])
def test_output_equal_to_the_input_is_refused(tmp_path: Path, command: list[str], spelling: str) -> None:
    """Defect 6: ``-o`` naming the input (also via a symlink or ``./../``) overwrote it with no
    backup. Refused before any work: exit 2, the input untouched, nothing archived."""
    work = tmp_path / "work"
    work.mkdir()
    source = work / "t.json"
    source.write_text(
        '[{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", '
        '"id": "t1", "name": "read_file", "input": {"path": "a.py"}}]}, {"role": "user", "content": '
        '[{"type": "tool_result", "tool_use_id": "t1", "content": "' + "x" * 300 + '"}]}, '
        '{"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]'
    )
    before = source.read_bytes()
    output = {
        "same": source,
        "symlink": work / "link.json",
        "dotdot": Path(f"{work}/./../work/t.json"),
        "hardlink": work / "hard.json",
    }[spelling]
    if spelling == "symlink":
        output.symlink_to(source)
    elif spelling == "hardlink":
        os.link(source, output)
    args = [a.format(tmp=tmp_path) for a in command]
    done = run_cli(args[0], source, *args[1:], "-o", output, "-q")
    assert done.exit_code == 2, done.stderr
    assert "is the input" in done.stderr
    assert source.read_bytes() == before
    assert not (tmp_path / "off").exists()
