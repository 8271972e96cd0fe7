"""Check-then-use races: a path checked inside a directory is swapped for a symlink before it
is read (issue 9.2). The swap is made deterministic by running it from inside the check."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import ctxcompact.compaction.restore as restore_module
import ctxcompact.offload.tool_results as offload_module
from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.restore import DiskFileReader, restore_recent_files
from ctxcompact.errors import WorkFailedError
from ctxcompact.ir import Message, Source
from ctxcompact.offload.store import MANIFEST_NAME
from ctxcompact.offload.tool_results import offload_tool_results, undo_offload

SECRET = "root:x:0:0:the secret outside the work dir\n"


def msg(role: str, *blocks: dict[str, Any]) -> Message:
    return Message(role, tuple(blocks), Source(({},), (0,)))


def reads(*paths: str) -> list[Message]:
    out = [msg("user", {"type": "text", "text": "go"})]
    for n, path in enumerate(paths):
        out.append(
            msg(
                "assistant", {"type": "tool_use", "id": f"t{n}", "name": "read_file", "input": {"path": path}}
            )
        )
        out.append(msg("user", {"type": "tool_result", "tool_use_id": f"t{n}", "content": "..."}))
    return out


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    """``work/sub/passwd`` (harmless) and ``outside/passwd`` (the secret)."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "passwd").write_text("harmless\n")
    outside.mkdir()
    (outside / "passwd").write_text(SECRET)
    return work, outside


def swap_dir_for_symlink(directory: Path, target: Path) -> None:
    directory.rename(directory.with_name(directory.name + ".moved"))
    directory.symlink_to(target, target_is_directory=True)


def test_directory_swapped_for_a_symlink_after_the_check_is_refused(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, outside = layout
    check = restore_module.resolve_inside

    def check_then_swap(path: str, root: Path) -> Path | None:
        resolved = check(path, root)
        swap_dir_for_symlink(work / "sub", outside)  # the attacker wins the race every time
        return resolved

    monkeypatch.setattr(restore_module, "resolve_inside", check_then_swap)
    result = restore_recent_files(reads("sub/passwd"), work_dir=work)
    assert result.files == ()
    assert [(s.path, s.reason) for s in result.skipped] == [
        ("sub/passwd", "a symlink appeared after the check")
    ]


def test_file_swapped_for_a_symlink_after_the_check_is_refused(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, outside = layout
    check = restore_module.resolve_inside

    def check_then_swap(path: str, root: Path) -> Path | None:
        resolved = check(path, root)
        (work / "sub" / "passwd").unlink()
        (work / "sub" / "passwd").symlink_to(outside / "passwd")
        return resolved

    monkeypatch.setattr(restore_module, "resolve_inside", check_then_swap)
    result = restore_recent_files(reads("sub/passwd"), work_dir=work)
    assert result.files == () and all(SECRET not in s.reason for s in result.skipped)


def test_symlinks_resolving_inside_still_work_and_read_their_target(layout: tuple[Path, Path]) -> None:
    work, _ = layout
    (work / "alias").symlink_to(work / "sub")
    (work / "alias.txt").symlink_to(work / "sub" / "passwd")
    result = restore_recent_files(reads("alias/passwd", "alias.txt"), work_dir=work)
    assert [f.content for f in result.files] == ["harmless\n"]  # one file, read once
    assert result.files[0].resolved == work / "sub" / "passwd"


def test_disk_reader_never_follows_a_symlink_on_the_way(layout: tuple[Path, Path]) -> None:
    work, outside = layout
    (work / "link").symlink_to(outside)
    with pytest.raises(OSError, match="symlink"):
        DiskFileReader().read_bytes(work / "link" / "passwd")
    assert DiskFileReader().read_bytes(work / "sub" / "passwd") == b"harmless\n"


# --- offload --undo reading the .md files --------------------------------------------------------


def test_undo_refuses_an_offload_file_swapped_for_a_symlink_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with a forged manifest whose sha256 matches the secret, undo never follows the
    swapped-in symlink: the .md file is opened with O_NOFOLLOW relative to the out dir."""
    out, secret = tmp_path / "out", tmp_path / "passwd"
    secret.write_text(SECRET)
    messages = [
        msg("assistant", {"type": "tool_use", "id": "a", "name": "read_file", "input": {}}),
        msg("user", {"type": "tool_result", "tool_use_id": "a", "content": "x" * 500}),
    ]
    lean = offload_tool_results(messages, out_dir=out, counter=EstimateCounter())
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    manifest["files"]["tool-result-a.md"]["sha256"] = hashlib.sha256(SECRET.encode()).hexdigest()
    (out / MANIFEST_NAME).write_text(json.dumps(manifest))
    check = offload_module.path_inside

    def check_then_swap(root: Path, name: str) -> Path:
        path = check(root, name)
        path.unlink()
        path.symlink_to(secret)
        return path

    monkeypatch.setattr(offload_module, "path_inside", check_then_swap)
    with pytest.raises(WorkFailedError, match="symlink") as failure:
        undo_offload(lean.messages, out_dir=out)
    assert SECRET not in str(failure.value)
