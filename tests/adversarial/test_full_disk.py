"""Full and read-only file systems (issue 23, defects 1, 9, 18): every write checks it wrote
everything — exit 3 naming the path, no partial file left behind, stdout included — and no
write failure is ever exit 70. A small tmpfs is mounted where the test may (root, Linux);
elsewhere those cases skip with the reason, and ``/dev/full`` covers what it can."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxcompact.transcripts.fileio import TEMP_FILE_RE

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "ctxcompact"]


def _cli(
    *args: str | Path, stdout: object = subprocess.PIPE, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *map(str, args)],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        env={**os.environ, "CTXCOMPACT_TRACEBACK": "", **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """``tmpfs(size="64k", ro=False)``: a fresh tmpfs mounted below ``tmp_path``."""
    mounted: list[Path] = []

    def mount(size: str = "64k", *, ro: bool = False) -> Path:
        if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a small tmpfs needs root on Linux")
        point = tmp_path / f"fs{len(mounted)}"
        point.mkdir()
        options = f"size={size},mode=1777" + (",ro" if ro else "")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True, check=False
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


@pytest.fixture
def big(tmp_path: Path) -> Path:
    """A transcript whose output (~300 KB) cannot fit a 64 KB file system."""
    records = [
        {"role": "user", "content": "x " * 20_000},
        {"role": "assistant", "content": "y " * 20_000},
    ] * 4
    path = tmp_path / "big.json"
    path.write_text(json.dumps(records))
    return path


def _fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def _exit3_naming(done: subprocess.CompletedProcess[bytes], path: str) -> None:
    assert done.returncode == 3, done.stderr
    assert path in done.stderr.decode()
    assert "internal error" not in done.stderr.decode()


@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize(
    "command", [["export", "-q"], ["count", "--json"], ["compact", "--strategy", "prune", "-q"]]
)
def test_stdout_on_a_full_disk_is_exit_3_and_leaves_nothing(
    tmpfs: Callable[..., Path], big: Path, unbuffered: str, command: list[str]
) -> None:
    fs = tmpfs("64k")
    target = fs / "o.json"
    if command[0] == "count":
        _fill(fs / "filler")  # the report is small: leave it no room at all
    with open(target, "wb") as out:
        done = _cli(*command, big, stdout=out, env={"PYTHONUNBUFFERED": unbuffered})
    _exit3_naming(done, str(target))
    assert target.stat().st_size == 0


def test_stdout_appended_to_a_full_disk_is_cut_back(tmpfs: Callable[..., Path], big: Path) -> None:
    fs = tmpfs("64k")
    log = fs / "log"
    log.write_bytes(b"earlier output\n")
    with open(log, "ab") as out:
        done = _cli("export", "-q", big, stdout=out)
    _exit3_naming(done, str(log))
    assert log.read_bytes() == b"earlier output\n"


def test_dev_full_is_exit_3() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    sample = Path(__file__).resolve().parents[2] / "sample_transcripts" / "anthropic-session.json"
    with open("/dev/full", "wb") as out:
        done = _cli("count", "--json", sample, stdout=out)
    _exit3_naming(done, "/dev/full")


@pytest.mark.parametrize(
    "target",
    [
        ["-o", "{fs}/o.json"],
        ["--out-dir", "{fs}/out"],
        ["--archive-dir", "{fs}/archive", "-o", "{tmp}/o.json"],
        ["--stats-json", "{fs}/stats.json", "-o", "{tmp}/o.json"],
    ],
)
def test_a_file_that_does_not_fit_is_exit_3_and_no_partial_file(
    tmpfs: Callable[..., Path], big: Path, tmp_path: Path, target: list[str]
) -> None:
    fs = tmpfs("64k")
    (fs / "filler").write_bytes(b"x" * (62 * 1024))
    args = [a.format(fs=fs, tmp=tmp_path) for a in target]
    done = _cli("compact", big, "--summarizer", "extractive", "--no-restore", "-q", *args)
    assert done.returncode == 3, done.stderr
    assert "internal error" not in done.stderr.decode()
    left = [p.name for p in fs.rglob("*") if p.is_file() and p.name != "filler"]
    assert [n for n in left if TEMP_FILE_RE.fullmatch(n)] == []
    assert not (fs / "o.json").exists()


def test_in_place_on_a_full_disk_leaves_the_input_as_it_was(tmpfs: Callable[..., Path], big: Path) -> None:
    fs = tmpfs("1m")
    path = fs / "big.json"
    shutil.copy(big, path)
    (fs / "filler").write_bytes(b"x" * (1024 * 1024 - path.stat().st_size - 16 * 1024))
    done = _cli("compact", path, "--in-place", "--strategy", "prune", "--keep", "0", "--include-loop", "-q")
    assert done.returncode in (0, 3), done.stderr
    assert "internal error" not in done.stderr.decode()
    if done.returncode == 3:
        assert path.read_bytes() == big.read_bytes()
    assert [p.name for p in fs.iterdir() if TEMP_FILE_RE.fullmatch(p.name)] == []


@pytest.mark.parametrize(
    "args",
    [
        ["compact", "{dir}", "--out-dir", "{ro}/out", "--summarizer", "extractive", "-q"],
        ["compact", "{big}", "-o", "{ro}/o.json", "--summarizer", "extractive", "-q"],
        ["compact", "{big}", "--archive-dir", "{ro}/a", "--summarizer", "extractive", "-q"],
        ["offload", "{big}", "--out-dir", "{ro}/off", "-q"],
        ["restore-files", "{big}", "-o", "{ro}/r.json", "-q"],
        ["export", "{big}", "-o", "{ro}/e.json", "-q"],
    ],
)
def test_a_read_only_file_system_is_exit_2_or_3_never_70(
    tmpfs: Callable[..., Path], big: Path, tmp_path: Path, args: list[str]
) -> None:
    ro = tmpfs("64k", ro=True)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(big, folder / "a.json")
    done = _cli(*(a.format(ro=ro, big=big, dir=folder) for a in args))
    assert done.returncode in (2, 3), done.stderr
    assert "internal error" not in done.stderr.decode()


def test_out_dir_that_is_a_file_is_exit_2(tmp_path: Path, big: Path) -> None:
    """Defect 18: ``compact DIR --out-dir EXISTING_FILE`` was exit 70 (FileExistsError)."""
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(big, folder / "a.json")
    (tmp_path / "afile").write_text("not a directory")
    for inputs in ([folder], [folder / "a.json"]):
        done = _cli("compact", *inputs, "--out-dir", tmp_path / "afile", "--summarizer", "extractive", "-q")
        assert done.returncode == 2, done.stderr
        assert "afile" in done.stderr.decode() and "not a directory" in done.stderr.decode()
