"""``mcp``: ctxcompact as a stdio MCP server (the optional ``mcp`` extra)."""

from __future__ import annotations

import typer

from ctxcompact.cli.common import reports_errors
from ctxcompact.errors import UsageError


@reports_errors
def mcp(ctx: typer.Context) -> None:
    """Serve ctxcompact's tools over MCP on stdin/stdout (needs the mcp extra).

    Tools: list_sessions, count_session, check_session, dry_run_compaction, export_context —
    each answering with the JSON the matching command prints. A session is named by its file
    or its id.

    \b
    Examples:
      pip install 'ctxcompact[mcp]'
      claude mcp add ctxcompact -- ctxcompact mcp
      codex mcp add ctxcompact -- ctxcompact mcp
    """
    try:
        from ctxcompact.cli.mcp_server import serve
    except ModuleNotFoundError as exc:
        if exc.name is None or not exc.name.startswith("mcp"):
            raise
        raise UsageError(
            "ctxcompact mcp needs the official MCP SDK: pip install 'ctxcompact[mcp]'."
        ) from None
    serve()
