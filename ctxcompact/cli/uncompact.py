"""``uncompact``: take ctxcompact's compaction out of a session, or fork one from before the agent's."""

from __future__ import annotations

import typer

from ctxcompact.cli.common import reports_errors
from ctxcompact.cli.options import Force, Json, Model
from ctxcompact.cli.streams import streams_for


@reports_errors
def uncompact(
    ctx: typer.Context,
    session: str = typer.Argument(..., help="The session: its file, or its id (Claude Code or Codex)."),
    fork: bool = typer.Option(
        False, "--fork", help="Fork a new session from before a compaction instead of removing ours."
    ),
    at: int | None = typer.Option(
        None, "--at", help="Fork before this compaction (1 = the oldest; see --list). Implies --fork."
    ),
    list_only: bool = typer.Option(False, "--list", help="List the session's compactions and stop."),
    model: Model = None,
    force: Force = False,
    as_json: Json = False,
) -> None:
    """Undo a compaction: remove ctxcompact's last one, or fork a session from before the agent's.

    When the session's last compaction is ctxcompact's, it is taken out (the file is then as it
    was before, byte for byte, when nothing was written after it). When it is the agent's own
    (or with --fork / --at N), a new session is written beside it — a new id, the agent's own
    layout — holding the history before that compaction; resume it with the command printed on
    stdout. A warning says when that history is over the model's window.

    \b
    Examples:
      ctxcompact uncompact ~/.claude/projects/-home-me-app/SESSION.jsonl
      ctxcompact uncompact SESSION_ID --list
      ctxcompact uncompact SESSION_ID --fork --at 1
    """
    from ctxcompact.agents.events import resume_command, session_path
    from ctxcompact.agents.uncompact import fork_session, list_compactions, remove_ours
    from ctxcompact.output.json import compactions_json, fork_json, removed_json

    streams = streams_for(ctx)
    path = session_path(session)
    found = list_compactions(path)
    if list_only:
        if as_json:
            streams.write_json(compactions_json(path, found))
            return
        from ctxcompact.output.agents import compactions_report

        streams.report(compactions_report(path, found))
        return
    if not fork and at is None and found and found[-1].ours:
        removed = remove_ours(path, force=force)
        if as_json:
            streams.write_json(removed_json(removed))
        streams.note(
            f"{path}: removed ctxcompact's compaction {removed.compaction.number} "
            + (
                f"(kept the {removed.kept_after} line(s) written after it; backup {removed.backup})."
                if removed.kept_after
                else "(the file is as it was before it)."
            )
        )
        return
    done = fork_session(path, at=at, model=model)
    if done.over_window:
        streams.warnings(
            [
                f"the forked session's live context is {done.tokens:,} tokens, over the "
                f"{done.context_window:,}-token window of {done.model or 'its model'}: the agent "
                "will compact it again (or refuse it) on its first call."
            ]
        )
    streams.note(
        f"{path}: forked before compaction {done.compaction.number} ({done.compaction.by}) into "
        f"{done.path} ({done.tokens:,} tokens live)."
    )
    if as_json:
        streams.write_json(fork_json(done))
    else:
        streams.write_text(resume_command(done.agent, done.session_id))
