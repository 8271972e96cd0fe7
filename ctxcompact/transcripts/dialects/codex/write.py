"""Writing Codex rollouts back: render changed and new messages, then put the file together.

:func:`render_message` turns a message into rollout records: an item whose blocks a rewrite
kept is its original record (the very same object); an item with changed blocks is a copy
of its record with the new content; blocks the rewrite created become new ``response_item``
lines. Records it makes are :class:`Rendered` dicts that remember the record they stand for,
so :func:`finalize_records` can tell an in-place edit from a compaction (see the package
docstring of :mod:`ctxcompact.transcripts.dialects.codex.read`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.ir import READ_PATHS, Block, Message
from ctxcompact.markers import SUMMARY_PREFIX
from ctxcompact.transcripts.dialects.codex.read import (
    CODEX_SUMMARY_PREFIX,
    ENVELOPE_KEY,
    KIND_KEY,
    PART_KEY,
    LiveItem,
    is_summary,
    item_blocks,
    live_history,
    message_text,
)
from ctxcompact.transcripts.dialects.common import split_along
from ctxcompact.transcripts.points import FIELD, ctxcompact_field


class Rendered(dict[str, Any]):
    """A record :func:`render_message` made; ``origin`` is the record it replaces (None for a
    new one). Serialized like any dict."""

    origin: Any = None


def _rendered(value: Mapping[str, Any], origin: Any) -> Rendered:
    out = Rendered(value)
    out.origin = origin
    return out


def render_message(message: Message) -> list[Any]:
    """Records for a changed or new message (kept items come back as the same objects)."""
    templates = message.source.records if message.source else ()
    if not templates:
        return [_rendered(_line(item), None) for item in blocks_to_items(message.role, message.content)]
    originals = [item_blocks(_payload_of(t), "record") for t in templates]
    new = list(message.content)
    slices = split_along(originals, new)
    out: list[Any] = []
    for template, before, after in zip(templates, originals, slices, strict=True):
        if not after:
            continue
        if len(after) == len(before) and all(_same(a, b) for a, b in zip(after, before, strict=True)):
            out.append(template)
            continue
        payload = _payload_of(template)
        changed = _rebuild(payload, after)
        if changed is None:
            items = blocks_to_items(message.role, after)
            out.extend(_rendered(_wrap(template, item), None) for item in items)
        else:
            out.append(_rendered(_wrap(template, changed), template))
    return out


def _same(new: Block, original: Block) -> bool:
    """True when a rewrite left a block as it was read (parsing again makes equal, not
    identical, blocks; the read paths a call was annotated with do not count)."""
    if new is original:
        return True
    return {k: v for k, v in new.items() if k != READ_PATHS} == {
        k: v for k, v in original.items() if k != READ_PATHS
    }


def _payload_of(record: Any) -> Mapping[str, Any]:
    """A line's payload, or the record itself when it is an item of a replacement history."""
    if isinstance(record, Mapping) and record.get("type") == "response_item":
        payload = record.get("payload")
        return payload if isinstance(payload, Mapping) else {}
    return record if isinstance(record, Mapping) else {}


def _wrap(template: Any, payload: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(template, Mapping) and template.get("type") == "response_item":
        return {**template, "payload": dict(payload)}
    return dict(payload)


def _line(payload: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "response_item", "payload": dict(payload)}


def _rebuild(payload: Mapping[str, Any], blocks: Sequence[Block]) -> dict[str, Any] | None:
    """``payload`` with ``blocks`` as its new content, or None when they no longer fit it."""
    kind = payload.get("type")
    kinds = {str(b.get("type")) for b in blocks}
    out = dict(payload)
    if kind == "message" and kinds <= {"text", "image_url", "input_text", "output_text", "input_image"}:
        out["content"] = [_part(payload.get("role"), b) for b in blocks]
        return out
    if kind in ("function_call_output", "custom_tool_call_output") and kinds == {"tool_result"}:
        if len(blocks) != 1:
            return None
        out["output"] = _output(blocks[0].get("content"), payload.get("output"), blocks[0].get(ENVELOPE_KEY))
        return out
    if kind in ("function_call", "custom_tool_call", "local_shell_call") and kinds == {"tool_use"}:
        return {**payload, **_call(blocks[0])} if len(blocks) == 1 else None
    if kind == "reasoning" and kinds <= {"thinking", "redacted_thinking"}:
        return _reasoning(payload, blocks)
    if len(blocks) == 1 and blocks[0].get("type") == kind:
        return dict(blocks[0])
    return None


def _part(role: Any, block: Block) -> dict[str, Any]:
    if block.get("type") == "text":
        kind = "output_text" if role == "assistant" else "input_text"
        extra = block.get(PART_KEY)
        return {
            "type": kind,
            "text": str(block.get("text", "")),
            **(extra if isinstance(extra, Mapping) else {}),
        }
    if block.get("type") == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        return {"type": "input_image", "image_url": url}
    return dict(block)


def _output(content: Any, before: Any, envelope: Any = None) -> Any:
    if isinstance(content, list):
        return [_part("user", b) if isinstance(b, Mapping) else b for b in content]
    text = "" if content is None else str(content)
    if isinstance(envelope, Mapping):  # the legacy shell tool's JSON envelope, as it was
        return json.dumps(
            {"output": text, "metadata": dict(envelope)}, ensure_ascii=False, separators=(",", ":")
        )
    if isinstance(before, Mapping) and "content" in before:
        return {**before, "content": text}
    return text


def _call(block: Block) -> dict[str, Any]:
    kind = block.get(KIND_KEY, "function_call")
    call_input = block.get("input")
    fields: dict[str, Any] = {"type": kind, "call_id": block.get("id")}
    if kind == "custom_tool_call":
        fields["name"] = block.get("name", "")
        fields["input"] = str(call_input.get("input", "")) if isinstance(call_input, Mapping) else ""
    elif kind == "local_shell_call":
        fields["action"] = dict(call_input) if isinstance(call_input, Mapping) else {}
    else:
        fields["name"] = block.get("name", "")
        raw = block.get("arguments")
        fields["arguments"] = (
            raw if isinstance(raw, str) else json.dumps(call_input or {}, ensure_ascii=False)
        )
    return fields


def _reasoning(payload: Mapping[str, Any], blocks: Sequence[Block]) -> dict[str, Any]:
    out = dict(payload)
    texts = [str(b.get("thinking", "")) for b in blocks if b.get("type") == "thinking"]
    texts = [t for t in texts if t]
    out["summary"] = [{"type": "summary_text", "text": t} for t in texts]
    if isinstance(out.get("content"), list):
        out["content"] = None  # its text is in the summary now
    data = [b.get("data") for b in blocks if b.get("type") == "redacted_thinking"]
    if data:
        out["encrypted_content"] = data[0]
    else:
        out.pop("encrypted_content", None)
    return out


def blocks_to_items(role: str, blocks: Sequence[Block]) -> list[dict[str, Any]]:
    """Response items for blocks a rewrite created (a summary, a restored file, a new call)."""
    items: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    message_role = "developer" if role == "system" else role

    def flush() -> None:
        if parts:
            items.append({"type": "message", "role": message_role, "content": list(parts)})
            parts.clear()

    for block in blocks:
        kind = block.get("type")
        if kind in ("text", "image_url"):
            text = block.get("text")
            if (
                kind == "text"
                and role == "user"
                and isinstance(text, str)
                and text.startswith(SUMMARY_PREFIX)
            ):
                block = {"type": "text", "text": f"{CODEX_SUMMARY_PREFIX}\n{text[len(SUMMARY_PREFIX) :]}"}
            parts.append(_part(message_role, block))
            continue
        flush()
        if kind == "tool_use":
            items.append(_call(block))
        elif kind == "tool_result":
            output_kind = block.get(KIND_KEY, "function_call_output")
            items.append(
                {
                    "type": output_kind,
                    "call_id": block.get("tool_use_id"),
                    "output": _output(block.get("content"), None, block.get(ENVELOPE_KEY)),
                }
            )
        elif kind in ("thinking", "redacted_thinking"):
            items.append(_reasoning({"type": "reasoning", "summary": []}, [block]))
        else:
            items.append(dict(block))
    flush()
    return items


# --- putting the file together ----------------------------------------------------------------


def finalize_records(records: list[Any], original: Sequence[Any]) -> list[Any]:
    """The rollout after a rewrite: the original lines with in-place edits (and new items
    appended as lines), or — when items were removed, reordered or inserted — the original
    lines untouched plus one ``compacted`` line holding the new live history."""
    before = live_history(original)
    line_ids = {id(r) for r in original}
    live_ids = {id(item.record) for item in before}
    after: list[tuple[Mapping[str, Any], Any]] = []  # (payload, the record it stands for)
    for record in records:
        if isinstance(record, Rendered):
            after.append((_payload_of(record), record.origin))
        elif id(record) in live_ids or id(record) not in line_ids:
            after.append((_payload_of(record), record))
        # else: a line that is not live history (metadata, events, dead items): kept as it is
    after = _in_history_order(before, after)
    edits = _in_place_edits(before, after, records)
    if edits is None:
        return [*original, _compacted_line(original, [p for p, _ in after])]
    substitutes, appended = edits
    out = [substitutes.get(id(r), r) for r in original]
    stamp = _last_timestamp(original)
    out.extend({"timestamp": stamp, **_line(p)} if stamp else _line(p) for p in appended)
    return out


def _in_history_order(
    before: Sequence[LiveItem], after: Sequence[tuple[Mapping[str, Any], Any]]
) -> list[tuple[Mapping[str, Any], Any]]:
    """``after`` in the order of the items they stand for. The writer places a changed item
    by its message's first record, so within a message a changed item can land before kept
    ones; rewrites never reorder items, so the order read is the order to write. A new item
    stays after the item it followed."""
    position = {id(item.record): k for k, item in enumerate(before)}
    keyed: list[tuple[tuple[int, int, int], tuple[Mapping[str, Any], Any]]] = []
    last = -1
    for seq, entry in enumerate(after):
        origin = entry[1]
        if origin is not None and id(origin) in position:
            keyed.append(((position[id(origin)], 0, seq), entry))
            last = max(last, position[id(origin)])  # a new item follows every item before it
        else:
            keyed.append(((last, 1, seq), entry))
    keyed.sort(key=lambda pair: pair[0])
    return [entry for _, entry in keyed]


def _in_place_edits(
    before: Sequence[LiveItem], after: Sequence[tuple[Mapping[str, Any], Any]], records: Sequence[Any]
) -> tuple[dict[int, Any], list[Mapping[str, Any]]] | None:
    """Substitutions (original line id → new line) and new trailing items, when the new live
    history is the old one with items changed in place and items added at the end."""
    if len(after) < len(before):
        return None
    by_origin = {id(r.origin): r for r in records if isinstance(r, Rendered) and r.origin is not None}
    substitutes: dict[int, Any] = {}
    for item, (payload, origin) in zip(before, after, strict=False):
        if origin is not item.record:
            return None
        if payload is item.payload:
            continue
        if not item.in_line:
            return None  # an item inside a compacted line's history cannot be edited in place
        substitutes[id(item.record)] = dict(by_origin[id(item.record)])
    appended = [payload for payload, origin in after[len(before) :]]
    if any(origin is not None for _, origin in after[len(before) :]):
        return None
    return substitutes, appended


def _compacted_line(original: Sequence[Any], history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    items = [dict(p) for p in history]
    summary = next(
        (message_text(p) for p in reversed(items) if p.get("role") == "user" and is_summary(message_text(p))),
        "",
    )
    line: dict[str, Any] = {
        "type": "compacted",
        "payload": {"message": summary, "replacement_history": items},
        # Codex reads a line's timestamp, type and payload and ignores other keys: this one
        # tells our compaction from Codex's own (``ctxcompact uncompact``).
        FIELD: ctxcompact_field(),
    }
    stamp = _last_timestamp(original)
    return {"timestamp": stamp, **line} if stamp else line


def _last_timestamp(original: Sequence[Any]) -> str | None:
    for record in reversed(original):
        if isinstance(record, Mapping) and isinstance(record.get("timestamp"), str):
            return str(record["timestamp"])
    return None
