"""Every strategy's options: the frozen dataclasses and their default constants, nothing else.

Light on purpose (start-up, issue 12): the pipeline's :class:`~ctxcompact.compaction.pipeline.CompactOptions`
and the CLI's option declarations need every strategy's options and defaults, but a compaction
runs only the strategies it names, so their run code (with its regexes, scores and details
types) lives in the strategy modules, imported on first use by the table
(:data:`ctxcompact.compaction.strategies.STRATEGIES`). Each strategy module re-exports its own options,
so ``from ctxcompact.compaction.strategies.full import FullOptions`` keeps working.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ctxcompact.compaction.restore import (
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS_PER_FILE,
    DEFAULT_MAX_TOKENS_TOTAL,
)
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

    summarizer: SummarizerName = DEFAULT_SUMMARIZER
    summary_model: str | None = None
    summary_max_words: int = DEFAULT_SUMMARY_MAX_WORDS
    instructions: str | None = None
    on_failure: OnFailure = DEFAULT_ON_FAILURE
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    #: ``time.monotonic()`` after which no summary request starts and no wait ends (``--deadline``:
    #: :func:`ctxcompact.llm.retry.deadline_in`); None: none beyond each request's own bounds.
    #: A run's clock, not a choice about the result: left out of repr and equality (a
    #: ``--resume`` journal compares options by their repr).
    deadline_at: float | None = field(default=None, repr=False, compare=False)
    restore: bool = True
    keep_loop: bool = False
    read_tools: tuple[ReadTool, ...] | None = None
    max_files: int = DEFAULT_MAX_FILES
    max_tokens_per_file: int = DEFAULT_MAX_TOKENS_PER_FILE
    max_tokens_total: int = DEFAULT_MAX_TOKENS_TOTAL
    #: Newest tokens kept verbatim after the summary (None: 0, or 20 % of the threshold under
    #: ``--auto``, see :data:`ctxcompact.compaction.pipeline.AUTO_RECENT_SHARE`).
    keep_recent_tokens: int | None = None
    #: The newest real user messages kept verbatim after the summary, up to this many tokens.
    #: None: the dialect's rule — 0 (off) for message lists, Codex's 20,000 (bytes/4) for
    #: Codex rollouts, which lay out their own compacted history.
    keep_user_tokens: int | None = None

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

    keep: int = DEFAULT_KEEP
    clear_at_least: int = DEFAULT_CLEAR_AT_LEAST
    exclude_tools: tuple[str, ...] = ()
    clear_tool_inputs: bool = False
    keep_thinking: int | None = None
    include_loop: bool = False

    def __post_init__(self) -> None:
        for name, value in (("keep", self.keep), ("clear_at_least", self.clear_at_least)):
            if value < 0:
                raise OptionError.about(name, "must not be negative.")


# --- clean-tools --------------------------------------------------------------------------------

DEFAULT_ROUNDS = 2


@dataclass(frozen=True, slots=True)
class CleanToolsOptions:
    """``rounds``: the rounds before the current one that keep their tool calls."""

    rounds: int = DEFAULT_ROUNDS

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
    item_type: ItemType
    action: Action
    keep_recent: int = 0
    priority: int = 100


#: Seed 002 §4.1's rule table.
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
    """The rule table and the field thresholds of seed 002 §4.2 (tokens)."""

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
#: Seed 004 ``CompressionConfig`` defaults. The seed's trigger (0.8) is ``--threshold``'s job.
TRIGGER_THRESHOLD = 0.8
DEFAULT_TARGET_USAGE = 0.5
DEFAULT_MIN_RECENT = 10
DEFAULT_TOKEN_BUDGET = 128_000
DEFAULT_FALLBACK_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class KeyMessageOptions:
    """Seed 004's ``CompressionConfig`` and its fallbacks' figures (tokens)."""

    target_usage: float = DEFAULT_TARGET_USAGE
    min_recent_messages: int = DEFAULT_MIN_RECENT
    token_budget: int | None = None  # None: the model's budget, else DEFAULT_TOKEN_BUDGET
    fallback_rounds: int = DEFAULT_FALLBACK_ROUNDS
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
        """``floor(token_budget × target_usage)`` (seed 004 ``getTargetTokens``); the budget is
        ``token_budget``, else ``model_budget`` (the model's usable window), else 128,000."""
        budget = self.token_budget or model_budget or DEFAULT_TOKEN_BUDGET
        return math.floor(budget * self.target_usage)


# --- hybrid -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HybridOptions:
    """Hybrid has no knobs of its own: it runs ``prune`` and ``full`` with theirs."""
