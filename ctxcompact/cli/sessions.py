"""``sessions``: the agent sessions on this machine, their live size and whether they are due."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ctxcompact.accounting.windows import load_registry
from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    JSON_OPT,
    MAX_INPUT_BYTES_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_RESERVE_OPT,
    SYSTEM_TOKENS_OPT,
    THRESHOLD_OPT,
    reports_errors,
)
from ctxcompact.cli.streams import streams_for

DIR_ARG = typer.Argument(
    None,
    help="Folder of sessions (project folders of *.jsonl, Codex rollouts) "
    "[default: ~/.claude/projects and ~/.codex/sessions].",
    show_default=False,
)
#: Below this many files a scan is quick enough to need no progress bar.
PROGRESS_FROM = 20


@reports_errors
def sessions(
    ctx: typer.Context,
    folder: Path | None = DIR_ARG,
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    system_tokens: int | None = SYSTEM_TOKENS_OPT,
    over: bool = typer.Option(False, "--over", help="List only the sessions over the threshold."),
    since: str | None = typer.Option(
        None,
        "--since",
        help="Only sessions active since then: a date (2026-11-01), a date and time, or a span back from now (24h, 7d, 2w).",
    ),
    archive_dir: Path | None = typer.Option(
        None,
        "--archive-dir",
        help="Where ctxcompact hook recorded the agents' compactions [default: $XDG_STATE_HOME/ctxcompact/archive].",
    ),
    as_json: bool = JSON_OPT,
    max_input_bytes: int = MAX_INPUT_BYTES_OPT,
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
    options = {
        "model": model,
        "context_window": context_window,
        "output_reserve": output_reserve,
        "ratio": threshold,
        "registry": load_registry(models_file),
        "system_tokens": system_tokens,
        "since": parse_since(since) if since is not None else None,
        "max_bytes": max_input_bytes,
    }
    total = len(all_session_files(root))
    if total >= PROGRESS_FROM and streams.terminal.stderr.is_terminal:
        from ctxcompact.output.rich.sessions import sessions_progress

        with sessions_progress(streams.err, total) as update:
            rows = list_sessions(root, on_progress=update, **options)  # type: ignore[arg-type]
    else:
        rows = list_sessions(root, **options)  # type: ignore[arg-type]
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
        from ctxcompact.output.agents import scored_json

        payload = sessions_to_json(rows)
        for row, item in zip(rows, payload, strict=True):
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
