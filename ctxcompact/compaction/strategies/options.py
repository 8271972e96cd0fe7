"""Every strategy's options: the frozen dataclasses, their default constants and how each
option is spelled on the command line (:func:`~ctxcompact.compaction.strategies.base.flag`:
``compact`` builds its options from these fields, so a strategy's option is declared once).

Light on purpose (start-up stays lean): the pipeline's :class:`~ctxcompact.compaction.pipeline.CompactOptions`
and the CLI's option declarations need every strategy's options and defaults, but a compaction
runs only the strategies it names, so their run code (with its regexes, scores and details
types) lives in the strategy modules, imported on first use by the table
(:data:`ctxcompact.compaction.strategies.STRATEGIES`). Each strategy module re-exports its own options,
so ``from ctxcompact.compaction.strategies.full import FullOptions`` keeps working.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from ctxcompact.compaction.restore import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS_PER_FILE,
    DEFAULT_MAX_TOKENS_TOTAL,
)
from ctxcompact.compaction.strategies.base import Flag, LazyCall, flag
from ctxcompact.compaction.summarize.limits import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ctxcompact.compaction.summarize.prompt import SUMMARY_MAX_WORDS
from ctxcompact.errors import OptionError, UsageError
from ctxcompact.names import OnFailure, SummarizerName

if TYPE_CHECKING:
    from ctxcompact.compaction.restore import ReadTool
    from ctxcompact.compaction.summarize import Summarizer

# --- full ---------------------------------------------------------------------------------------

DEFAULT_SUMMARIZER = SummarizerName.auto
DEFAULT_ON_FAILURE = OnFailure.fallback
DEFAULT_SUMMARY_MAX_WORDS = SUMMARY_MAX_WORDS


@dataclass(frozen=True, slots=True)
class FullOptions:
    """The summary (which summarizer, its limits, what to do when it fails) and the files
    restored after it. ``read_tools`` None: the dialect's (:func:`~ctxcompact.compaction.restore.read_tools_for`)."""

    summarizer: SummarizerName = flag(
        DEFAULT_SUMMARIZER,
        "--summarizer",
        help="auto (anthropic when ANTHROPIC_API_KEY is set, else extractive), anthropic, anthropic-batch "
        "(a batch's summaries through the Message Batches API, half the price; needs --out-dir or "
        "--in-place), or extractive (offline, deterministic).",
    )
    summary_model: str | None = flag(
        None, "--summary-model", help="Model that writes the summary [default: a fast Claude model]."
    )
    summary_max_words: int = flag(
        DEFAULT_SUMMARY_MAX_WORDS, "--summary-max-words", help="Word limit for the summary."
    )
    instructions: str | None = flag(
        None, "--instructions", help="Extra focus for the summary, like /compact's argument."
    )
    on_failure: OnFailure = flag(
        DEFAULT_ON_FAILURE,
        "--on-failure",
        help="When the LLM fails after retries: fallback (extractive), skip (output = input), error (exit 3).",
    )
    timeout: float = flag(DEFAULT_TIMEOUT, "--timeout", help="Seconds per summary request.")
    max_retries: int = flag(
        DEFAULT_MAX_RETRIES,
        "--max-retries",
        help="Retries on 429/5xx/overloaded/connection errors, with backoff.",
    )
    #: ``time.monotonic()`` after which no summary request starts and no wait ends (``--deadline``:
    #: :func:`ctxcompact.llm.deadline.deadline_in`); None: none beyond each request's own bounds.
    #: A run's clock, not a choice about the result: left out of repr and equality (a
    #: ``--resume`` journal compares options by their repr).
    deadline_at: float | None = field(default=None, repr=False, compare=False)
    restore: bool = flag(
        True, "--restore/--no-restore", help="Re-read the files the agent read most recently."
    )
    keep_loop: bool = flag(
        False,
        "--keep-loop",
        help="Keep the last user request and its tool loop verbatim after the summary, so the result is "
        "a request you can send.",
    )
    read_tools: tuple[ReadTool, ...] | None = flag(
        None,
        "--read-tool",
        help="TOOL:FIELD that reads a file (repeatable) [default: read_file:path, plus Read:file_path for "
        "Claude Code sessions].",
        typed=list[str] | None,
        parse=lambda specs: parse_read_tools(specs),
    )
    max_files: int = flag(DEFAULT_MAX_FILES, "--max-files", help="Restore at most this many files.")
    max_tokens_per_file: int = flag(
        DEFAULT_MAX_TOKENS_PER_FILE,
        "--max-tokens-per-file",
        help="Skip files larger than this (tokens).",
        size=True,
    )
    max_tokens_total: int = flag(
        DEFAULT_MAX_TOKENS_TOTAL,
        "--max-tokens-total",
        help="Stop restoring past this total (tokens).",
        size=True,
    )
    #: Newest tokens kept verbatim after the summary (None: 0, or 20 % of the threshold under
    #: ``--auto``, see :data:`ctxcompact.compaction.pipeline.AUTO_RECENT_SHARE`).
    keep_recent_tokens: int | None = flag(
        None,
        "--keep-recent-tokens",
        size=True,
        help="full: keep the newest N tokens verbatim (cut at a round), summarize what is older. "
        "Default 0; under --auto 20% of the threshold.",
    )
    #: The newest real user messages kept verbatim after the summary, up to this many tokens.
    #: None: the dialect's rule — 0 (off) for message lists, Codex's 20,000 (bytes/4) for
    #: Codex rollouts, which lay out their own compacted history.
    keep_user_tokens: int | None = flag(
        None,
        "--keep-user-tokens",
        size=True,
        help="full: keep the newest user messages verbatim up to N tokens after the summary "
        "[default: 0 (off); Codex sessions: 20,000, Codex's own rule (bytes/4)].",
    )

    def __post_init__(self) -> None:
        if (self.keep_recent_tokens or 0) < 0 or (self.keep_user_tokens or 0) < 0:
            raise OptionError(
                "{keep_recent_tokens} and {keep_user_tokens} must not be negative.",
                "keep_recent_tokens",
                "keep_user_tokens",
            )
        # Library callers pass plain strings: take them as the enum, or refuse them clearly.
        for name, kind in (("summarizer", SummarizerName), ("on_failure", OnFailure)):
            value = getattr(self, name)
            if value not in set(kind):
                choices = ", ".join(kind)
                raise OptionError(
                    "unknown {" + name + "} {value!r}; expected one of {choices}.",
                    name,
                    value=value,
                    choices=choices,
                )
            object.__setattr__(self, name, kind(value))
        for name in (
            "summary_max_words",
            "max_files",
            "max_tokens_per_file",
            "max_tokens_total",
            "max_retries",
        ):
            if getattr(self, name) < 0:
                raise OptionError.about(name, "must not be negative.")
        if self.summary_max_words < 1:
            raise OptionError("{summary_max_words} must be at least 1.", "summary_max_words")
        if self.timeout <= 0:
            raise OptionError("{timeout} must be positive.", "timeout")

    def make_summarizer(self) -> Summarizer:
        """The summarizer these options name (nothing is sent until it summarizes)."""
        from ctxcompact.compaction.summarize import make_summarizer

        return make_summarizer(
            self.summarizer,
            model=self.summary_model,
            timeout=self.timeout,
            max_retries=self.max_retries,
            deadline_at=self.deadline_at,
        )


# --- prune --------------------------------------------------------------------------------------

DEFAULT_KEEP = 3
DEFAULT_CLEAR_AT_LEAST = 0


@dataclass(frozen=True, slots=True)
class PruneOptions:
    """The knobs of :func:`~ctxcompact.compaction.strategies.prune.prune_tool_outputs` (``include_loop``
    is ``not protect_loop``)."""

    keep: int = flag(DEFAULT_KEEP, "--keep", help="Keep the N most recent tool uses untouched.")
    clear_at_least: int = flag(
        DEFAULT_CLEAR_AT_LEAST,
        "--clear-at-least",
        size=True,
        help="Change nothing unless at least this many tokens can be freed.",
    )
    exclude_tools: tuple[str, ...] = flag(
        (),
        "--exclude-tools",
        help="Comma-separated tool names never cleared.",
        typed=str | None,
        cli_default=None,
        parse=lambda text: tuple(t.strip() for t in (text or "").split(",") if t.strip()),
    )
    clear_tool_inputs: bool = flag(
        False, "--clear-tool-inputs", help="Also blank the inputs of cleared tool uses."
    )
    keep_thinking: int | None = flag(
        None,
        "--keep-thinking",
        help="Keep thinking of the last N assistant turns, or 'all'.",
        typed=str,
        cli_default="all",
        parse=lambda text: parse_keep_thinking(text),
    )
    include_loop: bool = flag(
        False,
        "--include-loop",
        help="Let prune, selective and key-messages work inside the current tool loop too (as the API's "
        "own edit does); what the model has not seen stays whole.",
    )

    def __post_init__(self) -> None:
        for name, value in (("keep", self.keep), ("clear_at_least", self.clear_at_least)):
            if value < 0:
                raise OptionError.about(name, "must not be negative.")


# --- clean-tools --------------------------------------------------------------------------------

DEFAULT_ROUNDS = 2


@dataclass(frozen=True, slots=True)
class CleanToolsOptions:
    """``rounds``: the rounds before the current one that keep their tool calls."""

    rounds: int = flag(DEFAULT_ROUNDS, "--rounds", help="Keep tool calls of the last N rounds.")

    def __post_init__(self) -> None:
        if self.rounds < 0:
            raise OptionError("{rounds} must not be negative.", "rounds")


# --- selective ----------------------------------------------------------------------------------

ItemType = Literal[
    "tool_result",
    "skill_prompt",
    "skill_metadata",
    "assistant_message",
    "user_message",
    "compaction_summary",
    "system_prompt",
    "memory",
]
Action = Literal["truncate", "drop", "none"]
ITEM_TYPES: tuple[str, ...] = ItemType.__args__  # type: ignore[attr-defined]
ACTIONS: tuple[str, ...] = ("truncate", "drop", "none")


@dataclass(frozen=True, slots=True)
class Rule:
    """What to do with one type of item (truncate, drop, none), sparing the ``keep_recent`` newest; lower ``priority`` first."""

    item_type: ItemType
    action: Action
    keep_recent: int = 0
    priority: int = 100


#: The default rule table (``--rules FILE`` overrides it).
DEFAULT_RULES: tuple[Rule, ...] = (
    Rule("tool_result", "truncate", 5, 10),
    Rule("skill_prompt", "drop", 0, 20),
    Rule("assistant_message", "truncate", 5, 30),
    Rule("skill_metadata", "drop", 0, 40),
    Rule("user_message", "truncate", 5, 50),
    Rule("compaction_summary", "none", 0, 80),
    Rule("system_prompt", "none", 0, 100),
    Rule("memory", "none", 0, 100),
)
NEVER = ("compaction_summary", "system_prompt", "memory")


@dataclass(frozen=True, slots=True)
class SelectiveOptions:
    """The rule table and the tool-field thresholds (tokens)."""

    #: The whole options come from one file on the command line (``--rules``).
    FROM_FILE: ClassVar[Flag] = Flag(
        ("--rules",),
        help="selective: a TOML file overriding the rule table: [rules.TYPE] action = truncate|drop|none, "
        "keep_recent, priority (TYPE: tool_result, skill_prompt, assistant_message, skill_metadata, "
        "user_message); [fields] tool_input_threshold, tool_result_threshold, preview_tokens.",
        typed=Path | None,
        parse=LazyCall("ctxcompact.compaction.strategies.selective_rules", "load_rules_file"),
    )

    rules: tuple[Rule, ...] = DEFAULT_RULES
    tool_input_threshold: int = 500
    tool_result_threshold: int = 600
    preview_tokens: int = 200

    def __post_init__(self) -> None:
        for name in ("tool_input_threshold", "tool_result_threshold", "preview_tokens"):
            if getattr(self, name) < 1:
                raise UsageError(f"selective: {name} must be at least 1.")
        for rule in self.rules:
            if rule.keep_recent < 0:
                raise UsageError(f"selective: keep_recent of {rule.item_type} must be 0 or more.")


#: The seed's table and thresholds.
DEFAULT_OPTIONS = SelectiveOptions()

# --- key-messages -------------------------------------------------------------------------------

LONG_RESULT_TOKENS = 600
#: ``CompressionConfig`` defaults. The trigger (0.8) is ``--threshold``'s job.
TRIGGER_THRESHOLD = 0.8
DEFAULT_TARGET_USAGE = 0.5
DEFAULT_MIN_RECENT = 10
DEFAULT_TOKEN_BUDGET = 128_000
DEFAULT_FALLBACK_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class KeyMessageOptions:
    """``key-messages``' ``CompressionConfig`` and its fallbacks' figures (tokens)."""

    target_usage: float = flag(
        DEFAULT_TARGET_USAGE, "--target-usage", help="key-messages: keep this share of the model's budget."
    )
    min_recent_messages: int = flag(
        DEFAULT_MIN_RECENT, "--min-recent", help="key-messages: the newest N messages come first (+1000)."
    )
    token_budget: int | None = None  # None: the model's budget, else DEFAULT_TOKEN_BUDGET
    fallback_rounds: int = flag(
        DEFAULT_FALLBACK_ROUNDS,
        "--fallback-rounds",
        help="key-messages and the fallback ladder: over budget, keep only the last K rounds.",
    )
    result_preview_tokens: int = 200
    long_text_tokens: int = LONG_RESULT_TOKENS

    def __post_init__(self) -> None:
        if not 0 < self.target_usage <= 1:
            raise OptionError(
                "{target_usage} must be above 0 and at most 1, got {value}.",
                "target_usage",
                value=self.target_usage,
            )
        for name in ("min_recent_messages", "fallback_rounds", "result_preview_tokens", "long_text_tokens"):
            if getattr(self, name) < 0:
                raise OptionError.about(name, "must be 0 or more.")
        if self.token_budget is not None and self.token_budget < 1:
            raise OptionError("{token_budget} must be at least 1.", "token_budget")

    def target_tokens(self, model_budget: int | None = None) -> int:
        """``floor(token_budget × target_usage)``; the budget is
        ``token_budget``, else ``model_budget`` (the model's usable window), else 128,000."""
        budget = self.token_budget or model_budget or DEFAULT_TOKEN_BUDGET
        return math.floor(budget * self.target_usage)


# --- hybrid -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HybridOptions:
    """Hybrid has no knobs of its own: it runs ``prune`` and ``full`` with theirs."""


# --- command-line values -------------------------------------------------------------------------


def parse_read_tools(specs: list[str] | None) -> tuple[ReadTool, ...] | None:
    """``--read-tool TOOL:FIELD`` specs, or None (the core then picks by dialect)."""
    from ctxcompact.compaction.restore import parse_read_tool

    return tuple(parse_read_tool(s) for s in specs) if specs else None


def parse_keep_thinking(text: str) -> int | None:
    """``all`` (None: keep every turn's thinking) or a whole number of turns."""
    if text.strip().lower() == "all":
        return None
    try:
        turns = int(text)
    except ValueError:
        raise OptionError.about(
            "keep_thinking", "takes a whole number or 'all', got {text!r}.", text=text
        ) from None
    if turns < 0:
        raise OptionError.about("keep_thinking", "must not be negative.")
    return turns
