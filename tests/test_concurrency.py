"""Concurrent runs sharing one directory (issue 9.1): every offload run stays undoable, and
files written by parallel jobs are always whole."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import stat
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

from ctxcompact.compaction.archive import write_archive
from ctxcompact.errors import WorkFailedError
from ctxcompact.offload.store import LOCK_FILE_NAME, directory_lock
from ctxcompact.transcripts.fileio import write_atomic
from ctxcompact.transcripts.io import load_messages

RUNS = 12

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork for a quick process pool"
)


def transcript(run: int) -> list[dict[str, Any]]:
    """Ids shared by every run (so names collide and need suffixes), contents unique to each."""
    ids = [f"toolu_{k}" for k in range(6)]
    return [
        {"role": "user", "content": "Look."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": i}} for i in ids
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": i, "content": f"run {run} result {i}\n" * 40}
                for i in ids
            ],
        },
    ]


def undo(lean: Path, out: Path) -> Any:
    """``offload --undo`` in-process (only the offloads need to be concurrent)."""
    return run_cli("offload", "--undo", str(lean), "--out-dir", str(out), "-q")


def offload_in_process(job: tuple[int, str, Any]) -> None:
    run, directory, barrier = job
    root = Path(directory)
    source = root / f"t{run}.json"
    barrier.wait(timeout=60)  # all start together, to make the race as likely as possible
    from ctxcompact.accounting.tokens import EstimateCounter
    from ctxcompact.offload.tool_results import offload_tool_results
    from ctxcompact.transcripts.io import dump_transcript, load_transcript

    loaded = load_transcript(source)
    conv = loaded.conversations[0]
    result = offload_tool_results(conv.messages, out_dir=root / "offload", counter=EstimateCounter())
    lean = loaded.with_conversations([conv.with_messages(result.messages)])
    (root / f"lean{run}.json").write_bytes(dump_transcript(lean))


def test_concurrent_offloads_into_one_directory_are_all_undoable(tmp_path: Path) -> None:
    originals = {}
    for run in range(RUNS):
        path = tmp_path / f"t{run}.json"
        path.write_text(json.dumps(transcript(run), indent=2) + "\n")
        originals[run] = path.read_bytes()
    context = multiprocessing.get_context("fork")
    barrier = context.Manager().Barrier(RUNS)
    with context.Pool(RUNS) as pool:
        pool.map(offload_in_process, [(run, str(tmp_path), barrier) for run in range(RUNS)])

    out = tmp_path / "offload"
    manifest = json.loads((out / "offload-manifest.json").read_text())["files"]
    written = sorted(p.name for p in out.glob("tool-result-*.md"))
    assert len(written) == RUNS * 6 and sorted(manifest) == written
    for run in range(RUNS):
        back = undo(tmp_path / f"lean{run}.json", out)
        assert back.exit_code == 0, back.stderr
        assert back.stdout_bytes == originals[run]
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_concurrent_cli_offloads_then_every_undo_gives_the_original_back(tmp_path: Path) -> None:
    runs = 8
    out = tmp_path / "offload"
    for run in range(runs):
        (tmp_path / f"t{run}.json").write_text(json.dumps(transcript(run), indent=2) + "\n")
    env = {**os.environ, "CTXCOMPACT_TRACEBACK": "1"}
    procs = []
    for run in range(runs):
        args = ["offload", str(tmp_path / f"t{run}.json"), "--out-dir", str(out), "--counter", "estimate"]
        args += ["-q", "-o", str(tmp_path / f"lean{run}.json")]
        procs.append(
            subprocess.Popen([sys.executable, "-m", "ctxcompact", *args], stderr=subprocess.PIPE, env=env)
        )
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    for run in range(runs):
        back = undo(tmp_path / f"lean{run}.json", out)
        assert back.exit_code == 0, back.stderr
        assert back.stdout_bytes == (tmp_path / f"t{run}.json").read_bytes()


def write_many(job: tuple[str, int]) -> None:
    path, n = job
    for k in range(20):
        write_atomic(path, json.dumps({"job": n, "k": k, "pad": "x" * 50_000}).encode())


def test_parallel_writers_of_one_report_leave_a_whole_file_and_no_temp_files(tmp_path: Path) -> None:
    """--report / --stats-json from parallel batch jobs: last writer wins, never a torn file."""
    report = tmp_path / "report.json"
    with multiprocessing.get_context("fork").Pool(6) as pool:
        pool.map(write_many, [(str(report), n) for n in range(6)])
    assert json.loads(report.read_text())["k"] == 19
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


NOW = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
ARCHIVED = [{"role": "user", "content": "the same replaced history"}]


def archive_once(directory: str) -> str:
    return str(
        write_archive(load_messages(ARCHIVED).messages, dialect="anthropic", archive_dir=directory, now=NOW)
    )


def test_parallel_jobs_never_replace_each_others_archives(tmp_path: Path) -> None:
    """Same content in the same microsecond: the name is taken, so -1, -2… — never a replace."""
    with multiprocessing.get_context("fork").Pool(6) as pool:
        paths = pool.map(archive_once, [str(tmp_path)] * 6)
    assert len(set(paths)) == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(Path(p).name for p in paths)
    assert all(json.loads(Path(p).read_text()) == ARCHIVED[0] for p in paths)


def test_a_run_waits_for_the_lock_and_gives_up_with_a_clear_message(tmp_path: Path) -> None:
    busy = pytest.raises(WorkFailedError, match="waiting for another ctxcompact run")
    with directory_lock(tmp_path), busy, directory_lock(tmp_path, timeout=0.2):
        pass
    with directory_lock(tmp_path, timeout=0.2):  # released: free again
        pass
    assert list(tmp_path.iterdir()) == []  # the directory itself was locked: no file left


def test_where_a_directory_cannot_be_locked_a_lock_file_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    real_flock = fcntl.flock

    def no_directory_locks(fd: int, operation: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor")  # as NFS does
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_directory_locks)
    busy = pytest.raises(WorkFailedError, match="waiting for another ctxcompact run")
    with directory_lock(tmp_path), busy, directory_lock(tmp_path, timeout=0.2):
        pass
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_FILE_NAME]


def test_a_temp_file_is_private_beside_its_target_and_named_as_the_cleaner_knows(tmp_path: Path) -> None:
    """write_temp's file (made without tempfile): created exclusively beside the target, with
    the target's mode once written, under a name the dead-temp cleaner recognises; two are
    never the same file."""
    from ctxcompact.transcripts.fileio import TEMP_FILE_RE, write_temp

    target = tmp_path / "report.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    made = {write_temp(target, b"new", sync=False) for _ in range(20)}
    assert len(made) == 20
    for tmp in map(Path, made):
        assert tmp.parent == tmp_path and TEMP_FILE_RE.fullmatch(tmp.name), tmp.name
        assert tmp.read_bytes() == b"new" and tmp.stat().st_mode & 0o777 == 0o640
