"""Real processes racing ``--in-place`` (issue 23, defects 2, 13, 14): an appender writing to
the file while it is compacted, several compactions of one file at once, and runs killed
with SIGKILL. Nothing another process wrote may be lost; nothing half-written may be left."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from session_builders import SessionBuilder

from ctxcompact.transcripts.fileio import STALE_TEMP_SECONDS, TEMP_FILE_RE

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "ctxcompact"]
OFFLINE = ["--summarizer", "extractive", "--no-restore", "-q"]


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CTXCOMPACT_TRACEBACK": ""}
    return subprocess.Popen(
        [*CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env
    )


def _tool_rounds(n: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for k in range(n):
        records.append({"role": "user", "content": f"step {k}: run the tests"})
        records.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"cmd": "pytest"}}],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "content": "FAILED x\n" * 200}],
            }
        )
        records.append({"role": "assistant", "content": f"fixed step {k}"})
    return records


APPENDER = r"""
import os, sys, time
path, stop_after, burst, pause = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
end, n = time.monotonic() + stop_after, 0
while time.monotonic() < end:
    for _ in range(burst):
        line = '{"role": "user", "content": "appended %d"}\n' % n if sys.argv[5] == "plain" else (
            '{"type": "user", "uuid": "appended-%d", "parentUuid": null, "isSidechain": false, '
            '"sessionId": "s", "message": {"role": "user", "content": "appended %d"}}\n' % (n, n))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # as `echo >> FILE` and the agents do
        os.write(fd, line.encode())
        os.close(fd)
        n += 1
    time.sleep(pause)
print(n)
"""


def _append_while_compacting(path: Path, kind: str, compact_args: list[str]) -> tuple[int, list[int]]:
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), "2.5", "5", "0.02", kind], stdout=subprocess.PIPE
    )
    codes: list[int] = []
    try:
        while appender.poll() is None:
            run = _cli("compact", path, "--in-place", *compact_args)
            run.communicate(timeout=60)
            codes.append(run.returncode)
    finally:
        out, _ = appender.communicate(timeout=30)
    return int(out), codes


@pytest.mark.parametrize(
    ("kind", "args"),
    [
        ("plain", ["--strategy", "prune", "--keep", "0", "-q"]),  # JSONL rewritten by a rename
        ("session", [*OFFLINE, "--force"]),  # a Claude Code session: appended
    ],
)
def test_every_line_appended_during_in_place_survives(tmp_path: Path, kind: str, args: list[str]) -> None:
    path = tmp_path / ("t.jsonl" if kind == "plain" else "s.jsonl")
    if kind == "plain":
        path.write_text("".join(json.dumps(r) + "\n" for r in _tool_rounds(12)))
    else:
        builder = SessionBuilder()
        for k in range(12):
            builder.user(f"step {k}: " + "explain the failure " * 40).assistant(f"fixed step {k}")
        builder.write(path)
    appended, codes = _append_while_compacting(path, kind, args)
    text = path.read_text()
    missing = [n for n in range(appended) if f'"appended {n}"' not in text]
    assert missing == [], f"{len(missing)} of {appended} appended lines lost; exits {codes}"
    assert set(codes) <= {0, 3}, codes
    for line in text.splitlines():
        json.loads(line)  # every line whole


def test_concurrent_in_place_runs_take_distinct_backups(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    original = json.dumps(_tool_rounds(8))
    path.write_text(original)
    runs = [
        _cli("compact", path, "--in-place", "--strategy", "prune", "--keep", str(k % 3), "-q")
        for k in range(6)
    ]
    results = [(run.returncode, err.decode()) for run in runs for _, err in [run.communicate(timeout=120)]]
    assert all(code in (0, 3) for code, _ in results), results
    assert not any("File exists" in err for _, err in results)
    backups = sorted(tmp_path.glob("t.json.bak*"))  # one per run that changed the file
    assert 1 <= len(backups) <= sum(1 for code, _ in results if code == 0)
    assert any(b.read_text() == original for b in backups)
    for file in [path, *backups]:
        json.loads(file.read_text())  # every version whole


@pytest.mark.parametrize("mode", ["output", "in-place"])
def test_kill_9_leaves_the_input_whole_and_a_later_run_cleans_up(tmp_path: Path, mode: str) -> None:
    source = tmp_path / "t.json"
    original = json.dumps(_tool_rounds(30))
    source.write_text(original)
    out = tmp_path / "out.json"
    rng = random.Random(23)
    for _ in range(5):
        target = ["-o", out] if mode == "output" else ["--in-place"]
        run = _cli("compact", source, *target, "--strategy", "prune", "--keep", "0", "-q")
        time.sleep(rng.uniform(0.2, 0.7))
        run.send_signal(signal.SIGKILL)
        run.communicate(timeout=30)
        for file in [source, *([out] if out.exists() else [])]:
            json.loads(file.read_text())  # the old file or the new one, never a mix
    # What a kill in the middle of writing a temp file leaves (the loop above may not hit it).
    gone = subprocess.Popen(["true"])
    gone.wait()
    (tmp_path / f".out.json.{gone.pid}-k9abcdef.tmp").write_text('[{"role": "us')
    stale = [p for p in tmp_path.iterdir() if TEMP_FILE_RE.fullmatch(p.name)]
    long_ago = time.time() - STALE_TEMP_SECONDS - 5
    for p in stale:
        os.utime(p, (long_ago, long_ago))
    done = _cli("compact", source, "-o", out, "--strategy", "prune", "--keep", "0", "-q")
    done.communicate(timeout=60)
    assert done.returncode == 0
    assert [p.name for p in tmp_path.iterdir() if TEMP_FILE_RE.fullmatch(p.name)] == []
