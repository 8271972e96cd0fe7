"""The offline summarizer: a structured summary built from the transcript itself.

No model, no key, no network, and deterministic: the same messages always give the same text.
It fills the prompt's five sections (:data:`~.prompt.DIMENSIONS`) with what the nine-section
compaction prompts (Claude Code's, Codex's handoff, OpenHands' condenser) ask for, read off the
messages (:mod:`.facts`) and quoted, never rephrased:

Goals & Decisions      *Primary request and intent*: the task statement whole (harness
                       instruction templates shrunk to their constraints; its first and last
                       parts around a marker when it alone exceeds its share); an earlier
                       compaction summary carried forward whole, or shortened section by
                       section, its old current work and next step marked superseded; *all user
                       messages* in order, in their own words (those given while rejecting a
                       tool call included); every *instruction and constraint*; the agent's
                       *decisions and conclusions* in its own words, whole sentences; its
                       *findings in tool output* (its sentence naming something in backticks
                       and the result line holding that name, :mod:`.gist`); what the agent
                       *reported at the end of each turn*; *key technical concepts*;
                       figures mentioned.
File Operations        *files and code*: every file read, written, edited or deleted, by a
                       file tool, a shell command (:mod:`.shell_files`) or a Python script
                       (:mod:`.scripts`), and the *changes* made with their new text.
Tool Calls             calls per tool name, most used first, and how many failed.
Task Status            *pending tasks* (the agent's to-do list), the *latest user request*,
                       the *test status* read from the output of each test command, events the
                       harness reported, *current work* (the agent's last calls, each with the
                       lines of its result worth carrying, :mod:`.gist`; its last words) and the *next step*: the agent's last stated
                       intent, the call in flight, its open to-do items.
Errors & Resolutions   *errors and fixes*: each failure of a command that ran, with its own
                       error lines and outcome (what the agent said, whether its next call of
                       that tool on that target succeeded); calls the user rejected.

The summary grows with ``max_words`` (:mod:`.layout` shares it out; the task statement and an
earlier summary are served first, Task Status next); item sizes scale with it, so a larger
budget keeps more of each message verbatim. ``instructions`` are ignored — there is no model
to follow them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ctxcompact.compaction.retention import TASK_HELD_SHARE, line_share
from ctxcompact.compaction.summarize import Summary
from ctxcompact.compaction.summarize import earlier as earlier_summary
from ctxcompact.compaction.summarize.facts import SHOWN_ACTIONS, Action, ErrorNote, Facts, Finding
from ctxcompact.compaction.summarize.layout import (
    PINNED_SHARE,
    Part,
    Section,
    clip_ends_words,
    clip_words,
    render,
    words,
)
from ctxcompact.compaction.summarize.outcomes import TestRun
from ctxcompact.compaction.summarize.prompt import DIMENSIONS, SUMMARY_MAX_WORDS
from ctxcompact.compaction.summarize.templates import shrink_harness_instructions
from ctxcompact.ir import Message

ERROR_LINE_WORDS = 24
LAST_ACTIONS = SHOWN_ACTIONS
#: Indent of the result lines under a call in Current work.
RESULT_INDENT = "    "
TESTS_SHOWN = 6
CURRENT_WORK_LABEL = "Current work — the agent's last actions and what they returned:"
FINDINGS_LABEL = "Findings in tool output (the agent's words and the result lines they refer to):"
PRIMARY_LABEL = "Primary request and intent (the task statement):"
EARLIER_LABEL = "### Earlier compaction summary (carried forward)"
SAME_AS_TASK = "(the primary request above)"
#: The task statement's place when it is too long for its share and the strategy writes it
#: whole before the summary (``task_apart``): a clipped second copy would only cost words.
TASK_WRITTEN_ABOVE = "(written whole above this summary)"
#: Headings and labels: what the room for the task statement is short of PINNED_SHARE × max_words.
TASK_SLACK_WORDS = 60


class ExtractiveSummarizer:
    """Offline, deterministic summaries; see the module docstring."""

    name = "extractive"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_words: int = SUMMARY_MAX_WORDS,
        instructions: str | None = None,
        task_apart: str | None = None,
    ) -> Summary:
        """``task_apart``: the task statement the caller writes whole before the summary
        unless the summary holds it (a pinned task): when it is this one and too long for
        its share, it is not clipped here but referred to, and its words go to the parts."""
        facts = Facts.gather(messages)
        sections = build_sections(facts, max_words=max_words, task_apart=task_apart)
        return Summary(render(sections, max_words=max_words), self.name)


def build_sections(facts: Facts, *, max_words: int, task_apart: str | None = None) -> list[Section]:
    goals, files, tools, status, errors = DIMENSIONS
    return [
        Section(goals, _goal_parts(facts, max_words=max_words, task_apart=task_apart)),
        Section(files, _file_parts(facts)),
        Section(tools, (Part(None, _tool_lines(facts), "first", rank=3),)),
        Section(status, _status_parts(facts, max_words=max_words)),
        Section(errors, (Part(None, tuple(_error_line(e) for e in facts.errors), "last"),)),
    ]


def _cap(max_words: int, share: int, floor: int) -> int:
    """An item's word cap: a share of the budget, never under ``floor``."""
    return max(floor, max_words // share)


def _goal_parts(facts: Facts, *, max_words: int, task_apart: str | None) -> tuple[Part, ...]:
    cap = _cap(max_words, 6, 120)
    requests = []
    for n, request in enumerate(facts.requests, 1):
        said = (
            SAME_AS_TASK if request.text == facts.task and not request.via else clip_words(request.text, cap)
        )
        requests.append(f"{n}. " + (f"(while {request.via}) " if request.via else "") + said)
    concepts = facts.concept_line()
    task = shrink_harness_instructions(facts.task)
    # The task statement's own rules are read there while it fits whole; listed again when
    # it will be cut.
    task_whole = words(task) <= PINNED_SHARE * max_words - TASK_SLACK_WORDS
    if (
        task
        and not task_whole
        and task_apart is not None
        and line_share(facts.task, task_apart) >= TASK_HELD_SHARE
    ):
        task, task_whole = TASK_WRITTEN_ABOVE, True  # whole above: its rules are read there
    rules = tuple(r for r in facts.rules if not (task_whole and r in facts.task_rules))
    report_cap = _cap(max_words, 8, 60)
    reports = tuple(f"- (request {n}) {clip_words(text, report_cap)}" for n, text in facts.reports)
    found = {f.sentence for f in facts.findings if f.sentence}
    finding_cap = _cap(max_words, 20, 40)
    sections = [
        s for body in facts.earlier for s in earlier_summary.parse(body, superseded=facts.after_earlier)
    ]
    return (
        Part(PRIMARY_LABEL, (task,) if task else (), pinned=True, quote=True),
        Part(
            EARLIER_LABEL,
            tuple(earlier_summary.render(s) for s in sections),
            pinned=True,
            quote=True,
            shorten=earlier_summary.shortener(sections),
        ),
        Part("All user messages, in order:", tuple(requests) if len(requests) > 1 else (), "each", rank=0),
        Part("User instructions and constraints:", rules, "each"),
        Part(
            "Decisions and conclusions (the agent's own words):",
            tuple(f"- {c}" for c in facts.conclusions if c not in found),
            "last",
        ),
        Part(FINDINGS_LABEL, _finding_items(facts.findings, cap=finding_cap), "last"),
        Part("What the agent reported at the end of each turn:", reports, "each", rank=2),
        Part("Key technical concepts:", (concepts,) if concepts else (), "first", rank=3),
        Part("Figures mentioned:", (", ".join(facts.figures),) if facts.figures else (), "first", rank=3),
    )


def _finding_items(findings: Sequence[Finding], *, cap: int) -> tuple[str, ...]:
    """One item per sentence of the agent's: the sentence, then what it read — each result's
    ``label`` and the lines it referred to. A sentence whose names several results hold (a
    diff, a grep and a read of the same file) is written once, its results after it."""
    items: list[str] = []
    group: list[Finding] = []
    for finding in findings:
        if group and not (
            finding.sentence and (finding.index, finding.sentence) == (group[0].index, group[0].sentence)
        ):
            items.append(_finding_item(group, cap=cap))
            group = []
        group.append(finding)
    if group:
        items.append(_finding_item(group, cap=cap))
    return tuple(items)


def _finding_item(group: Sequence[Finding], *, cap: int) -> str:
    sentence = group[0].sentence
    said = f"{clip_words(sentence, cap)} — " if sentence else ""
    shown = "; ".join(f"{f.label} showed: " + "; ".join(f"`{line}`" for line in f.lines) for f in group)
    return f"- {said}{shown}"


def _file_parts(facts: Facts) -> tuple[Part, ...]:
    """One line per combination of operations (``edited, read: `a`, `b```), paths in the
    order last touched — a path costs one word, so many files fit; changed files first. Then
    the changes themselves, the newest kept first."""
    groups: dict[str, list[str]] = {}
    for path, entry in sorted(facts.files.items(), key=lambda kv: (kv[1].last, kv[0])):
        groups.setdefault(", ".join(sorted(entry.ops, key=_op_rank)), []).append(path)
    lines = [
        f"- {ops}: " + ", ".join(f"`{p}`" for p in paths)
        for ops, paths in sorted(groups.items(), key=lambda kv: (_op_rank(kv[0].split(", ")[0]), kv[0]))
    ]
    mentioned = [p for p, _ in sorted(facts.mentioned.items(), key=lambda kv: (kv[1], kv[0]))]
    if mentioned:
        lines.append("- mentioned in commands: " + ", ".join(f"`{p}`" for p in mentioned))
    if facts.restored:
        lines.append("- restored by an earlier compaction: " + ", ".join(f"`{p}`" for p in facts.restored))
    changes = tuple(f"- `{c.path}` ({c.how}): {c.text}" for c in facts.changes)
    return (Part(None, tuple(lines), "first"), Part("Changes made, in order:", changes, "each", rank=2))


def _op_rank(op: str) -> int:
    order = ("edited", "written", "deleted", "read")
    return order.index(op) if op in order else len(order)


def _tool_lines(facts: Facts) -> tuple[str, ...]:
    if not facts.tools:
        return ()
    total = sum(facts.tools.values())
    failed = sum(facts.failed.values())
    lines = [f"- {total} tool calls" + (f", {failed} with errors" if failed else "")]
    for name, count in sorted(facts.tools.items(), key=lambda kv: (-kv[1], kv[0])):
        errs = facts.failed.get(name, 0)
        lines.append(f"- {name} × {count}" + (f" ({errs} failed)" if errs else ""))
    return tuple(lines)


def _error_line(error: ErrorNote) -> str:
    if not error.lines:
        return f"- {error.call}: {error.outcome}"
    shown = "; ".join(f"`{clip_words(line, ERROR_LINE_WORDS)}`" for line in error.lines[:2])
    more = f" (+{len(error.lines) - 2} more)" if len(error.lines) > 2 else ""
    return f"- {error.call}: {shown}{more} → {error.outcome}"


def _test_line(run: TestRun) -> str:
    failures = f" ({', '.join(run.failures)})" if run.failures else ""
    summary = f": {run.summary}" if run.summary else ""
    return f"- `{clip_words(run.command, 16)}` → {run.status}{summary}{failures}"


def _status_parts(facts: Facts, *, max_words: int) -> tuple[Part, ...]:
    last_request = facts.last_request_index
    recent = [a for a in facts.actions if a.index > last_request]
    actions = [_action_item(a) for a in recent[-LAST_ACTIONS:]]
    earlier = max(len(recent) - LAST_ACTIONS, 0)
    if earlier:
        actions.insert(0, _earlier_calls(earlier))
    latest = ""
    if facts.requests:
        request = facts.requests[-1]
        latest = SAME_AS_TASK if request.text == facts.task and not request.via else request.text
    tests = tuple(_test_line(t) for t in _latest_tests(facts.tests))
    last_text = clip_words(facts.last_text, _cap(max_words, 5, 150)) if facts.last_text else ""
    thoughts = clip_ends_words(facts.last_thoughts, _cap(max_words, 8, 80)) if facts.last_thoughts else ""
    notes = tuple(f"- {clip_words(n, _cap(max_words, 12, 60))}" for n in facts.turn_notes)
    return (
        Part(
            "Latest user request:", (clip_words(latest, _cap(max_words, 4, 300)),) if latest else (), rank=0
        ),
        Part("Pending tasks (the agent's to-do list):", tuple(facts.todos), "first"),
        Part("Test status:", tests, "last", rank=0),
        Part("Reported by the harness:", tuple(f"- {e}" for e in facts.events), "last", rank=2),
        Part("The agent's notes since the latest request:", notes, "each"),
        Part(
            CURRENT_WORK_LABEL,
            tuple(actions),
            "last",
            quote=True,
            shorten=_newest_first(earlier),
        )
        if actions
        else Part(CURRENT_WORK_LABEL, ()),
        Part("Agent's last message:", (last_text,) if last_text else (), rank=0),
        Part(
            "The agent's last thoughts (its turn was cut before it spoke):", (thoughts,) if thoughts else ()
        ),
        Part("Next step:", tuple(next_step(facts)), "first", rank=0),
    )


def _action_item(action: Action) -> str:
    """A call, its outcome, and under it the lines of its result worth carrying."""
    head = f"- {action.label} → {action.outcome or 'result not seen yet'}"
    if not action.shown:
        return head
    return head + ":\n" + "\n".join(RESULT_INDENT + line for line in action.shown)


def _newest_first(earlier: int) -> Callable[[Sequence[str], int], tuple[str, ...]]:
    """Current work in ``words``: the newest calls first, each whole while it fits, then the
    next one's first lines (its call at least); the older ones are counted in a note."""

    def shorten(items: Sequence[str], quota: int) -> tuple[str, ...]:
        kept: list[str] = []
        left = quota - 5  # "- … N earlier calls"
        for item in reversed(items[1:] if earlier else items):
            lines = item.split("\n")
            take: list[str] = []
            for line in lines:
                size = words(line)
                if size > left:
                    break
                take.append(line)
                left -= size
            if not take:
                break
            if len(take) < len(lines):
                take.append(f"{RESULT_INDENT}({len(lines) - len(take)} more lines)")
                left -= 3
            kept.append("\n".join(take))
        omitted = len(items) - len(kept)
        if omitted > 0 and quota >= 5:
            kept.append(_earlier_calls(omitted - 1 + earlier if earlier else omitted))
        return tuple(reversed(kept))

    return shorten


def _earlier_calls(count: int) -> str:
    return f"- … {count} earlier call{'s' if count != 1 else ''}"


def _latest_tests(runs: Sequence[TestRun]) -> list[TestRun]:
    """The last run of each test command, in order, at most :data:`TESTS_SHOWN`."""
    latest: dict[str, TestRun] = {}
    for run in runs:
        latest.pop(run.command, None)
        latest[run.command] = run
    return list(latest.values())[-TESTS_SHOWN:]


def next_step(facts: Facts) -> list[str]:
    """The next step, from the agent's own words and the state the transcript ends in: its
    last stated intent, the call in flight, its open to-do items — nothing it did not say."""
    if not facts.requests and not facts.actions and not facts.last_text:
        return []
    lines: list[str] = []
    answered = facts.last_text or any(a.index > facts.last_request_index for a in facts.actions)
    if facts.requests and not answered:
        lines.append("Answer the latest user request above; the agent had not responded to it yet.")
    intent = facts.last_intent()
    if intent and answered:
        lines.append(f"The agent's last stated intent: “{clip_words(intent, 60)}”.")
    recent = [a for a in facts.actions if a.index > facts.last_request_index]
    waiting = [a.label for a in recent if a.result_index < 0]
    unseen = [a.label for a in recent if a.result_index == facts.final_index]
    if waiting:
        lines.append(f"In flight, no result yet: {clip_words(', '.join(waiting[-3:]), 40)}.")
    if unseen:
        lines.append(f"Results the agent had not seen yet: {clip_words(', '.join(unseen[-3:]), 40)}.")
    if facts.todos:
        lines.append("Open to-do items: " + "; ".join(t.removeprefix("- ") for t in facts.todos[:6]))
    if not lines:
        lines.append(
            "The agent had finished its turn: confirm the latest request is done or wait for the next one."
        )
    return lines
