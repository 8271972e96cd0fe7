"""What a tool result showed, in a few of its own lines: the state an agent goes on from.

:func:`shown_lines` picks, for one call and its result, the lines worth carrying (quoted, never
rephrased), in this order until its room is spent:

1. for a call that edits a file: the change as diff lines (``-`` old, ``+`` new; read from the
   call, :func:`~.calls.edits`) — a script that dropped a line shows the ``-`` line;
2. a failed command's error lines (:func:`~.outcomes.failure_lines`);
3. a test command's runner summary and the failing tests it named;
4. the lines holding a name the agent wrote in backticks in its words right after the result
   (:func:`referred_lines`) — what it read there and talked about;
5. error lines of a command that did not fail;
6. else the output's first lines and its last line, with how many lines it had.

Every scan is linear in the result's text; a line is cut to :data:`LINE_WORDS` words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from ctxcompact.compaction.summarize.calls import edits
from ctxcompact.compaction.summarize.layout import clip_words
from ctxcompact.compaction.summarize.outcomes import TestRun, error_lines, failure_lines, output_of
from ctxcompact.ir import Block

LINE_WORDS = 30
NO_OUTPUT = "(no output)"
#: A line number a file reader puts before each line (``cat -n``, Claude Code's ``  42→``).
_NUMBERED = r"(?:\d+[→:\t|]\s*|\d+\s+)?"
#: A line of code that defines something: what a file read is an outline of.
_DEFINITION = re.compile(
    rf"^{_NUMBERED}(?:export\s+(?:default\s+)?)?(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function|interface|type|enum|struct|trait|impl|fn|func|module)\s+\w"
)
#: A comment line: a licence header is not what a file holds.
_COMMENT = re.compile(rf"^{_NUMBERED}(?://|/\*|\*|<!--|#(?:!|\s|$)|--\s)")
#: The most lines one result contributes (its room decides how many are shown).
MAX_LINES = 8
#: The first lines of an output shown when nothing in it stands out.
HEAD_LINES = 3
#: Lines of an edit's old and new text compared: a longer edit is shown by its first lines.
DIFF_LINES = 200
#: A backticked name the agent wrote: what it points at in a result.
NAME_SPAN = re.compile(r"`([^`\n]{3,80})`")
#: The most names of one message looked up in the results before it.
MAX_NAMES = 8


def names_in(text: str) -> list[str]:
    """The backticked names in ``text``, in order, each once, at most :data:`MAX_NAMES`."""
    found: dict[str, None] = {}
    for match in NAME_SPAN.finditer(text):
        name = match.group(1).strip()
        if len(name) >= 3:
            found.setdefault(name, None)
            if len(found) >= MAX_NAMES:
                break
    return list(found)


def referred_lines(output: str, names: Iterable[str], *, limit: int = 3) -> list[tuple[str, str]]:
    """``(name, line)``: the first line of ``output`` holding each name (each line once), at
    most ``limit``; a line that is the name alone says nothing more and is skipped."""
    found: list[tuple[str, str]] = []
    lines: set[str] = set()
    for name in names:
        at = output.find(name)
        while at >= 0:
            start = output.rfind("\n", 0, at) + 1
            end = output.find("\n", at)
            line = output[start : end if end >= 0 else len(output)].strip()
            if line and line.strip("`'\" ") != name:
                if line not in lines:
                    lines.add(line)
                    found.append((name, clip_words(line, LINE_WORDS)))
                break
            if end < 0:
                break
            at = output.find(name, end)
        if len(found) >= limit:
            break
    return found


def diff_lines(old: str | None, new: str) -> list[str]:
    """An edit as ``-``/``+`` lines, only the lines that changed (a write: its first lines)."""
    if old is None:
        added = [line for line in new.splitlines()[:DIFF_LINES] if line.strip()]
        return [f"+ {line.strip()}" for line in added]
    before = old.splitlines()[:DIFF_LINES]
    after = new.splitlines()[:DIFF_LINES]
    out = []
    for line in difflib.unified_diff(before, after, n=0, lineterm=""):
        if line.startswith(("---", "+++", "@@")):
            continue
        if line[1:].strip():
            out.append(f"{line[0]} {line[1:].strip()}")
    return out


def shown_lines(
    call: Block | None,
    body: str,
    *,
    broke: bool,
    test: TestRun | None,
    said: str,
    failure: Sequence[str] = (),
) -> tuple[str, ...]:
    """The lines worth carrying of one call's result (see the module docstring), each cut to
    :data:`LINE_WORDS` words, at most :data:`MAX_LINES`. ``failure``: the result's
    :func:`.outcomes.failure_lines` when the caller has read them already."""
    picked: dict[str, None] = {}

    def add(lines: Sequence[str]) -> None:
        for line in lines:
            if len(picked) >= MAX_LINES:
                return  # full: the rest of a long list is not clipped for nothing
            line = clip_words(line, LINE_WORDS)
            if line:
                picked.setdefault(line, None)

    if call is not None and not broke:
        for path, _how, old, new in edits(call):
            change = diff_lines(old, new)
            add([f"{path}:"] if len(change) else [])
            add(change)
    output = output_of(body)
    if broke:
        add(failure or failure_lines(body))
    if test is not None:
        add([s for s in (test.summary, *test.failures) if s])
    add([line for _name, line in referred_lines(output, names_in(said))])
    if not broke:
        add(error_lines(output)[:2])
    if not picked:
        add(_ends(output))
    return tuple(picked)


def _ends(output: str) -> list[str]:
    """The output's first lines (comment lines skipped) or, for code, its first definitions;
    its last line; how many lines there were."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if len(lines) <= HEAD_LINES + 1:
        return lines or [NO_OUTPUT]
    outline = [line for line in lines[:-1] if _DEFINITION.match(line)][:HEAD_LINES]
    head = outline or [line for line in lines[:-1] if not _COMMENT.match(line)][:HEAD_LINES]
    return [*head, f"… ({len(lines)} lines)", lines[-1]]
