"""The offline summarizer: a structured summary built from the transcript itself (SPEC §3.5).

No model, no key, no network, and deterministic: the same messages always give the same text.
It fills seed 000's five sections (:data:`~.prompt.DIMENSIONS`) with what the nine-section
compaction prompts ask for, read off the messages (:mod:`.facts`):

Goals & Decisions      primary request and intent: the task statement (the first request)
                       whole, or its first and last parts around a marker when it alone
                       exceeds its share; an earlier compaction summary (ours or Claude
                       Code's), carried forward whole under its own heading and only ever cut
                       between sentences; all user messages, in order; every user instruction
                       and constraint (sentences with must / never / always / don't / should…,
                       必须 / 不要 / 需要 / 应该 / 总是 / 永远…); the agent's stated decisions;
                       key technical concepts (identifiers in backticks the user wrote, or
                       that were quoted more than once); figures mentioned (numbers with units).
File Operations        files and code: every file read, written, edited or deleted, by a file
                       tool or a shell command (:mod:`.shell_files`), files restored by an
                       earlier compaction, other paths mentioned in commands.
Tool Calls             calls per tool name, most used first, and how many failed.
Task Status            pending tasks (the agent's last to-do list), current work (the latest
                       user request, the agent's last actions and last words) and the next
                       step: the unanswered request, the pending tool result, or the agent's
                       own stated plan.
Errors & Resolutions   errors and fixes, problem solving: each failed tool call with its own
                       error lines and its own outcome (what the agent said, whether its next
                       call of that tool on that target succeeded).

Boilerplate is dropped first (:mod:`.boilerplate`). ``max_words`` is respected as
:mod:`.layout` describes: the task statement and an earlier summary are served first,
Task Status next. ``instructions`` are ignored — there is no model to follow them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ctxcompact.compaction.summarize import Summary
from ctxcompact.compaction.summarize.facts import ErrorNote, Facts, call_label, sentences, texts
from ctxcompact.compaction.summarize.layout import PINNED_SHARE, Part, Section, clip_words, render, words
from ctxcompact.compaction.summarize.prompt import DIMENSIONS, SUMMARY_MAX_WORDS
from ctxcompact.ir import Message
from ctxcompact.markers import OUR_ACKS

REQUEST_WORDS = 80
LATEST_REQUEST_WORDS = 300
ERROR_LINE_WORDS = 24
LAST_TEXT_WORDS = 80
LAST_ACTIONS = 6
PRIMARY_LABEL = "Primary request (the task statement):"
EARLIER_LABEL = "### Earlier compaction summary (carried forward)"
SAME_AS_TASK = "(the primary request above)"
#: Headings and labels: what the room for the task statement is short of PINNED_SHARE × max_words.
TASK_SLACK_WORDS = 60

_NEXT_CUE = re.compile(
    r"\b(next|then|i'll|i will|let me|let's|remaining|still need|todo|to do|should i|want me to|"
    r"shall i|would you like)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s*#{1,6}\s+(.+?)\s*$")


class ExtractiveSummarizer:
    """Offline, deterministic summaries; see the module docstring."""

    name = "extractive"

    def summarize(
        self,
        messages: Sequence[Message],
        *,
        max_words: int = SUMMARY_MAX_WORDS,
        instructions: str | None = None,
    ) -> Summary:
        facts = Facts.gather(messages)
        sections = build_sections(facts, messages, max_words=max_words)
        return Summary(render(sections, max_words=max_words), self.name)


def build_sections(facts: Facts, messages: Sequence[Message], *, max_words: int) -> list[Section]:
    goals, files, tools, status, errors = DIMENSIONS
    return [
        Section(goals, _goal_parts(facts, max_words=max_words)),
        Section(files, (Part(None, _file_lines(facts), "first"),)),
        Section(tools, (Part(None, _tool_lines(facts), "first"),)),
        Section(status, _status_parts(facts, messages), priority=True),
        Section(errors, (Part(None, tuple(_error_line(e) for e in facts.errors), "last"),)),
    ]


def _goal_parts(facts: Facts, *, max_words: int) -> tuple[Part, ...]:
    requests = tuple(
        f"{n}. {SAME_AS_TASK if text == facts.task else clip_words(text, REQUEST_WORDS)}"
        for n, (_, text) in enumerate(facts.requests, 1)
    )
    concepts = facts.concept_line()
    # The task statement's own rules are read there while it fits whole; listed again when
    # it will be cut.
    task_whole = words(facts.task) <= PINNED_SHARE * max_words - TASK_SLACK_WORDS
    rules = tuple(r for r in facts.rules if not (task_whole and r in facts.task_rules))
    return (
        Part(PRIMARY_LABEL, (facts.task,) if facts.task else (), pinned=True, quote=True),
        Part(EARLIER_LABEL, tuple(_earlier_units(facts.earlier)), "ends", pinned=True, whole=True),
        Part("All user messages, in order:", requests if len(requests) > 1 else (), "ends"),
        Part("User instructions and constraints:", rules, "ends"),
        Part("Decisions:", tuple(facts.decisions[-12:]), "last"),
        Part("Key technical concepts:", (concepts,) if concepts else (), "first"),
        Part("Figures mentioned:", (", ".join(facts.figures),) if facts.figures else (), "first"),
    )


def _earlier_units(summaries: Sequence[str]) -> list[str]:
    """An earlier summary as whole lines, long lines as whole sentences; its headings become
    bold labels so they do not compete with ours."""
    units: list[str] = []
    for summary in summaries:
        for line in summary.splitlines():
            heading = _HEADING.match(line)
            if heading:
                units.append(f"**{heading.group(1).strip('*')}**")
            elif len(line.split()) > 60:
                units.extend(sentences(line))
            elif line.strip():
                units.append(line.rstrip())
    return units


def _file_lines(facts: Facts) -> tuple[str, ...]:
    """One line per combination of operations (``edited, read: `a`, `b```), paths in the
    order last touched — a path costs one word, so many files fit. Changed files first."""
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
    return tuple(lines)


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
    shown = "; ".join(f"`{clip_words(line, ERROR_LINE_WORDS)}`" for line in error.lines[:2])
    more = f" (+{len(error.lines) - 2} more)" if len(error.lines) > 2 else ""
    return f"- {error.call}: {shown}{more} → {error.outcome}"


def _status_parts(facts: Facts, messages: Sequence[Message]) -> tuple[Part, ...]:
    last_request = facts.last_request_index
    tail = messages[last_request + 1 :] if last_request >= 0 else messages
    calls = [b for m in tail if m.role == "assistant" for b in m.content if b.get("type") == "tool_use"]
    actions = [f"- {call_label(b)}" for b in calls[-LAST_ACTIONS:]]
    if len(calls) > LAST_ACTIONS:
        actions.insert(0, f"- … {len(calls) - LAST_ACTIONS} earlier calls")
    last_text = ""
    for message in reversed(tail):
        text = texts(message.content) if message.role == "assistant" else ""
        if text.strip() and text.strip() not in OUR_ACKS:
            last_text = clip_words(text, LAST_TEXT_WORDS)
            break
    latest = facts.requests[-1][1] if facts.requests else ""
    if latest and latest == facts.task:
        latest = SAME_AS_TASK
    step = next_step(messages, facts, last_text)
    return (
        Part("Latest user request:", (clip_words(latest, LATEST_REQUEST_WORDS),) if latest else ()),
        Part("Pending tasks:", tuple(facts.todos), "first"),
        Part("Current work — the agent's last actions:", tuple(actions), "last"),
        Part("Agent's last message:", (last_text,) if last_text else ()),
        Part("Next step:", (step,) if step else ()),
    )


def next_step(messages: Sequence[Message], facts: Facts, last_text: str) -> str:
    """The next step, from how the conversation ends (see the module docstring)."""
    if not messages:
        return ""
    last = messages[-1]
    names: Mapping[str, str] = {
        str(b.get("id")): str(b.get("name") or "tool")
        for m in messages
        for b in m.content
        if b.get("type") == "tool_use"
    }
    if last.role == "user" and len(messages) - 1 == facts.last_request_index:
        return "Answer the latest user request above; the agent had not responded to it yet."
    if last.role == "user":
        pending = [b for b in last.content if b.get("type") == "tool_result"]
        if pending:
            labels = ", ".join(sorted({names.get(str(b.get("tool_use_id") or ""), "tool") for b in pending}))
            return f"Continue from the result of the last tool call ({labels}), not yet seen by the agent."
    if last.role == "assistant" and any(b.get("type") == "tool_use" for b in last.content):
        labels = ", ".join(call_label(b) for b in last.content if b.get("type") == "tool_use")
        return f"The last tool call had not returned: {clip_words(labels, 30)}; check its outcome."
    plans = [s for s in sentences(last_text) if _NEXT_CUE.search(s)]
    if plans:
        return "As the agent said: " + clip_words(" ".join(plans[-2:]), 50)
    if facts.todos:
        return "Continue with the first pending task above."
    if facts.requests:
        return "The agent had finished its turn: confirm the latest request is done or wait for the next one."
    return ""
