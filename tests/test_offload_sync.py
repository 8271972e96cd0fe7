"""Offload commits like a database: every file written, then made durable at once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.errors import WorkFailedError
from ctxcompact.offload import store as offload_store
from ctxcompact.offload.store import (
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    DiskWriter,
    manifest_bytes,
    path_inside,
    read_manifest,
)
from ctxcompact.offload.tool_results import offload_tool_results
from ctxcompact.transcripts import fileio
from ctxcompact.transcripts.io import load_messages

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


# The manifest is written by orjson for speed; its bytes must stay the stdlib's, which every
# existing manifest (and `git diff` of one) was written with.
_ENTRY = st.fixed_dictionaries(
    {
        "tool_use_id": st.one_of(st.none(), st.text()),
        "sha256": st.text(alphabet="0123456789abcdef", max_size=64),
        "stored_as": st.sampled_from(["text", "json"]),
        "chars": st.integers(0, 2**63 - 1),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(), _ENTRY, max_size=6))
@example({"tool-result-x.md": {"tool_use_id": "\ud800", "sha256": "", "stored_as": "text", "chars": 1}})
@example(
    {"tool-result-é.md": {"tool_use_id": "é\x00\u2028\x7f", "sha256": "", "stored_as": "json", "chars": 0}}
)
def test_the_manifest_is_the_stdlib_json_it_always_was(files: dict[str, dict[str, Any]]) -> None:
    body = {"format": MANIFEST_FORMAT, "version": 1, "files": dict(sorted(files.items()))}
    try:
        expected = json.dumps(body, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: the stdlib path, as before
        with pytest.raises(UnicodeEncodeError):
            manifest_bytes(files)
        return
    written = manifest_bytes(files)
    assert written == expected
    assert read_manifest(_BytesReader(written), Path("/m")) == files


class _BytesReader(DiskWriter):
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, path: Path, max_bytes: int | None = None) -> bytes | None:
        return self.data
