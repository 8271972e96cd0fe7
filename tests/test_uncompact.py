"""``ctxcompact uncompact``: ours taken out byte for byte, the agent's forked before."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import CORPUS, SAMPLES, corpus_files, requires_corpus
from session_builders import SessionBuilder
from test_codex import line as rollout_line
from test_codex import sample

from ctxcompact.agents.compactions import find_compactions, split_lines
from ctxcompact.agents.uncompact import fork_session
from ctxcompact.transcripts.io import load_transcript

SESSIONS = [p for p in corpus_files("claude-code") if p.suffix == ".jsonl"]
ROLLOUTS = sorted((CORPUS / "other").glob("codex-rollout-*.jsonl")) if CORPUS.is_dir() else []


def idle(path: Path) -> None:
    """Make a session look idle (not written in the last seconds)."""
    old = time.time() - 3600
    os.utime(path, (old, old))


def compact_in_place(path: Path) -> None:
    out = run_cli("compact", path, "--in-place", "--force", "--summarizer", "extractive", "-q")
    assert out.exit_code == 0, out.stderr


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("source", [*SESSIONS, *ROLLOUTS], ids=lambda p: p.name)
def test_compact_then_uncompact_gives_the_file_back_byte_for_byte(source: Path, tmp_path: Path) -> None:
    session = tmp_path / source.name
    shutil.copyfile(source, session)
    original = session.read_bytes()
    compact_in_place(session)
    compacted = session.read_bytes()
    if compacted == original:
        pytest.skip("nothing to compact in this session")
    assert compacted.startswith(original.rstrip(b"\n"))
    idle(session)
    out = run_cli("uncompact", session)
    assert out.exit_code == 0, out.stderr
    assert "the file is as it was before it" in out.stderr
    assert session.read_bytes() == original
    assert not list(tmp_path.glob("*.bak*"))  # cut back in place: nothing renamed


def test_uncompact_refuses_a_live_session_unless_forced(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLES / "claude-code-session.jsonl", session)
    original = session.read_bytes()
    compact_in_place(session)
    out = run_cli("uncompact", session)
    assert out.exit_code == 3 and "looks live" in out.stderr
    assert run_cli("uncompact", session, "--force").exit_code == 0
    assert session.read_bytes() == original


def test_lines_the_agent_wrote_after_ours_are_kept_and_relinked(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLES / "claude-code-session.jsonl", session)
    original = session.read_bytes()
    compact_in_place(session)
    lines = split_lines(session.read_bytes())
    [ours] = find_compactions(lines)
    last_ours = lines[ours.last].record
    assert last_ours is not None
    # The agent went on: a new entry chained to our last one.
    later = {
        **dict(last_ours),
        "uuid": "later-1",
        "parentUuid": last_ours["uuid"],
        "message": {"role": "user", "content": "go on"},
    }
    later.pop("ctxcompact", None)
    later.pop("isCompactSummary", None)
    later.pop("isVisibleInTranscriptOnly", None)
    with session.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(later, separators=(",", ":")) + "\n")
    idle(session)
    out = run_cli("uncompact", session, "--json")
    assert out.exit_code == 0, out.stderr
    assert out.json()["kept_after"] == 1
    now = session.read_bytes()
    assert now.startswith(original) and b'"ctxcompact"' not in now[len(original) :]
    relinked = json.loads(now[len(original) :])
    boundary = lines[ours.first].record
    assert boundary is not None
    assert relinked["uuid"] == "later-1" and relinked["parentUuid"] == boundary["logicalParentUuid"]
    assert Path(out.json()["backup"]).is_file()


def test_a_session_without_our_compaction_is_named(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    SessionBuilder().user("hi").assistant("hello").write(session)
    out = run_cli("uncompact", session)
    assert out.exit_code == 2 and "has not been compacted" in out.stderr


def test_the_agent_compacted_after_ours_asks_for_a_fork(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    shutil.copyfile(SAMPLES / "claude-code-session.jsonl", session)
    compact_in_place(session)
    b = SessionBuilder()
    b.boundary()
    with session.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(e) + "\n" for e in b.entries))
    out = run_cli("uncompact", session, "--list", "--json")
    assert [c["by"] for c in out.json()["compactions"]] == ["ctxcompact", "agent"]
    # Its last compaction is the agent's: uncompact forks before it.
    out = run_cli("uncompact", session, "--json")
    assert out.exit_code == 0 and out.json()["before"]["number"] == 2


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("name", ["codemie-624a4a58-compact.jsonl", "entire-198393f2-compact-small.jsonl"])
def test_a_fork_holds_the_history_before_the_agents_compaction(name: str, tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-u-repo"
    project.mkdir(parents=True)
    source = project / name
    shutil.copyfile(CORPUS / "claude-code" / name, source)
    raw = source.read_bytes()
    out = run_cli("uncompact", source, "--json")
    assert out.exit_code == 0, out.stderr
    fork = out.json()
    new = Path(fork["path"])
    assert new.parent == project and new.name == f"{fork['session_id']}.jsonl"
    assert source.read_bytes() == raw  # the original is untouched
    [agents] = find_compactions(split_lines(raw))
    before = raw[: agents.start].splitlines()
    lines = new.read_bytes().splitlines()
    assert len(lines) == len(before)
    old_id = None
    for old, line in zip(before, lines, strict=True):
        record = json.loads(old)
        if "sessionId" in record:
            old_id = record["sessionId"]
            assert json.loads(line) == {**record, "sessionId": fork["session_id"]}
        else:
            assert line == old
    assert old_id and old_id != fork["session_id"]
    # Resuming the fork starts from the context just before the compaction.
    assert find_compactions(split_lines(new.read_bytes())) == []
    assert fork["tokens"] > 0 and fork["before"]["by"] == "agent"


@requires_corpus
@pytest.mark.corpus
def test_a_fork_over_the_window_says_so(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    shutil.copyfile(CORPUS / "claude-code" / "codemie-624a4a58-compact.jsonl", source)
    out = run_cli("uncompact", source, "--model", "gpt-4")
    assert out.exit_code == 0
    assert "over the 8,192-token window of gpt-4" in out.stderr
    assert out.stdout.startswith("claude --resume ")


@requires_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("source", ROLLOUTS, ids=lambda p: p.name)
def test_a_codex_fork_is_a_new_rollout_in_codex_layout(source: Path, tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "05" / "11"
    day.mkdir(parents=True)
    rollout = day / source.name
    raw = source.read_bytes()
    # Codex compacted it itself: a compacted line (no ctxcompact field) after the history.
    codex_line = {
        "timestamp": "2026-05-11T09:00:00.000Z",
        "type": "compacted",
        "payload": {"message": "summary"},
    }
    rollout.write_bytes(raw + json.dumps(codex_line, separators=(",", ":")).encode() + b"\n")
    done = fork_session(rollout)
    assert done.agent == "codex" and done.compaction.by == "agent"
    # Codex's layout: sessions/YYYY/MM/DD/rollout-<time>-<uuid v7>.jsonl, today's date.
    assert done.path.parent.parent.parent.parent == tmp_path / "sessions"
    assert done.path.name.startswith("rollout-") and done.path.name.endswith(f"-{done.session_id}.jsonl")
    assert done.session_id[14] == "7"
    new = done.path.read_bytes().splitlines()
    old = raw.splitlines()
    assert len(new) == len(old) and new[1:] == old[1:]
    assert json.loads(new[0])["payload"] == {**json.loads(old[0])["payload"], "id": done.session_id}
    assert load_transcript(done.path).dialect == "codex"


def test_a_codex_fork_gets_its_own_session_id_where_codex_0169_records_one(tmp_path: Path) -> None:
    """Codex 0.169's session_meta names the thread twice, ``id`` and ``session_id``; Codex
    resumes a rollout under its ``session_id`` (as ``codex exec resume`` prints it), so a fork
    keeping the original's would resume as the original session."""
    day = tmp_path / "sessions" / "2026" / "11" / "25"
    day.mkdir(parents=True)
    old_id = "01a21524-8cd2-7ca2-8248-cc82524a0504"
    meta = {"session_id": old_id, "id": old_id, "cwd": "/repo", "cli_version": "0.169.0"}
    records = [{"ordinal": 0, **rollout_line("session_meta", meta)}] + [
        {"ordinal": k, **record} for k, record in enumerate(sample()[1:], 1)
    ]
    records.append({"ordinal": 99, **rollout_line("compacted", {"message": "", "replacement_history": []})})
    rollout = day / f"rollout-2026-11-25T23-57-26-{old_id}.jsonl"
    rollout.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    done = fork_session(rollout)
    payload = json.loads(done.path.read_bytes().splitlines()[0])["payload"]
    assert payload == {**meta, "id": done.session_id, "session_id": done.session_id}


def test_uncompact_finds_a_session_by_id(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-home-u-app"
    project.mkdir(parents=True)
    session = project / "11111111-2222-4333-8444-555555555555.jsonl"
    shutil.copyfile(SAMPLES / "claude-code-session.jsonl", session)
    compact_in_place(session)
    idle(session)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "codex")}
    out = run_cli("uncompact", session.stem, "--list", env=env)
    assert out.exit_code == 0 and "ctxcompact" in out.stdout
    out = run_cli("uncompact", "no-such-id", env=env)
    assert out.exit_code == 2 and "no Claude Code or Codex session with that id" in out.stderr
