"""The summary prompt, as named constants.

Everything the model is told lives here, in plain sight, and ``tests/test_summarize_prompt.py``
pins the parts that must stay word for word:

* the five dimensions (Goals & Decisions, File Operations, Tool Calls, Task Status, Errors &
  Resolutions), with Task Status asking for the operation in progress in the most recent round
  and the next step; between them they ask for what the nine-section compaction prompts of
  the best agents ask for (primary request and intent, key technical concepts, files and
  code, errors and fixes, problem solving, all user messages, pending tasks, current work,
  next step), and for an earlier compaction summary to be carried forward;
* :data:`MOST_RECENT_RULE`: the most recent messages are not kept, so the summary must carry them;
* the word limit (:data:`SUMMARY_MAX_WORDS`, 1500 by default);
* completed tasks, current state, key context (file paths, code snippets),
  next steps;
* the answer wrapped in ``<summary>…</summary>`` tags, which the summarizer
  extracts;
* the user's own instructions appended last, like a ``/compact <focus>`` argument.

A transcript too long for one request is summarized in parts (:data:`CHUNK_NOTE_TEMPLATE`
tells the model which part it sees) and the partial summaries are merged with
:data:`MERGE_SYSTEM_PROMPT` / :data:`MERGE_USER_TEMPLATE`.

The templates use ``str.format`` fields; values substituted into them (a transcript full of
braces) are never re-interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence

SUMMARY_MAX_WORDS = 1500

#: The five dimensions, in the order the summary must present them.
DIMENSIONS = (
    "Goals & Decisions",
    "File Operations",
    "Tool Calls",
    "Task Status",
    "Errors & Resolutions",
)

#: The recent messages are not kept: the summary must say where the work stands (fixed wording).
MOST_RECENT_RULE = (
    "Pay special attention to the MOST RECENT messages — summarize the current task state, "
    "what was just done, and what the next logical step should be. This information is critical "
    "because the original recent messages will NOT be preserved."
)

#: What Task Status must describe: the operation in progress and the next step.
TASK_STATUS_INSTRUCTION = (
    "You MUST describe in detail the operation in progress in the most recent round of the "
    "interaction (what was being done, on which files, and how far it got) and the next step "
    "that was planned."
)

SUMMARY_SYSTEM_PROMPT = """\
You are the context-compaction step of an AI agent. The agent's conversation with its user has \
grown too long for its context window, so it is being replaced by a summary that you write. \
After compaction the agent continues the work from your summary alone, plus the current \
contents of a few recently read files, which are restored separately. Anything you leave out \
is lost to the agent. Write for the agent, not for the user: precise, factual, complete, with \
no preamble and no commentary about the summary itself."""

# Each section: its heading and what goes in it. Kept as data so the merge prompt reuses it.
_SECTIONS = f"""\
## Goals & Decisions
Primary request and intent: the task statement as the user gave it, whole (quote it when it \
is short; keep its exact requirements, reproduction steps and how to submit or finish). If an \
earlier compaction summary is in the conversation, carry its content forward here under its \
own sub-heading. All user messages, in order, in their own words where it matters, and every \
instruction, constraint and preference the user stated (what must, must never, should or \
should not be done). The decisions taken and why. Key technical concepts: the technologies, \
libraries, functions, classes and commands the work revolves around.

## File Operations
Files and code: every file that was read, created, edited or deleted — through a file tool or \
a shell command (sed -i, heredocs, redirects, patches) — with its exact path and what was \
learned from it or changed in it. Include the short code snippets the remaining work depends \
on (signatures, key lines, the exact edits made).

## Tool Calls
The tool calls that mattered (commands run, searches, test runs) with their arguments and \
outcomes.

## Task Status
Pending tasks: what the user asked for that is not done yet. Current work: the tasks completed \
so far and the current state of the work. {TASK_STATUS_INSTRUCTION} Next step: the one the \
agent should take now, in line with the user's latest request (quote that request).

## Errors & Resolutions
Errors and fixes, problem solving: each error met (exact message, failing test, rejected \
approach) with its own outcome — how it was resolved, or that it is still open — and any \
user feedback on it."""

_RULES = f"""\
Rules:
- {MOST_RECENT_RULE}
- The summary must contain: the completed tasks, the current state, the key context (file \
paths, code snippets, identifiers, commands, values) and the next steps.
- Be specific: keep exact file paths, function and variable names, error messages, numbers \
and user wording that matters. Do not invent anything that is not in the conversation.
- Write at most {{max_words}} words.
- Wrap the whole summary in <summary></summary> tags and write nothing outside them."""

SUMMARY_USER_TEMPLATE = f"""\
Here is the conversation to summarize, between <transcript> tags. Lines starting with \
"→" are the agent's tool calls and lines starting with "←" their results; long outputs \
were clipped.

<transcript>
{{transcript}}
</transcript>
{{part_note}}
Write a structured summary of this conversation with exactly these five sections, as Markdown \
headings in this order:

{_SECTIONS}

{_RULES}"""

#: Appended to the user message when the caller passes ``instructions``.
INSTRUCTIONS_TEMPLATE = """

Additional instructions from the user (follow them as long as they do not contradict the rules \
above):
{instructions}"""

#: Tells the model that it sees one part of a transcript that was too long for one request.
CHUNK_NOTE_TEMPLATE = """
Note: the conversation was too long for one request, so it is summarized in {total} parts, in \
chronological order, and the partial summaries are merged afterwards. This is part {index} of \
{total}. {position}
"""
CHUNK_POSITION_LAST = (
    "It is the last part: it holds the MOST RECENT messages, so the current task state and the "
    "next step come from here."
)
CHUNK_POSITION_EARLIER = (
    "Later parts follow: describe the state the work had reached at the end of this part."
)

MERGE_SYSTEM_PROMPT = SUMMARY_SYSTEM_PROMPT

MERGE_USER_TEMPLATE = f"""\
The conversation was too long for one request, so it was summarized in parts. Here are the \
partial summaries, in chronological order, each in a <part> tag; the last part covers the \
MOST RECENT messages.

{{parts}}

Merge them into one structured summary of the whole conversation with exactly these five \
sections, as Markdown headings in this order. Where parts disagree, the later part holds the \
newer state.

{_SECTIONS}

{_RULES}"""

PART_TEMPLATE = '<part index="{index}" of="{total}">\n{text}\n</part>'


def build_prompt(
    transcript_text: str,
    *,
    max_words: int = SUMMARY_MAX_WORDS,
    instructions: str | None = None,
    part: tuple[int, int] | None = None,
) -> tuple[str, str]:
    """``(system, user)`` for summarizing ``transcript_text``.

    ``part`` is ``(index, total)``, 1-based, when the text is one chunk of a longer
    transcript. ``instructions`` (a focus the user asked for) are appended last.
    """
    part_note = ""
    if part is not None:
        index, total = part
        position = CHUNK_POSITION_LAST if index == total else CHUNK_POSITION_EARLIER
        part_note = CHUNK_NOTE_TEMPLATE.format(index=index, total=total, position=position)
    user = SUMMARY_USER_TEMPLATE.format(transcript=transcript_text, part_note=part_note, max_words=max_words)
    return SUMMARY_SYSTEM_PROMPT, user + _instructions_section(instructions)


def build_merge_prompt(
    partial_summaries: Sequence[str],
    *,
    max_words: int = SUMMARY_MAX_WORDS,
    instructions: str | None = None,
) -> tuple[str, str]:
    """``(system, user)`` for merging partial summaries (oldest first) into one."""
    total = len(partial_summaries)
    parts = "\n\n".join(
        PART_TEMPLATE.format(index=i, total=total, text=text) for i, text in enumerate(partial_summaries, 1)
    )
    user = MERGE_USER_TEMPLATE.format(parts=parts, max_words=max_words)
    return MERGE_SYSTEM_PROMPT, user + _instructions_section(instructions)


def _instructions_section(instructions: str | None) -> str:
    if instructions is None or not instructions.strip():
        return ""
    return INSTRUCTIONS_TEMPLATE.format(instructions=instructions.strip())
