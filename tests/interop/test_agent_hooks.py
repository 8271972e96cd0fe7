"""ctxcompact's hooks inside the real clients' own compactions (issue 21), and forks they resume.

Each test starts from nothing: the pinned client writes a session itself against the fake
(``agents.Stage``), ctxcompact's hooks are installed with ``ctxcompact hook install`` as a
user installs them, and the client compacts:

* Claude Code 2.1.332: ``claude -p /compact --resume ID`` (the manual trigger, which ``-p``
  runs as its local command), or a turn after an answer whose usage nears the model's window
  (``auto``); the fake writes its summary (``AGENT_SUMMARY``, which leaves the pin out);
* Codex 0.169.0: ``codex exec`` has no ``/compact`` (it sends it to the model as a prompt),
  so only ``auto``: a turn over ``model_auto_compact_token_limit``. Codex compacts remotely;
  the fake answers with an opaque ``compaction`` item. Its hooks run only once trusted:
  ``--dangerously-bypass-hook-trust``.

Then the next request is checked the way ``test_interop.py`` checks a resumed session
(``sent.py``): exactly ``ctxcompact export``'s context, the client's own additions aside.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agents import Stage, session_id_of, thread_id_of
from cases import PROMPT, REPLY
from clients import ClientRun
from fake_apis import FakeClientAPIs, is_claude_compaction, is_codex_compaction
from install import Clients
from sent import (
    aligned,
    anthropic_pair_findings,
    claude_sent,
    codex_live_items,
    codex_pair_findings,
    codex_sent,
    context_findings,
    item_findings,
    normalised,
)

from ctxcompact.agents.compactions import find_compactions, split_lines
from ctxcompact.markers import CLAUDE_CODE_SUMMARY_PREFIX, CODEX_SUMMARY_PREFIX

TASK = "Rename parse() in tools/cli.py to parse_args() and keep parse as an alias."
TASK_DONE = "Renamed parse() to parse_args() in tools/cli.py; parse stays as an alias."
SECOND = "Now add a test for the alias in tests/test_cli.py."
SECOND_DONE = "Added tests/test_cli.py::test_parse_alias; it passes."
#: The prompt of a run after the one that compacted.
AGAIN = "ctxcompact interop check, once more: answer with the single word ok."
#: What must survive, and the --pin pattern that pins it.
PIN = "ctxcompact-interop pin: never push to main without a review."
PIN_PATTERN = "ctxcompact-interop pin"
#: The agent's own summary (Claude Code's format): the task, not the pin.
AGENT_SUMMARY = (
    "<analysis>The user asked for a rename and a test.</analysis>\n<summary>1. Primary Request "
    "and Intent: rename parse() to parse_args() in tools/cli.py, keep an alias.\n2. Pending "
    "Tasks: none.</summary>"
)
#: Codex's own summary: opaque to everyone but the model.
CODEX_COMPACTION = "ctxcompact-interop: Codex's encrypted summary"
#: An answer's input tokens that fill Claude Code's window (2.1.332's default model,
#: claude-opus-5-5, has 1,000,000): it compacts before its next request.
FULL = 990_000
#: What a SessionStart hook's additionalContext becomes in Claude Code's next request (a
#: system turn), and how ctxcompact's re-injection opens.
CLAUDE_HOOK_CONTEXT = "SessionStart hook additional context: "
REINJECTED = "ctxcompact: the conversation was just compacted"


@pytest.fixture
def stage(clients: Clients, tmp_path: Path) -> Stage:
    return Stage(tmp_path, clients).prepare()


def ok(run: ClientRun) -> ClientRun:
    assert run.exit_code == 0, run.describe()
    return run


def ctxcompact_ok(stage: Stage, *args: str) -> str:
    ran = stage.ctxcompact(*args)
    assert ran.exit_code == 0, ran.describe()
    return ran.stdout


def texts(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# --- Claude Code --------------------------------------------------------------------------------


def claude_two_turns(stage: Stage, *, first: str = TASK, full: bool = False) -> str:
    """A session Claude Code writes: two turns; ``full``: the second answer fills the window."""
    sid = session_id_of(stage.claude("-p", first, "--output-format", "json", fake=FakeClientAPIs(TASK_DONE)))
    ok(
        stage.claude(
            "-p", SECOND, "--resume", sid, fake=FakeClientAPIs(SECOND_DONE, usage=FULL if full else 10)
        )
    )
    return sid


def claude_findings(run: ClientRun, exported: list[Any], prompt: str = PROMPT) -> list[str]:
    """How the request carrying ``prompt`` differs from the export (see sent.py)."""
    want = normalised(exported)
    sent = claude_sent(run.requests, prompt)
    sent = replace(sent, messages=aligned(sent.messages, want, joined_last=sent.joined_last))
    findings = anthropic_pair_findings(sent.request.body["messages"])
    for found in context_findings(sent.messages, want, want).values():
        findings += found
    return findings


def claude_compacting(stage: Stage, sid: str, trigger: str, fake: FakeClientAPIs) -> ClientRun:
    """The run in which Claude Code compacts: ``/compact``, or (``auto``) a turn."""
    return stage.claude("-p", "/compact" if trigger == "manual" else PROMPT, "--resume", sid, fake=fake)


@pytest.mark.parametrize("trigger", ["manual", "auto"])
def test_claude_code_resumes_ctxcompact_summary_after_pre_compact_replace(stage: Stage, trigger: str) -> None:
    sid = claude_two_turns(stage, full=trigger == "auto")
    ctxcompact_ok(stage, "hook", "install", "--project", "--replace", "--yes")
    session = stage.claude_session(sid)
    before = session.read_bytes()
    compacting = claude_compacting(stage, sid, trigger, FakeClientAPIs(REPLY, summary=AGENT_SUMMARY))
    # The agent's compaction did not run: no summary asked for, no boundary in its session.
    asked = [r for r in compacting.requests if isinstance(r.body, dict) and is_claude_compaction(r.body)]
    assert not asked, compacting.describe()
    assert find_compactions(split_lines(session.read_bytes())) == []
    [record] = [r for r in stage.records("claude-code", sid) if r["event"] == "pre-compact"]
    assert record["trigger"] == trigger and record["replaced"] is True, record
    new_id, new = record["session_id"], Path(record["session"])
    assert new == stage.claude_session(new_id) and new_id != sid
    if trigger == "manual":
        # -p prints the block: the reason names the session to resume.
        ok(compacting)
        assert "Compaction blocked by PreCompact hook" in compacting.stdout
        assert f"claude --resume {new_id}" in compacting.stdout
    else:
        # Blocked with a full window, Claude Code ends the turn without a request.
        assert compacting.exit_code == 1 and "Prompt is too long" in compacting.stdout, compacting.describe()
    # Claude Code went on in its own session (the /compact command, the failed turn) and
    # left the new one alone; that one resumes from ctxcompact's summary.
    after = session.read_bytes()
    assert after.startswith(before) and len(after) > len(before) and b'"ctxcompact"' not in after
    # The new session ends with ctxcompact's compaction, its summary worded as Claude Code's.
    assert [c.ours for c in find_compactions(split_lines(new.read_bytes()))] == [True]
    exported = stage.export(new)
    assert str(exported[0]["content"]).startswith(CLAUDE_CODE_SUMMARY_PREFIX), exported[0]
    resumed = ok(stage.claude("-p", PROMPT, "--resume", new_id, fake=FakeClientAPIs(REPLY)))
    assert not claude_findings(resumed, exported)


@pytest.mark.parametrize("trigger", ["manual", "auto"])
def test_session_start_reinjects_the_pin_claude_code_summary_dropped(stage: Stage, trigger: str) -> None:
    (stage.project / "ctxcompact.toml").write_text(f'[hook]\npin = ["{PIN_PATTERN}"]\n')
    sid = claude_two_turns(stage, first=f"{TASK} {PIN}", full=trigger == "auto")
    ctxcompact_ok(stage, "hook", "install", "--project", "--yes")
    compacting = claude_compacting(stage, sid, trigger, FakeClientAPIs(REPLY, summary=AGENT_SUMMARY))
    ok(compacting)
    asked = [r for r in compacting.requests if isinstance(r.body, dict) and is_claude_compaction(r.body)]
    assert len(asked) == 1, compacting.describe()
    # Claude Code compacted: its boundary and its summary, which dropped the pin.
    session = stage.claude_session(sid)
    [compaction] = find_compactions(split_lines(session.read_bytes()))
    assert not compaction.ours
    exported = stage.export(session)
    assert "rename parse() to parse_args()" in texts(exported) and PIN not in texts(exported)
    # It kept its last answer verbatim (compactMetadata.preservedSegment), which the export
    # has right after the summary, as Claude Code sends it.
    assert exported[1] == {"role": "assistant", "content": SECOND_DONE}, exported[:2]
    # The request after the compaction (manual: the next run's) carries the pin as the
    # hook's additional context, in a system turn of its own; the conversation does not.
    after = (
        compacting
        if trigger == "auto"
        else ok(stage.claude("-p", PROMPT, "--resume", sid, fake=FakeClientAPIs(REPLY)))
    )
    turns = claude_sent(after.requests, PROMPT).request.body["messages"]
    added = texts([m for m in turns if m.get("role") == "system"])
    assert CLAUDE_HOOK_CONTEXT + REINJECTED in added and PIN in added
    assert PIN not in texts([m for m in turns if m.get("role") != "system"])
    # Resumed, the session is sent as ctxcompact export reads it.
    exported = stage.export(session)
    resumed = ok(stage.claude("-p", AGAIN, "--resume", sid, fake=FakeClientAPIs(REPLY)))
    assert not claude_findings(resumed, exported, AGAIN)
    # What the hooks recorded: the backup, the agent's summary scored, the pin re-injected.
    events = {r["event"]: r for r in stage.records("claude-code", sid)}
    assert Path(events["pre-compact"]["backup"]).is_file()
    assert "rename parse() to parse_args()" in events["post-compact"]["summary"]
    assert events["session-start"]["reinjected"] == ["pinned message 1 (user)"]


def test_claude_code_resumes_a_fork_from_before_its_own_compaction(stage: Stage) -> None:
    sid = claude_two_turns(stage)
    ok(stage.claude("-p", "/compact", "--resume", sid, fake=FakeClientAPIs(REPLY, summary=AGENT_SUMMARY)))
    [compaction] = find_compactions(split_lines(stage.claude_session(sid).read_bytes()))
    assert not compaction.ours
    fork = json.loads(ctxcompact_ok(stage, "uncompact", sid, "--fork", "--json"))
    new = Path(fork["path"])
    assert new == stage.claude_session(fork["session_id"])
    exported = stage.export(new)
    assert TASK in texts(exported) and SECOND_DONE in texts(exported)
    assert "Primary Request and Intent" not in texts(exported)
    resumed = ok(stage.claude("-p", PROMPT, "--resume", fork["session_id"], fake=FakeClientAPIs(REPLY)))
    assert not claude_findings(resumed, exported)


# --- Codex --------------------------------------------------------------------------------------


def codex_first_turn(stage: Stage, answer: str = TASK_DONE) -> str:
    before = stage.rollouts()
    ok(stage.codex(TASK, fake=FakeClientAPIs(answer)))
    return thread_id_of(stage, before)


def codex_findings(run: ClientRun, rollout: Path, live: list[Any], scratch: Path) -> list[str]:
    """How the request carrying PROMPT differs from ``live`` (ctxcompact's live history of the
    rollout before the run), item for item (see sent.py)."""
    sent = codex_sent(run.requests, PROMPT, rollout, scratch)
    return codex_pair_findings(sent.request.body["input"]) + item_findings(sent.items or [], live)


def test_codex_resumes_ctxcompact_summary_after_pre_compact_replace(stage: Stage) -> None:
    tid = codex_first_turn(stage)
    ctxcompact_ok(stage, "hook", "install", "--agent", "codex", "--user", "--replace", "--yes")
    rollout = stage.rollout(tid)
    compacting = stage.codex(
        "resume", tid, SECOND, fake=FakeClientAPIs(SECOND_DONE, compaction=CODEX_COMPACTION), compact_over=5
    )
    # Stopped (continue: false): Codex's compaction did not run, ours is the rollout's last.
    assert not [r for r in compacting.requests if is_codex_compaction(r.body)], compacting.describe()
    compactions = find_compactions(split_lines(rollout.read_bytes()))
    assert [c.ours for c in compactions] == [True], compacting.describe()
    [record] = [r for r in stage.records("codex", tid) if r["event"] == "pre-compact"]
    assert record["replaced"] is True and record["session"] == str(rollout) and record["trigger"] == "auto"
    # Our compacted line carries the "ctxcompact" field; Codex resumes from it all the same.
    live = codex_live_items(rollout)
    assert CODEX_SUMMARY_PREFIX in texts(live)
    resumed = ok(stage.codex("resume", tid, PROMPT, fake=FakeClientAPIs(REPLY)))
    assert not codex_findings(resumed, rollout, live, stage.dir / "sent.jsonl")


def test_session_start_reinjects_the_pin_codex_summary_dropped(stage: Stage) -> None:
    (stage.project / "ctxcompact.toml").write_text(f'[hook]\npin = ["{PIN_PATTERN}"]\n')
    # The pin is in the agent's answer: Codex's compaction keeps the user's messages verbatim.
    tid = codex_first_turn(stage, answer=f"{TASK_DONE} {PIN}")
    ctxcompact_ok(stage, "hook", "install", "--agent", "codex", "--user", "--yes")
    run = ok(
        stage.codex(
            "resume", tid, PROMPT, fake=FakeClientAPIs(REPLY, compaction=CODEX_COMPACTION), compact_over=5
        )
    )
    assert len([r for r in run.requests if is_codex_compaction(r.body)]) == 1, run.describe()
    rollout = stage.rollout(tid)
    [compaction] = find_compactions(split_lines(rollout.read_bytes()))
    assert not compaction.ours
    request = codex_sent(run.requests, PROMPT, rollout, stage.dir / "sent.jsonl").request
    items = request.body["input"]
    carrying = [i for i in items if PIN in texts(i)]
    assert carrying and all(REINJECTED in texts(i) for i in carrying), texts(carrying)
    events = {r["event"]: r for r in stage.records("codex", tid)}
    assert events["session-start"]["reinjected"] == ["pinned message 8 (assistant)"]


def test_codex_resumes_a_fork_from_before_its_own_compaction(stage: Stage) -> None:
    tid = codex_first_turn(stage)
    ok(
        stage.codex(
            "resume",
            tid,
            SECOND,
            fake=FakeClientAPIs(SECOND_DONE, compaction=CODEX_COMPACTION),
            compact_over=5,
        )
    )
    rollout = stage.rollout(tid)
    [compaction] = find_compactions(split_lines(rollout.read_bytes()))
    assert not compaction.ours
    original = rollout.read_bytes()
    fork = json.loads(ctxcompact_ok(stage, "uncompact", tid, "--fork", "--json"))
    new = Path(fork["path"])
    assert new == stage.rollout(fork["session_id"])
    live = codex_live_items(new)
    assert TASK in texts(live) and CODEX_COMPACTION not in texts(live)
    resumed = ok(stage.codex("resume", fork["session_id"], PROMPT, fake=FakeClientAPIs(REPLY)))
    # Codex resumed the fork as a session of its own, and wrote the new turn there.
    assert f"session id: {fork['session_id']}" in resumed.stderr, resumed.describe()
    assert rollout.read_bytes() == original and PROMPT in new.read_text()
    assert not codex_findings(resumed, new, live, stage.dir / "sent.jsonl")
