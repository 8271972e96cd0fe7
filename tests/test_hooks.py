"""``ctxcompact hook``: the recorded payloads of both agents and both triggers, fed on stdin.

The payloads are the documented ones (:mod:`hook_payloads`, with its sources); each test
asserts what the agent reads back (stdout, exit status) and what is left on disk (the
backup, the records, the session itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from hook_payloads import CLAUDE_SESSION, CODEX_SESSION, payload
from session_builders import SessionBuilder
from test_codex import item, line, output, sample, user

from ctxcompact.agents.compactions import find_compactions, split_lines
from ctxcompact.agents.store import read_records
from ctxcompact.transcripts.io import load_transcript

AGENT_TRIGGERS = [(a, t) for a in ("claude-code", "codex") for t in ("manual", "auto")]


def claude_session(tmp_path: Path) -> Path:
    path = tmp_path / "project" / f"{CLAUDE_SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((SAMPLES / "claude-code-session.jsonl").read_bytes())
    return path


def codex_session(tmp_path: Path) -> Path:
    path = tmp_path / "sessions" / "2026" / "05" / "11" / f"rollout-2026-05-11T08-26-55-{CODEX_SESSION}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    # A session worth compacting: the file read is long (the summary of the bare sample, which
    # quotes what its last calls returned, is about the size of the sample itself).
    short = item(output("c1", "def main():\n    return 1\n" * 20))
    records = [item(output("c1", "def main():\n    return 1\n" * 200)) if r == short else r for r in sample()]
    # Compact JSON, one object per line, as Codex writes its rollouts.
    path.write_text("".join(compact(r) + "\n" for r in records), encoding="utf-8")
    return path


def compact(record: Any) -> str:
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False)


def session_for(agent: str, tmp_path: Path) -> Path:
    return claude_session(tmp_path) if agent == "claude-code" else codex_session(tmp_path)


def archive(tmp_path: Path) -> Path:
    return tmp_path / "archive"


def records(tmp_path: Path, agent: str) -> list[dict[str, Any]]:
    session = CLAUDE_SESSION if agent == "claude-code" else CODEX_SESSION
    return read_records(archive(tmp_path), agent, session)


def hook(event: str, data: bytes, tmp_path: Path, *args: str) -> Any:
    return run_cli("hook", event, "--archive-dir", archive(tmp_path), *args, input=data)


@pytest.mark.parametrize(("agent", "trigger"), AGENT_TRIGGERS)
def test_pre_compact_backs_the_session_up_and_lets_the_agent_compact(
    agent: str, trigger: str, tmp_path: Path
) -> None:
    session = session_for(agent, tmp_path)
    before = session.read_bytes()
    data = payload(f"{agent}/PreCompact/{trigger}", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path)
    assert (out.exit_code, out.stdout) == (0, "")  # no answer: the agent compacts as usual
    assert session.read_bytes() == before
    [record] = records(tmp_path, agent)
    assert (record["event"], record["trigger"], record["replaced"]) == ("pre-compact", trigger, False)
    backup = Path(record["backup"])
    assert backup.read_bytes() == before
    assert f"-pre-compact-{trigger}" in backup.name and backup.parent.name in (CLAUDE_SESSION, CODEX_SESSION)
    assert str(backup) in out.stderr


@pytest.mark.parametrize("trigger", ["manual", "auto"])
def test_codex_replace_appends_our_compaction_and_stops_the_agent(trigger: str, tmp_path: Path) -> None:
    session = codex_session(tmp_path)
    before = session.read_bytes()
    data = payload(f"codex/PreCompact/{trigger}", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path, "--replace")
    assert out.exit_code == 0, out.stderr
    answer = out.json()
    # Codex stops a compaction only with continue: false (a "block" decision is invalid there).
    assert answer["continue"] is False and "decision" not in answer
    reason = answer["stopReason"]
    assert f"codex resume {CODEX_SESSION}" in reason
    assert "ctxcompact compacted this session itself" in reason
    # Our compaction was appended: the history is untouched, the session resumes from ours
    # (a rollout is a log: what Codex appends next goes after our compacted line).
    after = session.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    [ours] = [c for c in find_compactions(split_lines(after)) if c.ours]
    assert ours.start == len(before)
    live = load_transcript(session).conversations[0].messages
    assert "## Goals & Decisions" in json.dumps([m.content for m in live])
    [record] = records(tmp_path, "codex")
    assert record["replaced"] is True and record["tokens_after"] < record["tokens_before"]
    assert record["session"] == str(session) and record["session_id"] == CODEX_SESSION
    assert Path(record["backup"]).read_bytes() == before


@pytest.mark.parametrize("trigger", ["manual", "auto"])
def test_claude_code_replace_writes_a_new_session_and_blocks_the_agent(trigger: str, tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    before = session.read_bytes()
    data = payload(f"claude-code/PreCompact/{trigger}", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path, "--replace")
    assert out.exit_code == 0, out.stderr
    answer = out.json()
    [record] = records(tmp_path, "claude-code")
    assert record["replaced"] is True and record["tokens_after"] < record["tokens_before"]
    new, new_id = Path(record["session"]), record["session_id"]
    assert answer["decision"] == "block" and f"claude --resume {new_id}" in answer["reason"]
    assert "ctxcompact compacted this session itself" in answer["reason"]
    # The agent's session is not touched; the new one is beside it, in Claude Code's naming:
    # the session's lines (every sessionId the new id), then our compaction.
    assert session.read_bytes() == before and Path(record["backup"]).read_bytes() == before
    assert new_id != CLAUDE_SESSION and new == session.with_name(f"{new_id}.jsonl")
    data_new = new.read_bytes()
    [ours] = [c for c in find_compactions(split_lines(data_new)) if c.ours]
    old_records = [json.loads(x) for x in before.splitlines()]
    head = [json.loads(x) for x in data_new[: ours.start].splitlines()]
    assert head == [{**r, "sessionId": new_id} if "sessionId" in r else r for r in old_records]
    assert {json.loads(x).get("sessionId", new_id) for x in data_new.splitlines()} == {new_id}
    live = load_transcript(new).conversations[0].messages
    assert "## Goals & Decisions" in json.dumps([m.content for m in live])


def test_what_claude_code_writes_after_the_block_cannot_hide_our_summary(tmp_path: Path) -> None:
    """After a PreCompact block Claude Code goes on from the context it holds in memory: it
    appends entries chained to its last entry before the compaction (2.1.332 writes the
    /compact command and its output; an auto compaction's turn ends with an error entry), and
    resumes a session from its newest entries. The session the block tells the user to resume
    must resume from ctxcompact's summary whatever Claude Code appends afterwards."""
    session = claude_session(tmp_path)
    before = [json.loads(x) for x in session.read_bytes().splitlines()]
    data = payload("claude-code/PreCompact/manual", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path, "--replace")
    resume_id = out.json()["reason"].rsplit("claude --resume ", 1)[1].split()[0].rstrip(".")
    leaf = [r for r in before if r.get("type") in ("user", "assistant")][-1]
    caveat = {
        **leaf,
        "type": "user",
        "parentUuid": leaf["uuid"],
        "uuid": "aaaaaaaa-0000-4000-8000-000000000001",
    }
    caveat["message"] = {"role": "user", "content": "<command-name>/compact</command-name>"}
    caveat["timestamp"] = "2099-01-01T00:00:00.000Z"
    blocked = {**caveat, "parentUuid": caveat["uuid"], "uuid": "aaaaaaaa-0000-4000-8000-000000000002"}
    blocked["message"] = {
        "role": "user",
        "content": "<local-command-stderr>Compaction blocked</local-command-stderr>",
    }
    with session.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(e) + "\n" for e in (caveat, blocked)))
    resumed = load_transcript(session.with_name(f"{resume_id}.jsonl")).conversations[0].messages
    assert "## Goals & Decisions" in json.dumps([m.content for m in resumed])


def test_pre_compact_replace_that_cannot_compact_lets_the_agent_compact(tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    before = session.read_bytes()
    data = payload("claude-code/PreCompact/auto", transcript=str(session), cwd=str(tmp_path))
    # No API key for the summary model: ours fails before anything is written, no block.
    out = hook("pre-compact", data, tmp_path, "--replace", "--summarizer", "anthropic")
    assert (out.exit_code, out.stdout) == (0, "")
    assert "our compaction failed, the agent compacts as usual" in out.stderr
    assert session.read_bytes() == before
    assert "needs an API key" in records(tmp_path, "claude-code")[0]["error"]
    session.write_bytes(b"")  # nothing to compact: no block either
    out = hook("pre-compact", data, tmp_path, "--replace")
    assert (out.exit_code, out.stdout) == (0, "")
    assert "the agent compacts as usual" in out.stderr


def test_replace_never_rewrites_a_session_the_agent_holds_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compaction that could only be written by rewriting the session (a writer spelling
    the kept lines differently) is left to the agent, never renamed under it."""
    import ctxcompact.transcripts.io as io

    session = codex_session(tmp_path)
    before = session.read_bytes()
    written = io.dump_transcript
    monkeypatch.setattr(io, "dump_transcript", lambda t: b" " + written(t))
    data = payload("codex/PreCompact/auto", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path, "--replace")
    assert (out.exit_code, out.stdout) == (0, "")
    assert "would rewrite the session rather than append" in out.stderr
    assert session.read_bytes() == before and not list(session.parent.glob("*.bak*"))


def test_replace_needs_a_summary_strategy(tmp_path: Path) -> None:
    session = claude_session(tmp_path)
    data = payload("claude-code/PreCompact/auto", transcript=str(session), cwd=str(tmp_path))
    out = hook("pre-compact", data, tmp_path, "--replace", "--strategy", "prune")
    assert out.exit_code == 1 and "must end with full" in out.stderr  # never 2: that blocks


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"hook_event_name": "PreCompact"}',
        b'{"session_id": "s", "hook_event_name": "Stop"}',
    ],
)
def test_a_hook_that_cannot_work_exits_1_never_2(data: bytes, tmp_path: Path) -> None:
    """Exit 2 would block Claude Code's compaction: a broken hook must only be reported."""
    out = hook("pre-compact", data, tmp_path)
    assert out.exit_code == 1 and out.stdout == ""
    assert out.stderr.startswith("ctxcompact: error: hook pre-compact: ")


def test_a_missing_transcript_exits_1(tmp_path: Path) -> None:
    data = payload("codex/PreCompact/auto", transcript=None, cwd=str(tmp_path))
    out = run_cli(
        "hook",
        "pre-compact",
        "--archive-dir",
        archive(tmp_path),
        input=data,
        env={"CODEX_HOME": str(tmp_path)},
    )
    assert out.exit_code == 1 and "names no transcript" in out.stderr


def test_codex_without_a_transcript_path_finds_the_rollout_by_id(tmp_path: Path) -> None:
    session = codex_session(tmp_path / "home")
    data = payload("codex/PreCompact/manual", transcript=None, cwd=str(tmp_path))
    out = run_cli(
        "hook",
        "pre-compact",
        "--archive-dir",
        archive(tmp_path),
        input=data,
        env={"CODEX_HOME": str(tmp_path / "home")},
    )
    assert out.exit_code == 0, out.stderr
    assert Path(records(tmp_path, "codex")[0]["transcript"]) == session


def test_a_broken_config_file_does_not_block_the_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ctxcompact.toml").write_text("no-such-setting = 1\n")
    monkeypatch.chdir(tmp_path)
    session = claude_session(tmp_path)
    out = hook(
        "pre-compact", payload("claude-code/PreCompact/auto", transcript=str(session), cwd="."), tmp_path
    )
    assert out.exit_code == 1 and "unknown setting" in out.stderr


# --- the agent compacted: post-compact and session-start ---------------------------------------

RULE = "Never push to the main branch without a review."
PINNED = "The staging database is at db-staging-7 and must not be reset."


def agent_compacted_claude(tmp_path: Path, summary: str) -> Path:
    """A Claude Code session the agent compacted itself: history, boundary, its summary."""
    b = SessionBuilder(cwd=str(tmp_path))
    b.user("Please fix the flaky test in tests/test_sync.py. " + RULE)
    b.assistant("I'll look at tests/test_sync.py first.")
    b.user(PINNED, ctxcompact_pin=True)
    b.assistant("Noted. Next I'll rerun the test suite with `make test`.")
    path = b.write(tmp_path / "project" / f"{CLAUDE_SESSION}.jsonl")
    with path.open("a", encoding="utf-8") as handle:
        b.entries.clear()
        b.boundary()
        b.entries[-1]["message"]["content"] = summary
        handle.write("".join(json.dumps(e) + "\n" for e in b.entries))
    return path


def agent_compacted_codex(tmp_path: Path, summary: str) -> Path:
    path = codex_session(tmp_path)
    history = [user(summary)]
    with path.open("a", encoding="utf-8") as handle:
        handle.write(compact(line("compacted", {"message": summary, "replacement_history": history})) + "\n")
    return path


@pytest.mark.parametrize(("agent", "trigger"), AGENT_TRIGGERS)
def test_post_compact_records_the_summary_and_what_it_lost(agent: str, trigger: str, tmp_path: Path) -> None:
    summary = "The user asked to fix a bug; work is ongoing."
    if agent == "claude-code":
        session = agent_compacted_claude(tmp_path, summary)
    else:
        session = agent_compacted_codex(tmp_path, summary)
    data = payload(
        f"{agent}/PostCompact/{trigger}", transcript=str(session), cwd=str(tmp_path), summary=summary
    )
    out = hook("post-compact", data, tmp_path)
    assert (out.exit_code, out.stdout) == (0, "")  # PostCompact only observes
    [record] = records(tmp_path, agent)
    assert record["event"] == "post-compact" and record["trigger"] == trigger
    assert record["summary"] == summary
    assert 0 <= record["kept"] < record["total"]
    lost = {(p["kind"], p["text"]) for p in record["lost"]}
    if agent == "claude-code":
        assert ("path", "tests/test_sync.py") in lost and ("instruction", RULE) in lost
    else:
        assert ("path", "app.py") in lost
    assert f"kept {record['kept']} of {record['total']} facts" in out.stderr


def test_post_compact_scores_against_the_backup_of_pre_compact(tmp_path: Path) -> None:
    b = SessionBuilder(cwd=str(tmp_path))
    b.user("Fix the parser in src/parse.py. " + RULE).assistant("Looking at src/parse.py.")
    session = b.write(tmp_path / "project" / f"{CLAUDE_SESSION}.jsonl")
    pre = payload("claude-code/PreCompact/auto", transcript=str(session), cwd=str(tmp_path))
    assert hook("pre-compact", pre, tmp_path).exit_code == 0
    # The agent compacts: its summary keeps the path, not the rule.
    summary = "Working on src/parse.py."
    with session.open("a", encoding="utf-8") as handle:
        b.entries.clear()
        b.boundary()
        b.entries[-1]["message"]["content"] = summary
        handle.write("".join(json.dumps(e) + "\n" for e in b.entries))
    post = payload(
        "claude-code/PostCompact/auto", transcript=str(session), cwd=str(tmp_path), summary=summary
    )
    assert hook("post-compact", post, tmp_path).exit_code == 0
    record = records(tmp_path, "claude-code")[-1]
    assert record["backup"] == records(tmp_path, "claude-code")[0]["backup"]
    kinds = {p["kind"]: p["text"] for p in record["lost"]}
    assert kinds.get("instruction") == RULE and "path" not in kinds


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_session_start_reinjects_what_the_summary_dropped(agent: str, tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text(
        "# Project\nA sync tool.\n\n## Rules\n- "
        + RULE
        + "\n- Always run make test.\n\n## Style\nShort functions.\n"
    )
    summary = "Working on the flaky test; the user said: Always run make test."
    if agent == "claude-code":
        session = agent_compacted_claude(tmp_path, summary)
        pins = ["--pin", "db-staging"]
    else:
        session = agent_compacted_codex(tmp_path, summary)
        pins = ["--pin", "fix the bug"]
    data = payload(f"{agent}/SessionStart/compact", transcript=str(session), cwd=str(tmp_path))
    out = hook(
        "session-start", data, tmp_path, "--survive", "CLAUDE.md#Rules", "--survive", "CLAUDE.md#Style", *pins
    )
    assert out.exit_code == 0, out.stderr
    answer = out.json()["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    context = answer["additionalContext"]
    assert "[CLAUDE.md § Rules]" in context and RULE in context
    assert "[CLAUDE.md § Style]" in context
    # The pinned message (a "ctxcompact_pin" marker, or --pin) is back; the rule the summary
    # quoted ("Always run make test") is held, yet its section goes back whole.
    assert (PINNED if agent == "claude-code" else "fix the bug in app.py") in context
    [record] = records(tmp_path, agent)
    assert record["event"] == "session-start" and "CLAUDE.md § Rules" in record["reinjected"]


def test_session_start_injects_nothing_the_summary_holds(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("## Testing\n" + RULE + "\n")
    session = agent_compacted_claude(tmp_path, f"Summary. Rules: {RULE} Also: {PINNED}")
    data = payload("claude-code/SessionStart/compact", transcript=str(session), cwd=str(tmp_path))
    out = hook("session-start", data, tmp_path, "--survive", "AGENTS.md#Testing")
    assert (out.exit_code, out.stdout) == (0, "")
    assert "holds all 2 items" in out.stderr


def test_session_start_does_nothing_on_startup(tmp_path: Path) -> None:
    session = agent_compacted_claude(tmp_path, "x")
    data = payload("claude-code/SessionStart/startup", transcript=str(session), cwd=str(tmp_path))
    out = hook("session-start", data, tmp_path, "--survive", "CLAUDE.md")
    assert (out.exit_code, out.stdout, out.stderr) == (0, "", "")
    assert records(tmp_path, "claude-code") == []


def test_survive_names_a_missing_file_or_section_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("# Only\ntext\n")
    session = agent_compacted_claude(tmp_path, "x")
    data = payload("claude-code/SessionStart/compact", transcript=str(session), cwd=str(tmp_path))
    out = hook("session-start", data, tmp_path, "--survive", "CLAUDE.md#Rules", "--survive", "NOPE.md")
    assert out.exit_code == 0
    assert "CLAUDE.md has no heading 'Rules'" in out.stderr and "cannot read" in out.stderr


def test_the_survive_list_comes_from_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ctxcompact.toml").write_text('[hook]\nsurvive = ["CLAUDE.md#Rules"]\n')
    (tmp_path / "CLAUDE.md").write_text("## Rules\n" + RULE + "\n")
    monkeypatch.chdir(tmp_path)
    session = agent_compacted_claude(tmp_path, "Nothing about rules.")
    data = payload("claude-code/SessionStart/compact", transcript=str(session), cwd=str(tmp_path))
    out = hook("session-start", data, tmp_path)
    assert RULE in out.json()["hookSpecificOutput"]["additionalContext"]


def test_sessions_shows_what_each_agent_compaction_lost(tmp_path: Path) -> None:
    summary = "The user asked to fix a bug."
    session = agent_compacted_claude(tmp_path, summary)
    data = payload(
        "claude-code/PostCompact/auto", transcript=str(session), cwd=str(tmp_path), summary=summary
    )
    assert hook("post-compact", data, tmp_path).exit_code == 0
    out = run_cli("sessions", session.parent.parent, "--archive-dir", archive(tmp_path))
    assert out.exit_code == 0, out.stderr
    assert "What the agents' own compactions lost" in out.stdout
    assert "lost task: Please fix the flaky test in tests/test_sync.py." in out.stdout
    rows = run_cli("sessions", session.parent.parent, "--archive-dir", archive(tmp_path), "--json").json()[
        "sessions"
    ]
    [scored] = rows[0]["agent_compactions"]
    assert scored["trigger"] == "auto" and {"kind": "instruction", "text": RULE} in scored["lost"]
    assert {"kind": "path", "text": "tests/test_sync.py"} in scored["lost"]


def test_a_session_without_records_lists_no_agent_compactions(tmp_path: Path) -> None:
    session = agent_compacted_claude(tmp_path, "x")
    rows = run_cli("sessions", session.parent.parent, "--archive-dir", archive(tmp_path), "--json").json()[
        "sessions"
    ]
    assert rows[0]["agent_compactions"] == []
