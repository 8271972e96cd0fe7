"""OpenAI Chat Completions dialect.

Mapping to the IR:

* ``system`` / ``developer`` → a system message;
* ``user`` → a user message (string content → a text block; content parts → text blocks, other
  parts such as ``image_url`` carried as they are);
* ``assistant`` → an assistant message: ``content`` (string, parts or null) → text blocks,
  ``reasoning_content`` (DeepSeek and friends) → a thinking block, ``tool_calls`` →
  ``tool_use`` blocks whose ``input`` is the parsed ``arguments`` (the raw string is kept in
  an ``arguments`` key so an unchanged call is written back exactly);
* a run of consecutive ``tool`` messages → one user message of ``tool_result`` blocks (one IR
  message from several records, written back as those records).

Records with any other role (mini-swe-agent's trailing ``{"role": "exit"}``) are kept in place
but are not messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import Block, Message, Source
from ctxcompact.transcripts.dialects.common import (
    DialectDefaults,
    Parsed,
    json_kind,
    plain_text,
    require_mapping,
    require_tool_id,
)
from ctxcompact.transcripts.dialects.detect import looks_like_openai as looks_like
from ctxcompact.transcripts.jsontext import loads
from ctxcompact.transcripts.recorded_usage import RecordedUsage, token_field

NAME = "openai"
_SYSTEM_ROLES = ("system", "developer")
#: Anthropic blocks this dialect would read as its own tool calls and results: refused.
_MIXED_BLOCKS = ("tool_use", "tool_result")


def parse_records(records: Sequence[Any]) -> Parsed:
    messages: list[Message] = []
    passthrough: set[int] = set()
    warnings: list[str] = []
    pending_tools: list[tuple[int, Mapping[str, Any]]] = []

    def flush_tools() -> None:
        if pending_tools:
            blocks = tuple(_tool_result_block(rec, f"message {i}") for i, rec in pending_tools)
            source = Source(tuple(rec for _, rec in pending_tools), tuple(i for i, _ in pending_tools))
            messages.append(Message("user", blocks, source))
            pending_tools.clear()

    for i, record in enumerate(records):
        where = f"message {i}"
        rec = require_mapping(record, where)
        role = rec.get("role")
        if role is None:
            raise InputError(f"{where} has no 'role' (expected 'system', 'user', 'assistant' or 'tool').")
        if role in ("tool", "function"):
            pending_tools.append((i, rec))
            continue
        flush_tools()
        source = Source((record,), (i,))
        if role in _SYSTEM_ROLES:
            messages.append(Message("system", _content_blocks(rec.get("content"), where), source))
        elif role == "user":
            messages.append(Message("user", _content_blocks(rec.get("content"), where), source))
        elif role == "assistant":
            messages.append(Message("assistant", _assistant_blocks(rec, where), source))
        else:
            passthrough.add(i)
            warnings.append(f"{where} has role {role!r}: kept as it is, not counted.")
    flush_tools()
    return Parsed(tuple(messages), frozenset(passthrough), tuple(warnings))


class OpenAIDialect(DialectDefaults):
    """Chat Completions messages: roles may repeat, tool ids may be reused in a later turn."""

    name = NAME
    alternating_roles = False
    reused_tool_ids = True
    read_tools: tuple[tuple[str, str], ...] = (("read_file", "path"),)

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        return looks_like(records, body)

    def parse(self, records: Sequence[Any]) -> Parsed:
        return parse_records(records)

    def render(self, message: Message) -> list[Any]:
        return render_message(message)

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        return response_usage(messages)


def response_usage(messages: Sequence[Message]) -> RecordedUsage | None:
    """mini-swe-agent trajectories keep each Chat Completions response (with its ``usage``)
    in the assistant message's ``extra.response``: the last one, with ``prompt_tokens``
    split into uncached input and cache read (``prompt_tokens_details.cached_tokens``)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "assistant" or message.source is None:
            continue
        for record, position in zip(message.source.records, message.source.indices, strict=True):
            extra = record.get("extra") if isinstance(record, Mapping) else None
            response = extra.get("response") if isinstance(extra, Mapping) else None
            usage = response.get("usage") if isinstance(response, Mapping) else None
            if not isinstance(usage, Mapping) or not token_field(usage.get("prompt_tokens")):
                continue
            details = usage.get("prompt_tokens_details")
            prompt = token_field(usage.get("prompt_tokens"))
            cached = min(
                token_field(details.get("cached_tokens")) if isinstance(details, Mapping) else 0, prompt
            )
            return RecordedUsage(
                input=prompt - cached,
                cache_creation=0,
                cache_read=cached,
                output=token_field(usage.get("completion_tokens")),
                at_message_index=index,
                source=f"extra.response.usage, message {position + 1}",
            )
    return None


DIALECT = OpenAIDialect()


def _content_blocks(content: Any, where: str) -> tuple[Block, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return ({"type": "text", "text": content},) if content else ()
    if isinstance(content, list):
        blocks: list[Block] = []
        for j, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise InputError(
                    f"{where}: content part {j} is a JSON {json_kind(part)}, expected an object."
                )
            if part.get("type") == "text":
                blocks.append({"type": "text", "text": str(part.get("text", ""))})
            elif part.get("type") in _MIXED_BLOCKS:
                raise InputError(
                    f"{where}: content part {j} is an Anthropic {part.get('type')} block in a transcript "
                    "of OpenAI messages: no API accepts the mix, and rewriting it would turn it into "
                    "another dialect's message; convert it to one dialect first."
                )
            else:
                blocks.append(part)
        return tuple(blocks)
    raise InputError(f"{where}: 'content' is a JSON {json_kind(content)}, expected a string, a list or null.")


def _assistant_blocks(rec: Mapping[str, Any], where: str) -> tuple[Block, ...]:
    blocks: list[Block] = []
    reasoning = rec.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning})
    blocks.extend(_content_blocks(rec.get("content"), where))
    calls = rec.get("tool_calls") or []
    if not isinstance(calls, list):
        raise InputError(f"{where}: 'tool_calls' is a JSON {json_kind(calls)}, expected a list.")
    for j, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise InputError(f"{where}: tool call {j} is a JSON {json_kind(call)}, expected an object.")
        require_tool_id(call.get("id"), f"{where}: tool call {j}: 'id'")
        raw_function = call.get("function")
        function: Mapping[str, Any] = raw_function if isinstance(raw_function, Mapping) else {}
        arguments = function.get("arguments", "")
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name", ""),
                "input": _parse_arguments(arguments),
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
        )
    return tuple(blocks)


def _parse_arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        value, error = loads(arguments)  # numbers kept exactly; too deep or broken: no input
        return {} if error is not None else value
    return arguments if isinstance(arguments, Mapping) else {}


def call_id_of(rec: Mapping[str, Any]) -> Any:
    """The call a ``tool`` message answers: ``tool_call_id``, or the first of SWE-agent's
    ``tool_call_ids`` list (a legacy ``function`` message has neither)."""
    call_id = rec.get("tool_call_id")
    if call_id is None:
        ids = rec.get("tool_call_ids")
        call_id = ids[0] if isinstance(ids, list) and ids else None
    return call_id


def _tool_result_block(rec: Mapping[str, Any], where: str) -> Block:
    call_id = call_id_of(rec)
    require_tool_id(call_id, f"{where}: 'tool_call_id'")
    content = rec.get("content")
    if isinstance(content, list):
        for j, part in enumerate(content):
            if not isinstance(part, Mapping):
                raise InputError(
                    f"{where}: content part {j} is a JSON {json_kind(part)}, expected an object."
                )
        content = [
            {"type": "text", "text": str(p.get("text", ""))} if p.get("type") == "text" else p
            for p in content
        ]
    elif content is not None and not isinstance(content, str):
        raise InputError(f"{where}: 'content' is a JSON {json_kind(content)}, expected a string or a list.")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content or ""}
    if rec.get("name"):
        block["name"] = rec["name"]
    return block


# --- rendering changed and new messages -------------------------------------------------------


def render_message(message: Message) -> list[Any]:
    templates = message.source.records if message.source else ()
    if message.role == "user" and any(b.get("type") == "tool_result" for b in message.content):
        return _render_tool_messages(message, templates)
    template = templates[0] if templates and isinstance(templates[0], Mapping) else {}
    out: dict[str, Any] = dict(template)
    if message.role == "system":
        out["role"] = template.get("role", "system") if template.get("role") in _SYSTEM_ROLES else "system"
    else:
        out["role"] = message.role
    texts = [b for b in message.content if b.get("type") not in ("tool_use", "thinking", "redacted_thinking")]
    uses = [b for b in message.content if b.get("type") == "tool_use"]
    out["content"] = _render_content(tuple(texts), null_if_empty=bool(uses))
    if message.role == "assistant":
        thinking = [str(b.get("thinking", "")) for b in message.content if b.get("type") == "thinking"]
        if thinking:
            out["reasoning_content"] = "\n".join(thinking)
        else:
            out.pop("reasoning_content", None)
        if uses:
            old_calls = {c.get("id"): c for c in template.get("tool_calls") or [] if isinstance(c, Mapping)}
            out["tool_calls"] = [_render_call(b, old_calls.get(b.get("id"))) for b in uses]
        else:
            out.pop("tool_calls", None)
    return [out]


def _render_content(blocks: tuple[Block, ...], *, null_if_empty: bool) -> Any:
    if not blocks:
        return None if null_if_empty else ""
    text = plain_text(blocks)
    if text is not None:
        return text
    return [
        {"type": "text", "text": str(b.get("text", ""))} if b.get("type") == "text" else dict(b)
        for b in blocks
    ]


def _render_call(block: Block, template: Mapping[str, Any] | None) -> dict[str, Any]:
    call: dict[str, Any] = dict(template) if template else {"id": block.get("id"), "type": "function"}
    function = dict(call.get("function") or {})
    function["name"] = block.get("name", "")
    if "arguments" in block:
        function["arguments"] = block["arguments"]
    else:
        function["arguments"] = json.dumps(block.get("input", {}), ensure_ascii=False)
    call["function"] = function
    return call


def _render_tool_messages(message: Message, templates: Sequence[Any]) -> list[Any]:
    by_id = {call_id_of(t): t for t in templates if isinstance(t, Mapping)}
    out: list[Any] = []
    extra: list[Block] = []
    for block in message.content:
        if block.get("type") != "tool_result":
            extra.append(block)
            continue
        template = by_id.get(block.get("tool_use_id"))
        rec: dict[str, Any] = (
            dict(template) if template else {"role": "tool", "tool_call_id": block.get("tool_use_id")}
        )
        content = block.get("content")
        if isinstance(content, list):
            content = [dict(b) for b in content]
        rec["content"] = content if content is not None else ""
        out.append(rec)
    if extra:
        out.append({"role": "user", "content": _render_content(tuple(extra), null_if_empty=False)})
    return out
