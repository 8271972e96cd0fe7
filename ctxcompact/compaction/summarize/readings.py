"""What each message of a transcript says by itself, as the summary's facts (:mod:`.facts`)
read it: a function of the message alone, so ``eval``, which reads several parts of one
conversation (the probes' and a strategy's older part), reads each message once
(:func:`.facts.shared_facts`).

* a user message (:class:`Heard`): the files restored in it, the earlier summary it is, the
  harness's events, its tool results, its own words before the templates repeated across the
  transcript are dropped (that needs the whole list: :mod:`.facts`);
* an assistant message (:class:`Spoken`): its text, the sentences of its prose, its
  conclusions, the names it wrote in backticks and its figures, its calls;
* a call (:class:`Call`): its labels, commands, file operations and changes (those carry the
  message's index: a list holding the message elsewhere gets them at its own);
* a result (:class:`Result`): its text, a running session, a rejection and the user's words
  in it; whether it failed (which also depends on whether the transcript's results carry
  ``is_error``), its failure lines, a test run's status (which also depends on the call's
  command), its output without the harness's frame, each read when first asked.

What depends on the messages before or after one (the turn, the calls waiting for their
results, running sessions, to-do tasks, what follows an error) is :mod:`.facts`' pass.
Plain classes with slots, each filled by its constructor: a long session makes tens of
thousands of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ctxcompact.compaction.summarize.boilerplate import (
    is_rejection,
    notifications,
    rejection_feedback,
    user_words,
)
from ctxcompact.compaction.summarize.calls import Change, call_label, changes_of
from ctxcompact.compaction.summarize.gist import names_in
from ctxcompact.compaction.summarize.outcomes import TestRun, failed, failure_lines, output_of, read_tests
from ctxcompact.compaction.summarize.shell_files import PATH_FIELDS, command_texts, tool_file_ops
from ctxcompact.compaction.summarize.statements import (
    conclusions_among,
    instructions,
    intents_among,
    prose,
    sentences,
    texts,
)
from ctxcompact.ir import Block, Message, tool_result_text
from ctxcompact.markers import (
    EARLIER_SUMMARY_PREFIXES,
    OUR_ACKS,
    SUMMARY_PREFIX,
    restored_block_path,
    restored_file_paths,
)

#: A number with a unit ("30 s", "512 MB", "20,000 tokens", "95 %"): the figures a task turns on.
#: Not after a word character or a point: ``(?<![\w.])\d`` written as ``\d(?<![\w.]\d)``, the
#: same matches, but the engine skips to a digit before it tries one (the look-behind first
#: made it try at every position).
NUMBER_WITH_UNIT = re.compile(
    r"\d(?<![\w.]\d)\d{0,2}(?:,\d{3})*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|kB|bytes|tokens|chars|characters|words|lines|%|px|rem|em|GHz|MHz|x)(?![\w])",
)
_RUNNING = re.compile(r"Process running with session ID (\w+)")
_CODE_SPAN = re.compile(r"`([A-Za-z_][\w.:/-]{2,60}(?:\(\))?)`")


class Call:
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
        #: calls before it (:mod:`.facts`).
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


class Result:
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


class Heard:
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
        self.results: tuple[Result, ...] = ()
        if self.only_restored:
            return
        prefix = next((p for p in EARLIER_SUMMARY_PREFIXES if raw.startswith(p)), None)
        if prefix is not None:
            # Ours: drop the marker line. Claude Code's: its opening sentence goes in :mod:`.earlier`.
            body = raw[len(prefix) :].lstrip(" .:\n") if prefix == SUMMARY_PREFIX.rstrip() else raw
            self.earlier = body.rstrip()
            return
        self.events = tuple(notifications(message.content))
        self.results = tuple(Result(b) for b in message.content if b.get("type") == "tool_result")


class Spoken:
    """An assistant message by itself: its text (``""`` if it said nothing or one of our
    acknowledgements), the sentences of its prose, its conclusions, the names it wrote in
    backticks and the figures it gave (:func:`mentions`), its calls."""

    __slots__ = ("_names", "_plans", "calls", "concepts", "conclusions", "figures", "said", "text")

    def __init__(self, message: Message, index: int) -> None:
        self.calls = tuple(Call(b, index) for b in message.content if b.get("type") == "tool_use")
        self._names: list[str] | None = None
        self._plans: set[str] | None = None
        text = texts(message.content)
        self.text = "" if text in OUR_ACKS else text
        # One split, for each reader of its sentences. Tuples: kept for the scope, and a tuple
        # of strings is one the garbage collector stops tracking.
        said = sentences(prose(self.text)) if self.text else ()
        self.said: tuple[str, ...] = tuple(said)
        self.conclusions: tuple[str, ...] = tuple(conclusions_among(said)) if said else ()
        self.concepts, self.figures = mentions(self.text) if self.text else _NO_MENTIONS

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


class Asked:
    """A request's text by itself: its instruction sentences and its mentions."""

    __slots__ = ("concepts", "figures", "rules")

    def __init__(self, text: str) -> None:
        self.rules = instructions(text)
        self.concepts, self.figures = mentions(text)


_NO_MENTIONS: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())


def mentions(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names ``text`` gives in backticks (each time) and the figures in it, in order."""
    return (
        tuple(m.group(1) for m in _CODE_SPAN.finditer(text)) if "`" in text else (),
        tuple(m.group(0) for m in NUMBER_WITH_UNIT.finditer(text)),
    )


#: What messages read before said, by the message's id (the message held: its id stays its own).
MessageMemo = dict[int, tuple[Message, "Heard | Spoken | None"]]


def read_messages(messages: Sequence[Message], memo: MessageMemo | None) -> list[Heard | Spoken | None]:
    """What each message says by itself (``None``: a message of another role); the ones in
    ``memo`` are not read again, the others are added to it."""
    if memo is None:
        return [
            Spoken(m, i) if m.role == "assistant" else Heard(m) if m.role == "user" else None
            for i, m in enumerate(messages)
        ]
    out: list[Heard | Spoken | None] = []
    for i, message in enumerate(messages):
        found = memo.get(id(message))
        if found is None:
            role = message.role
            reading = (
                Spoken(message, i) if role == "assistant" else Heard(message) if role == "user" else None
            )
            found = memo[id(message)] = (message, reading)
        out.append(found[1])
    return out


def read_request(text: str, memo: dict[str, Asked] | None) -> Asked:
    """What a request's text says (see :func:`read_messages` for ``memo``)."""
    if memo is None:
        return Asked(text)
    found = memo.get(text)
    if found is None:
        found = memo[text] = Asked(text)
    return found


def _has_path(call: Block) -> bool:
    tool_input = call.get("input")
    return isinstance(tool_input, (dict, Mapping)) and any(
        isinstance(tool_input.get(k), str) for k in PATH_FIELDS
    )
