"""How each dialect's records are recognised, without loading its adapter.

Detection asks the dialects in turn (:mod:`ctxcompact.transcripts.dialects`), so the checks
live here, apart from the adapters: reading a file loads the one adapter that reads it, not
every one (a tenth of a ``count`` on a small file went to loading the five). Each adapter's
``looks_like`` is its function here; the constants the checks need are the adapters' too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The roles of Anthropic's messages (a leading ``system`` one: the seeds' format).
ANTHROPIC_ROLES = ("system", "user", "assistant")

#: Content parts only OpenAI uses.
OPENAI_PARTS = ("image_url", "input_audio", "file")
#: Content blocks only Anthropic's API uses: a record with one is not OpenAI's.
ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document")
#: Model id prefixes that say a plain-text request body is for an OpenAI-compatible API.
OPENAI_MODELS = ("gpt", "o1", "o3", "o4", "deepseek", "qwen")

#: Claude Code's entries that carry an API message.
CLAUDE_CODE_MESSAGE_TYPES = ("user", "assistant")
#: Entry types that only Claude Code writes: enough to recognise a session file.
CLAUDE_CODE_MARKER_TYPES = frozenset(
    {"summary", "file-history-snapshot", "queue-operation", "progress", "pr-link", "system"}
)

#: The rollout line types Codex writes.
CODEX_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})


def looks_like_anthropic(records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
    """Every record is a message object with an Anthropic role (plain-text messages look the
    same in OpenAI's dialect: ask that one first)."""
    # type() first: a dict (every parsed record) skips the Mapping ABC's slower check.
    return all(
        (type(r) is dict or isinstance(r, Mapping)) and r.get("role") in ANTHROPIC_ROLES for r in records
    )


def looks_like_openai(records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
    """True when the records use OpenAI shapes.

    The first record with a shape only one API uses decides: a ``tool`` / ``function`` /
    ``developer`` role, ``tool_calls``, null assistant content or ``image_url`` parts say
    OpenAI; an Anthropic-only block (``tool_use``, ``thinking``, ``image``…) says not. Plain
    text messages are the same in both dialects: then the body's function-style tools or an
    OpenAI-family model say OpenAI.
    """
    for record in records:
        if not isinstance(record, Mapping):
            continue
        if record.get("role") in ("tool", "function", "developer") or record.get("tool_calls"):
            return True
        content = record.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, Mapping):
                    if block.get("type") in ANTHROPIC_BLOCKS:
                        return False
                    if block.get("type") in OPENAI_PARTS:
                        return True
        elif content is None and record.get("role") == "assistant":
            return True
    if body is not None:
        tools = body.get("tools")
        if isinstance(tools, list) and tools and isinstance(tools[0], Mapping):
            if tools[0].get("type") == "function" or "function" in tools[0]:
                return True
            if "input_schema" in tools[0]:
                return False
        return str(body.get("model", "")).startswith(OPENAI_MODELS)
    return False


def looks_like_text_action(records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
    """A mini-swe-agent trajectory whose replies call no tool (its ``trajectory_format``), or
    a SWE-agent ``.traj`` (its ``history`` beside its ``trajectory``)."""
    if body is None:
        return False
    if isinstance(body.get("history"), list) and "trajectory" in body:
        return True
    fmt = body.get("trajectory_format")
    return (
        isinstance(fmt, str)
        and fmt.startswith("mini-swe-agent")
        and not any(
            isinstance(r, Mapping) and isinstance(r.get("tool_calls"), list) and r["tool_calls"]
            for r in records
        )
    )


def looks_like_claude_code(records: Sequence[Any], body: Mapping[str, Any] | None = None) -> bool:
    """True when the entries are Claude Code session entries rather than bare messages."""
    for record in records[:50]:
        if not isinstance(record, Mapping):
            return False
        if "role" in record:
            return False
        kind = record.get("type")
        if kind in CLAUDE_CODE_MESSAGE_TYPES and isinstance(record.get("message"), Mapping):
            return True
        if (
            isinstance(kind, str)
            and kind in CLAUDE_CODE_MARKER_TYPES
            and ("uuid" in record or "sessionId" in record or "leafUuid" in record or "messageId" in record)
        ):
            return True
    return False


def looks_like_codex(records: Sequence[Any], body: Mapping[str, Any] | None = None) -> bool:
    """True when the first lines are all rollout-shaped (``{"type": str, "payload"}``) and
    one of them is a line type Codex writes. Newer versions add line types (0.169:
    ``world_state``, ``token_usage_record``), so an unknown type among them does not make
    the file something else."""
    if body is not None:
        return False
    head = records[:20]
    return (
        bool(head)
        and all(_is_codex_line(r) for r in head)
        and any(r.get("type") in CODEX_LINE_TYPES for r in head if isinstance(r, Mapping))
    )


def _is_codex_line(record: Any) -> bool:
    return isinstance(record, Mapping) and "payload" in record and isinstance(record.get("type"), str)
