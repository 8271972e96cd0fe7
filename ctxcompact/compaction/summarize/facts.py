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
#: Not after a word character or a point: ``(?<![\w.])\d`` written as ``\d(?<![\w.]\d)``, the
#: same matches, but the engine skips to a digit before it tries one (the look-behind first
#: made it try at every position).
NUMBER_WITH_UNIT = re.compile(
    r"\d(?<![\w.]\d)\d{0,2}(?:,\d{3})*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours|days|"
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
    messages: dict[int, tuple[Message, _Heard | _Spoken | None]] = field(default_factory=dict)
    requests: dict[str, _Asked] = field(default_factory=dict)


_SHARED: ContextVar[_Shared | None] = ContextVar("ctxcompact_shared_facts", default=None)


@contextmanager
def shared_facts() -> Iterator[None]:
    """Within it, :meth:`Facts.gather` of the same message objects again returns the facts it
    read the first time (they are a function of the messages alone): ``eval`` opens one per
    conversation, whose probes and strategies read the same parts (the probes and ``full``,
    ``hybrid`` and ``--auto``) — each part's facts are read once, not once per reader. A part
    that differs (hybrid's older part, the probes' whole conversation) reads again, but what
    each message says by itself (:func:`_reading`) is read once for every part that holds it;
    only the pass that carries the state from message to message is made again. When the
    scope closes, all of it is let go."""
    token = _SHARED.set(_Shared())
    try:
        yield
    finally:
        _SHARED.reset(token)


# -- what each message says by itself: read once per message (per scope) --------------------
#
# Plain classes with slots, each filled by its constructor, the parts not always needed read
# when first asked: a summary of a long session makes tens of thousands of them.


class _Call:
    """A tool_use block as the reader needs it: a function of the block, and of the index of
    the message holding it for its changes (:meth:`changes`)."""

    __slots__ = (
        "_changes",
        "_has_path",
        "block",
        "commands",
        "label",
        "name",
        "ops",
        "polled",
        "short_label",
        "tool_id",
    )

    def __init__(self, block: Block, index: int) -> None:
        tool_input = block.get("input")
        polled = tool_input.get("session_id") if isinstance(tool_input, (dict, Mapping)) else None
        self.block = block
        self.name = str(block.get("name") or "tool")
        self.tool_id = str(block.get("id") or "")
        self.label = call_label(block)
        self.short_label = call_label(block, words=8)
        #: The session a call polls (Codex ``write_stdin``), as text: its label depends on the
        #: calls before it (:meth:`_Reader._label`).
        self.polled = None if polled is None else str(polled)
        self.commands = tuple(command_texts(tool_input))
        self.ops = tuple(tool_file_ops(self.name, tool_input))
        self._changes = tuple(changes_of(index, block))
        self._has_path: bool | None = None

    def changes(self, index: int) -> tuple[Change, ...]:
        """:func:`changes_of` the call at message ``index`` (a list that holds its message at
        another index has them at that one)."""
        found = self._changes
        if found and found[0].index != index:
            return tuple(Change(index, c.path, c.how, c.text) for c in found)
        return found

    def has_path(self) -> bool:
        if self._has_path is None:
            self._has_path = _has_path(self.block)
        return self._has_path


class _Result:
    """A tool_result block as the reader needs it: a function of the block (whether it failed
    also of :attr:`.Later.flags_reported`, what its test run says also of the call's command)."""

    __slots__ = (
        "_broke_flagged",
        "_broke_unflagged",
        "_failure",
        "_output",
        "_tests",
        "block",
        "body",
        "feedback",
        "name",
        "rejected",
        "running",
        "tool_id",
    )

    def __init__(self, block: Block) -> None:
        self.block = block
        self.tool_id = str(block.get("tool_use_id") or "")
        self.name = str(block.get("name") or "tool")
        self.body = body = tool_result_text(block)
        running = _RUNNING.search(body[:300])
        #: The session id of a command still running.
        self.running = running.group(1) if running else None
        self.rejected = is_rejection(body)
        #: The user's words given while rejecting the call.
        self.feedback = rejection_feedback(body) if self.rejected else ""
        self._broke_flagged: bool | None = None
        self._broke_unflagged: bool | None = None
        self._failure: tuple[str, ...] | None = None
        self._tests: dict[tuple[str, bool], TestRun | None] | None = None
        self._output: str | None = None

    def broke(self, flags_reported: bool) -> bool:
        """:func:`failed`, whose last rule depends on the transcript (``flags_reported``)."""
        if flags_reported:
            if self._broke_flagged is None:
                self._broke_flagged = failed(self.block, self.body, flags_reported=True)
            return self._broke_flagged
        if self._broke_unflagged is None:
            self._broke_unflagged = failed(self.block, self.body, flags_reported=False)
        return self._broke_unflagged

    def failure(self) -> tuple[str, ...]:
        if self._failure is None:
            self._failure = tuple(failure_lines(self.body))
        return self._failure

    def test_run(self, index: int, command: str, broke: bool) -> TestRun | None:
        """:func:`read_tests` of this result of ``command``, at message ``index``."""
        if self._tests is None:
            self._tests = {}
        key = (command, broke)
        if key in self._tests:
            run = self._tests[key]
        else:
            failure = self.failure() if broke else ()
            run = read_tests(index, command, self.body, command_failed=broke, failure=failure)
            self._tests[key] = run
        if run is not None and run.index != index:
            return TestRun(index, run.command, run.status, run.summary, run.failures)
        return run

    def output(self) -> str:
        if self._output is None:
            self._output = output_of(self.body)
        return self._output


class _Heard:
    """A user message by itself: the files restored in it, the earlier summary it is, the
    harness's events in it, its tool results, its words (before the templates repeated across
    the transcript are dropped, :func:`_user_texts`)."""

    __slots__ = ("earlier", "events", "only_restored", "restored", "results", "words")

    def __init__(self, message: Message) -> None:
        self.restored = restored = restored_file_paths(message)
        # A Claude Code session joins its summary and the files restored after it into one
        # message: the files are restored again, never carried inside the summary.
        own = [b for b in message.content if restored_block_path(b) is None] if restored else message.content
        #: :func:`user_words` of its blocks (``None``: it has no text block).
        self.words = user_words(own) if any(b.get("type") == "text" for b in message.content) else None
        raw = texts(own)
        #: Nothing but restored files.
        self.only_restored = bool(restored) and not raw
        self.earlier: str | None = None
        self.events: tuple[str, ...] = ()
        self.results: tuple[_Result, ...] = ()
        if self.only_restored:
            return
        prefix = next((p for p in EARLIER_SUMMARY_PREFIXES if raw.startswith(p)), None)
        if prefix is not None:
            # Ours: drop the marker line. Claude Code's: its opening sentence goes in :mod:`.earlier`.
            body = raw[len(prefix) :].lstrip(" .:\n") if prefix == SUMMARY_PREFIX.rstrip() else raw
            self.earlier = body.rstrip()
            return
        self.events = tuple(notifications(message.content))
        self.results = tuple(_Result(b) for b in message.content if b.get("type") == "tool_result")


class _Spoken:
    """An assistant message by itself: its text (``""`` if it said nothing or one of our
    acknowledgements), the sentences of its prose, its conclusions, the names it wrote in
    backticks and the figures it gave (:func:`_mentions`), its calls."""

    __slots__ = ("_names", "_plans", "calls", "concepts", "conclusions", "figures", "said", "text")

    def __init__(self, message: Message, index: int) -> None:
        self.calls = tuple(_Call(b, index) for b in message.content if b.get("type") == "tool_use")
        self._names: list[str] | None = None
        self._plans: set[str] | None = None
        text = texts(message.content)
        self.text = "" if text in OUR_ACKS else text
        # One split, for each reader of its sentences. Tuples: kept for the scope, and a tuple
        # of strings is one the garbage collector stops tracking.
        said = sentences(prose(self.text)) if self.text else ()
        self.said: tuple[str, ...] = tuple(said)
        self.conclusions: tuple[str, ...] = tuple(conclusions_among(said)) if said else ()
        self.concepts, self.figures = _mentions(self.text) if self.text else _NO_MENTIONS

    def names(self) -> list[str]:
        """:func:`names_in` its text."""
        if self._names is None:
            self._names = names_in(self.text)
        return self._names

    def plans(self) -> set[str]:
        """Its sentences about what it does next."""
        if self._plans is None:
            self._plans = set(intents_among(list(self.said)))
        return self._plans


class _Asked:
    """A request's text by itself: its instruction sentences and its mentions."""

    __slots__ = ("concepts", "figures", "rules")

    def __init__(self, text: str) -> None:
        self.rules = instructions(text)
        self.concepts, self.figures = _mentions(text)


_NO_MENTIONS: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def _mentions(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names ``text`` gives in backticks (each time) and the figures in it, in order."""
    return (
        tuple(m.group(1) for m in _CODE_SPAN.finditer(text)) if "`" in text else (),
        tuple(m.group(0) for m in NUMBER_WITH_UNIT.finditer(text)),
    )


def _readings(messages: Sequence[Message], shared: _Shared | None) -> list[_Heard | _Spoken | None]:
    """What each message says by itself (``None``: a message of another role); within a
    :func:`shared_facts` scope, a message read before is not read again."""
    if shared is None:
        return [
            _Spoken(m, i) if m.role == "assistant" else _Heard(m) if m.role == "user" else None
            for i, m in enumerate(messages)
        ]
    memo = shared.messages
    out: list[_Heard | _Spoken | None] = []
    for i, message in enumerate(messages):
        found = memo.get(id(message))
        if found is None:
            role = message.role
            reading = (
                _Spoken(message, i) if role == "assistant" else _Heard(message) if role == "user" else None
            )
            found = memo[id(message)] = (message, reading)
        out.append(found[1])
    return out


def _asked(text: str, shared: _Shared | None) -> _Asked:
    if shared is None:
        return _Asked(text)
    found = shared.requests.get(text)
    if found is None:
        found = shared.requests[text] = _Asked(text)
    return found


# -- the pass that carries what came before ---------------------------------------------------


class _Reader:
    """One pass over the messages, filling a :class:`Facts` from each one's :func:`_reading`."""

    def __init__(self, messages: Sequence[Message], shared: _Shared | None = None) -> None:
        self.messages = messages
        self.shared = shared
        self.facts = Facts()
        self.later = Later.index(messages)
        self.calls: dict[str, tuple[int, _Call]] = {}
        #: The calls whose result has not come yet: their file operations and changes wait
        #: for it (a file tool that failed did nothing to its file).
        self.pending: dict[str, _Call] = {}
        self.actions: dict[str, Action] = {}
        self.tasks: dict[str, tuple[str, str]] = {}
        self.turn_text = ""
        self.turn_notes: list[str] = []
        self.sessions: dict[str, str] = {}  # a running command's session id -> its call
        self.unseen: list[tuple[str, _Result]] = []  # (call label, result) since the agent last spoke
        # What facts.rules and facts.conclusions hold: the lists keep the order, these the look-ups.
        self.listed_rules: set[str] = set()
        self.listed_conclusions: set[str] = set()

    def read(self) -> Facts:
        facts = self.facts
        readings = _readings(self.messages, self.shared)
        words = _user_texts(readings)
        for index, reading in enumerate(readings):
            if isinstance(reading, _Heard):
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

    def _read_user(self, index: int, heard: _Heard, text: str) -> None:
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
        asked = _asked(request.text, self.shared)
        for sentence in asked.rules:
            item = f"- {sentence}"
            if item not in self.listed_rules:
                self.listed_rules.add(item)
                facts.rules.append(item)
            if is_task:
                facts.task_rules.add(item)
        self._add_mentions(asked.concepts, asked.figures, weight=2)

    def _read_results(self, index: int, results: tuple[_Result, ...]) -> None:
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

    def _label(self, call: _Call, *, short: bool = False) -> str:
        """:func:`call_label` (of 8 words when ``short``, else 12), or for a call that polls a
        running command's session (Codex ``write_stdin``), the command it polls."""
        if call.polled is not None and call.polled in self.sessions:
            return f"{call.name}(session {call.polled}: {self.sessions[call.polled]})"
        return call.short_label if short else call.label

    def _failed(self, result: Block) -> bool:
        return failed(result, tool_result_text(result), flags_reported=self.later.flags_reported)

    # -- assistant messages --

    def _read_assistant(self, index: int, spoken: _Spoken) -> None:
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

    def _add_findings(self, index: int, spoken: _Spoken) -> None:
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


def _has_path(call: Block) -> bool:
    tool_input = call.get("input")
    return isinstance(tool_input, (dict, Mapping)) and any(
        isinstance(tool_input.get(k), str) for k in PATH_FIELDS
    )


def _user_texts(readings: Sequence[_Heard | _Spoken | None]) -> dict[int, str]:
    """Each user message's own words: wrappers stripped per block (:attr:`_Heard.words`),
    repeated templates dropped (across the messages read)."""
    heard = [(i, r.words) for i, r in enumerate(readings) if isinstance(r, _Heard) and r.words is not None]
    return dict(zip([i for i, _ in heard], drop_templates([w for _, w in heard]), strict=True))
