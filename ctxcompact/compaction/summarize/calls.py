"""The agent's tool calls as the summary shows them: labels, the changes they made, their
to-do lists, and what became of each error.

* :func:`call_label` — ``Edit(src/app.py)``, ``Bash(pytest -q)``: the tool and its main argument;
* :func:`edits` — what an edit or a write put in a file (Claude Code ``Edit``/``MultiEdit``/
  ``Write``, editor tools, ``apply_patch``, ``sed -i`` and heredocs in shell commands);
  :func:`changes_of` shows each on one line, :func:`new_texts` gives the new text as written;
* :func:`todo_items` — the agent's to-do list: Claude Code ``TodoWrite`` and ``TaskCreate``/
  ``TaskUpdate``, Codex ``update_plan``;
* :class:`Later` — what follows each message, indexed once: an error's outcome is the agent's
  next call of the same tool on the same target (did it succeed?) and its words right after.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import itemgetter
from typing import Any

from ctxcompact.compaction.summarize.layout import clip_words
from ctxcompact.compaction.summarize.scripts import python_scripts, script_edits
from ctxcompact.compaction.summarize.shell_files import (
    PATH_FIELDS,
    REMEMBERED_COMMAND_CHARS,
    argv_command,
    command_texts,
    path_after,
)
from ctxcompact.compaction.summarize.statements import texts
from ctxcompact.ir import Block, Message

FOLLOW_WORDS = 16
#: A file a script wrote without a change readable from its text.
SCRIPT_WRITE = "(written by the script; what changed is not in its text)"
_NEW_TEXT_FIELDS = ("new_string", "new_str", "new", "content", "file_text", "text", "code")
_OLD_TEXT_FIELDS = ("old_string", "old_str", "old")
_HEREDOC_WRITE = re.compile(
    r"(?:cat|tee)[^\n<>|]*?>{1,2}\s*['\"]?([^\s'\";&|]+)['\"]?\s*<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n(.*?)^\s*\2\s*$",
    re.DOTALL | re.MULTILINE,
)
_SED_EDIT = re.compile(r"\bsed\s+(?:-\w+\s+)*-i\S*\s+(?:-e\s+)?('[^']*'|\"[^\"]*\"|\S+)\s+(\S+)")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$")


#: The input fields a call's label shows, the first one that holds something.
_LABEL_FIELDS = (*PATH_FIELDS, "command", "cmd", "pattern", "query", "url", "description", "subject")


def call_label(block: Block, *, words: int = 12) -> str:
    name = str(block.get("name") or "tool")
    tool_input = block.get("input")
    arg = ""
    if isinstance(tool_input, (dict, Mapping)):
        for key in _LABEL_FIELDS:
            value = tool_input.get(key)
            if value is None:
                continue
            if isinstance(value, str) and value and not value.isspace():  # no copy of a long command
                arg = value
                break
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                arg = argv_command(value)  # a `bash -lc SCRIPT` argv is its script
                break
        else:
            arg = next((v for v in tool_input.values() if isinstance(v, str) and v.strip()), "")
    elif isinstance(tool_input, str):
        arg = tool_input
    return f"{name}({clip_words(arg, words)})"


def target(block: Block) -> str:
    """The file or program a call works on: its path field, else its command's first word."""
    tool_input = block.get("input")
    if isinstance(tool_input, (dict, Mapping)):
        for key in PATH_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str):
                return value
    commands = command_texts(tool_input)
    first = commands[0].split(maxsplit=1) if commands else []  # not every word of a heredoc
    return first[0] if first else ""


@dataclass(frozen=True, slots=True)
class Change:
    """What one call put into one file: how (``Edit``, ``Write``, ``sed -i``…) and the new
    text on one line (``old → new`` for a replacement)."""

    index: int
    path: str
    how: str
    text: str


def _one_line(text: str, words: int) -> str:
    return clip_words(" ".join(text.split()), words)


def changes_of(index: int, block: Block, *, words: int = 40) -> Iterator[Change]:
    """The changes a tool call makes (see the module docstring). A replacement that changes
    the number of lines says so (``3 lines → 2``): a line a script dropped shows."""
    for path, how, old, new in edits(block):
        if old is not None and old.strip():
            before, after = _line_count(old), _line_count(new)
            counted = f" ({before} lines → {after})" if before != after else ""
            shown = _one_line(new, words) if new.strip() else "(deleted)"
            yield Change(index, path, how, f"{_one_line(old, max(words // 4, 6))} → {shown}{counted}")
        elif not new.strip():
            yield Change(index, path, how, SCRIPT_WRITE)
        else:
            lines = _line_count(new)
            label = (
                how if how in ("sed -i", "apply_patch") else f"{how}, {lines} line{'s' if lines != 1 else ''}"
            )
            yield Change(index, path, label, _one_line(new, words))


def _line_count(text: str) -> int:
    return text.rstrip("\n").count("\n") + 1


def new_texts(block: Block) -> Iterator[tuple[str, str]]:
    """``(path, new text)`` for each change a tool call makes, the text as the call wrote it."""
    for path, _how, _old, new in edits(block):
        yield path, new


def edits(block: Block) -> Iterator[tuple[str, str, str | None, str]]:
    """``(path, how, old text or None, new text)`` for each change a tool call makes: a file
    tool's replacement or content (``MultiEdit`` edit by edit), a heredoc written to a file,
    a ``sed -i`` expression, the removed and added lines of a patch, the replacements and
    writes of a Python script the command runs (:mod:`.scripts`)."""
    name = str(block.get("name") or "tool")
    tool_input = block.get("input")
    if isinstance(tool_input, (dict, Mapping)):
        path = next((v for k in PATH_FIELDS if isinstance(v := tool_input.get(k), str) and v.strip()), "")
        batch = tool_input.get("edits")
        if path and isinstance(batch, list):  # MultiEdit
            for edit in batch:
                if isinstance(edit, (dict, Mapping)):
                    yield from _replacement(path, name, edit)
            return
        if path:
            yield from _replacement(path, name, tool_input)
            return
    for command in command_texts(tool_input):
        if len(command) <= REMEMBERED_COMMAND_CHARS:
            yield from _remembered_shell_edits(command)
        else:
            yield from _shell_edits(command)


@lru_cache(maxsize=512)
def _remembered_shell_edits(command: str) -> tuple[tuple[str, str, str | None, str], ...]:
    """:func:`_shell_edits` of a short command, read once per process (see
    :data:`~.shell_files.REMEMBERED_COMMAND_CHARS`)."""
    return tuple(_shell_edits(command))


def _replacement(
    path: str, how: str, fields: Mapping[str, Any]
) -> Iterator[tuple[str, str, str | None, str]]:
    new = next((v for k in _NEW_TEXT_FIELDS if isinstance(v := fields.get(k), str)), None)
    if new is None or not new.strip():
        return
    old = next((v for k in _OLD_TEXT_FIELDS if isinstance(v := fields.get(k), str)), None)
    yield path, how, old, new


def _shell_edits(command: str) -> Iterator[tuple[str, str, str | None, str]]:
    for match in _HEREDOC_WRITE.finditer(command):
        yield path_after(command[: match.start()], match.group(1)), "heredoc", None, match.group(3)
    for match in _SED_EDIT.finditer(command):
        path = path_after(command[: match.start()], match.group(2).strip("'\""))
        yield path, "sed -i", None, match.group(1).strip("'\"")
    if "*** Begin Patch" in command:
        path = ""
        # path -> (removed lines, added lines)
        hunks: dict[str, tuple[list[str], list[str]]] = {}
        for line in command.splitlines():
            found = _PATCH_FILE.match(line)
            if found:
                path = found.group(1).strip()
            elif path and line.startswith("+") and not line.startswith("+++"):
                hunks.setdefault(path, ([], []))[1].append(line[1:])
            elif path and line.startswith("-") and not line.startswith("---"):
                hunks.setdefault(path, ([], []))[0].append(line[1:])
        for path, (removed, added) in hunks.items():
            yield path, "apply_patch", "\n".join(removed) if removed else None, "\n".join(added)
    for script in python_scripts(command):
        for path, how, old, new in script_edits(script):
            yield path_after(command, path), how, old, new


def todo_items(name: str, tool_input: Any, tasks: dict[str, tuple[str, str]]) -> list[str] | None:
    """The agent's open to-do items after this call, or ``None`` when the call is not about
    its to-do list. ``tasks`` holds Claude Code's ``TaskCreate`` tasks by id (updated here)."""
    if not isinstance(tool_input, (dict, Mapping)):
        return None
    if name == "TaskCreate":
        subject = str(tool_input.get("subject") or tool_input.get("description") or "").strip()
        tasks[str(len(tasks) + 1)] = (subject, "pending")
    elif name == "TaskUpdate":
        task_id = str(tool_input.get("taskId") or tool_input.get("task_id") or "")
        if task_id in tasks:
            subject, _ = tasks[task_id]
            tasks[task_id] = (subject, str(tool_input.get("status") or "pending"))
    else:
        items = tool_input.get("todos") or tool_input.get("plan")
        if not isinstance(items, list):
            return None
        pending = []
        for item in items:
            if isinstance(item, Mapping):
                label = str(item.get("content") or item.get("step") or "").strip()
                status = str(item.get("status") or "pending")
                if label and status != "completed":
                    pending.append(f"- [{status}] {label}")
        return pending
    return [
        f"- [{status}] {subject}"
        for subject, status in tasks.values()
        if status not in ("completed", "deleted")
    ]


@dataclass(frozen=True, slots=True)
class Later:
    """What follows each message, indexed once per transcript: an error's outcome looks ahead
    by lookup and bisection, never by scanning the rest of the transcript per error."""

    messages: Sequence[Message]
    assistants: list[int]  # indices of the assistant messages
    calls: dict[str, list[tuple[int, Block]]]  # tool name -> (message index, tool_use), in order
    last_results: dict[str, tuple[int, Block]]  # tool_use_id -> its last tool_result
    #: whether any result carries ``is_error``: then a result without it succeeded
    flags_reported: bool
    #: tool name -> target -> its calls on that target, in order (built when first asked)
    by_target: dict[str, dict[str, list[tuple[int, Block]]]] = field(default_factory=dict)

    @classmethod
    def index(cls, messages: Sequence[Message]) -> Later:
        assistants: list[int] = []
        calls: dict[str, list[tuple[int, Block]]] = {}
        last_results: dict[str, tuple[int, Block]] = {}
        flags = False
        for i, message in enumerate(messages):
            if message.role == "assistant":
                assistants.append(i)
            for b in message.content:
                kind = b.get("type")
                if kind == "tool_result":
                    last_results[str(b.get("tool_use_id"))] = (i, b)
                    flags = flags or bool(b.get("is_error"))
                elif kind == "tool_use" and message.role == "assistant":
                    calls.setdefault(str(b.get("name") or "tool"), []).append((i, b))
        return cls(messages, assistants, calls, last_results, flags)

    def next_call(self, index: int, name: str, on: str) -> Block | None:
        """The first call of tool ``name`` after ``index`` (on target ``on`` when there is one)."""
        calls = self.calls.get(name, [])
        if on:
            targets = self.by_target.get(name)
            if targets is None:
                targets = self.by_target[name] = {}
                for call in calls:
                    targets.setdefault(target(call[1]), []).append(call)
            calls = targets.get(on, [])
        at = bisect_right(calls, index, key=itemgetter(0))
        return calls[at][1] if at < len(calls) else None

    def last_result(self, index: int, tool_use_id: str) -> Block | None:
        """The last tool_result answering ``tool_use_id`` after ``index`` (ids can repeat)."""
        found = self.last_results.get(tool_use_id)
        return found[1] if found is not None and found[0] > index else None

    def said_after(self, index: int) -> str:
        """The text of the first assistant message after ``index`` (``""`` if none)."""
        nxt = bisect_right(self.assistants, index)
        return texts(self.messages[self.assistants[nxt]].content) if nxt < len(self.assistants) else ""

    def outcome(self, index: int, call: Block | None, name: str, failed: Callable[[Block], bool]) -> str:
        """What became of one error: the agent's next call of the same tool on the same target
        (or, failing that, of the same tool) and whether it succeeded; its own words when it
        said something right after."""
        said = self.said_after(index)
        retry = self.next_call(index, name, target(call) if call is not None else "")
        parts = [f"the agent said: {clip_words(said, FOLLOW_WORDS)}"] if said else []
        if retry is not None:
            result = self.last_result(index, str(retry.get("id")))
            state = "pending" if result is None else ("failed again" if failed(result) else "succeeded")
            parts.append(f"retried: {state}")
        else:
            parts.append("not retried")
        return "; ".join(parts)
