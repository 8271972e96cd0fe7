"""The names users choose between, defined once for the library and the command line.

Each is a ``StrEnum``: its members *are* strings (``SummarizerName.auto == "auto"``), so the
core compares and serializes them like the plain strings library callers pass, and the CLI
hands the same class to Typer for ``--summarizer``, ``--on-failure`` and ``--counter``.
A leaf module: it imports nothing from ctxcompact, so every layer may import it.
"""

from __future__ import annotations

from enum import StrEnum


class SummarizerName(StrEnum):
    """Who writes the summary: ``auto`` is ``anthropic`` when an API key is set, else
    ``extractive`` (offline, deterministic). ``anthropic-batch``: a whole batch's summaries
    through the Message Batches API (:mod:`ctxcompact.batch.message_batches`)."""

    auto = "auto"
    anthropic = "anthropic"
    anthropic_batch = "anthropic-batch"
    extractive = "extractive"


class OnFailure(StrEnum):
    """What the full strategy does when the LLM summary fails after its retries."""

    fallback = "fallback"  # summarize with the offline extractive summarizer instead
    skip = "skip"  # leave the conversation unchanged
    error = "error"  # fail the run (exit 3)


class CounterName(StrEnum):
    """How tokens are counted; ``anthropic`` asks the API (exact, needs a key)."""

    tiktoken = "tiktoken"
    estimate = "estimate"
    anthropic = "anthropic"


class LocalCounterName(StrEnum):
    """The offline counters: what the rewriting commands measure their figures with."""

    tiktoken = "tiktoken"
    estimate = "estimate"


class JudgeName(StrEnum):
    """Who judges ``eval``'s compactions (``eval --judge``): the Messages API request by
    request, or the Message Batches API (half the price, one batch per stage)."""

    anthropic = "anthropic"
    anthropic_batch = "anthropic-batch"


class OutputFormat(StrEnum):
    """How a batch reports on CI: ``text`` (its table on stderr), or ``github`` — also GitHub
    Actions annotations on stdout and a Markdown summary in ``$GITHUB_STEP_SUMMARY``."""

    text = "text"
    github = "github"


class BreakdownView(StrEnum):
    """How ``count``'s picture splits the context (``--by``)."""

    category = "category"
    tool = "tool"
    role = "role"
    type = "type"


class AgentName(StrEnum):
    """The coding agents whose hooks and sessions ctxcompact works with (``hook --agent``)."""

    claude_code = "claude-code"
    codex = "codex"


class HookEventName(StrEnum):
    """``ctxcompact hook EVENT``: the hook to answer, or ``install`` to write the entries."""

    pre_compact = "pre-compact"
    session_start = "session-start"
    post_compact = "post-compact"
    install = "install"
