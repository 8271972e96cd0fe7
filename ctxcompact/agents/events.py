"""The hook contracts of Claude Code and Codex: what they send on stdin, what they read back.

Both agents run a hook as a command, write one JSON object on its stdin and read its stdout
and exit status. The fields read here are the documented ones, nothing invented:

* **Claude Code** (https://code.claude.com/docs/en/hooks; the Agent SDK's ``PreCompactHookInput``
  …): every event has ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``.
  ``PreCompact`` adds ``trigger`` (``manual`` | ``auto``) and ``custom_instructions``, and may
  block the compaction (since 2.1.105) with exit 2 or ``{"decision": "block", "reason": …}``;
  ``PostCompact`` (2.1.76) adds ``trigger`` and ``compact_summary``, and only observes;
  ``SessionStart`` adds ``source`` (``startup`` | ``resume`` | ``clear`` | ``compact``) and
  reads ``{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}}``.
* **Codex** (``codex-rs/hooks/schema/generated/*.command.input.schema.json``):
  ``PreCompact``/``PostCompact`` send ``session_id``, ``turn_id``, ``transcript_path`` (may be
  null), ``cwd``, ``hook_event_name``, ``model``, ``trigger``; ``PreCompact`` stops the
  compaction only with ``{"continue": false, "stopReason": …}`` (``decision: block`` and exit 2
  are refused as invalid there); ``SessionStart`` sends ``session_id``, ``transcript_path``,
  ``cwd``, ``model``, ``permission_mode``, ``source`` (``compact`` included) and reads the
  same ``hookSpecificOutput.additionalContext`` as Claude Code.

An answer never uses exit 2: a hook that fails must not block its agent's compaction by
accident, so failures exit 1 (both agents report it and carry on) and a block is always the
JSON answer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcompact.errors import InputError

CLAUDE_CODE = "claude-code"
CODEX = "codex"
AGENTS = (CLAUDE_CODE, CODEX)
#: Our event names (the command line's) and the agents' ``hook_event_name``.
EVENTS = {"pre-compact": "PreCompact", "session-start": "SessionStart", "post-compact": "PostCompact"}
TRIGGERS = ("manual", "auto")


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook call, as the agent described it. ``agent``: ``claude-code`` or ``codex``;
    ``name``: ``PreCompact``, ``SessionStart`` or ``PostCompact``."""

    agent: str
    name: str
    session_id: str
    transcript_path: str | None = None
    cwd: str | None = None
    trigger: str | None = None
    source: str | None = None
    custom_instructions: str | None = None
    compact_summary: str | None = None
    model: str | None = None
    turn_id: str | None = None


def parse_hook_input(data: bytes, *, event: str, agent: str | None = None) -> HookEvent:
    """The payload of hook ``event`` (``pre-compact``…) read from ``data``. ``agent`` None:
    Codex when the payload carries a ``turn_id`` or names a rollout, else Claude Code."""
    import orjson

    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"hook {event}: stdin is not the agent's JSON payload ({exc}).") from None
    if not isinstance(payload, Mapping):
        raise InputError(f"hook {event}: stdin is not a JSON object.")
    expected = EVENTS[event]
    name = payload.get("hook_event_name")
    if name is not None and name != expected:
        raise InputError(f"hook {event}: the agent sent a {name} event (this command answers {expected}).")
    session_id = _text(payload, "session_id")
    if not session_id:
        raise InputError(f"hook {event}: the payload has no session_id.")
    transcript = _text(payload, "transcript_path")
    return HookEvent(
        agent=agent or _agent_of(payload, transcript),
        name=expected,
        session_id=session_id,
        transcript_path=transcript or None,
        cwd=_text(payload, "cwd"),
        trigger=_text(payload, "trigger"),
        source=_text(payload, "source"),
        custom_instructions=_text(payload, "custom_instructions"),
        compact_summary=_text(payload, "compact_summary"),
        model=_text(payload, "model"),
        turn_id=_text(payload, "turn_id"),
    )


def _text(payload: Mapping[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) else None


def _agent_of(payload: Mapping[str, Any], transcript: str | None) -> str:
    if "turn_id" in payload:
        return CODEX
    if transcript and (Path(transcript).name.startswith("rollout-") or "/.codex/" in transcript):
        return CODEX
    return CLAUDE_CODE


def codex_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ if environ is None else environ
    home = env.get("CODEX_HOME", "")
    return Path(home).expanduser() if home else Path.home() / ".codex"


def claude_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ if environ is None else environ
    home = env.get("CLAUDE_CONFIG_DIR", "")
    return Path(home).expanduser() if home else Path.home() / ".claude"


def transcript_of(event: HookEvent) -> Path:
    """The session file the event is about: its ``transcript_path``, or for Codex (which may
    send null) the rollout named by the session id under ``$CODEX_HOME/sessions``."""
    if event.transcript_path:
        path = Path(event.transcript_path).expanduser()
        if not path.is_absolute() and event.cwd:
            path = Path(event.cwd) / path
        return path
    if event.agent == CODEX:
        found = sorted((codex_home() / "sessions").rglob(f"rollout-*{event.session_id}.jsonl"))
        if found:
            return found[-1]
    raise InputError(f"hook: the {event.name} payload names no transcript for session {event.session_id}.")


# --- answers ----------------------------------------------------------------------------------


def block_answer(agent: str, reason: str) -> dict[str, Any]:
    """The answer that stops the agent's own compaction (``PreCompact``)."""
    if agent == CODEX:
        return {"continue": False, "stopReason": reason}
    return {"decision": "block", "reason": reason}


def context_answer(text: str) -> dict[str, Any]:
    """The ``SessionStart`` answer that adds ``text`` to the model's context (both agents)."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def resume_command(agent: str, session_id: str) -> str:
    """How a user resumes ``session_id`` in its agent."""
    return f"codex resume {session_id}" if agent == CODEX else f"claude --resume {session_id}"


def session_path(ref: str) -> Path:
    """A session named by its file or by its id: ``~/.claude/projects/*/ID.jsonl`` or a Codex
    rollout ``rollout-*-ID.jsonl`` under ``~/.codex/sessions`` (the newest when several)."""
    path = Path(ref).expanduser()
    if path.exists() or os.sep in ref or ref.endswith(".jsonl"):
        return path
    found = sorted(claude_home().glob(f"projects/*/{ref}.jsonl"))
    found += sorted((codex_home() / "sessions").rglob(f"rollout-*{ref}.jsonl"))
    if not found:
        raise InputError(
            f"{ref}: no such file, and no Claude Code or Codex session with that id "
            f"(looked in {claude_home() / 'projects'} and {codex_home() / 'sessions'})."
        )
    return max(found, key=lambda p: p.stat().st_mtime)
