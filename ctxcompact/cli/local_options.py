"""``compact``'s options for the local strategies, pins and the recent tail, and the
``--verbose`` phase timeline. Declared here so ``cli/compact.py`` stays a thin parser."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ctxcompact.cli.sizes import SIZE

if TYPE_CHECKING:
    from rich.console import Console

from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies.options import (
    DEFAULT_FALLBACK_ROUNDS,
    DEFAULT_MIN_RECENT,
    DEFAULT_TARGET_USAGE,
    KeyMessageOptions,
    SelectiveOptions,
)

RULES_OPT = typer.Option(
    None,
    "--rules",
    help="selective: a TOML file overriding the rule table: [rules.TYPE] action = truncate|drop|none, "
    "keep_recent, priority (TYPE: tool_result, skill_prompt, assistant_message, skill_metadata, "
    "user_message); [fields] tool_input_threshold, tool_result_threshold, preview_tokens.",
)
TARGET_USAGE_OPT = typer.Option(
    DEFAULT_TARGET_USAGE,
    "--target-usage",
    help="key-messages: keep this share of the model's budget (seed 004: 0.5).",
)
MIN_RECENT_OPT = typer.Option(
    DEFAULT_MIN_RECENT,
    "--min-recent",
    help="key-messages: the newest N messages come first (+1000).",
)
FALLBACK_ROUNDS_OPT = typer.Option(
    DEFAULT_FALLBACK_ROUNDS,
    "--fallback-rounds",
    help="key-messages and the fallback ladder: over budget, keep only the last K rounds.",
)
PIN_OPT = typer.Option(
    None,
    "--pin",
    help='Keep every message whose text matches this regex verbatim (repeatable); a record with "ctxcompact_pin": true is pinned too.',
)
PIN_FIRST_OPT = typer.Option(
    None,
    "--pin-first/--no-pin-first",
    help="Pin the first user message (the task). Default: on, except for full on its own.",
)
KEEP_RECENT_TOKENS_OPT = typer.Option(
    None,
    "--keep-recent-tokens",
    parser=SIZE,
    help="full: keep the newest N tokens verbatim (cut at a round), summarize what is older. "
    "Default 0; under --auto 20% of the threshold.",
)
KEEP_USER_TOKENS_OPT = typer.Option(
    None,
    "--keep-user-tokens",
    parser=SIZE,
    help="full: keep the newest user messages verbatim up to N tokens after the summary "
    "[default: 0 (off); Codex sessions: 20,000, Codex's own rule (bytes/4)].",
)
VERBOSE_OPT = typer.Option(
    False, "--verbose", "-v", help="Print the phase timeline (each step and rule, tokens before → after)."
)


def local_strategy_options(
    *, rules: Path | None, target_usage: float, min_recent: int, fallback_rounds: int
) -> tuple[SelectiveOptions, KeyMessageOptions]:
    """The options objects of ``selective`` and ``key-messages`` from the command line."""
    selective = SelectiveOptions()
    if rules is not None:  # the TOML reader only with --rules (start-up)
        from ctxcompact.compaction.strategies.selective_rules import load_rules

        selective = load_rules(rules)
    key_messages = KeyMessageOptions(
        target_usage=target_usage, min_recent_messages=min_recent, fallback_rounds=fallback_rounds
    )
    return selective, key_messages


def pin_options(pin: Sequence[str] | None, pin_first: bool | None) -> PinOptions:
    return PinOptions(patterns=tuple(pin or ()), pin_first=pin_first)


def timeline(steps: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``--verbose`` lines: one per strategy step, selective rule and fallback."""
    lines: list[str] = []
    for step in steps:
        name = step.get("strategy", "?")
        figures = ""
        if isinstance(step.get("tokens"), Mapping):
            figures = f", tokens {step['tokens']['before']:,} → {step['tokens']['after']:,}"
        lines.append(f"step {name}: {'changed' if step.get('changed') else 'unchanged'}{figures}")
        for event in step.get("events", ()):
            rule = f" rule={event['rule']}" if event.get("rule") else ""
            lines.append(
                f"  phase={event['phase']}{rule} removed={event.get('removed', 0)} "
                f"tokens {event['tokens_before']:,} → {event['tokens_after']:,}"
            )
        for sub in (*step.get("fallbacks", ()), *step.get("ladder", ())):
            lines.append(f"  {sub['step']}: tokens {sub['tokens_before']:,} → {sub['tokens_after']:,}")
    return lines


def render_lines(lines: Sequence[str], console: Console) -> None:
    for line in lines:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
