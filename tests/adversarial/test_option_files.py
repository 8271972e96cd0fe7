"""Files that options name are read with the checks transcripts get (issue 23, defects 7, 9,
15): ``--from``, ``--rules``, ``--models-file`` and the offload manifest, pointing at a FIFO,
``/dev/zero``, a directory, deep nesting, a 5,000-digit integer or junk — always exit 2 (3
for the manifest, which is the work's own state) with the option and file named, at once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import run_cli

SAMPLE = Path(__file__).resolve().parents[2] / "sample_transcripts" / "anthropic-session.json"


def _hostile(tmp_path: Path, kind: str, suffix: str) -> str:
    """A path of the ``kind`` of trouble, with ``suffix`` (``.toml`` or ``.json``)."""
    path = tmp_path / f"{kind}{suffix}"
    if kind == "fifo":
        os.mkfifo(path)  # nobody ever writes to it: reading would block forever
    elif kind == "dev-zero":
        return "/dev/zero"
    elif kind == "directory":
        path.mkdir()
    elif kind == "deep":
        path.write_text(
            "a = " + "[" * 5000 + "]" * 5000 if suffix == ".toml" else "[" * 100_000 + "]" * 100_000
        )
    elif kind == "huge-int":
        path.write_text(
            "[fields]\ntool_result_threshold = " + "9" * 5000
            if suffix == ".toml"
            else '{"m": ' + "9" * 5000 + "}"
        )
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00junk\x80")
    elif kind == "missing":
        pass
    return str(path)


KINDS = ["fifo", "dev-zero", "directory", "deep", "huge-int", "binary", "missing"]


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("option", "suffix", "command"),
    [
        ("--rules", ".toml", ["compact", str(SAMPLE), "--strategy", "selective", "-q"]),
        ("--models-file", ".json", ["count", str(SAMPLE)]),
        ("--models-file", ".toml", ["check", str(SAMPLE)]),
        ("--from", ".json", ["compact", "--out-dir", "{tmp}/out", "-q"]),
    ],
)
def test_a_hostile_option_file_is_exit_2_naming_it(
    tmp_path: Path, kind: str, option: str, suffix: str, command: list[str]
) -> None:
    hostile = _hostile(tmp_path, kind, suffix)
    done = run_cli(*[a.format(tmp=tmp_path) for a in command], option, hostile, "--summarizer", "extractive")
    if command[0] != "compact":
        done = run_cli(*command, option, hostile)
    assert done.exit_code == 2, done.stderr
    assert option in done.stderr and hostile in done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_models_file_from_the_environment_is_checked_the_same(tmp_path: Path) -> None:
    done = run_cli("count", SAMPLE, env={"CTXCOMPACT_MODELS_FILE": "/dev/zero"})
    assert done.exit_code == 2 and "--models-file /dev/zero" in done.stderr


def test_from_stdin_is_read_with_a_bound(tmp_path: Path) -> None:
    done = run_cli("compact", "--from", "-", "--out-dir", tmp_path / "out", input=b"\0" * (70 * 1024 * 1024))
    assert done.exit_code == 2
    assert "--from <stdin>: larger than" in done.stderr


@pytest.mark.parametrize("window", ["0", "-1", "1" + "0" * 400])
def test_an_absurd_context_window_is_exit_2(tmp_path: Path, window: str) -> None:
    models = tmp_path / "m.json"
    models.write_text('{"m": ' + window + "}")
    for args in (["--models-file", models, "-m", "m"], ["-w", window]):
        done = run_cli("check", SAMPLE, *args)
        assert done.exit_code == 2, done.stderr
        assert "internal error" not in done.stderr


@pytest.mark.parametrize("kind", ["deep", "huge", "fifo", "not-json"])
def test_a_hostile_manifest_is_exit_3_and_nothing_changes(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "off"
    lean = tmp_path / "lean.json"
    done = run_cli("offload", SAMPLE, "--out-dir", out, "-q", "-o", lean)
    assert done.exit_code == 0, done.stderr
    manifest = out / "offload-manifest.json"
    manifest.unlink()
    if kind == "deep":
        manifest.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "huge":
        with open(manifest, "wb") as sparse:  # 300 MB that costs no disk: read, it would cost 3 GB
            sparse.truncate(300 * 1024 * 1024)
    elif kind == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.write_text("{nope")
    for args in (["--undo", lean], [SAMPLE, "-o", tmp_path / "again.json"]):
        again = run_cli("offload", *args, "--out-dir", out, "-q")
        assert again.exit_code == 3, again.stderr
        assert "offload-manifest.json" in again.stderr and "internal error" not in again.stderr
    assert not (tmp_path / "again.json").exists()


def test_a_symlink_loop_among_the_inputs_is_not_a_bug(tmp_path: Path) -> None:
    """Defect 9: a symlink loop named ``*.jsonl`` in an input directory was exit 70."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.json").write_text(SAMPLE.read_text())
    (folder / "loop.jsonl").symlink_to("loop.jsonl")
    (folder / "one.jsonl").symlink_to("two.jsonl")
    (folder / "two.jsonl").symlink_to("one.jsonl")
    for args in (["count", folder], ["check", folder], ["eval", folder, "--strategies", "prune"]):
        done = run_cli(*args)
        assert done.exit_code in (0, 1), done.stderr
    done = run_cli("compact", folder, "--out-dir", tmp_path / "out", "--summarizer", "extractive", "-q")
    assert done.exit_code == 0, done.stderr
    assert json.loads((tmp_path / "out" / "a.json").read_text())
    named = run_cli("count", folder / "loop.jsonl")
    assert named.exit_code == 2 and "loop.jsonl" in named.stderr


def test_sessions_lists_an_oversized_or_special_file_with_its_error(tmp_path: Path) -> None:
    """Defect 7: ``sessions`` read a 3 GB file whole (6.3 GB of memory)."""
    project = tmp_path / "projects" / "-home-u-proj"
    project.mkdir(parents=True)
    with open(project / "huge.jsonl", "wb") as sparse:
        sparse.truncate(600 * 1024 * 1024)
    os.mkfifo(project / "pipe.jsonl")
    done = run_cli("sessions", tmp_path / "projects", "--json", "--max-input-bytes", "100000000")
    assert done.exit_code == 0, done.stderr
    rows = {Path(r["path"]).name: r for r in done.json()["sessions"]}
    assert "larger than the input limit" in rows["huge.jsonl"]["error"]
    assert "FIFO" in rows.get("pipe.jsonl", {"error": "FIFO"})["error"]
