"""Claude Code sessions compacted the way Claude Code compacts them (issue 11).

A summary compaction appends a ``compact_boundary`` and an ``isCompactSummary`` entry; the
history stays byte for byte; read back by our reader the live conversation is exactly the
compacted one; the ``parentUuid`` chain is valid.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run_cli
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

import ctxcompact
from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.markers import CLAUDE_CODE_SUMMARY_OPENING, CLAUDE_CODE_SUMMARY_PREFIX, RESTORED_PREFIX
from ctxcompact.output.json import compact_stats_json
from ctxcompact.transcripts.io import Transcript, dump_transcript, load_transcript, parse_transcript

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "sample_transcripts" / "claude-code-session.jsonl"
WORKSPACE = ROOT / "sample_transcripts" / "workspace"
CORPUS = ROOT.parent / "shared" / "corpus" / "claude-code"
RECORDED_CWD = "/home/dev/invoice"  # the sample session's cwd


def _compact(transcript: Transcript, **options: Any) -> tuple[bytes, Any]:
    auto = options.pop("auto", False)
    budget = options.pop("budget", None)
    full = FullOptions(**options.pop("full", {"restore": False}))
    result = compact_conversation(
        transcript.conversations[0],
        options=CompactOptions(configured=(full,), **options),
        summarizer=ExtractiveSummarizer(),
        counter=EstimateCounter(),
        auto=auto,
        budget=budget,
    )
    return dump_transcript(transcript.with_conversations([result.conversation])), result


def _view(messages: Any) -> list[tuple[str, list[Any]]]:
    return [(m.role, [dict(b) for b in m.content]) for m in messages]


def _assert_appended_whole(original: bytes, data: bytes, result: Any) -> list[dict[str, Any]]:
    """The original bytes are a prefix, the chain is valid, the reader reads the compacted
    conversation back; returns the appended entries."""
    assert data.startswith(original)
    seen = {json.loads(line).get("uuid") for line in original.splitlines() if line.strip()}
    appended = [json.loads(line) for line in data[len(original) :].splitlines() if line.strip()]
    for entry in appended:
        # Every link we write points to an entry earlier in the file.
        parent = entry.get("parentUuid")
        assert parent is None or parent in seen, entry.get("uuid")
        assert entry.get("logicalParentUuid", parent) in seen
        seen.add(entry["uuid"])
    uuids = [e["uuid"] for e in appended]
    assert len(set(uuids)) == len(uuids) and not set(uuids) & {
        json.loads(line).get("uuid") for line in original.splitlines() if line.strip()
    }
    assert appended[0]["parentUuid"] is None and appended[0]["subtype"] == "compact_boundary"
    reread = parse_transcript(data, name="again.jsonl")
    assert reread.container == "claude-code"
    assert _view(reread.conversations[0].messages) == _view(result.conversation.messages)
    return appended


def test_a_session_is_compacted_by_appending_claude_codes_own_entries(tmp_path: Path) -> None:
    original = SESSION.read_bytes()
    data, result = _compact(load_transcript(SESSION), archive_dir=tmp_path / "a")
    appended = _assert_appended_whole(original, data, result)
    boundary, summary = appended[0], appended[1]
    last = json.loads(original.splitlines()[-1])
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
    assert boundary["content"] == "Conversation compacted" and boundary["parentUuid"] is None
    assert boundary["logicalParentUuid"] == last["uuid"]
    metadata = boundary["compactMetadata"]
    assert metadata["trigger"] == "manual" and metadata["preTokens"] == result.stats.original_tokens
    assert metadata["postTokens"] == result.stats.compacted_tokens and metadata["durationMs"] >= 0
    assert summary["type"] == "user" and summary["parentUuid"] == boundary["uuid"]
    assert summary["isCompactSummary"] is True and summary["isVisibleInTranscriptOnly"] is True
    assert summary["message"]["content"].startswith(CLAUDE_CODE_SUMMARY_OPENING)
    for entry in appended:
        assert entry["ctxcompact"]["version"] == ctxcompact.__version__
        assert entry["timestamp"].endswith("Z")
        for key in ("sessionId", "cwd", "version", "gitBranch"):
            assert entry[key] == last[key]
    # The history is still in the file, so there is nothing to archive.
    assert result.stats.archive_path is None and not (tmp_path / "a").exists()
    assert compact_stats_json(result.stats)["appended"] is True


def test_auto_compaction_is_recorded_as_auto(tmp_path: Path) -> None:
    from ctxcompact.accounting.windows import make_budget, resolve_model

    # Threshold 19,800: under the recorded 20,661, over the system prompt and tools it shows.
    budget = make_budget(resolve_model(None, context_window=33_000), output_reserve=0)
    full = {"restore": False, "keep_recent_tokens": 0}
    data, _ = _compact(load_transcript(SESSION), auto=True, budget=budget, full=full)
    boundary = next(e for e in map(json.loads, data.splitlines()) if e.get("subtype") == "compact_boundary")
    assert boundary["compactMetadata"]["trigger"] == "auto"


def test_keep_loop_copies_the_live_request_after_the_summary(tmp_path: Path) -> None:
    original = SESSION.read_bytes()
    data, result = _compact(
        load_transcript(SESSION), full={"restore": False, "keep_loop": True}, strategies=("prune", "full")
    )
    appended = _assert_appended_whole(original, data, result)
    copies = [e for e in appended if e["ctxcompact"].get("copiedFrom")]
    assert copies and all(e["uuid"] != e["ctxcompact"]["copiedFrom"] for e in copies)


def test_restored_files_follow_the_summary_in_the_sessions_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's cwd is the work dir when it exists inside the current directory: no
    --work-dir needed (outside it, tests/adversarial/test_trust.py)."""
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "invoice"
    shutil.copytree(WORKSPACE, project)
    session = tmp_path / "s.jsonl"
    session.write_bytes(SESSION.read_bytes().replace(RECORDED_CWD.encode(), str(project).encode()))
    result = run_cli("compact", session, "--summarizer", "extractive", "-q")
    assert result.exit_code == 0, result.stderr
    appended = result.stdout_bytes[len(session.read_bytes()) :]
    texts = [e["message"]["content"] for e in map(json.loads, appended.splitlines()) if e["type"] == "user"]
    assert texts[0].startswith(CLAUDE_CODE_SUMMARY_PREFIX)
    assert [t.split(":", 1)[0] for t in texts[1:]] == [  # newest read first
        f"{RESTORED_PREFIX} {project}/src/invoice/totals.py",
        f"{RESTORED_PREFIX} {project}/src/invoice/tax.py",
    ]


def test_a_missing_session_folder_is_named_and_path_map_re_roots_it(tmp_path: Path) -> None:
    stats = tmp_path / "stats.json"
    missing = run_cli("compact", SESSION, "--summarizer", "extractive", "--stats-json", stats)
    assert missing.exit_code == 0  # the summary stands; the warning says what was not done
    (warning,) = [w for w in json.loads(stats.read_text())["warnings"] if "no file could be restored" in w]
    assert f"the session's folder {RECORDED_CWD} does not exist here" in warning
    mapped = run_cli(
        "compact", SESSION, "--summarizer", "extractive", "--path-map", f"{RECORDED_CWD}={WORKSPACE}", "-q"
    )
    assert mapped.exit_code == 0, mapped.stderr
    assert f"{RESTORED_PREFIX} {WORKSPACE}/src/invoice/tax.py:" in mapped.stdout


def test_path_map_is_checked() -> None:
    result = run_cli("restore-files", SESSION, "--path-map", "no-equals-sign")
    assert result.exit_code == 2 and "OLD=NEW" in result.stderr


def test_restore_files_on_a_session_writes_unique_uuids_on_a_valid_chain() -> None:
    result = run_cli("restore-files", SESSION, "--path-map", f"{RECORDED_CWD}={WORKSPACE}", "-q")
    assert result.exit_code == 0, result.stderr
    pairs = [json.loads(line) for line in result.stdout_bytes.splitlines()]
    assert len(pairs) == 2  # two files; no invented acknowledgement (issue 20, defect 2)
    last = json.loads(SESSION.read_bytes().splitlines()[-1])
    assert pairs[0]["parentUuid"] == last["uuid"]
    assert [p["parentUuid"] for p in pairs[1:]] == [p["uuid"] for p in pairs[:-1]]
    assert len({p["uuid"] for p in pairs}) == 2


def test_restore_files_says_when_nothing_could_be_restored() -> None:
    result = run_cli("restore-files", SESSION)
    assert result.exit_code == 0
    assert "no file could be restored" in result.stderr and RECORDED_CWD in result.stderr


def test_a_second_compaction_starts_from_the_first(tmp_path: Path) -> None:
    first, _ = _compact(load_transcript(SESSION))
    second, result = _compact(parse_transcript(first, name="c1.jsonl"))
    _assert_appended_whole(first, second, result)
    boundaries = [e for e in map(json.loads, second.splitlines()) if e.get("subtype") == "compact_boundary"]
    assert len(boundaries) == 2
    summary = result.conversation.messages[0].content[0]["text"]
    assert "tests are failing on main" in summary  # carried forward from the first summary
    assert result.stats.compacted_message_count == 1  # only the first summary was live


CORPUS_FILES = sorted(CORPUS.glob("*.jsonl")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not CORPUS_FILES, reason="the shared corpus is not present")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_real_sessions_round_trip(path: Path) -> None:
    original = path.read_bytes()
    transcript = parse_transcript(original, name=path.name)
    data, result = _compact(transcript)
    if not result.compacted:
        pytest.skip("nothing to compact")
    _assert_appended_whole(original, data, result)


@pytest.mark.skipif(not (CORPUS / "codemie-624a4a58-compact.jsonl").is_file(), reason="corpus absent")
def test_claude_codes_own_boundary_starts_the_live_context() -> None:
    records = [
        json.loads(line) for line in (CORPUS / "codemie-624a4a58-compact.jsonl").read_bytes().splitlines()
    ]
    conv = load_transcript(CORPUS / "codemie-624a4a58-compact.jsonl").conversations[0]
    first = conv.messages[0]
    assert first.content[0]["text"].startswith(CLAUDE_CODE_SUMMARY_OPENING)
    boundary = max(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    assert all(i > boundary for m in conv.messages for i in m.source.indices)  # type: ignore[union-attr]


def _as_session(records: list[Any]) -> bytes:
    """Anthropic messages as a Claude Code session (one entry per message)."""
    lines, parent = [], None
    for i, record in enumerate(r for r in records if r["role"] != "system"):
        message = dict(record)
        if message["role"] == "assistant":
            message["id"] = f"msg_{i}"
        entry = {
            "parentUuid": parent, "isSidechain": False, "cwd": "/nowhere", "sessionId": "s",
            "version": "2.0.0", "gitBranch": "main", "type": record["role"], "message": message,
            "uuid": f"u{i}", "timestamp": "2025-01-01T00:00:00.000Z",
        }  # fmt: skip
        lines.append(orjson.dumps(entry) + b"\n")
        parent = entry["uuid"]
    return b"".join(lines)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(transcripts(dialects=("anthropic",)))
def test_property_appended_sessions_read_back_as_compacted(case: tuple[str, list[Any]]) -> None:
    original = _as_session(case[1])
    transcript = parse_transcript(original, name="gen.jsonl")
    data, result = _compact(transcript)
    if result.compacted:
        _assert_appended_whole(original, data, result)
    else:
        assert data == original


def test_a_compacted_session_still_names_its_model(tmp_path: Path) -> None:
    """The live part of a just-compacted session (boundary + summary) has no assistant entry;
    check and compact --auto must still size it against the session's own model, not the
    unknown-model default window."""
    from ctxcompact.accounting.check import conversation_model

    before = load_transcript(SESSION).conversations[0]
    data, _ = _compact(load_transcript(SESSION), archive_dir=tmp_path / "a")
    after = parse_transcript(data).conversations[0]
    assert conversation_model(before) is not None
    assert not any(m.role == "assistant" and m.source for m in after.messages[:2])
    assert conversation_model(after) == conversation_model(before)
