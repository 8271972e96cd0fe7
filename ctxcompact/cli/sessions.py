"""``sessions``: the agent sessions on this machine, their live size and whether they are due."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ctxcompact.accounting.check import BudgetSpec  # a run-time name: Typer reads the signature
from ctxcompact.cli.common import reports_errors
from ctxcompact.cli.groups import budget_options, option_groups
from ctxcompact.cli.options import (
    ArchiveDir,
    Json,
    MaxInputBytes,
    SystemTokens,
)
from ctxcompact.cli.streams import streams_for
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

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
    archive_dir: ArchiveDir = None,
    as_json: Json = False,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
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
      ctxcompact sessions --over --json | jq -r '.sessions[].path' | ctxcompact compact --from - --in-place
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
                root,
                budget=budget,
                system_tokens=system_tokens,
                since=after,
                max_bytes=max_input_bytes,
                on_progress=update,
            )
    else:
        rows = list_sessions(
            root, budget=budget, system_tokens=system_tokens, since=after, max_bytes=max_input_bytes
        )
    guessed = [r for r in rows if r.error is None and not r.window_known]
    if guessed:
        from ctxcompact.accounting.windows import DEFAULT_CONTEXT_WINDOW

        names = ", ".join(Path(r.path).name for r in guessed[:3]) + (", …" if len(guessed) > 3 else "")
        streams.warnings(
            [
                f"{len(guessed)} session(s) record no model with a known window ({names}): their "
                f"threshold assumes the default {DEFAULT_CONTEXT_WINDOW:,}-token window; pass --model "
                "or --context-window."
            ]
        )
    if over:
        rows = [r for r in rows if r.over_threshold]
    scored = _scored_compactions(rows, archive_dir)
    if as_json:
        from ctxcompact.output.json import scored_json

        payload = sessions_to_json(rows)
        for row, item in zip(rows, payload["sessions"], strict=True):
            item["agent_compactions"] = scored_json(scored.get(row.path, []))
        streams.write_json(payload)
        return
    from ctxcompact.output.text import sessions_report

    blocks = sessions_report(rows, cost_source=price_source())
    if scored:
        from ctxcompact.output.agents import lost_report

        by_label = {
            f"{row.project} {row.session_id[:8]}": scored[row.path] for row in rows if row.path in scored
        }
        blocks = [*blocks, *lost_report(by_label)]
    streams.report(blocks)


def _scored_compactions(rows: list[Any], archive_dir: Path | None) -> dict[str, list[Any]]:
    """The agents' compactions ``ctxcompact hook post-compact`` scored, by session path."""
    from ctxcompact.agents.store import read_records, scored_compactions
    from ctxcompact.compaction.archive import default_archive_dir

    folder = archive_dir or default_archive_dir()
    out: dict[str, list[Any]] = {}
    for row in rows:
        for session_id in dict.fromkeys((row.session_id, Path(row.path).stem)):
            found = scored_compactions(read_records(folder, row.agent, session_id))
            if found:
                out[row.path] = found
                break
    return out
