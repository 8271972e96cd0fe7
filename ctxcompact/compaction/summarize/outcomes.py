"""What a tool call came to: whether the command failed, its error lines, its test status.

*A failure is a failure of the command that ran*, never a line quoted inside a successful
log (:func:`failed`):

1. the result says so (``is_error``; Claude Code's rejections aside, see
   :mod:`.boilerplate`);
2. else the harness printed the command's exit status where harnesses print it — Claude
   Code's and Codex's ``Exit code N`` first line, Codex's ``Process exited with code N``
   header, mini-swe-agent's ``<returncode>N</returncode>``, a ``[exit code: N]`` last line,
   Codex's ``"exit_code": N`` metadata: non-zero is a failure, zero is a success;
3. else, in a transcript whose results carry ``is_error`` (the dialect reports failures), no
   flag means success;
4. else (chat-completions tools report nothing) an error line among the last lines of the
   output — a traceback or an ``Error:`` that ends it — is the command failing.

*Test status is read from the output* (:func:`read_tests`) of a test command (pytest, unittest
and Django's runner, go, cargo, jest/vitest, mocha, rspec, npm/yarn/pnpm test, make test…),
whatever the exit code: ``pytest … | tail`` exits 0 when tests fail.

Every scan is linear in the text (a newline-free tool result with "error" every 60
characters used to take quadratic time).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxcompact.compaction.scan import LinePattern, lowered_pattern
from ctxcompact.ir import Block

#: The end of an output where a harness's frame is looked for.
FRAME_TAIL_CHARS = 600
#: Lines at the end of an output where an error means the command failed (rule 4).
TAIL_LINES = 3
TEST_FAILURES_SHOWN = 3

#: An error line (case-insensitive): what starts it (:data:`_ERROR_HEAD`), or what may stand
#: anywhere in it (:data:`_ERROR_ANYWHERE`).
_ERROR_HEAD = (
    r"\s*(?:E\s+)?(?:Traceback \(most recent call last\)|[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b:|"
    r"(?:error|fatal|panic)(?:\[\w+\])?:|(?:FAILED|ERROR)\s+\S+::|FAILED \()"
)
_ERROR_ANYWHERE = r"\b\d+ failed\b|\bexit (?:code|status):? *[1-9]\d*\b|<tool_use_error>"
_ERROR_LINE = re.compile(f"^{_ERROR_HEAD}|{_ERROR_ANYWHERE}", re.IGNORECASE)
#: The two parts for a lowered ASCII line (:mod:`ctxcompact.compaction.scan`), and the
#: words each alternative of the second needs: a line without one is not searched for it.
_ERROR_HEAD_LOWERED = lowered_pattern(_ERROR_HEAD)
_ERROR_ANYWHERE_LOWERED = lowered_pattern(_ERROR_ANYWHERE)
_ERROR_ANYWHERE_WORDS = ("failed", "exit", "<tool_use_error>")
#: The line-start part over a whole lowered text: its spaces kept on the line (``\s`` would
#: cross line breaks), tried at the text's start and after each line break.
_ERROR_HEAD_ON_LINE = _ERROR_HEAD.replace(r"\s", r"[^\S\n]")
_ERROR_HEAD_FIRST_LINE = lowered_pattern(_ERROR_HEAD_ON_LINE)
_ERROR_HEAD_AFTER_BREAK = lowered_pattern(f"\n{_ERROR_HEAD_ON_LINE}")
#: Every match of :data:`_ERROR_LINE` holds one of these words (in any case): a line without
#: one is not searched (found by substring scans of the lowered text, not by a regex).
_ERROR_WORDS = ("traceback", "error", "exception", "exit", "fatal", "panic", "failed")
#: Line breaks ``str.splitlines`` knows besides ``\n``: a text with one is re-joined on ``\n``.
_OTHER_LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # looked for with `in`: faster than a regex
_NONSPACE = re.compile(r"\S")
_PYTEST_E = re.compile(r"^\s*E\s{2,}")  # pytest's "E   " before an error line

_EXIT_HEAD = re.compile(
    r"\A\s*(?:Exit code:? (-?\d+)|<returncode>(-?\d+)</returncode>)|"
    r"\A(?:[^\n]*\n){0,4}Process exited with code (-?\d+)"
)
_EXIT_TAIL = re.compile(r"\[exit code: (-?\d+)\]\s*\Z|\"exit_code\":\s*(-?\d+)")
_FRAME_HEAD = re.compile(
    r"\A\s*(?:<returncode>-?\d+</returncode>\s*(?:<output>\n?)?|Exit code:? -?\d+[ \t]*\n"
    r"|(?:(?:Chunk ID|Wall time|Process exited with code|Process running with session ID|Original token count)"
    r"[^\n]*\n)+(?:Output:\n)?)"
)
_FRAME_TAIL = re.compile(
    r"\n?(?:</output>|\[exit code: -?\d+\]|\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n(?:bash-\$)?)\s*\Z"
)
#: One of these is in every match of :data:`_FRAME_TAIL` (looked up before the regex scans).
_FRAME_TAIL_WORDS = ("</output>", "[exit code: ", "(Open file: ")

TEST_COMMAND = re.compile(
    r"\b(?:py\.?test|tox|nox|unittest|runtests\.py|manage\.py\s+test|go\s+test|cargo\s+(?:test|nextest)|"
    r"(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test|deno\s+test|jest|vitest|mocha|rspec|phpunit|"
    r"mvn\b[^|;&\n]*\btest|gradlew?\b[^|;&\n]*\btest|dotnet\s+test|mix\s+test|ctest|make\s+(?:test|check)|"
    r"mise\s+run\s+test|just\s+test)\b"
)
#: Summary lines of test runners, and the failing tests they name. The runs of spaces, "="
#: and counts before what must follow them are possessive (``*+``, ``++``): what follows
#: cannot start with what they hold, so giving any back never helps a match — and an indented
#: line of a log is not walked back character by character (a test compares the two forms).
_TEST_SUMMARY = LinePattern(
    r"^[ =]*+((?:\d+ (?:failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?)[, ]*+)++)(?:in [\d.]+s)?[ =]*$"
    r"|^(Ran \d+ tests? in [\d.]+s)$|^(OK(?: \(.*\))?|FAILED \(.*\))$"
    r"|^(Tests?:\s+.*\d+ (?:passed|failed|total).*)$|^(Test Files\s+.*)$"
    r"|^(test result: (?:ok|FAILED)\..*)$|^((?:ok|FAIL)\s+\S+\s+[\d.]+s)$|^(PASS|FAIL)$"
    r"|^\s*+(\d+ passing.*|\d+ failing.*)$|^(\d+ examples?, \d+ failures?.*)$",
)
_TEST_FAILED_NAME = LinePattern(r"^(?:FAILED|ERROR) (\S+)|^--- FAIL: (\S+)|^FAIL:? (\S+(?: \(.*\))?)$")
_FAILING = re.compile(
    r"\b[1-9]\d* (?:failed|errors?|failing|failures?)\b|\bFAILED\b|^FAIL\b|test result: FAILED", re.MULTILINE
)


def exit_status(text: str) -> int | None:
    """The command's exit status where a harness prints it (see the module docstring)."""
    # Each pattern needs a word the look-up finds faster than the regex fails (it runs once
    # per error line of a failed output).
    start, end = text[:400], text[-200:]
    head = _EXIT_HEAD.search(start) if "xit" in start or "<returncode>" in start else None
    if head:
        return int(next(g for g in head.groups() if g is not None))
    tail = _EXIT_TAIL.search(end) if "exit" in end else None
    if tail:
        return int(next(g for g in tail.groups() if g is not None))
    return None


def failed(result: Block, text: str, *, flags_reported: bool) -> bool:
    """Whether the command behind ``result`` (its text ``text``) failed (module docstring)."""
    if result.get("is_error"):
        return True
    status = exit_status(text)
    if status is not None:
        return status != 0
    if flags_reported:
        return False
    tail = [line for line in text[-2000:].splitlines() if line.strip()][-TAIL_LINES:]
    return any(is_error_line(line) for line in tail)


def is_error_line(line: str) -> bool:
    """Whether :data:`_ERROR_LINE` matches ``line`` (one line: no line break in it). An ASCII
    line is lowered once and matched at its start, then searched only if it holds a word the
    rest needs: a regex scan of every position of every line was most of a summary's time on
    error-dense transcripts."""
    if not line.isascii():
        return _ERROR_LINE.search(line) is not None
    low = line.lower()
    return _ERROR_HEAD_LOWERED.match(low) is not None or (
        any(word in low for word in _ERROR_ANYWHERE_WORDS) and _ERROR_ANYWHERE_LOWERED.search(low) is not None
    )


def output_of(text: str) -> str:
    """A tool result's output without the harness's frame: mini-swe-agent's
    ``<returncode>``/``<output>`` tags, Codex's header lines, an ``Exit code N`` first line,
    a ``[exit code: N]`` last line, SWE-agent's ``(Open file: …)``/``(Current directory: …)``
    and prompt lines."""
    head = _FRAME_HEAD.match(text)
    if head:
        text = text[head.end() :]
    end = text[-FRAME_TAIL_CHARS:]
    tail = _frame_tail_start(end)
    if tail is not None:
        text = text[: len(text) - FRAME_TAIL_CHARS + tail] if len(text) > FRAME_TAIL_CHARS else text[:tail]
    return text


def _frame_tail_start(end: str) -> int | None:
    """Where ``_FRAME_TAIL.search(end)`` matches: tried only where one of its words starts (or
    at the line break just before it), leftmost first — not at each of the 600 positions."""
    starts: set[int] = set()
    for word in _FRAME_TAIL_WORDS:
        at = end.find(word)
        while at >= 0:
            starts.update((at - 1, at) if at and end[at - 1] == "\n" else (at,))
            at = end.find(word, at + 1)
    return next((at for at in sorted(starts) if _FRAME_TAIL.match(end, at)), None)


def last_output_line(text: str) -> str:
    lines = [line.strip() for line in output_of(text)[-2000:].splitlines() if line.strip()]
    return lines[-1] if lines else ""


def failure_lines(text: str) -> list[str]:
    """What to show of a failed command: its error lines (:func:`error_lines`), else its first
    line of three words or more and its last line, the harness's frame left out."""
    # A line without "xit" (exit, Exit, exited) or "<returncode>" states no exit status: it
    # is kept without a call of exit_status, once per error line of a long log.
    found = [
        line
        for line in error_lines(output_of(text))
        if ("xit" not in line and "<returncode>" not in line) or exit_status(line) is None
    ]
    if found:
        return found
    lines = [line.strip() for line in output_of(text)[-4000:].splitlines() if line.strip()]
    first = next((line for line in lines if len(line.split()) >= 3), "")
    last = lines[-1] if lines else ""
    # A CLI's message is usually its first sentence, a runtime's its last line: both, once.
    return [line for line in dict.fromkeys((first, last)) if line] or ["(no output)"]


def error_lines(text: str) -> list[str]:
    """The error lines of a tool output (each once, in order; a bare ``Traceback`` header only
    when nothing more informative is there): the lines :data:`_ERROR_LINE` matches."""
    found: dict[str, None] = {}  # ordered, and a look-up per line (a list made it quadratic)
    if any(c in text for c in _OTHER_LINE_BREAKS):
        text = "\n".join(text.splitlines())  # the same lines, now cut at "\n" alone
    if text.isascii():
        matching: Iterable[str] = _ascii_error_lines(text)
    else:
        matching = (line for line in _candidate_lines(text) if is_error_line(line))
    for line in matching:
        # Each rewrite only where its text is (a C look-up per line, not a regex call).
        if "E" in line:
            line = _PYTEST_E.sub("", line)
        line = line.strip(" =")
        if "tool_use_error>" in line:
            line = line.replace("<tool_use_error>", "").replace("</tool_use_error>", "")
        line = line.strip()
        if line:
            found.setdefault(line, None)
    informative = [line for line in found if not line.startswith("Traceback")]
    return informative or list(found)


def _ascii_error_lines(text: str) -> list[str]:
    """The lines of an ASCII ``text`` cut at ``"\\n"`` alone that :data:`_ERROR_LINE` matches,
    in order, found in the lowered text (:mod:`ctxcompact.compaction.scan`): the start of an
    error line by one scan of the engine from line break to line break (the line-start part
    with its spaces kept on the line), the rest searched only on the lines holding a word it
    needs. Linear, and cheap per line however many lines hold an error."""
    low = text.lower()
    starts = [0] if _ERROR_HEAD_FIRST_LINE.match(low) else []
    starts += [m.start() + 1 for m in _ERROR_HEAD_AFTER_BREAK.finditer(low)]
    # The lines found by a word alone, in order of their word: made into a set, and the
    # starts sorted, only when there is one (an error on every line of a long log found them
    # all by their start: no set and no sort of 100,000 positions then).
    more: list[int] = []
    head: set[int] | None = None
    for word in _ERROR_ANYWHERE_WORDS:
        at = low.find(word)
        while at >= 0:
            start = low.rfind("\n", 0, at) + 1
            end = low.find("\n", at)
            end = len(low) if end < 0 else end
            if head is None:
                head = set(starts)
            if start not in head and _ERROR_ANYWHERE_LOWERED.search(low, start, end):
                head.add(start)
                more.append(start)
            at = low.find(word, end)
    if more:
        starts = sorted(starts + more)
    lines = []
    for start in starts:
        end = text.find("\n", start)
        lines.append(text[start:] if end < 0 else text[start:end])
    return lines


def _candidate_lines(text: str) -> list[str]:
    """The lines of ``text`` (as ``str.splitlines`` cuts them) that hold one of
    :data:`_ERROR_WORDS` where a match could use it (:func:`_may_match`), in order: substring
    scans of the lowered text instead of a regex per line, each line's bounds found once.

    Exact: a character the regex's IGNORECASE matches to a letter of those words lowers to that
    letter, except dotless ``ı`` (matches ``i``) and ``İ`` (lowers to two characters, so
    positions shift): with either, every line is a candidate.
    """
    if any(c in text for c in _OTHER_LINE_BREAKS):
        text = "\n".join(text.splitlines())  # the same lines, now cut at "\n" alone
    low = text.lower()
    if len(low) != len(text) or "\u0131" in text:
        return text.split("\n")
    breaks = [m.start() for m in re.finditer("\n", low)] if "\n" in low else []
    starts: set[int] = set()
    lead: dict[int, tuple[int, int]] = {}  # line start -> its first two non-space positions
    for word in _ERROR_WORDS:
        at = low.find(word)
        while at >= 0:
            line = bisect_right(breaks, at - 1)  # the line holding `at`
            start = breaks[line - 1] + 1 if line else 0
            end = breaks[line] if line < len(breaks) else len(low)
            if start not in starts and _may_match(low, start, at, word, lead, end):
                starts.add(start)
                at = low.find(word, end)
            else:
                at = low.find(word, at + 1)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start:] if end < 0 else text[start:end])
    return lines


def _may_match(low: str, start: int, at: int, word: str, lead: dict[int, tuple[int, int]], end: int) -> bool:
    """Whether the error word at ``at`` (its line ``low[start:end]``) can be part of a match
    of :data:`_ERROR_LINE`: what each of its alternatives needs next to that word ("Error:",
    "error[E1]:", "<tool_use_error>", "ERROR x::" at the line's start, "3 failed", "exit code")."""
    nxt = low[at + len(word) : at + len(word) + 1]
    if word == "error":
        return nxt in (":", "[", ">") or (nxt.isspace() and _blank_or_e(low, start, at, lead, end))
    if word == "failed":
        return nxt.isspace() or low[at - 1 : at] == " "
    if word == "exit":
        return nxt in (":", " ")
    return nxt == {"traceback": " ", "exception": ":"}.get(word) or (
        word in ("fatal", "panic") and nxt in (":", "[")
    )


def _blank_or_e(low: str, start: int, at: int, lead: dict[int, tuple[int, int]], end: int) -> bool:
    """``low[start:at].strip() in ("", "e")``, from the line's first two non-space positions
    (found once per line, not once per word on it)."""
    found = lead.get(start)
    if found is None:
        first = _NONSPACE.search(low, start, end)
        one = first.start() if first else end
        second = _NONSPACE.search(low, one + 1, end) if first else None
        found = lead[start] = (one, second.start() if second else end)
    one, two = found
    return one >= at or (low[one] == "e" and two >= at)


@dataclass(frozen=True, slots=True)
class TestRun:
    """One run of a test command: ``status`` passed / failed / unknown, the runner's summary
    line, and the first failing tests it named."""

    index: int
    command: str
    status: str
    summary: str
    failures: tuple[str, ...] = ()


def read_tests(
    index: int, command: str, text: str, *, command_failed: bool, failure: Sequence[str] = ()
) -> TestRun | None:
    """The test status of a test command's output; ``None`` when ``command`` runs no tests.
    ``failure``: the output's :func:`failure_lines` when the caller has read them already."""
    if not TEST_COMMAND.search(command):
        return None
    summaries = [next(g for g in groups if g) for groups in _TEST_SUMMARY.groups_of(text)]
    found: dict[str, None] = {}
    for groups in _TEST_FAILED_NAME.groups_of(text):
        found.setdefault(next(g for g in groups if g), None)
    names = list(found)
    failing = bool(names) or any(_FAILING.search(s) for s in summaries)
    if failing or (command_failed and not summaries):
        status = "failed"
    elif summaries:
        status = "passed"
    else:
        status = "unknown"
    summary = "; ".join(s.strip(" =") for s in summaries[-2:])
    if not summary:
        summary = (
            "; ".join((failure or failure_lines(text))[:2]) if command_failed else last_output_line(text)
        )
    return TestRun(index, command, status, summary, tuple(names[:TEST_FAILURES_SHOWN]))
