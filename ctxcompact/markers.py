"""The compaction's own texts and their recognisers: a leaf module every layer may import.

The strings are fixed (changing one breaks reading what earlier runs wrote); the summarizers recognise earlier summaries and
acknowledgements by them, file restoration recognises restored-file messages, and the
strategies write them. Keeping them here (importing nothing from ctxcompact but the IR) means
no lower layer has to import a strategy.
"""

from __future__ import annotations

import re

from ctxcompact.ir import Block, Message

#: The summary message of a full compaction starts with this.
SUMMARY_PREFIX = "[Conversation compressed]\n\n"
#: The assistant's acknowledgement that follows the summary.
SUMMARY_ACK = "Understood. I have the context from the compressed conversation. Continuing work."
#: A restored file's message: ``"[Restored after compact] {path}:\n{content}"``.
RESTORED_PREFIX = "[Restored after compact]"
#: The assistant's acknowledgement of a restored file.
RESTORED_ACK = "Noted, file content restored."
#: Claude Code's own /compact summary opens with this.
CLAUDE_CODE_SUMMARY_PREFIX = "This session is being continued from a previous conversation"
#: Claude Code's whole wrapper around a summary (copied from its sessions, 2.0.x): the summary
#: user entry after a ``compact_boundary`` is ``OPENING + summary + CLOSING``.
CLAUDE_CODE_SUMMARY_OPENING = (
    CLAUDE_CODE_SUMMARY_PREFIX + " that ran out of context. The conversation is summarized below:\n"
)
CLAUDE_CODE_SUMMARY_CLOSING = (
    ".\nPlease continue the conversation from where we left it off without asking the user any "
    "further questions. Continue with the last task that you were asked to work on."
)

#: Codex's summary prefix (``codex-rs/core/templates/compact/summary_prefix.md``): a Codex
#: compacted history's summary message is this, a newline, and the summary.
CODEX_SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process. You also have access to the state of the tools that were used by that "
    "language model. Use this to build on the work that has already been done and avoid "
    "duplicating work. Here is the summary produced by the other language model, use the "
    "information in this summary to  assist with your own analysis:"
)

#: An earlier compaction summary (ours, Claude Code's or Codex's) starts with one of these.
EARLIER_SUMMARY_PREFIXES = (SUMMARY_PREFIX.rstrip(), CLAUDE_CODE_SUMMARY_PREFIX, CODEX_SUMMARY_PREFIX)
#: The compaction's own assistant acknowledgements.
OUR_ACKS = frozenset({SUMMARY_ACK, RESTORED_ACK})


def claude_code_summary_text(summary: str) -> str:
    """A summary wrapped the way Claude Code wraps its own after ``/compact``."""
    return CLAUDE_CODE_SUMMARY_OPENING + summary.rstrip().rstrip(".") + CLAUDE_CODE_SUMMARY_CLOSING


def restored_text(path: str, content: str) -> str:
    """The seed's restored-file message text for ``path``."""
    return f"{RESTORED_PREFIX} {path}:\n{content}"


def restored_block_path(block: Block) -> str | None:
    """The path of a restored-file text block (:func:`restored_text`), else None."""
    if block.get("type") != "text":
        return None
    text = str(block.get("text", ""))
    if not text.startswith(RESTORED_PREFIX + " "):
        return None
    head = text[len(RESTORED_PREFIX) + 1 :].split("\n", 1)[0]
    return head[:-1] if head.endswith(":") and len(head) > 1 else None


def restored_file_path(message: Message) -> str | None:
    """The path of a restored-file message (one block, :func:`restored_text`), else None."""
    return restored_block_path(message.content[0]) if len(message.content) == 1 else None


def restored_file_paths(message: Message) -> tuple[str, ...]:
    """The paths of every restored-file block of a message. The one parser of those blocks:
    restoration, probes and the extractive summarizer use it. A Claude Code session sends
    consecutive user entries as one message, so after its compaction the summary and the
    restored files are blocks of one message."""
    return tuple(p for p in (restored_block_path(b) for b in message.content) if p is not None)


# --- what ctxcompact wrote in place of content, recognised by its whole shape ----------------
#
# A tool's output may well *start* with one of these texts (a log of an earlier run, a file
# that quotes one, a hostile page): only the exact shape we write, and no more text than it
# holds, counts as ours — a 1 MB output that merely begins with a marker is still content.

#: A masked tool result (``prune``, ``hybrid``): ``[Tool result cleared by ctxcompact: Bash
#: `pytest` → error: 2 failed; 2,345 tokens]``, or the older ``[…: read_file output, 4,210 tokens]``.
PRUNE_PLACEHOLDER_PREFIX = "[Tool result cleared by ctxcompact"
_PRUNE_PLACEHOLDER = re.compile(
    r"\[Tool result cleared by ctxcompact: [^\n]{0,600}(?: output, |; )[\d,]{1,20} tokens\]"
)
#: ``offload``'s reference line, optionally followed by its preview (``--preview N``).
OFFLOAD_REFERENCE_PREFIX = "[Content offloaded to: "
OFFLOAD_REFERENCE_RE = re.compile(
    r"\[Content offloaded to: (?P<dir>[^\]\n]*/)?(?P<name>tool-result-[A-Za-z0-9_.-]+\.md)\](?:\n|\Z)"
)
_PREVIEW_HEAD = re.compile(r"Preview \(first (?P<n>[\d,]{1,12}) characters\):\n")
#: The strategies' preview marker: ``[… truncated by ctxcompact: 4,210 tokens, about 200 kept]``.
TRUNCATION_MARKER = "[… truncated by ctxcompact"
_TRUNCATION_LINE = re.compile(
    r"^\[… truncated by ctxcompact: (?:[^\n]*?, )?[\d,]{1,20} tokens, about (?P<kept>[\d,]{1,20}) kept\]$",
    re.MULTILINE,
)
#: The most characters a kept token stands for in a preview we wrote (a generous bound).
_CHARS_PER_KEPT_TOKEN = 64


def is_prune_placeholder(text: object) -> bool:
    """Whether ``text`` is exactly a stub ``prune`` or ``hybrid`` wrote."""
    return isinstance(text, str) and _PRUNE_PLACEHOLDER.fullmatch(text) is not None


def offload_reference(text: object) -> re.Match[str] | None:
    """The match of the reference ``offload`` wrote, when ``text`` is exactly one: the line
    alone, or the line and a preview no longer than it says (its ``N`` characters and ``…``)."""
    if not isinstance(text, str):
        return None
    match = OFFLOAD_REFERENCE_RE.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    if not rest:
        return match
    preview = _PREVIEW_HEAD.match(rest)
    if preview is None:
        return None
    head = rest[preview.end() :]
    return match if len(head) <= int(preview.group("n").replace(",", "")) + 1 else None


def is_truncation_preview(text: str) -> bool:
    """Whether ``text`` is a preview a strategy wrote: our marker on a line of its own, and no
    more text around it than the tokens it says it kept."""
    match = _TRUNCATION_LINE.search(text)
    if match is None:
        return False
    kept = int(match.group("kept").replace(",", ""))
    return len(text) - len(match.group()) <= (kept + 1) * _CHARS_PER_KEPT_TOKEN
