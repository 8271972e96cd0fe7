"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. What the model sees — and so what becomes
IR messages — is the *live history*, rebuilt the way Codex rebuilds it on resume
(``reconstruct_history_from_rollout``):

* ``response_item`` lines are history items, appended in file order;
* a ``compacted`` line replaces the history so far with its ``replacement_history`` (an older
  Codex wrote only ``message``: the history is then the earlier real user messages, newest
  first up to 20,000 approximate tokens, plus the summary — without the initial context,
  which Codex rebuilds from its configuration, not from the file);
* an ``event_msg`` of type ``thread_rolled_back`` drops the last ``num_turns`` user turns;
* ``session_meta``, ``turn_context`` and every other ``event_msg`` (they duplicate what the
  response items carry: ``user_message``, ``agent_message``, ``exec_command_end``…) are kept in
  place and not counted. The ``base_instructions`` of ``session_meta`` are the system prompt
  (:func:`instructions`).

Items become IR messages: a run of model output items (``reasoning``, ``function_call``,
``custom_tool_call``, ``local_shell_call``, ``web_search_call``, assistant ``message``) is one
assistant message; a run of ``function_call_output`` / ``custom_tool_call_output`` items is one
user message of ``tool_result`` blocks (paired by ``call_id``); each user or developer
``message`` is a message of its own (developer → ``system``). Blocks: ``input_text`` /
``output_text`` → text (other fields of the part, such as an answer's ``annotations``, kept
for the writer); ``input_image`` → ``image_url``; a reasoning summary or content →
thinking, its ``encrypted_content`` → ``redacted_thinking`` (counted as opaque data); a call →
``tool_use`` (``id`` = ``call_id``); ``web_search_call`` and unknown items are carried as
blocks of their own type.

Writing back (:func:`finalize_records`): a rewrite that only changes items in place (offload,
prune) or appends new ones rewrites those lines and appends new ``response_item`` lines; any
other rewrite (a compaction) leaves every line as it was and appends one ``compacted`` line
whose ``replacement_history`` is the new live history and whose ``message`` is the summary —
how Codex itself records a compaction, so its resume and our reader see the same history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import READ_PATHS, Block, Message, Role, Source
from ctxcompact.markers import CODEX_SUMMARY_PREFIX, SUMMARY_PREFIX
from ctxcompact.transcripts.dialects.codex.files import relative_to, touched_files
from ctxcompact.transcripts.dialects.common import Parsed, json_kind
from ctxcompact.transcripts.jsontext import loads

NAME = "codex"
#: Codex keeps the newest user messages up to this many approximate tokens when it compacts.
KEEP_USER_TOKENS = 20_000

_OUTPUT_KINDS = frozenset({"function_call_output", "custom_tool_call_output"})
_CALL_KINDS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_SYSTEM_ROLES = frozenset({"developer", "system"})
#: Marks a tool_use / tool_result block that is not a plain function call or output.
KIND_KEY = "codex_item"
#: On a text block read from a part with more than its ``type`` and ``text`` (an answer's
#: ``annotations``, its URL citations): those fields, written back with the text. Empty ones
#: (``"annotations": []``, on every answer Codex 0.169 records) say nothing and are not kept.
PART_KEY = "codex_part"
#: On a tool_result read from the legacy ``shell`` tool's JSON envelope
#: (``{"output": TEXT, "metadata": {"exit_code", "duration_seconds"}}``, Codex ≤ 0.5x): the
#: ``metadata``, so the writer wraps a changed output the same way. The block's content is
#: the output text, and a non-zero ``exit_code`` makes it ``is_error``.
ENVELOPE_KEY = "codex_metadata"


# --- the live history ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveItem:
    """One item of the live history: its ``payload``, the ``record`` it is written in (the
    ``response_item`` line, or the payload itself when it lives inside a ``compacted`` line's
    history) and that record's line index."""

    payload: Mapping[str, Any]
    record: Any
    index: int

    @property
    def in_line(self) -> bool:
        return self.record is not self.payload


def live_history(records: Sequence[Any]) -> list[LiveItem]:
    """The history Codex would send after these lines (see the module docstring)."""
    live: list[LiveItem] = []
    for i, record in enumerate(records):
        if (
            not isinstance(record, Mapping)
            or not isinstance(record.get("type"), str)
            or "payload" not in record
        ):
            # Only reachable with --format codex: anything else would be read as no message at all.
            what = f"a JSON {json_kind(record)}" if not isinstance(record, Mapping) else "not a rollout line"
            raise InputError(
                f"line {i + 1} is {what}; expected a Codex rollout line ({{timestamp, type, payload}})."
            )
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "response_item":
            live.append(LiveItem(_item(payload, f"line {i + 1}"), record, i))
        elif kind == "compacted" and isinstance(payload, Mapping):
            history = payload.get("replacement_history")
            if isinstance(history, list):
                live = [LiveItem(_item(p, f"line {i + 1}, replacement_history"), p, i) for p in history]
            else:
                summary = str(payload.get("message") or "")
                live = [LiveItem(p, p, i) for p in legacy_history(live, summary)]
        elif (
            kind == "event_msg"
            and isinstance(payload, Mapping)
            and payload.get("type") == "thread_rolled_back"
        ):
            live = _roll_back(live, payload.get("num_turns"))
    return live


def _item(payload: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(payload, Mapping) or not isinstance(payload.get("type"), str):
        raise InputError(f"{where}: a response item must be an object with a 'type'.")
    return payload


def _roll_back(live: list[LiveItem], turns: Any) -> list[LiveItem]:
    if not isinstance(turns, int) or turns <= 0:
        return live
    starts = [k for k, item in enumerate(live) if is_user_turn(item.payload)]
    if not starts:
        return live
    return live[: starts[-min(turns, len(starts))]]


def is_user_turn(payload: Mapping[str, Any]) -> bool:
    """A user message that starts a turn: not Codex's injected context, not a summary."""
    if payload.get("type") != "message" or payload.get("role") != "user":
        return False
    text = message_text(payload)
    return not is_session_prefix(text) and not is_summary(text)


def message_text(payload: Mapping[str, Any]) -> str:
    parts = payload.get("content")
    if not isinstance(parts, list):
        return ""
    texts = [str(p.get("text", "")) for p in parts if isinstance(p, Mapping) and "text" in p]
    return "\n".join(t for t in texts if t)


def is_session_prefix(text: str) -> bool:
    """Codex's injected user-role context (AGENTS.md, environment, instructions)."""
    head = text.lstrip()[:64].lower()
    return head.startswith(
        ("<environment_context>", "# agents.md instructions", "<user_instructions>", "<turn_aborted>")
    )


def is_summary(text: str) -> bool:
    return text.startswith(CODEX_SUMMARY_PREFIX) or text.startswith(SUMMARY_PREFIX.rstrip())


def approx_tokens(text: str) -> int:
    """Codex's ``approx_token_count``: a token per four bytes of UTF-8, rounded up."""
    return (len(text.encode()) + 3) // 4


def truncate_middle(text: str, max_tokens: int) -> str:
    """``text`` cut to about ``max_tokens`` (Codex's rule: bytes / 4), keeping its start and
    end around a ``…N tokens truncated…`` marker."""
    if approx_tokens(text) <= max_tokens:
        return text
    keep = max(max_tokens * 4, 0)
    head, tail = text[: keep // 2], text[len(text) - keep // 2 :] if keep >= 2 else ""
    removed = approx_tokens(text) - approx_tokens(head + tail)
    return f"{head}…{removed} tokens truncated…{tail}"


def select_user_texts(texts: Sequence[str], budget: int) -> list[str]:
    """The newest of ``texts`` that fit ``budget`` approximate tokens, oldest first; the one
    that crosses the budget is cut in the middle (Codex's ``build_compacted_history``)."""
    selected: list[str] = []
    remaining = budget
    for text in reversed(texts):
        if remaining <= 0:
            break
        tokens = approx_tokens(text)
        if tokens <= remaining:
            selected.append(text)
            remaining -= tokens
        else:
            selected.append(truncate_middle(text, remaining))
            break
    return selected[::-1]


def user_message_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def legacy_history(live: Sequence[LiveItem], summary: str) -> list[dict[str, Any]]:
    """What an older Codex rebuilt for a ``compacted`` line without ``replacement_history``."""
    texts = [message_text(item.payload) for item in live if is_user_turn(item.payload)]
    kept = select_user_texts(texts, KEEP_USER_TOKENS)
    return [*(user_message_item(t) for t in kept), user_message_item(summary or "(no summary available)")]


# --- parsing ----------------------------------------------------------------------------------


def parse_records(records: Sequence[Any]) -> Parsed:
    live = live_history(records)
    cwds = _cwd_by_line(records)
    groups: list[list[LiveItem]] = []
    sides: list[str] = []
    for item in live:
        side = _side(item.payload)
        if groups and side in ("assistant", "outputs") and sides[-1] == side:
            groups[-1].append(item)
            continue
        groups.append([item])
        sides.append(side)
    messages = tuple(_message(group, side, cwds) for group, side in zip(groups, sides, strict=True))
    used = {item.index for item in live}
    passthrough = frozenset(i for i in range(len(records)) if i not in used)
    # A compacted line holds the live items of its history: it is written back as it is.
    passthrough |= frozenset(item.index for item in live if not item.in_line)
    return Parsed(messages, passthrough, ())


def _side(payload: Mapping[str, Any]) -> str:
    kind = payload.get("type")
    if kind in _OUTPUT_KINDS:
        return "outputs"
    if kind == "message":
        role = payload.get("role")
        if isinstance(role, str) and role in _SYSTEM_ROLES:
            return "system"
        if role == "user":
            return "user"
    return "assistant"


def _cwd_by_line(records: Sequence[Any]) -> list[str | None]:
    """The session's working directory in effect at each line (``session_meta`` /
    ``turn_context`` ``cwd``)."""
    out: list[str | None] = []
    cwd: str | None = None
    for record in records:
        if isinstance(record, Mapping) and record.get("type") in ("session_meta", "turn_context"):
            payload = record.get("payload")
            value = payload.get("cwd") if isinstance(payload, Mapping) else None
            cwd = value if isinstance(value, str) and value else cwd
        out.append(cwd)
    return out


def _message(group: Sequence[LiveItem], side: str, cwds: Sequence[str | None]) -> Message:
    role: Role = "system" if side == "system" else "assistant" if side == "assistant" else "user"
    blocks: list[Block] = []
    for item in group:
        blocks.extend(item_blocks(item.payload, f"line {item.index + 1}", cwd=cwds[item.index]))
    source = Source(tuple(item.record for item in group), tuple(item.index for item in group))
    return Message(role, tuple(blocks), source)


def item_blocks(payload: Mapping[str, Any], where: str, *, cwd: str | None = None) -> tuple[Block, ...]:
    """The IR blocks of one response item (at least one, so items and blocks stay aligned).
    A call's ``read_paths`` are the files it read or patched (:mod:`.files`), relative to
    ``cwd`` (the session's) when inside it."""
    kind = payload.get("type")
    if kind == "message":
        parts = payload.get("content")
        if not isinstance(parts, list):
            raise InputError(f"{where}: 'content' is a JSON {json_kind(parts)}, expected a list.")
        blocks = tuple(_part_block(p, where) for p in parts)
        return blocks or ({"type": "text", "text": ""},)
    if kind == "reasoning":
        return _reasoning_blocks(payload)
    if kind in _CALL_KINDS:
        block = _call_block(payload, where)
        paths = [relative_to(p, cwd) for p in touched_files(block)]
        return ({**block, READ_PATHS: paths} if paths else block,)
    if kind in _OUTPUT_KINDS:
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": _call_id(payload, where),
            "content": _output_content(payload.get("output")),
        }
        envelope = shell_envelope(payload.get("output"))
        if envelope is not None:
            result["content"], result[ENVELOPE_KEY] = envelope
            if envelope[1].get("exit_code") not in (0, None):
                result["is_error"] = True
        if kind != "function_call_output":
            result[KIND_KEY] = kind
        return (result,)
    return (payload,)


def _part_block(part: Any, where: str) -> Block:
    if not isinstance(part, Mapping):
        raise InputError(f"{where}: a content part is a JSON {json_kind(part)}, expected an object.")
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text") and isinstance(part.get("text", ""), str):
        block: Block = {"type": "text", "text": part.get("text", "")}
        extra = {k: v for k, v in part.items() if k not in ("type", "text") and v not in ([], {}, None)}
        return {**block, PART_KEY: extra} if extra else block
    if kind == "input_image" and set(part) <= {"type", "image_url"}:
        return {"type": "image_url", "image_url": {"url": part.get("image_url")}}
    return part


def _reasoning_blocks(payload: Mapping[str, Any]) -> tuple[Block, ...]:
    texts: list[str] = []
    for key in ("summary", "content"):
        parts = payload.get(key)
        if isinstance(parts, list):
            texts.extend(str(p.get("text", "")) for p in parts if isinstance(p, Mapping))
    blocks: list[Block] = []
    if texts or not payload.get("encrypted_content"):
        blocks.append({"type": "thinking", "thinking": "\n".join(t for t in texts if t)})
    if payload.get("encrypted_content"):
        blocks.append({"type": "redacted_thinking", "data": str(payload["encrypted_content"])})
    return tuple(blocks)


def _call_id(payload: Mapping[str, Any], where: str) -> str | None:
    call_id = payload.get("call_id", payload.get("id"))
    if call_id is not None and not isinstance(call_id, str):
        raise InputError(f"{where}: 'call_id' is a JSON {json_kind(call_id)}, expected a string id.")
    return call_id


def _call_block(payload: Mapping[str, Any], where: str) -> Block:
    kind = payload.get("type")
    block: dict[str, Any] = {"type": "tool_use", "id": _call_id(payload, where)}
    if kind == "function_call":
        arguments = payload.get("arguments", "")
        block["name"] = str(payload.get("name", ""))
        block["input"] = _parse_arguments(arguments)
        block["arguments"] = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return block
    if kind == "custom_tool_call":
        block["name"] = str(payload.get("name", ""))
        block["input"] = {"input": str(payload.get("input", ""))}
    else:
        action = payload.get("action")
        block["name"] = "local_shell"
        block["input"] = dict(action) if isinstance(action, Mapping) else {}
    block[KIND_KEY] = kind
    return block


def _parse_arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        value, error = loads(arguments) if arguments.strip() else ({}, None)
        return value if error is None and isinstance(value, Mapping) else {}
    return arguments if isinstance(arguments, Mapping) else {}


def _output_content(output: Any) -> Any:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return [_part_block(p, "output") if isinstance(p, Mapping) else p for p in output]
    if isinstance(output, Mapping) and isinstance(output.get("content"), str):
        return output["content"]
    return json.dumps(output, ensure_ascii=False)


def shell_envelope(output: Any) -> tuple[str, Mapping[str, Any]] | None:
    """The text and metadata of a legacy ``shell`` output envelope, else None."""
    if not isinstance(output, str) or not output.startswith('{"output"'):
        return None
    try:
        value = json.loads(output)
    except ValueError:
        return None
    if not isinstance(value, Mapping) or set(value) != {"output", "metadata"}:
        return None
    text, metadata = value.get("output"), value.get("metadata")
    if not isinstance(text, str) or not isinstance(metadata, Mapping):
        return None
    return text, metadata


def instructions(records: Sequence[Any]) -> tuple[Block, ...]:
    """The system prompt Codex sends: the session's ``base_instructions`` (the newest
    ``turn_context`` or ``session_meta`` that records them)."""
    for record in reversed(records):
        if not isinstance(record, Mapping) or record.get("type") not in ("session_meta", "turn_context"):
            continue
        payload = record.get("payload")
        base = payload.get("base_instructions") if isinstance(payload, Mapping) else None
        text = base.get("text") if isinstance(base, Mapping) else base
        if isinstance(text, str) and text:
            return ({"type": "text", "text": text},)
    return ()


def session_cwd(records: Sequence[Any]) -> str | None:
    """The working directory of the session: the newest ``turn_context`` or ``session_meta``
    ``cwd``."""
    for record in reversed(records):
        if isinstance(record, Mapping) and record.get("type") in ("session_meta", "turn_context"):
            payload = record.get("payload")
            cwd = payload.get("cwd") if isinstance(payload, Mapping) else None
            if isinstance(cwd, str) and cwd:
                return cwd
    return None


def session_model(records: Sequence[Any]) -> str | None:
    """The model of the newest turn (``turn_context`` ``model``)."""
    for record in reversed(records):
        if isinstance(record, Mapping) and record.get("type") == "turn_context":
            payload = record.get("payload")
            model = payload.get("model") if isinstance(payload, Mapping) else None
            if isinstance(model, str) and model:
                return model
    return None
