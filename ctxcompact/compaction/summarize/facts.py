"""What the extractive summarizer reads off a transcript: one pass, plain facts, nothing invented.

:class:`Facts` holds, in transcript order:

* the user's side: the task statement (the first request; harness instruction templates shrunk
  to their constraints, :mod:`.templates`), every user message in its own words (wrappers
  stripped per block and line, :mod:`.boilerplate`), the words a user gave while rejecting a
  tool call (a request like any other), the user's instructions and constraints, an earlier
  compaction summary (kept whole, :mod:`.earlier`);
* the agent's side: its conclusions and decisions, whole sentences in its own words; the last
  text of each of its turns (what it reported back); its last words, its last stated intent;
  its to-do list;
* the work: files and what was done to them (:mod:`.shell_files`), the changes made with their
  new text (:mod:`.calls`), tool tallies, each failure of a command with its own outcome, each
  test run with the status read from its output (:mod:`.outcomes`), the harness's events
  (a background task finished), the agent's last actions with what each returned.

Each message is read once, in order; a tool result's text is scanned once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from ctxcompact.compaction.summarize.boilerplate import (
    is_rejection,
    notifications,
    rejection_feedback,
    user_words,
)
from ctxcompact.compaction.summarize.calls import Change, Later, call_label, changes_of, todo_items
from ctxcompact.compaction.summarize.gist import NO_OUTPUT, names_in, referred_lines, shown_lines
from ctxcompact.compaction.summarize.layout import clip_words
from ctxcompact.compaction.summarize.outcomes import TestRun, failed, failure_lines, output_of, read_tests
from ctxcompact.compaction.summarize.shell_files import PATH_FIELDS, command_texts, tool_file_ops
from ctxcompact.compaction.summarize.statements import (
    USER_RULE as USER_RULE,
)
from ctxcompact.compaction.summarize.statements import (
    conclusions_among,
    instructions,
    intents,
    intents_among,
    prose,
    sentences,
    texts,
)
from ctxcompact.compaction.summarize.templates import drop_templates
from ctxcompact.ir import Block, Message, tool_result_text
from ctxcompact.markers import (
    EARLIER_SUMMARY_PREFIXES,
    OUR_ACKS,
    SUMMARY_PREFIX,
    restored_block_path,
    restored_file_paths,
)

__all__ = ["NUMBER_WITH_UNIT", "USER_RULE", "Facts", "sentences", "texts"]

MAX_CONCEPTS = 40
#: The agent's last calls whose results the summary shows (:func:`.gist.shown_lines`).
SHOWN_ACTIONS = 6
#: The most result lines one finding quotes.
FINDING_LINES = 2
ERROR_LINE_WORDS = 24
#: A number with a unit ("30 s", "512 MB", "20,000 tokens", "95 %"): the figures a task turns on.
NUMBER_WITH_UNIT = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|kB|bytes|tokens|chars|characters|words|lines|%|px|rem|em|GHz|MHz|x)(?![\w])",
)
_RUNNING = re.compile(r"Process running with session ID (\w+)")
_SLASH_COMMAND = re.compile(r"^/[\w:-]+(?:\s.*)?$")  # "/compact focus": not the task
_CODE_SPAN = re.compile(r"`([A-Za-z_][\w.:/-]{2,60}(?:\(\))?)`")


@dataclass(slots=True)
class FileOps:
    """The operations on one file, in order, and the message index of the last."""

    ops: list[str] = field(default_factory=list)
    last: int = 0


@dataclass(frozen=True, slots=True)
class Request:
    """Something the user asked or said: a message, or the words given while rejecting a
    tool call (``via``: ``rejecting Edit(x)``)."""

    index: int
    text: str
    via: str = ""


@dataclass(frozen=True, slots=True)
class ErrorNote:
    """An error a tool call hit: where, which call, its error lines and how it ended."""

    index: int
    call: str
    lines: tuple[str, ...]
    outcome: str


@dataclass(slots=True)
class Action:
    """One of the agent's calls and what it returned: ``ok``, ``failed: …``, ``rejected by
    the user``, or ``""`` while its result is not in the transcript; ``shown``: the lines of
    its result worth carrying (filled for the last :data:`SHOWN_ACTIONS` calls)."""

    index: int
    label: str
    outcome: str = ""
    result_index: int = -1
    call: Block | None = None
    result: Block | None = None
    broke: bool = False
    #: What :func:`.outcomes.failure_lines` read of a failed result.
    failure: tuple[str, ...] = ()
    test: TestRun | None = None
    shown: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """A sentence of the agent about what a tool returned, and the result lines holding the
    names it wrote in backticks (``sentence`` is ``""`` when the names were in a plan or a
    question: the lines alone are the finding)."""

    index: int
    sentence: str
    label: str
    lines: tuple[str, ...]


@dataclass(slots=True)
class Facts:
    """What the extractive summary is written from, gathered from the replaced messages."""

    task: str = ""
    requests: list[Request] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    #: The rules read from the task statement: redundant while the task is shown whole.
    task_rules: set[str] = field(default_factory=set)
    conclusions: list[str] = field(default_factory=list)
    #: (request number it answered, text): the agent's last text of each finished turn.
    reports: list[tuple[int, str]] = field(default_factory=list)
    last_text: str = ""
    #: The agent's earlier texts since the latest request (its running notes of the turn).
    turn_notes: list[str] = field(default_factory=list)
    #: The agent's thinking in a last message that has nothing else (a turn cut mid-thought).
    last_thoughts: str = ""
    concepts: Counter[str] = field(default_factory=Counter)
    figures: dict[str, None] = field(default_factory=dict)
    earlier: list[str] = field(default_factory=list)
    #: Whether anything happened after the latest earlier summary (its current work is history).
    after_earlier: bool = False
    files: dict[str, FileOps] = field(default_factory=dict)
    mentioned: dict[str, int] = field(default_factory=dict)
    restored: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    tools: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    errors: list[ErrorNote] = field(default_factory=list)
    tests: list[TestRun] = field(default_factory=list)
    todos: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: The index of the last message: results there had not been seen by the agent.
    final_index: int = -1

    @classmethod
    def gather(cls, messages: Sequence[Message]) -> Facts:
        """The facts of ``messages`` (read-only for the caller: within :func:`shared_facts`
        another caller may be given the same object)."""
        memo = _SHARED.get()
        if memo is None:
            return _Reader(messages).read()
        key = tuple(map(id, messages))
        if key not in memo:
            memo[key] = (tuple(messages), _Reader(messages).read())  # held: their ids stay theirs
        return memo[key][1]

    @property
    def last_request_index(self) -> int:
        return self.requests[-1].index if self.requests else -1

    def concept_line(self) -> str:
        top = [c for c, n in sorted(self.concepts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2]
        return ", ".join(f"`{c}`" for c in top[:MAX_CONCEPTS])

    def last_intent(self) -> str:
        """The agent's last sentence about what it does next, in its last words."""
        # Thoughts after the last words are the newer.
        found = intents(self.last_thoughts) or intents(self.last_text)
        return found[-1] if found else ""


#: :func:`shared_facts`' memo: the ids of the messages read -> (those messages, their facts).
_SHARED: ContextVar[dict[tuple[int, ...], tuple[tuple[Message, ...], Facts]] | None] = ContextVar(
    "ctxcompact_shared_facts", default=None
)


@contextmanager
def shared_facts() -> Iterator[None]:
    """Within it, :meth:`Facts.gather` of the same message objects again returns the facts it
    read the first time (they are a function of the messages alone): ``eval`` opens one per
    conversation, whose probes and strategies read the same parts (the probes and ``full``,
    ``hybrid`` and ``--auto``) — each part's facts are read once, not once per reader."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


class _Reader:
    """One pass over the messages, filling a :class:`Facts`."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.facts = Facts()
        self.later = Later.index(messages)
        self.calls: dict[str, tuple[int, Block]] = {}
        self.pending_ops: dict[str, list[tuple[str, str]]] = {}
        self.pending_changes: dict[str, list[Change]] = {}
        self.actions: dict[str, Action] = {}
        self.tasks: dict[str, tuple[str, str]] = {}
        self.turn_text = ""
        self.turn_notes: list[str] = []
        self.sessions: dict[str, str] = {}  # a running command's session id -> its call
        self.unseen: list[tuple[str, str]] = []  # (call label, output) since the agent last spoke
        # What facts.rules and facts.conclusions hold: the lists keep the order, these the look-ups.
        self.listed_rules: set[str] = set()
        self.listed_conclusions: set[str] = set()

    def read(self) -> Facts:
        facts = self.facts
        words = _user_texts(self.messages)
        for index, message in enumerate(self.messages):
            if message.role == "user":
                self._read_user(index, message, words.get(index, ""))
            elif message.role == "assistant":
                self._read_assistant(index, message)
        for tool_id, ops in self.pending_ops.items():  # calls whose result never came
            self._apply_ops(self.calls[tool_id][0], ops)
        for changes in self.pending_changes.values():
            facts.changes.extend(changes)
        facts.changes.sort(key=lambda c: c.index)
        facts.last_text = self.turn_text
        facts.turn_notes = self.turn_notes
        last = self.messages[-1] if self.messages else None
        if (
            last is not None
            and last.role == "assistant"
            and all(b.get("type") == "thinking" for b in last.content)
        ):
            facts.last_thoughts = "\n".join(str(b.get("thinking") or "") for b in last.content).strip()
        facts.final_index = len(self.messages) - 1
        recent = [a for a in facts.actions if a.index > facts.last_request_index]
        for action in recent[-SHOWN_ACTIONS:]:
            if action.result is not None and action.outcome != "rejected by the user":
                action.shown = shown_lines(
                    action.call,
                    tool_result_text(action.result),
                    broke=action.broke,
                    failure=action.failure,
                    test=action.test,
                    said=self.later.said_after(action.result_index),
                )
                if action.outcome.startswith("still running") and action.shown == (NO_OUTPUT,):
                    action.shown = ()
                # A line the call's own line already says (``→ failed: X``) is not said twice.
                action.shown = tuple(line for line in action.shown if line not in action.outcome)
        return facts

    # -- user messages --

    def _read_user(self, index: int, message: Message, text: str) -> None:
        facts = self.facts
        restored = restored_file_paths(message)
        facts.restored.extend(restored)
        # A Claude Code session joins its summary and the files restored after it into one
        # message: the files are restored again, never carried inside the summary.
        own = [b for b in message.content if restored_block_path(b) is None] if restored else message.content
        raw = texts(own)
        if restored and not raw:
            return
        prefix = next((p for p in EARLIER_SUMMARY_PREFIXES if raw.startswith(p)), None)
        if prefix is not None:
            # Ours: drop the marker line. Claude Code's: its opening sentence goes in :mod:`.earlier`.
            body = raw[len(prefix) :].lstrip(" .:\n") if prefix == SUMMARY_PREFIX.rstrip() else raw
            facts.earlier.append(body.rstrip())
            facts.after_earlier = False
            return
        facts.events.extend(notifications(message.content))
        self._read_results(index, message)
        if text:
            self._request(Request(index, text))

    def _request(self, request: Request) -> None:
        facts = self.facts
        if self.turn_text:
            facts.reports.append((len(facts.requests), self.turn_text))
        self.turn_text = ""
        self.turn_notes = []
        facts.after_earlier = True
        is_task = not facts.task and not request.via and not _SLASH_COMMAND.match(request.text)
        if is_task:
            facts.task = request.text
        facts.requests.append(request)
        for sentence in instructions(request.text):
            item = f"- {sentence}"
            if item not in self.listed_rules:
                self.listed_rules.add(item)
                facts.rules.append(item)
            if is_task:
                facts.task_rules.add(item)
        self._add_concepts(request.text, weight=2)

    def _read_results(self, index: int, message: Message) -> None:
        facts = self.facts
        for block in message.content:
            if block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id") or "")
            at, call = self.calls.get(tool_id, (index, None))
            name = str(call.get("name") or "tool") if call is not None else str(block.get("name") or "tool")
            label = self._label(call, words=8) if call is not None else name
            body = tool_result_text(block)
            action = self.actions.get(tool_id)
            if action is not None:
                action.result_index = index
                action.result = block
            running = _RUNNING.search(body[:300])
            if running and call is not None:  # a later call polls this session: name it so
                self.sessions[running.group(1)] = call_label(call, words=8)
            if is_rejection(body):
                said = rejection_feedback(body)
                self.pending_ops.pop(tool_id, None)
                self.pending_changes.pop(tool_id, None)
                outcome = "rejected by the user" + (
                    " (the user's words are under All user messages)" if said else ""
                )
                facts.errors.append(ErrorNote(index, label, (), outcome))
                if action is not None:
                    action.outcome = "rejected by the user"
                if said:
                    self._request(Request(index, said, via=f"rejecting {label}"))
                continue
            broke = failed(block, body, flags_reported=self.later.flags_reported)
            # Read once, for the error note, a test run's status and the last calls' lines.
            lines = tuple(failure_lines(body)) if broke else ()
            if call is not None:
                commands = command_texts(call.get("input"))
                run = (
                    read_tests(index, commands[0], body, command_failed=broke, failure=lines)
                    if commands
                    else None
                )
                if run is not None:
                    facts.tests.append(run)
                    if action is not None:
                        action.test = run
            if action is not None:
                action.broke, action.failure = broke, lines
            self.unseen.append((label, body))
            ops = self.pending_ops.pop(tool_id, None)
            changes = self.pending_changes.pop(tool_id, None)
            structured = call is not None and _has_path(call)
            if not (broke and structured):  # a file tool that failed did nothing to its file
                if ops:
                    self._apply_ops(at, ops)
                if changes:
                    facts.changes.extend(changes)
            if not broke:
                if action is not None:
                    action.outcome = f"still running (session {running.group(1)})" if running else "ok"
                continue
            facts.failed[name] += 1
            facts.errors.append(
                ErrorNote(index, label, lines, self.later.outcome(index, call, name, self._failed))
            )
            if action is not None:
                action.outcome = "failed: " + clip_words(lines[0], ERROR_LINE_WORDS)

    def _label(self, call: Block, *, words: int = 12) -> str:
        """:func:`call_label`, or for a call that polls a running command's session (Codex
        ``write_stdin``), the command it polls."""
        tool_input = call.get("input")
        polled = tool_input.get("session_id") if isinstance(tool_input, (dict, Mapping)) else None
        if polled is not None and str(polled) in self.sessions:
            return f"{call.get('name') or 'tool'}(session {polled}: {self.sessions[str(polled)]})"
        return call_label(call, words=words)

    def _failed(self, result: Block) -> bool:
        return failed(result, tool_result_text(result), flags_reported=self.later.flags_reported)

    # -- assistant messages --

    def _read_assistant(self, index: int, message: Message) -> None:
        facts = self.facts
        text = texts(message.content)
        if text and text not in OUR_ACKS:
            facts.after_earlier = True
            if self.turn_text:
                self.turn_notes.append(self.turn_text)
            self.turn_text = text
            said = sentences(prose(text))  # one split, for each reader of its sentences
            self._add_conclusions(said)
            self._add_findings(index, text, said)
            self._add_concepts(text)
        for block in message.content:
            if block.get("type") != "tool_use":
                continue
            facts.after_earlier = True
            name = str(block.get("name") or "tool")
            tool_id = str(block.get("id") or "")
            facts.tools[name] += 1
            self.calls[tool_id] = (index, block)
            action = Action(index, self._label(block), call=block)
            self.actions[tool_id] = action
            facts.actions.append(action)
            todos = todo_items(name, block.get("input"), self.tasks)
            if todos is not None:
                facts.todos = todos
            self.pending_ops[tool_id] = list(tool_file_ops(name, block.get("input")))
            self.pending_changes[tool_id] = list(changes_of(index, block))

    def _add_conclusions(self, said: list[str]) -> None:
        for sentence in conclusions_among(said):
            if sentence not in self.listed_conclusions:
                self.listed_conclusions.add(sentence)
                self.facts.conclusions.append(sentence)

    def _add_findings(self, index: int, text: str, said: list[str]) -> None:
        """The agent's sentences naming, in backticks, something the results it just read
        hold, with those result lines (each result is searched once per name, linear);
        ``said``: the sentences of ``text``'s prose."""
        seen, self.unseen = self.unseen, []
        names = names_in(text) if seen else []
        if not names:
            return
        plans = set(intents_among(said))
        said = [s for s in said if "`" in s]
        for label, body in seen:
            output = output_of(body)
            for name, line in referred_lines(output, names, limit=FINDING_LINES):
                sentence = next((s for s in said if f"`{name}`" in s), "")
                if sentence in plans:
                    sentence = ""
                last = self.facts.findings[-1] if self.facts.findings else None
                if (
                    last is not None
                    and last.index == index
                    and last.sentence == sentence
                    and last.label == label
                ):
                    if len(last.lines) < FINDING_LINES:
                        self.facts.findings[-1] = Finding(index, sentence, label, (*last.lines, line))
                    continue
                self.facts.findings.append(Finding(index, sentence, label, (line,)))

    def _apply_ops(self, index: int, ops: list[tuple[str, str]]) -> None:
        facts = self.facts
        for path, op in ops:
            if op == "mentioned":
                if path not in facts.files:
                    facts.mentioned[path] = index
                continue
            entry = facts.files.setdefault(path, FileOps())
            facts.mentioned.pop(path, None)
            if op not in entry.ops:
                entry.ops.append(op)
            entry.last = index

    def _add_concepts(self, text: str, weight: int = 1) -> None:
        # A name the user wrote counts twice: it is listed even if nobody repeats it.
        for match in _CODE_SPAN.finditer(text):
            self.facts.concepts[match.group(1)] += weight
        for match in NUMBER_WITH_UNIT.finditer(text):
            self.facts.figures.setdefault(match.group(0), None)


def _has_path(call: Block) -> bool:
    tool_input = call.get("input")
    return isinstance(tool_input, (dict, Mapping)) and any(
        isinstance(tool_input.get(k), str) for k in PATH_FIELDS
    )


def _user_texts(messages: Sequence[Message]) -> dict[int, str]:
    """Each user message's own words: wrappers stripped per block, repeated templates dropped."""
    indices = [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and any(b.get("type") == "text" for b in m.content)
    ]
    cleaned = [
        user_words([b for b in messages[i].content if restored_block_path(b) is None]) for i in indices
    ]
    return dict(zip(indices, drop_templates(cleaned), strict=True))
