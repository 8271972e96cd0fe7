"""What the extractive summarizer reads off a transcript: one pass, plain facts.

:class:`Facts` holds, in transcript order: the task statement (the first request), every user
message (boilerplate dropped, see :mod:`.boilerplate`), the user's instructions and
constraints, the agent's stated decisions, an earlier compaction summary (kept whole),
files and what was done to them (:mod:`.shell_files`), tool tallies, each error with its own
outcome, the pending tasks of the agent's last to-do list, and the end of the conversation
(last request, last actions, last words, next step — :mod:`.status`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from ctxcompact.compaction.summarize.boilerplate import drop_templates, strip_wrappers
from ctxcompact.compaction.summarize.layout import clip_words
from ctxcompact.compaction.summarize.shell_files import PATH_FIELDS, command_texts, tool_file_ops
from ctxcompact.ir import Block, Message, has_user_text, tool_names_by_id, tool_result_text
from ctxcompact.markers import (
    EARLIER_SUMMARY_PREFIXES,
    SUMMARY_PREFIX,
    restored_block_path,
    restored_file_paths,
)

SENTENCE_WORDS = 60
ERROR_LINE_WORDS = 24
FOLLOW_WORDS = 16
MAX_DECISIONS = 12
MAX_CONCEPTS = 40

#: A user sentence with one of these words is an instruction or constraint (English, Chinese).
USER_RULE = re.compile(
    r"\b(must|mustn't|should|shouldn't|don't|do not|never|always|need to|needs to|have to|has to|"
    r"make sure|ensure|avoid|prefer|required|only|not acceptable|important|critical)\b"
    r"|必须|不要|需要|应该|总是|永远|不能|别",
    re.IGNORECASE,
)
_AGENT_DECISION = re.compile(
    r"\b(decided|i chose|we chose|going with|root cause is|the cause is|the fix is|i'll use|we'll use)\b",
    re.IGNORECASE,
)
SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")
_ERROR_LINE = re.compile(
    r"^\s*(?:E\s+)?(?:Traceback \(most recent call last\)|[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b:|"
    r"(?:error|fatal|panic)(?:\[\w+\])?:|(?:FAILED|ERROR)\s+\S+::|FAILED \()"
    r"|\b\d+ failed\b|\bexit (?:code|status):? *[1-9]\d*\b|<tool_use_error>",
    re.IGNORECASE,
)
#: A number with a unit ("30 s", "512 MB", "20,000 tokens", "95 %"): the figures a task turns on.
NUMBER_WITH_UNIT = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|kB|bytes|tokens|chars|characters|words|lines|%|px|rem|em|GHz|MHz|x)(?![\w])",
)
#: Every match of :data:`_ERROR_LINE` holds one of these words (in any case): a line without
#: one is not searched (found by substring scans of the lowered text, not by a regex).
_ERROR_WORDS = ("traceback", "error", "exception", "exit", "fatal", "panic", "failed")
#: Line breaks ``str.splitlines`` knows besides ``\n``: a text with one is re-joined on ``\n``.
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # looked for with `in`: faster than a regex
_MARKUP_TAG = re.compile(r"</?[A-Za-z_][\w-]*>")  # <IMPORTANT>, </CRITICAL>: emphasis, not words
_SLASH_COMMAND = re.compile(r"^/[\w:-]+(?:\s.*)?$")  # "/clear", "/compact focus": not the task
_CODE_SPAN = re.compile(r"`([A-Za-z_][\w.:/-]{2,60}(?:\(\))?)`")


@dataclass(slots=True)
class FileOps:
    ops: list[str] = field(default_factory=list)
    last: int = 0


@dataclass(frozen=True, slots=True)
class ErrorNote:
    index: int
    call: str
    lines: tuple[str, ...]
    outcome: str


@dataclass(slots=True)
class Facts:
    task: str = ""
    requests: list[tuple[int, str]] = field(default_factory=list)  # (message index, text)
    rules: list[str] = field(default_factory=list)
    #: The rules read from the task statement: redundant while the task is shown whole.
    task_rules: set[str] = field(default_factory=set)
    decisions: list[str] = field(default_factory=list)
    concepts: Counter[str] = field(default_factory=Counter)
    figures: dict[str, None] = field(default_factory=dict)
    earlier: list[str] = field(default_factory=list)
    files: dict[str, FileOps] = field(default_factory=dict)
    mentioned: dict[str, int] = field(default_factory=dict)
    restored: list[str] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    errors: list[ErrorNote] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)

    @classmethod
    def gather(cls, messages: Sequence[Message]) -> Facts:
        facts = cls()
        names = tool_names_by_id(messages)
        user_texts = _user_texts(messages)
        calls = _calls_by_id(messages)
        later = _Later.index(messages)
        for index, message in enumerate(messages):
            if message.role == "user":
                facts._read_user(index, message, user_texts.get(index, ""))
                facts._read_results(index, message, names, calls, later)
            elif message.role == "assistant":
                facts._read_assistant(index, message)
        return facts

    @property
    def last_request_index(self) -> int:
        return self.requests[-1][0] if self.requests else -1

    # -- user messages --

    def _read_user(self, index: int, message: Message, text: str) -> None:
        self.restored.extend(restored_file_paths(message))
        prefix = next((p for p in EARLIER_SUMMARY_PREFIXES if text.startswith(p)), None)
        if prefix is not None:
            # Ours: drop the marker line. Claude Code's: its opening sentence is part of it.
            body = text[len(prefix) :].lstrip(" .:\n") if prefix == SUMMARY_PREFIX.rstrip() else text
            self.earlier.append(body.rstrip())
            return
        if not text:
            return
        is_task = not self.task and not _SLASH_COMMAND.match(text)
        if is_task:
            self.task = text
        self.requests.append((index, text))
        for sentence in sentences(_MARKUP_TAG.sub(" ", text)):
            if USER_RULE.search(sentence) and (len(sentence.split()) >= 3 or len(sentence) >= 6):
                item = f"- {clip_words(sentence, SENTENCE_WORDS)}"
                if item not in self.rules:
                    self.rules.append(item)
                if is_task:
                    self.task_rules.add(item)
        self._add_concepts(text, weight=2)

    def _read_results(
        self,
        index: int,
        message: Message,
        names: Mapping[str, str],
        calls: Mapping[str, Block],
        later: _Later,
    ) -> None:
        for block in message.content:
            if block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id") or "")
            name = names.get(tool_id, "") or str(block.get("name") or "tool")
            lines = later.error_lines(block)
            if not block.get("is_error") and not lines:
                continue
            self.failed[name] += 1
            if not lines:
                lines = [clip_words(tool_result_text(block), ERROR_LINE_WORDS) or "(no output)"]
            call = calls.get(tool_id)
            label = call_label(call, words=8) if call is not None else name
            outcome = later.outcome(index, call, name)
            self.errors.append(ErrorNote(index, label, tuple(lines), outcome))

    # -- assistant messages --

    def _read_assistant(self, index: int, message: Message) -> None:
        text = texts(message.content)
        for sentence in sentences(text):
            if _AGENT_DECISION.search(sentence) and len(sentence.split()) >= 4:
                item = f"- {clip_words(sentence, SENTENCE_WORDS)}"
                if item not in self.decisions:
                    self.decisions.append(item)
        self._add_concepts(text)
        for block in message.content:
            if block.get("type") != "tool_use":
                continue
            name = str(block.get("name") or "tool")
            self.tools[name] += 1
            tool_input = block.get("input")
            self._read_todos(tool_input)
            for path, op in tool_file_ops(name, tool_input):
                if op == "mentioned":
                    if path not in self.files:
                        self.mentioned[path] = index
                    continue
                entry = self.files.setdefault(path, FileOps())
                self.mentioned.pop(path, None)
                if op not in entry.ops:
                    entry.ops.append(op)
                entry.last = index

    def _read_todos(self, tool_input: Any) -> None:
        """The agent's to-do list (Claude Code ``TodoWrite``, Codex ``update_plan``): the
        latest one wins; what is not completed is pending."""
        if not isinstance(tool_input, Mapping):
            return
        items = tool_input.get("todos") or tool_input.get("plan")
        if not isinstance(items, list):
            return
        pending: list[str] = []
        for item in items:
            if not isinstance(item, Mapping):
                continue
            label = str(item.get("content") or item.get("step") or "").strip()
            status = str(item.get("status") or "pending")
            if label and status != "completed":
                pending.append(f"- [{status}] {clip_words(label, SENTENCE_WORDS)}")
        self.todos = pending

    def _add_concepts(self, text: str, weight: int = 1) -> None:
        # A name the user wrote counts twice: it is listed even if nobody repeats it.
        for match in _CODE_SPAN.finditer(text):
            self.concepts[match.group(1)] += weight
        for match in NUMBER_WITH_UNIT.finditer(text):
            self.figures.setdefault(match.group(0), None)

    def concept_line(self) -> str:
        top = [c for c, n in sorted(self.concepts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2]
        return ", ".join(f"`{c}`" for c in top[:MAX_CONCEPTS])


# --- helpers ---------------------------------------------------------------------------------


def texts(blocks: Iterable[Block]) -> str:
    return "\n".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text").strip()


def sentences(text: str) -> list[str]:
    out = []
    for sentence in SENTENCE_SPLIT.split(text):
        sentence = sentence.replace("**", "").strip(" -*•\t#>")
        if sentence:
            out.append(sentence)
    return out


def _user_texts(messages: Sequence[Message]) -> dict[int, str]:
    """Each user message's own words: wrappers stripped, repeated templates dropped."""
    indices = [i for i, m in enumerate(messages) if m.role == "user" and has_user_text(m)]
    own = [[b for b in messages[i].content if restored_block_path(b) is None] for i in indices]
    cleaned = [strip_wrappers(texts(blocks)) for blocks in own]
    return dict(zip(indices, drop_templates(cleaned), strict=True))


def _calls_by_id(messages: Sequence[Message]) -> dict[str, Block]:
    return {
        str(b.get("id")): b
        for m in messages
        if m.role == "assistant"
        for b in m.content
        if b.get("type") == "tool_use"
    }


def error_lines(text: str) -> list[str]:
    """The error lines of a tool output (each once, in order; a bare ``Traceback`` header only
    when nothing more informative is there): the lines :data:`_ERROR_LINE` matches."""
    found: list[str] = []
    for line in _candidate_lines(text):
        if _ERROR_LINE.search(line):
            line = re.sub(r"^\s*E\s{2,}", "", line).strip(" =")
            line = line.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
            if line and line not in found:
                found.append(line)
    informative = [line for line in found if not line.startswith("Traceback")]
    return informative or found


def _candidate_lines(text: str) -> list[str]:
    """The lines of ``text`` (as ``str.splitlines`` cuts them) that hold one of
    :data:`_ERROR_WORDS` where a match could use it (:func:`_may_match`), in order: substring
    scans of the lowered text instead of a regex per line.

    Exact: a character the regex's IGNORECASE matches to a letter of those words lowers to that
    letter, except dotless ``ı`` (matches ``i``) and ``İ`` (lowers to two characters, so
    positions shift): with either, every line is a candidate.
    """
    if any(c in text for c in _OTHER_LINE_BREAKS):
        text = "\n".join(text.splitlines())  # the same lines, now cut at "\n" alone
    low = text.lower()
    if len(low) != len(text) or "\u0131" in text:
        return text.split("\n")
    starts: set[int] = set()
    for word in _ERROR_WORDS:
        at = low.find(word)
        while at >= 0:
            start = low.rfind("\n", 0, at) + 1
            if not _may_match(low, start, at, word):
                at = low.find(word, at + 1)
                continue
            starts.add(start)
            end = low.find("\n", at)
            at = -1 if end < 0 else low.find(word, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start:] if end < 0 else text[start:end])
    return lines


def _may_match(low: str, start: int, at: int, word: str) -> bool:
    """Whether the error word at ``at`` (its line starting at ``start``) can be part of a match
    of :data:`_ERROR_LINE`: what each of its alternatives needs next to that word ("Error:",
    "error[E1]:", "<tool_use_error>", "ERROR x::" at the line's start, "3 failed", "exit code")."""
    nxt = low[at + len(word) : at + len(word) + 1]
    if word == "error":
        return nxt in (":", "[", ">") or (nxt.isspace() and low[start:at].strip() in ("", "e"))
    if word == "failed":
        return nxt.isspace() or low[at - 1 : at] == " "
    if word == "exit":
        return nxt in (":", " ")
    return nxt == {"traceback": " ", "exception": ":"}.get(word) or (
        word in ("fatal", "panic") and nxt in (":", "[")
    )


def call_label(block: Block, *, words: int = 12) -> str:
    name = str(block.get("name") or "tool")
    tool_input = block.get("input")
    arg = ""
    commands = command_texts(tool_input) if isinstance(tool_input, Mapping) else []
    if commands:
        arg = commands[0]
    elif isinstance(tool_input, Mapping):
        for key in (*PATH_FIELDS, "pattern", "query", "url"):
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                arg = value
                break
        else:
            arg = next((v for v in tool_input.values() if isinstance(v, str) and v.strip()), "")
    elif isinstance(tool_input, str):
        arg = tool_input
    return f"{name}({clip_words(arg, words)})"


def _target(block: Block) -> str:
    tool_input = block.get("input")
    if isinstance(tool_input, Mapping):
        for key in PATH_FIELDS:
            value = tool_input.get(key)
            if isinstance(value, str):
                return value
    commands = command_texts(tool_input)
    return commands[0].split()[0] if commands and commands[0].split() else ""


@dataclass(frozen=True, slots=True)
class _Later:
    """What follows each message, indexed once per transcript: an error's outcome looks ahead
    by lookup and bisection, never by scanning the rest of the transcript per error."""

    messages: Sequence[Message]
    assistants: list[int]  # indices of the assistant messages
    calls: dict[str, list[tuple[int, Block]]]  # tool name -> (message index, tool_use), in order
    last_results: dict[str, tuple[int, Block]]  # tool_use_id -> its last tool_result
    #: each tool_result's error lines, by identity: a retry's result is read as an outcome
    #: and again as a result of its own
    errors: dict[int, tuple[Block, list[str]]] = field(default_factory=dict)
    #: tool name -> target -> its calls on that target, in order (built when first asked)
    by_target: dict[str, dict[str, list[tuple[int, Block]]]] = field(default_factory=dict)

    @classmethod
    def index(cls, messages: Sequence[Message]) -> _Later:
        assistants: list[int] = []
        calls: dict[str, list[tuple[int, Block]]] = {}
        last_results: dict[str, tuple[int, Block]] = {}
        for i, message in enumerate(messages):
            if message.role == "assistant":
                assistants.append(i)
            for b in message.content:
                kind = b.get("type")
                if kind == "tool_result":
                    last_results[str(b.get("tool_use_id"))] = (i, b)
                elif kind == "tool_use" and message.role == "assistant":
                    calls.setdefault(str(b.get("name") or "tool"), []).append((i, b))
        return cls(messages, assistants, calls, last_results)

    def next_call(self, index: int, name: str, target: str) -> Block | None:
        """The first call of tool ``name`` after ``index`` (on ``target`` when there is one)."""
        calls = self.calls.get(name, [])
        if target:
            targets = self.by_target.get(name)
            if targets is None:
                targets = self.by_target[name] = {}
                for call in calls:
                    targets.setdefault(_target(call[1]), []).append(call)
            calls = targets.get(target, [])
        at = bisect_right(calls, index, key=itemgetter(0))
        return calls[at][1] if at < len(calls) else None

    def last_result(self, index: int, tool_use_id: str) -> Block | None:
        """The last tool_result answering ``tool_use_id`` after ``index`` (ids can repeat)."""
        found = self.last_results.get(tool_use_id)
        return found[1] if found is not None and found[0] > index else None

    def error_lines(self, result: Block) -> list[str]:
        """:func:`error_lines` of a tool_result's text, computed once per block."""
        found = self.errors.get(id(result))
        if found is None:
            found = self.errors[id(result)] = (result, error_lines(tool_result_text(result)))
        return found[1]

    def outcome(self, index: int, call: Block | None, name: str) -> str:
        """What became of one error: the agent's next call of the same tool on the same target
        (or, failing that, of the same tool) and whether it succeeded; its own words when it
        said something right after."""
        nxt = bisect_right(self.assistants, index)
        said = texts(self.messages[self.assistants[nxt]].content) if nxt < len(self.assistants) else ""
        target = _target(call) if call is not None else ""
        retry = self.next_call(index, name, target)
        parts = [f"the agent said: {clip_words(said, FOLLOW_WORDS)}"] if said else []
        if retry is not None:
            result = self.last_result(index, str(retry.get("id")))
            failed = result is not None and (bool(result.get("is_error")) or bool(self.error_lines(result)))
            state = "pending" if result is None else ("failed again" if failed else "succeeded")
            parts.append(f"retried: {state}")
        else:
            parts.append("not retried")
        return "; ".join(parts)
