"""Every real transcript in ``../shared/corpus`` loads, counts, validates and round-trips.

The corpus is not part of a user's clone: these tests skip cleanly when it is absent. Files are
read in place, never copied into the project.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS, corpus_files, requires_corpus, same_json

from ctxcompact.accounting.check import measure
from ctxcompact.accounting.tokens import TiktokenCounter
from ctxcompact.errors import InputError
from ctxcompact.transcripts.io import Transcript, dump_transcript, load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

pytestmark = requires_corpus

#: SWE-agent trajectories are read as text-action trajectories (tests/test_real_sessions.py).
SWE_AGENT = [p for p in corpus_files("other") if p.name.startswith("sweagent-")]
READABLE = [*corpus_files("anthropic", "openai", "claude-code"), *SWE_AGENT]
#: Codex rollouts are read (tests/test_codex.py); every other file there is refused.
CODEX = [p for p in corpus_files("other") if p.name.startswith("codex-rollout")]
OTHER = [p for p in corpus_files("other") if p not in CODEX and p not in SWE_AGENT]


def original_data(path: Path) -> Any:
    raw = path.read_bytes()
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    return orjson.loads(raw)


@cache
def loaded(path: Path) -> Transcript:
    return load_transcript(path)


def test_the_corpus_has_the_expected_kinds_of_file() -> None:
    by_dir = {p.parent.name for p in READABLE}
    assert by_dir == {"anthropic", "openai", "claude-code", "other"}
    assert OTHER


@pytest.mark.parametrize("path", READABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_loads_with_the_right_dialect(path: Path) -> None:
    t = loaded(path)
    dirs = {
        "anthropic": "anthropic",
        "openai": "openai",
        "claude-code": "claude-code",
        "other": "text-action",
    }
    expected = dirs[path.parent.name]
    assert {c.dialect for c in t.conversations} == {expected}
    assert all(c.messages for c in t.conversations)


@pytest.mark.parametrize("path", READABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_round_trip_is_lossless(path: Path) -> None:
    t = loaded(path)
    assert same_json(t.root, original_data(path))
    again = load_transcript(data=dump_transcript(t), name=str(path))
    assert same_json(again.root, t.root)
    assert [len(c.messages) for c in again.conversations] == [len(c.messages) for c in t.conversations]
    assert [c.passthrough for c in again.conversations] == [c.passthrough for c in t.conversations]


@pytest.mark.parametrize("path", READABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_counts_are_positive_and_add_up(path: Path) -> None:
    counter = TiktokenCounter()
    for conv in loaded(path).conversations:
        report = measure(conv, counter)
        assert report.total > 0
        assert report.total == sum(report.by_role.values()) == sum(report.by_type.values())
        assert report.message_count == len(conv.messages)


@pytest.mark.parametrize("path", READABLE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_validate_finds_no_errors(path: Path) -> None:
    for conv in loaded(path).conversations:
        assert errors_only(validate_messages(conv.messages, dialect=conv.dialect)) == [], conv.label


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("gemini-cli", "Gemini CLI session"),
        ("openhands-basic", "OpenHands event stream"),
        ("openhands-multi", "OpenHands evaluation"),
    ],
)
def test_other_formats_are_refused_by_name(name: str, fmt: str) -> None:
    paths = [p for p in OTHER if p.name.startswith(name)]
    assert paths, f"no corpus file starting with {name}"
    for path in paths:
        with pytest.raises(InputError) as info:
            load_transcript(path)
        text = str(info.value)
        assert text.startswith(f"{path}:"), text
        assert fmt in text
        assert "not a supported input format" in text


def test_every_other_file_is_refused() -> None:
    for path in OTHER:
        with pytest.raises(InputError, match="not a supported input format"):
            load_transcript(path)


# --- the real-world variants the issue names ---------------------------------------------------


def corpus(relative: str) -> Path:
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"{relative} is not in this corpus")
    return path


def test_openai_variants_content_null_reasoning_exit() -> None:
    t = loaded(corpus("openai/miniswe-deepseek-chat-django-11910.traj.json"))
    conv = t.conversations[0]
    last = len(conv.records) - 1
    assert conv.records[last]["role"] == "exit"
    assert last in conv.passthrough
    calls = [b for m in conv.messages for b in m.content if b["type"] == "tool_use"]
    assert len(calls) == 138
    taubench = loaded(corpus("openai/taubench-gpt-4o-airline-200trajs.json"))
    assert (taubench.container, taubench.collection_key, len(taubench.conversations)) == (
        "collection",
        "traj",
        200,
    )
    assert sum(len(c.records) for c in taubench.conversations) == 5308


def test_claude_code_compact_boundary_and_summary() -> None:
    t = loaded(corpus("claude-code/codemie-624a4a58-compact.jsonl"))
    conv = t.conversations[0]
    boundary = max(i for i, r in enumerate(conv.records) if r.get("subtype") == "compact_boundary")
    first = conv.messages[0]
    assert first.index is not None and first.index > boundary
    assert conv.records[first.index].get("isCompactSummary") is True
    assert all(i in conv.passthrough for i in range(boundary + 1))


def test_claude_code_inline_sidechains_are_not_messages() -> None:
    t = loaded(corpus("claude-code/ccviewer-fe5e1c67-v1.0.98.jsonl"))
    conv = t.conversations[0]
    sidechain = {i for i, r in enumerate(conv.records) if r.get("isSidechain")}
    assert len(sidechain) == 405
    assert sidechain <= conv.passthrough
    for message in conv.messages:
        assert message.source is not None
        assert not any(r.get("isSidechain") for r in message.source.records)


def test_claude_code_responses_split_around_tool_results_are_one_message() -> None:
    t = loaded(corpus("claude-code/kimicli-e7d6eabd-zh-heavy.jsonl"))
    conv = t.conversations[0]
    interleaved = 0
    for message in conv.messages:
        assert message.source is not None
        ids = {r["message"].get("id") for r in message.source.records if message.role == "assistant"}
        assert len(ids) <= 1
        span = range(min(message.source.indices), max(message.source.indices) + 1)
        if any(conv.records[i].get("type") == "user" and i not in message.source.indices for i in span):
            interleaved += 1
    assert interleaved > 0


def test_progress_lines_are_kept_in_place() -> None:
    t = loaded(corpus("claude-code/kimicli-8f3c3e6d-progress-zh.jsonl"))
    conv = t.conversations[0]
    progress = [i for i, r in enumerate(conv.records) if r.get("type") == "progress"]
    assert len(progress) == 524
    assert set(progress) <= conv.passthrough
    out = dump_transcript(t).splitlines()
    assert [i for i, line in enumerate(out) if orjson.loads(line).get("type") == "progress"] == progress
