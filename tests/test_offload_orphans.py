"""An interrupted offload (kill -9, a crash between the files and the manifest) leaves files no
manifest names; ``offload --clean-orphans`` removes exactly those, and nothing else."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.errors import UsageError, WorkFailedError
from ctxcompact.ir import Message
from ctxcompact.offload.store import MANIFEST_NAME, DiskWriter, clean_orphans
from ctxcompact.offload.tool_results import offload_tool_results, undo_offload
from ctxcompact.transcripts.io import load_messages

COUNTER = EstimateCounter()


def messages(tag: str, count: int) -> tuple[Message, ...]:
    ids = [f"{tag}{k}" for k in range(count)]
    records: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": i, "name": "x", "input": {}} for i in ids],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": i, "content": i * 100} for i in ids],
        },
    ]
    return load_messages(records).messages


class KilledWriter(DiskWriter):
    """Writes ``survive`` files, then the process is killed (SIGKILL: no cleanup can run)."""

    def __init__(self, survive: int) -> None:
        self.survive = survive

    def create(self, path: Path, data: bytes) -> bool:
        if self.survive == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        self.survive -= 1
        return super().create(path, data)


def killed_offload(out: str) -> None:
    offload_tool_results(messages("killed", 5), out_dir=out, writer=KilledWriter(3), counter=COUNTER)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_run_leaves_no_lock_and_its_files_are_cleaned(tmp_path: Path) -> None:
    out = tmp_path / "offload"
    earlier = offload_tool_results(messages("kept", 2), out_dir=out, counter=COUNTER)
    child = multiprocessing.get_context("fork").Process(target=killed_offload, args=(str(out),))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == -signal.SIGKILL
    orphans = sorted(p.name for p in out.glob("tool-result-killed*.md"))
    assert orphans == ["tool-result-killed0.md", "tool-result-killed1.md", "tool-result-killed2.md"]

    later = offload_tool_results(messages("later", 1), out_dir=out, counter=COUNTER)  # not blocked
    result = clean_orphans(out)
    assert list(result.removed) == orphans and result.referenced == 3
    assert sorted(p.name for p in out.iterdir()) == [
        MANIFEST_NAME,
        "tool-result-kept0.md",
        "tool-result-kept1.md",
        "tool-result-later0.md",
    ]
    for run in (earlier, later):
        assert undo_offload(run.messages, out_dir=out).restored_count == len(run.entries)
    assert clean_orphans(out).removed == ()


def test_only_our_own_unreferenced_regular_files_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "offload"
    offload_tool_results(messages("kept", 1), out_dir=out, counter=COUNTER)
    (out / "tool-result-stray.md").write_text("left by a killed run")
    (out / ".tool-result-stray.md.k2j4_x9a.tmp").write_text("half a temp file")
    (tmp_path / "elsewhere.md").write_text("not ours")
    keep = {
        "notes.md": "user's notes",
        "tool-result-x.txt": "other suffix",
        "tool-result-.md": "no id",
        "my-tool-result-a.md": "other prefix",
    }
    for name, text in keep.items():
        (out / name).write_text(text)
    (out / "tool-result-link.md").symlink_to(tmp_path / "elsewhere.md")
    (out / "tool-result-dir.md").mkdir()
    result = clean_orphans(out)
    assert sorted(result.removed) == [".tool-result-stray.md.k2j4_x9a.tmp", "tool-result-stray.md"]
    assert all((out / name).read_text() == text for name, text in keep.items())
    assert (out / "tool-result-link.md").is_symlink() and (tmp_path / "elsewhere.md").exists()
    assert (out / "tool-result-dir.md").is_dir() and (out / "tool-result-kept0.md").exists()


def test_an_unreadable_manifest_removes_nothing(tmp_path: Path) -> None:
    (tmp_path / "tool-result-a.md").write_text("a")
    (tmp_path / MANIFEST_NAME).write_text("{broken")
    with pytest.raises(WorkFailedError, match="not valid JSON"):
        clean_orphans(tmp_path)
    assert (tmp_path / "tool-result-a.md").exists()


def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        clean_orphans(tmp_path / "nope")


# --- the CLI ---------------------------------------------------------------------------------------


def test_cli_clean_orphans_reports_on_stderr_and_in_stats_json(tmp_path: Path) -> None:
    out = tmp_path / "offload"
    offload_tool_results(messages("kept", 1), out_dir=out, counter=COUNTER)
    (out / "tool-result-stray.md").write_text("x")
    stats = tmp_path / "stats.json"
    result = run_cli("offload", "--clean-orphans", "--out-dir", str(out), "--stats-json", str(stats))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert "removed 1 orphaned file" in result.stderr and "tool-result-stray.md" in result.stderr
    assert json.loads(stats.read_text()) == {
        "version": 1,
        "out_dir": str(out.resolve()),
        "removed_count": 1,
        "removed": ["tool-result-stray.md"],
        "referenced_count": 1,
    }
    again = run_cli("offload", "--clean-orphans", "--out-dir", str(out), "-q")
    assert again.exit_code == 0 and again.stderr == ""


def test_cli_clean_orphans_refuses_a_transcript_or_undo(tmp_path: Path) -> None:
    for extra in (["t.json"], ["--undo"]):
        result = run_cli("offload", "--clean-orphans", "--out-dir", str(tmp_path), *extra)
        assert result.exit_code == 2 and "--clean-orphans" in result.stderr
