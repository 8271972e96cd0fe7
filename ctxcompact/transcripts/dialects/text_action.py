"""Text-action agent trajectories: agents whose model writes its action in its reply's text
and reads the result as the next user message, with no API tool calls.

* **mini-swe-agent 1.x** (``{"info", "messages", "trajectory_format", "instance_id"}``): the
  reply holds one fenced ``bash`` block (```` ```bash\\ncmd\\n``` ````), the next user message
  is its output (``<returncode>N</returncode>`` and ``<output>…</output>``); the API's usage is
  in ``extra.response.usage`` of each reply.
* **SWE-agent** ``.traj`` files (``{"environment", "trajectory", "history", "info"}``): the
  message list is ``history``; each assistant message records its parsed ``action`` (a shell
  line or one of SWE-agent's commands: ``open``, ``create``, ``edit``, ``str_replace_editor``…)
  and the next user (or ``tool``) message is its observation.

What the model sees is text, and that is what is counted and written back. Beside it, each
action becomes a ``tool_use`` block (``name`` ``bash``, ``input.command``; marked
:data:`TEXT_ACTION`: written inside the reply's text, not counted again) and its observation a
``tool_result`` block, so the summary, file restoration, probes and every strategy see the
commands (``sed -i``, ``cat``, ``python``…) and their outputs as they see any tool call. A
non-zero ``<returncode>`` makes the result an error. Calls read or edit the files
:func:`action_files` finds, relative to the working directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ctxcompact.errors import InputError
from ctxcompact.ir import READ_PATHS, TEXT_ACTION, Block, Message, Source
from ctxcompact.transcripts.dialects.codex.files import command_files
from ctxcompact.transcripts.dialects.common import DialectDefaults, Parsed, content_blocks, require_mapping
from ctxcompact.transcripts.dialects.detect import looks_like_text_action as looks_like
from ctxcompact.transcripts.dialects.openai import response_usage
from ctxcompact.transcripts.recorded_usage import RecordedUsage

NAME = "text-action"
ROLES = ("system", "user", "assistant")
#: mini-swe-agent's one action per reply: the first fenced bash block.
_FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
#: SWE-agent commands that name a file as their first argument, and what they do to it.
_FILE_COMMANDS = {"open": "read", "create": "edit", "edit": "edit", "goto": "read"}
_EDITOR_OPS = frozenset({"view", "create", "str_replace", "insert", "undo_edit"})


def parse_records(records: Sequence[Any]) -> Parsed:
    messages: list[Message] = []
    passthrough: set[int] = set()
    warnings: list[str] = []
    pending: str | None = None  # the id of the action whose observation comes next
    for i, record in enumerate(records):
        where = f"message {i}"
        rec = require_mapping(record, where)
        role = rec.get("role")
        if role == "tool":
            role = "user"  # SWE-agent's function-calling variant: the observation
        if role not in ROLES:
            passthrough.add(i)
            warnings.append(f"{where} has role {role!r}: kept as it is, not counted.")
            continue
        blocks = content_blocks(_text_content(rec.get("content"), where), where)
        source = Source((record,), (i,))
        if role == "assistant":
            action = _action(rec, blocks)
            pending = None
            if action is not None:
                pending = f"action-{i}"
                call: dict[str, Any] = {
                    "type": "tool_use",
                    "id": pending,
                    "name": "bash",
                    "input": {"command": action},
                    TEXT_ACTION: True,
                }
                files = [path for path, _ in action_files(action)]
                if files:
                    call[READ_PATHS] = files
                blocks = (*blocks, call)
            messages.append(Message("assistant", blocks, source))
            continue
        if role == "user" and pending is not None:
            text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": pending, "content": text}
            code = _RETURNCODE.search(text[:200])
            if code is not None and int(code.group(1)) != 0:
                result["is_error"] = True
            pending = None
            messages.append(Message("user", (result,), source))
            continue
        pending = None
        messages.append(Message(role, blocks, source))
    return Parsed(tuple(messages), frozenset(passthrough), tuple(warnings))


def _text_content(content: Any, where: str) -> Any:
    """A message's content; SWE-agent writes some as a list of ``{"type": "text"}`` parts."""
    if content is None or isinstance(content, (str, list)):
        return content
    raise InputError(f"{where}: 'content' is not text.")


def _action(record: Mapping[str, Any], blocks: Sequence[Block]) -> str | None:
    """The command a reply runs: SWE-agent's recorded ``action``, else the reply's first
    fenced bash block (mini-swe-agent)."""
    recorded = record.get("action")
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()
    text = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    found = _FENCE.search(text)
    return found.group(1).strip() if found and found.group(1).strip() else None


def action_files(action: str) -> list[tuple[str, str]]:
    """``(path, "read" | "edit")`` for the files an action reads or edits: SWE-agent's own
    commands (``open F``, ``create F``, ``edit``, ``str_replace_editor view|create|… F``) and
    shell lines (``cat``, ``sed -n``, ``head``… read; ``sed -i``, redirections edit — as Codex
    shell calls are read)."""
    words = action.split()
    if not words:
        return []
    head = words[0]
    if head in _FILE_COMMANDS and len(words) > 1 and head != "edit":
        return [(words[1].strip("\"'"), _FILE_COMMANDS[head])]
    if head == "str_replace_editor" and len(words) > 2 and words[1] in _EDITOR_OPS:
        return [(words[2].strip("\"'"), "read" if words[1] == "view" else "edit")]
    return [(path, "read") for path in command_files(action, None)]


def render_message(message: Message) -> list[Any]:
    """A changed or new message: its text as the model reads it (the action is inside the
    reply's text; an observation is its result's text)."""
    template = message.source.records[0] if message.source else None
    out: dict[str, Any] = dict(template) if isinstance(template, Mapping) else {"role": message.role}
    parts: list[str] = []
    for block in message.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_result":
            content = block.get("content")
            parts.append(content if isinstance(content, str) else _result_text(content))
    if out.get("role") not in ("tool", message.role):
        out["role"] = message.role
    out["content"] = "\n".join(parts)
    return [out]


def _result_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return "" if content is None else str(content)


class TextActionDialect(DialectDefaults):
    """Agents whose actions are written in the reply's text (module docstring)."""

    name = NAME
    read_tools: tuple[tuple[str, str], ...] = ()

    def looks_like(self, records: Sequence[Any], body: Mapping[str, Any] | None) -> bool:
        return looks_like(records, body)

    def parse(self, records: Sequence[Any]) -> Parsed:
        return parse_records(records)

    def render(self, message: Message) -> list[Any]:
        return render_message(message)

    def recorded_usage(self, messages: Sequence[Message]) -> RecordedUsage | None:
        """mini-swe-agent's ``extra.response.usage``, read as for its tool-calling form."""
        return response_usage(messages)


DIALECT = TextActionDialect()
