"""Offload commits like a database: every file written, then made durable at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ctxcompact import fileio, offload_store
from ctxcompact.errors import WorkFailedError
from ctxcompact.offload import offload_tool_results
from ctxcompact.offload_store import MANIFEST_NAME, path_inside
from ctxcompact.tokens import EstimateCounter
from ctxcompact.transcript import load_messages

RESULTS = 20


def _messages() -> Any:
    records: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(RESULTS):
        records.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{n}", "name": "bash", "input": {}}],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": f"{n} " * 300}],
            }
        )
    records.append({"role": "assistant", "content": "done"})
    return load_messages(records).messages


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = fileio.os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(fileio.os, "fsync", counting)
    return calls


def test_offload_syncs_once_not_per_file(
    tmp_path: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    syncfs: list[int] = []
    monkeypatch.setattr(fileio, "_syncfs", lambda fd: syncfs.append(fd) or True)
    result = offload_tool_results(_messages(), out_dir=tmp_path, counter=EstimateCounter())
    assert result.offloaded_count == RESULTS
    # the files, then the manifest: one file-system sync and one directory fsync each
    assert len(syncfs) == 2
    assert len(fsyncs) == 2
    assert (tmp_path / MANIFEST_NAME).is_file()


def test_without_syncfs_every_file_is_still_fsynced(
    tmp_path: Path, fsyncs: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fileio, "_syncfs", lambda fd: False)
    result = offload_tool_results(_messages(), out_dir=tmp_path, counter=EstimateCounter())
    assert result.offloaded_count == RESULTS
    assert len(fsyncs) == RESULTS + 1 + 2  # each file, the manifest, the directory twice


def test_a_run_that_reuses_every_file_syncs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    offload_tool_results(_messages(), out_dir=tmp_path, counter=EstimateCounter())
    syncs: list[int] = []
    monkeypatch.setattr(offload_store, "sync_files", lambda *a: syncs.append(1))
    again = offload_tool_results(_messages(), out_dir=tmp_path, counter=EstimateCounter())
    assert again.offloaded_count == RESULTS and all(e.reused for e in again.entries)
    assert syncs == []


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "..\\x", "nul\0"])
def test_path_inside_refuses_anything_but_one_plain_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(WorkFailedError, match="refusing"):
        path_inside(tmp_path, name)
    assert path_inside(tmp_path, "tool-result-x.md") == tmp_path / "tool-result-x.md"
