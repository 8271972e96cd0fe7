"""What a client sent, reduced to the conversation it resumed, and the checks against export.

The normaliser removes exactly the client's own additions and nothing of the session.

Claude Code (a Messages API request body):
  * the request's ``system`` and ``tools`` are not compared;
  * removed as the client's own: ``role: "system"`` messages inside ``messages`` (its
    mid-conversation system turns: environment, model, tool and agent listings); the text
    block ``Tool loaded.`` in a user message whose tool result lists ``tool_reference`` blocks
    (it adds it after a ToolSearch answer); in any user message, the commit and pull-request
    attribution reminder (a ``<system-reminder>`` block opening with ``Attribution for git
    commits``), which 2.1.332 renders from its own ``remote_session_change`` attachment entry;
    in the last message, the new prompt's text block and
    the ``<system-reminder>`` blocks sent with it (the message goes if nothing else is left);
    then an assistant message made only of the text ``No response requested.`` that ends what
    is left (Claude Code writes it, model ``<synthetic>``, when a session's last turn is a user
    message — its own compactions too);
  * taken back where the export's block at the same place shows what it was
    (:func:`aligned`): the ``\\n`` Claude Code adds to the last text block of the first of two
    user entries it joins, and ``[Tool references removed - tools no longer available]``, which
    it sends for a tool result listing only ``tool_reference`` blocks to tools it lacks;
  * on both sides (:func:`normalised`): a string ``content`` is the one-text-block list it
    stands for (the API treats them alike); ``cache_control`` is removed from every block (the
    client's cache breakpoints); a ``tool_use`` of a tool Claude Code renamed is compared under
    the new name (``Task`` is sent as ``Agent``).
  Everything else — every message before the new turn, every block, every field — must equal
  ``ctxcompact export``'s messages.

Codex (a Responses API request body):
  * ``instructions``, ``tools`` and the other request fields are not compared;
  * the new prompt's user ``message`` item and every item after it (``configuration_update``)
    are removed, then the run of Codex's turn-context items just before it: ``additional_tools``,
    ``developer`` messages, and user messages that open with ``<environment_context>``,
    ``<user_instructions>`` or ``# AGENTS.md instructions``;
  * at the start, ``additional_tools`` items and a ``developer`` message that is exactly the
    session's ``base_instructions`` (Codex 0.169 sends its instructions as input items, and
    records them in the rollouts it writes: removed from ctxcompact's live history too);
  * the remaining items are compared twice: as raw items, with ``ctxcompact``'s live history of
    the rollout (minus the transport-only keys ``id`` on a ``message`` item and
    ``internal_chat_message_metadata_passthrough``), and read back through ctxcompact's Codex
    reader, as messages, with ``ctxcompact export``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fake_anthropic import MESSAGES_PATH, RecordedRequest
from fake_apis import RESPONSES_PATH

from ctxcompact.markers import RESTORED_ACK, SUMMARY_ACK
from ctxcompact.transcripts.dialects.codex.read import live_history
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.points.export import export_transcript

SYNTHETIC_REPLY = "No response requested."
#: The text block Claude Code sends after a tool result that loads tools (``tool_reference``).
TOOL_LOADED = {"type": "text", "text": "Tool loaded."}
TOOLS_REMOVED = "[Tool references removed - tools no longer available]"
#: ctxcompact's own fixed acknowledgements, which its layout repeats (one per restored file).
FIXED_TEXTS = frozenset(
    json.dumps({"text": t, "type": "text"}, sort_keys=True) for t in (SUMMARY_ACK, RESTORED_ACK)
)
REMINDER = "<system-reminder>"
#: How the reminder Claude Code renders from its ``remote_session_change`` attachment opens.
ATTRIBUTION = "<system-reminder>\nAttribution for git commits and pull requests"
CODEX_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
#: Tools Claude Code renamed; it sends old calls under the new name.
RENAMED_TOOLS = {"Task": "Agent"}
CODEX_TRANSPORT_KEYS = ("internal_chat_message_metadata_passthrough",)

Message = dict[str, Any]


@dataclass(frozen=True)
class Sent:
    """The conversation a client sent (Anthropic messages, normalised), the raw request it
    came from, and a line per client addition the normaliser removed."""

    messages: list[Message]
    request: RecordedRequest
    removed: list[str]
    items: list[Any] | None = None  # Codex: the history items as sent
    #: Claude Code: the new turn was sent joined to the last message (the session ended with
    #: a user entry), so that message's last block was not the last of the message as sent.
    joined_last: bool = False


class NotSent(Exception):
    """No request (or more than one) carried the prompt."""


# --- Claude Code -------------------------------------------------------------------------------


def claude_sent(requests: Sequence[RecordedRequest], prompt: str) -> Sent:
    """The resumed conversation in the one Messages request that carries ``prompt``."""
    request = _one_request(
        [r for r in requests if r.path == MESSAGES_PATH and r.method == "POST"],
        lambda body: body.get("messages", []),
        prompt,
    )
    messages = [dict(m) for m in request.body["messages"]]
    removed = [f"system turn: {_preview(m['content'])}" for m in messages if m.get("role") == "system"]
    messages = [m for m in messages if m.get("role") != "system"]
    for k, message in enumerate(messages):
        if message.get("role") == "user" and any(_is_attribution(b) for b in blocks_of(message)):
            message = messages[k] = {
                **message,
                "content": [b for b in blocks_of(message) if not _is_attribution(b)],
            }
            removed.append(f"message {k}: the attribution reminder")
        if _loads_tools(message):
            messages[k] = {**message, "content": [b for b in blocks_of(message) if b != TOOL_LOADED]}
            removed.append(f"message {k}: {TOOL_LOADED['text']!r} after a tool_reference result")
    last = messages.pop()
    kept = [b for b in blocks_of(last) if not _is_prompt_or_reminder(b, prompt)]
    removed.append(f"new turn: {len(blocks_of(last)) - len(kept)} block(s)")
    if kept:
        messages.append({**last, "content": kept})
    elif messages and messages[-1].get("role") == "assistant" and _texts(messages[-1]) == [SYNTHETIC_REPLY]:
        messages.pop()
        removed.append(f"synthetic assistant turn {SYNTHETIC_REPLY!r}")
    return Sent(normalised(messages), request, removed, joined_last=bool(kept))


def _loads_tools(message: Mapping[str, Any]) -> bool:
    """A user message with a tool result listing ``tool_reference`` blocks and the text Claude
    Code adds after such a result."""
    blocks = [b for b in blocks_of(message) if isinstance(b, dict)]
    references = any(
        isinstance(b.get("content"), list)
        and any(isinstance(c, dict) and c.get("type") == "tool_reference" for c in b["content"])
        for b in blocks
        if b.get("type") == "tool_result"
    )
    return references and TOOL_LOADED in blocks


def _is_attribution(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and str(block.get("text", "")).startswith(ATTRIBUTION)
    )


def _is_prompt_or_reminder(block: Mapping[str, Any], prompt: str) -> bool:
    if block.get("type") != "text":
        return False
    text = str(block.get("text", ""))
    return text == prompt or text.lstrip().startswith(REMINDER)


# --- Codex -------------------------------------------------------------------------------------


def codex_sent(requests: Sequence[RecordedRequest], prompt: str, rollout: Path, scratch: Path) -> Sent:
    """The resumed history in the one Responses request that carries ``prompt``, as items and
    (read back by ctxcompact's Codex reader) as messages."""
    request = _one_request(
        [r for r in requests if r.path == RESPONSES_PATH and r.method == "POST"],
        lambda body: [i for i in body.get("input", []) if isinstance(i, dict) and i.get("type") == "message"],
        prompt,
    )
    items = list(request.body["input"])
    at = max(i for i, item in enumerate(items) if _codex_text(item) == prompt)
    removed = [f"new turn and after: {[i.get('type') for i in items[at:]]}"]
    items = items[:at]
    while items and _is_codex_context(items[-1]):
        removed.append(f"turn context: {_what(items.pop())}")
    lead = _leading_context(items, base_instructions(rollout))
    removed += [f"leading context: {_what(item)}" for item in items[:lead]]
    items = items[lead:]
    return Sent(codex_messages(items, rollout, scratch), request, removed, items)


def _leading_context(items: Sequence[Any], instructions: str | None) -> int:
    """How many items at the start are Codex's leading context: ``additional_tools`` and the
    developer message that is exactly the session's ``base_instructions``."""
    n = 0
    while n < len(items) and (
        items[n].get("type") == "additional_tools" or _codex_text(items[n], "developer") == instructions
    ):
        n += 1
    return n


def _is_codex_context(item: Mapping[str, Any]) -> bool:
    if item.get("type") == "additional_tools" or _codex_text(item, "developer"):
        return True
    return _codex_text(item, "user").startswith(CODEX_CONTEXT_PREFIXES)


def _what(item: Mapping[str, Any]) -> str:
    return f"{item.get('type')} {item.get('role', '')} {_codex_text(item)[:60]!r}"


def base_instructions(rollout: Path) -> str | None:
    """The ``base_instructions`` text a rollout's ``session_meta`` records."""
    for line in rollout.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if '"session_meta"' in line else None
        if isinstance(record, dict) and record.get("type") == "session_meta":
            given = record["payload"].get("base_instructions")
            return str(given.get("text")) if isinstance(given, dict) else None
    return None


def _codex_text(item: Mapping[str, Any], role: str | None = None) -> str:
    """The text of a ``message`` item (of ``role``, when given); "" for anything else."""
    if item.get("type") != "message" or not isinstance(item.get("content"), list):
        return ""
    if role is not None and item.get("role") != role:
        return ""
    return "".join(str(p.get("text", "")) for p in item["content"] if isinstance(p, dict))


def codex_messages(items: Sequence[Any], rollout: Path, scratch: Path) -> list[Message]:
    """``items`` read by ctxcompact's Codex reader (behind the rollout's ``session_meta``) and
    exported, as ``ctxcompact export`` writes a rollout's live history."""
    meta = next(line for line in rollout.read_text(encoding="utf-8").splitlines() if '"session_meta"' in line)
    lines = [meta] + [json.dumps({"timestamp": "", "type": "response_item", "payload": i}) for i in items]
    scratch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    data, _ = export_transcript(load_transcript(scratch, dialect="codex"))
    return normalised(json.loads(data))


def codex_live_items(rollout: Path) -> list[Any]:
    """The raw items of ctxcompact's live history of a rollout (what it says Codex sends),
    without the leading context :func:`codex_sent` removes from what Codex sent (a rollout
    Codex 0.169 wrote records it too)."""
    records = [json.loads(line) for line in rollout.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = [dict(item.payload) for item in live_history(records)]
    return items[_leading_context(items, base_instructions(rollout)) :]


def item_findings(sent: Sequence[Any], live: Sequence[Any]) -> list[str]:
    """Where the items Codex sent differ from ctxcompact's live history, transport keys aside."""
    a, b = [_bare_item(i) for i in sent], [_bare_item(i) for i in live]
    if a == b:
        return []
    at = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return [
        f"items: Codex sent {len(a)} history items, ctxcompact's live history has {len(b)}; first "
        f"difference at item {at}: sent {_preview(a[at : at + 1])} / live {_preview(b[at : at + 1])}"
    ]


def _bare_item(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    bare = {k: v for k, v in item.items() if k not in CODEX_TRANSPORT_KEYS}
    if bare.get("type") == "message":
        bare.pop("id", None)
    return bare


def codex_pair_findings(items: Sequence[Any]) -> list[str]:
    """Every call has exactly one output after it, and every output a call before it."""
    calls: dict[str, int] = {}
    outputs: Counter[str] = Counter()
    findings = []
    for item in items:
        kind, call_id = item.get("type"), str(item.get("call_id"))
        if kind in ("function_call", "custom_tool_call", "local_shell_call"):
            calls[call_id] = calls.get(call_id, 0) + 1
        elif kind in ("function_call_output", "custom_tool_call_output"):
            if call_id not in calls:
                findings.append(f"tool pair: output {call_id} has no call before it")
            outputs[call_id] += 1
    for call_id, n in calls.items():
        if n != 1 or outputs[call_id] != 1:
            findings.append(f"tool pair: call {call_id} sent {n}x with {outputs[call_id]} output(s)")
    return findings


# --- both --------------------------------------------------------------------------------------


def _one_request(candidates: Sequence[RecordedRequest], messages: Any, prompt: str) -> RecordedRequest:
    carrying = [
        r
        for r in candidates
        if isinstance(r.body, dict) and any(_mentions(m, prompt) for m in messages(r.body))
    ]
    if len(carrying) != 1:
        raise NotSent(f"{len(carrying)} requests carried the prompt (of {len(candidates)} to the model)")
    return carrying[0]


def _mentions(message: Any, prompt: str) -> bool:
    return prompt in json.dumps(message, ensure_ascii=False)


def blocks_of(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def normalised(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """The same messages under the rules both sides get (see the module doc)."""
    out = []
    for message in messages:
        out.append({**message, "content": [_block(b) for b in blocks_of(message)]})
    return out


def aligned(
    sent: Sequence[Message], exported: Sequence[Message], *, joined_last: bool = False
) -> list[Message]:
    """``sent`` with two rewrites Claude Code makes of the blocks it resumes taken back, each
    checked against the export's block at the same place:

    * where it joins two user entries into one message, the first one's last text block ends
      with an added ``\\n``: a text block that is not its message's last (nor, with
      ``joined_last``, the last block of the last message, which the new turn was joined to)
      and equals the export's block plus ``\\n`` counts as that block;
    * a tool result listing only ``tool_reference`` blocks to tools this version does not have
      is sent as the text ``[Tool references removed - tools no longer available]``: such a
      result counts as the export's result of the same call."""
    out = []
    for n, (message, like) in enumerate(zip(sent, [*exported, *[{}] * len(sent)], strict=False)):
        blocks, want = list(message["content"]), blocks_of(like)
        open_end = joined_last and n == len(sent) - 1
        for k, block in enumerate(blocks):
            last = k == len(blocks) - 1 and not open_end
            if k < len(want) and (_joined(block, want[k], last=last) or _unloaded(block, want[k])):
                blocks[k] = want[k]
        out.append({**message, "content": blocks})
    return out


def _joined(block: Any, want: Any, *, last: bool) -> bool:
    return not last and block.get("type") == "text" and block.get("text") == f"{want.get('text')}\n"


def _unloaded(block: Any, want: Any) -> bool:
    references = want.get("content") if want.get("type") == "tool_result" else None
    return (
        block.get("type") == "tool_result"
        and block.get("tool_use_id") == want.get("tool_use_id")
        and block.get("content") == [{"type": "text", "text": TOOLS_REMOVED}]
        and isinstance(references, list)
        and bool(references)
        and all(isinstance(r, dict) and r.get("type") == "tool_reference" for r in references)
    )


def _block(block: Any) -> Any:
    if not isinstance(block, dict):
        return block
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    if bare.get("type") == "tool_use" and bare.get("name") in RENAMED_TOOLS:
        bare["name"] = RENAMED_TOOLS[bare["name"]]
    return bare


def _texts(message: Mapping[str, Any]) -> list[str]:
    return [str(b.get("text")) if b.get("type") == "text" else "<non-text>" for b in blocks_of(message)]


def context_findings(
    sent: Sequence[Message], exported: Sequence[Message], before: Sequence[Message]
) -> dict[str, list[str]]:
    """How the sent conversation differs from the export, by check: ``twice``, a block sent
    more often than the session itself had it before the rewrite (``before``: its context then;
    ctxcompact's fixed acknowledgements aside); ``before``, a block of that context the export
    dropped; ``context``, the first differing message."""
    findings: dict[str, list[str]] = {"twice": [], "before": [], "context": []}
    have, want = Counter(map(_key, _blocks(sent))), Counter(map(_key, _blocks(exported)))
    had = Counter(map(_key, _blocks(before)))
    for key, n in have.items():
        if n > max(had[key], 1) and key not in FIXED_TEXTS:
            findings["twice"].append(f"sent {n}x (the session had it {had[key]}x): {key[:160]}")
    gone = set(had) - set(want)
    leaked = [k for k in have if k in gone]
    if leaked:
        findings["before"].append(f"{len(leaked)} block(s) the export left out, e.g. {leaked[0][:160]}")
    if list(sent) != list(exported):
        at = next(
            (k for k, (x, y) in enumerate(zip(sent, exported, strict=False)) if x != y),
            min(len(sent), len(exported)),
        )
        findings["context"].append(
            f"sent {len(sent)} messages, export has {len(exported)}; first difference at message {at}: "
            f"sent {_preview(sent[at : at + 1])} / export {_preview(exported[at : at + 1])}"
        )
    return findings


def anthropic_pair_findings(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each assistant turn's tool uses are answered in the next message, and each tool result
    answers a tool use of the turn before it."""
    findings = []
    previous: set[str] = set()
    for k, message in enumerate(messages):
        blocks = [b for b in blocks_of(message) if isinstance(b, dict)]
        results = {str(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"}
        if results - previous:
            findings.append(
                f"tool pair: message {k} answers {sorted(results - previous)} not asked just before"
            )
        if previous - results:
            findings.append(f"tool pair: message {k} leaves {sorted(previous - results)} unanswered")
        previous = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
    if previous:
        findings.append(f"tool pair: the last message's {sorted(previous)} are unanswered")
    return findings


def _blocks(messages: Iterable[Mapping[str, Any]]) -> list[Any]:
    return [b for m in messages for b in blocks_of(m)]


def _key(block: Any) -> str:
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def _preview(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "…"
