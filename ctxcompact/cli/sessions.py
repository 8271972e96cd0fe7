"""``sessions``: the agent sessions on this machine, their live size and whether they are due."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ctxcompact.accounting.check import BudgetSpec  # a run-time name: Typer reads the signature
from ctxcompact.cli.common import reports_errors
from ctxcompact.cli.options import (
    Json,
    SystemTokens,
    budget_options,
    option_groups,
)
from ctxcompact.cli.streams import streams_for

Folder = Annotated[
    Path | None,
    typer.Argument(
        help="Folder of sessions (project folders of *.jsonl, Codex rollouts) "
        "[default: ~/.claude/projects and ~/.codex/sessions].",
        show_default=False,
    ),
]
#: Below this many files a scan is quick enough to need no progress bar.
PROGRESS_FROM = 20


@reports_errors
@option_groups(budget=budget_options)
def sessions(
    ctx: typer.Context,
    budget: BudgetSpec,  # --model, --context-window, --output-reserve, --threshold, --models-file
    folder: Folder = None,
    system_tokens: SystemTokens = None,
    over: Annotated[bool, typer.Option("--over", help="List only the sessions over the threshold.")] = False,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only sessions active since then: a date (2026-11-01), a date and time, or a span back "
            "from now (24h, 7d, 2w).",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Which sessions are due? Agent, project, model, last activity, live tokens, compactions, cost, verdict.

    Claude Code sessions and Codex rollouts. Live tokens are the session's last recorded usage plus our count of what came after it
    (as check decides), else an estimate. Most recent first.

    \b
    Examples:
      ctxcompact sessions
      ctxcompact sessions ~/.claude/projects --threshold 0.75
      ctxcompact sessions ~/.codex/sessions
      ctxcompact sessions --since 7d
      ctxcompact sessions --over --json | jq -r '.[].path' | ctxcompact compact --from - --in-place
    """
    from ctxcompact.accounting.prices import price_source
    from ctxcompact.accounting.sessions import all_session_files, default_folders, list_sessions, parse_since
    from ctxcompact.output.json import sessions_to_json

    streams = streams_for(ctx)
    root = [folder] if folder is not None else default_folders()
    after = parse_since(since) if since is not None else None
    total = len(all_session_files(root))
    if total >= PROGRESS_FROM and streams.terminal.stderr.is_terminal:
        from ctxcompact.output.rich.sessions import sessions_progress

        with sessions_progress(streams.err, total) as update:
            rows = list_sessions(
                root, budget=budget, system_tokens=system_tokens, since=after, on_progress=update
            )
    else:
        rows = list_sessions(root, budget=budget, system_tokens=system_tokens, since=after)
    if over:
        rows = [r for r in rows if r.over_threshold]
    if as_json:
        streams.write_json(sessions_to_json(rows))
        return
    from ctxcompact.output.text import sessions_report

    streams.report(sessions_report(rows, cost_source=price_source()))
