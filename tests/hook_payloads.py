"""The hook payloads Claude Code and Codex send, recorded from their documentation.

Only documented fields, with the documented values; the paths and ids are filled in by each
test (``payload(KIND, transcript=…, cwd=…)``).

Sources:

* Claude Code: the hooks reference, https://code.claude.com/docs/en/hooks — common input
  fields ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; "PreCompact input"
  (``trigger``: ``manual`` | ``auto``, ``custom_instructions``: what the user passed to
  ``/compact``, empty for ``auto``); "PostCompact input" (``trigger``, ``compact_summary``);
  "SessionStart input" (``source``: ``startup`` | ``resume`` | ``clear`` | ``compact``,
  ``model``). The same fields are typed in the Agent SDK for Python
  (``PreCompactHookInput``, ``PostCompactHookInput``, ``SessionStartHookInput``).
* Codex: the generated schemas in openai/codex, ``codex-rs/hooks/schema/generated/
  pre-compact.command.input.schema.json`` and ``post-compact.command.input.schema.json``
  (all required: ``session_id``, ``turn_id``, ``transcript_path`` (string or null), ``cwd``,
  ``hook_event_name``, ``model``, ``trigger`` ``manual`` | ``auto``; no other property), and
  ``SessionStartCommandInput`` in ``codex-rs/hooks/src/schema.rs`` (``session_id``,
  ``transcript_path``, ``cwd``, ``hook_event_name``, ``model``, ``permission_mode``,
  ``source``; ``compact`` is a source since openai/codex#21272). Codex's own test
  ``pre_compact_input_includes_lifecycle_metadata`` (``codex-rs/hooks/src/events/compact.rs``)
  shows the shape: ``{"session_id": …, "turn_id": "turn-1", "transcript_path": null, "cwd":
  "/tmp", "hook_event_name": "PreCompact", "model": "gpt-test", "trigger": "manual"}``.
"""

from __future__ import annotations

import json
from typing import Any

CLAUDE_SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
CODEX_SESSION = "019e1625-789d-76c0-80ab-3724b5ddb799"

PAYLOADS: dict[str, dict[str, Any]] = {
    # Claude Code, /compact typed by the user (custom instructions after the command).
    "claude-code/PreCompact/manual": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": "Focus on the failing tests",
    },
    # Claude Code, the context window filled up.
    "claude-code/PreCompact/auto": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PreCompact",
        "trigger": "auto",
        "custom_instructions": "",
    },
    "claude-code/PostCompact/manual": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PostCompact",
        "trigger": "manual",
        "compact_summary": "{summary}",
    },
    "claude-code/PostCompact/auto": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PostCompact",
        "trigger": "auto",
        "compact_summary": "{summary}",
    },
    "claude-code/SessionStart/compact": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "SessionStart",
        "source": "compact",
        "model": "claude-sonnet-4-5",
    },
    "claude-code/SessionStart/startup": {
        "session_id": CLAUDE_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "SessionStart",
        "source": "startup",
        "model": "claude-sonnet-4-5",
    },
    "codex/PreCompact/manual": {
        "session_id": CODEX_SESSION,
        "turn_id": "turn-1",
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PreCompact",
        "model": "gpt-5.5",
        "trigger": "manual",
    },
    "codex/PreCompact/auto": {
        "session_id": CODEX_SESSION,
        "turn_id": "turn-7",
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PreCompact",
        "model": "gpt-5.5",
        "trigger": "auto",
    },
    "codex/PostCompact/manual": {
        "session_id": CODEX_SESSION,
        "turn_id": "turn-1",
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PostCompact",
        "model": "gpt-5.5",
        "trigger": "manual",
    },
    "codex/PostCompact/auto": {
        "session_id": CODEX_SESSION,
        "turn_id": "turn-7",
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "PostCompact",
        "model": "gpt-5.5",
        "trigger": "auto",
    },
    "codex/SessionStart/compact": {
        "session_id": CODEX_SESSION,
        "transcript_path": "{transcript}",
        "cwd": "{cwd}",
        "hook_event_name": "SessionStart",
        "model": "gpt-5.5",
        "permission_mode": "default",
        "source": "compact",
    },
}


def payload(kind: str, **values: str | None) -> bytes:
    """The recorded payload ``kind`` with its ``{placeholders}`` filled in (None: JSON null)."""
    out: dict[str, Any] = {}
    for key, value in PAYLOADS[kind].items():
        if isinstance(value, str) and value.startswith("{") and value.endswith("}"):
            value = values[value[1:-1]]
        out[key] = value
    return json.dumps(out).encode()
