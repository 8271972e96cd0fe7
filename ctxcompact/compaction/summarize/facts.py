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

Each message is read once, in order; a tool result's text is scanned once. What a message says
by itself is :mod:`.readings`' (within :func:`shared_facts`, read once for every part of the
transcript that holds the message); this module's pass carries what came before it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from ctxcompact.compaction.summarize.calls import Change, Later, todo_items
from ctxcompact.compaction.summarize.gist import NO_OUTPUT, referred_lines, shown_lines
from ctxcompact.compaction.summarize.layout import clip_words
from ctxcompact.compaction.summarize.outcomes import TestRun, failed
from ctxcompact.compaction.summarize.readings import (
    NUMBER_WITH_UNIT as NUMBER_WITH_UNIT,
)
from ctxcompact.compaction.summarize.readings import (
    Asked,
    Call,
    Heard,
    MessageMemo,
    Result,
    Spoken,
    read_messages,
    read_request,
)
from ctxcompact.compaction.summarize.statements import (
    USER_RULE as USER_RULE,
)
from ctxcompact.compaction.summarize.statements import (
    intents,
    sentences,
    texts,
)
from ctxcompact.compaction.summarize.templates import drop_templates
from ctxcompact.ir import Block, Message, tool_result_text

__all__ = ["NUMBER_WITH_UNIT", "USER_RULE", "Facts", "sentences", "texts"]

MAX_CONCEPTS = 40
#: The agent's last calls whose results the summary shows (:func:`.gist.shown_lines`).
SHOWN_ACTIONS = 6
#: The most result lines one finding quotes.
FINDING_LINES = 2
ERROR_LINE_WORDS = 24
_SLASH_COMMAND = re.compile(r"^/[\w:-]+(?:\s.*)?$")  # "/compact focus": not the task


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
        shared = _SHARED.get()
        if shared is None:
            return _Reader(messages).read()
        key = tuple(map(id, messages))
        found = shared.facts.get(key)
        if found is None:
            # Held: their ids stay theirs.
            found = shared.facts[key] = (tuple(messages), _Reader(messages, shared).read())
        return found[1]

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


@dataclass(slots=True)
class _Shared:
    """:func:`shared_facts`' memo: the facts of each message list read (by the ids of its
    messages), each message's own reading (by its id) and each request's; the messages are
    held, so their ids stay theirs."""

    facts: dict[tuple[int, ...], tuple[tuple[Message, ...], Facts]] = field(default_factory=dict)
    messages: MessageMemo = field(default_factory=dict)
    requests: dict[str, Asked] = field(default_factory=dict)


_SHARED: ContextVar[_Shared | None] = ContextVar("ctxcompact_shared_facts", default=None)


@contextmanager
def shared_facts() -> Iterator[None]:
    """Within it, :meth:`Facts.gather` of the same message objects again returns the facts it
    read the first time (they are a function of the messages alone): ``eval`` opens one per
    conversation, whose probes and strategies read the same parts (the probes and ``full``,
    ``hybrid`` and ``--auto``) — each part's facts are read once, not once per reader. A part
    that differs (hybrid's older part, the probes' whole conversation) reads again, but what
    each message says by itself (:mod:`.readings`) is read once for every part that holds it;
    only the pass that carries the state from message to message is made again. When the
    scope closes, all of it is let go."""
    token = _SHARED.set(_Shared())
    try:
        yield
    finally:
        _SHARED.reset(token)


# -- the pass that carries what came before ---------------------------------------------------


class _Reader:
    """One pass over the messages, filling a :class:`Facts` from what each one says by itself (:mod:`.readings`)."""

    def __init__(self, messages: Sequence[Message], shared: _Shared | None = None) -> None:
        self.messages = messages
        self.shared = shared
        self.facts = Facts()
        self.later = Later.index(messages)
        self.calls: dict[str, tuple[int, Call]] = {}
        #: The calls whose result has not come yet: their file operations and changes wait
        #: for it (a file tool that failed did nothing to its file).
        self.pending: dict[str, Call] = {}
        self.actions: dict[str, Action] = {}
        self.tasks: dict[str, tuple[str, str]] = {}
        self.turn_text = ""
        self.turn_notes: list[str] = []
        self.sessions: dict[str, str] = {}  # a running command's session id -> its call
        self.unseen: list[tuple[str, Result]] = []  # (call label, result) since the agent last spoke
        # What facts.rules and facts.conclusions hold: the lists keep the order, these the look-ups.
        self.listed_rules: set[str] = set()
        self.listed_conclusions: set[str] = set()

    def read(self) -> Facts:
        facts = self.facts
        readings = read_messages(self.messages, self.shared.messages if self.shared else None)
        words = _user_texts(readings)
        for index, reading in enumerate(readings):
            if isinstance(reading, Heard):
                self._read_user(index, reading, words.get(index, ""))
            elif reading is not None:
                self._read_assistant(index, reading)
        for tool_id, call in self.pending.items():  # calls whose result never came
            at = self.calls[tool_id][0]
            self._apply_ops(at, call.ops)
            facts.changes.extend(call.changes(at))
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

    def _read_user(self, index: int, heard: Heard, text: str) -> None:
        facts = self.facts
        facts.restored.extend(heard.restored)
        if heard.only_restored:
            return
        if heard.earlier is not None:
            facts.earlier.append(heard.earlier)
            facts.after_earlier = False
            return
        facts.events.extend(heard.events)
        if heard.results:
            self._read_results(index, heard.results)
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
        asked = read_request(request.text, self.shared.requests if self.shared else None)
        for sentence in asked.rules:
            item = f"- {sentence}"
            if item not in self.listed_rules:
                self.listed_rules.add(item)
                facts.rules.append(item)
            if is_task:
                facts.task_rules.add(item)
        self._add_mentions(asked.concepts, asked.figures, weight=2)

    def _read_results(self, index: int, results: tuple[Result, ...]) -> None:
        facts = self.facts
        flags_reported = self.later.flags_reported
        for result in results:
            tool_id = result.tool_id
            at, call = self.calls.get(tool_id, (index, None))
            name = call.name if call is not None else result.name
            label = self._label(call, short=True) if call is not None else name
            action = self.actions.get(tool_id)
            if action is not None:
                action.result_index = index
                action.result = result.block
            running = result.running
            if running is not None and call is not None:  # a later call polls this session: name it so
                self.sessions[running] = call.short_label
            if result.rejected:
                said = result.feedback
                self.pending.pop(tool_id, None)
                outcome = "rejected by the user" + (
                    " (the user's words are under All user messages)" if said else ""
                )
                facts.errors.append(ErrorNote(index, label, (), outcome))
                if action is not None:
                    action.outcome = "rejected by the user"
                if said:
                    self._request(Request(index, said, via=f"rejecting {label}"))
                continue
            broke = result.broke(flags_reported)
            # Read once, for the error note, a test run's status and the last calls' lines.
            lines = result.failure() if broke else ()
            if call is not None:
                commands = call.commands
                run = result.test_run(index, commands[0], broke) if commands else None
                if run is not None:
                    facts.tests.append(run)
                    if action is not None:
                        action.test = run
            if action is not None:
                action.broke, action.failure = broke, lines
            self.unseen.append((label, result))
            pending = self.pending.pop(tool_id, None)
            # A file tool that failed did nothing to its file.
            if pending is not None and not (broke and pending.has_path()):
                self._apply_ops(at, pending.ops)
                facts.changes.extend(pending.changes(at))
            if not broke:
                if action is not None:
                    action.outcome = f"still running (session {running})" if running else "ok"
                continue
            facts.failed[name] += 1
            facts.errors.append(
                ErrorNote(
                    index,
                    label,
                    lines,
                    self.later.outcome(index, call.block if call else None, name, self._failed),
                )
            )
            if action is not None:
                action.outcome = "failed: " + clip_words(lines[0], ERROR_LINE_WORDS)

    def _label(self, call: Call, *, short: bool = False) -> str:
        """:func:`call_label` (of 8 words when ``short``, else 12), or for a call that polls a
        running command's session (Codex ``write_stdin``), the command it polls."""
        if call.polled is not None and call.polled in self.sessions:
            return f"{call.name}(session {call.polled}: {self.sessions[call.polled]})"
        return call.short_label if short else call.label

    def _failed(self, result: Block) -> bool:
        return failed(result, tool_result_text(result), flags_reported=self.later.flags_reported)

    # -- assistant messages --

    def _read_assistant(self, index: int, spoken: Spoken) -> None:
        facts = self.facts
        if spoken.text:
            facts.after_earlier = True
            if self.turn_text:
                self.turn_notes.append(self.turn_text)
            self.turn_text = spoken.text
            self._add_conclusions(spoken.conclusions)
            self._add_findings(index, spoken)
            self._add_mentions(spoken.concepts, spoken.figures)
        for call in spoken.calls:
            facts.after_earlier = True
            tool_id = call.tool_id
            facts.tools[call.name] += 1
            self.calls[tool_id] = (index, call)
            action = Action(index, self._label(call), call=call.block)
            self.actions[tool_id] = action
            facts.actions.append(action)
            todos = todo_items(call.name, call.block.get("input"), self.tasks)
            if todos is not None:
                facts.todos = todos
            self.pending[tool_id] = call

    def _add_conclusions(self, conclusions: tuple[str, ...]) -> None:
        for sentence in conclusions:
            if sentence not in self.listed_conclusions:
                self.listed_conclusions.add(sentence)
                self.facts.conclusions.append(sentence)

    def _add_findings(self, index: int, spoken: Spoken) -> None:
        """The agent's sentences naming, in backticks, something the results it just read
        hold, with those result lines (each result is searched once per name, linear)."""
        seen, self.unseen = self.unseen, []
        names = spoken.names() if seen else []
        if not names:
            return
        plans = spoken.plans()
        said = [s for s in spoken.said if "`" in s]
        for label, result in seen:
            for name, line in referred_lines(result.output(), names, limit=FINDING_LINES):
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

    def _apply_ops(self, index: int, ops: Sequence[tuple[str, str]]) -> None:
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

    def _add_mentions(self, names: tuple[str, ...], figures: tuple[str, ...], weight: int = 1) -> None:
        # A name the user wrote counts twice: it is listed even if nobody repeats it.
        if names:
            concepts = self.facts.concepts
            for name in names:
                concepts[name] += weight
        if figures:
            self.facts.figures.update(dict.fromkeys(figures))


def _user_texts(readings: Sequence[Heard | Spoken | None]) -> dict[int, str]:
    """Each user message's own words: wrappers stripped per block (:attr:`Heard.words`),
    repeated templates dropped (across the messages read)."""
    heard = [(i, r.words) for i, r in enumerate(readings) if isinstance(r, Heard) and r.words is not None]
    return dict(zip([i for i, _ in heard], drop_templates([w for _, w in heard]), strict=True))
