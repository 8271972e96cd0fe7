"""The stdio MCP server ``ctxcompact mcp`` runs: an agent (or a desktop client) inspects its
own context with ctxcompact's tools.

Tools: ``list_sessions`` (the Claude Code and Codex sessions on this machine, as ``sessions
--json``), ``count_session`` and ``check_session`` (one session by id or path, as ``count
--json`` / ``check --json``: by role, by block type, the largest items, the real context
size), ``dry_run_compaction`` (what a strategy would keep and lose: tokens before and after,
``eval``'s probes kept and the ones lost; nothing written), ``export_context`` (the
request-ready context from the latest compaction point, as ``export``). Every answer is the
JSON the CLI prints, so the two never disagree.

Built on the official ``mcp`` SDK (``pip install 'ctxcompact[mcp]'``), imported only here,
when the command runs.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ctxcompact.errors import CtxcompactError

F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = (
    "ctxcompact inspects Claude Code and Codex sessions (and other LLM transcripts): list the "
    "sessions, count where a session's tokens go, check it against its model's window, preview "
    "what a compaction would keep and lose, and export the context a resumed session sends. "
    "A session is named by its file path or its session id."
)


def build_server() -> MCPServer[Any]:
    """The server with its tools registered."""
    server: MCPServer[Any] = MCPServer("ctxcompact", instructions=INSTRUCTIONS, version=_version())
    tools: list[tuple[Callable[..., Any], str]] = [
        (list_sessions, "List the Claude Code and Codex sessions on this machine, most recent first."),
        (count_session, "Count a session's tokens by role and block type, with its largest items."),
        (check_session, "Check a session against its model's context window: fits, or compaction due."),
        (
            dry_run_compaction,
            "Preview a compaction of a session (nothing is written): tokens before and after, "
            "and which facts of the history it would keep and lose.",
        ),
        (export_context, "The request-ready context of a session, from its latest compaction point."),
    ]
    for function, description in tools:
        server.tool(name=function.__name__, description=description)(_reported(function))
    return server


def _reported(function: F) -> F:
    """Our errors (no such session, bad input) reach the client as the tool's error message."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except CtxcompactError as exc:
            raise ToolError(str(exc)) from None

    return wrapper  # type: ignore[return-value]


def _version() -> str:
    from ctxcompact import __version__

    return __version__


def list_sessions(
    folder: str | None = None, over_only: bool = False, since: str | None = None
) -> dict[str, Any]:
    """``folder``: a folder of sessions (default ~/.claude/projects and ~/.codex/sessions);
    ``over_only``: only those over their threshold; ``since``: a date or a span (24h, 7d)."""
    from ctxcompact.accounting.sessions import default_folders, list_sessions, parse_since
    from ctxcompact.output.json import sessions_to_json

    roots = [Path(folder).expanduser()] if folder else default_folders()
    rows = list_sessions(roots, since=parse_since(since) if since else None)
    if over_only:
        rows = [r for r in rows if r.over_threshold]
    return sessions_to_json(rows)


def count_session(session: str, model: str | None = None, top: int = 10) -> dict[str, Any]:
    """Where the tokens of ``session`` (a path or a session id) go."""
    from ctxcompact.accounting.check import conversation_model, measure
    from ctxcompact.accounting.context_size import context_size
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.accounting.windows import resolve_model
    from ctxcompact.output.json import CountRow, count_to_json

    transcript = _load(session)
    counter = make_counter()
    rows = []
    for conv in transcript.conversations:
        own = model or conversation_model(conv)
        report = measure(conv, counter)
        info = resolve_model(own) if own else None
        size = context_size(conv, report, model=own)
        rows.append(CountRow(conv.label, conv.dialect, report, info, size=size, recorded=conv.recorded))
    return count_to_json(rows, top=top)


def check_session(session: str, model: str | None = None, threshold: float = 0.6) -> dict[str, Any]:
    """Whether ``session`` fits ``model``'s window (default: the session's own model)."""
    from ctxcompact.accounting.check import BudgetSpec, check_conversation
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.output.json import check_to_json

    spec = BudgetSpec(model, threshold=threshold)
    transcript = _load(session)
    counter = make_counter()
    results = [
        check_conversation(conv, budget=spec.resolve(conv)[0], counter=counter)
        for conv in transcript.conversations
    ]
    return check_to_json(results)


def dry_run_compaction(session: str, strategy: str = "full") -> dict[str, Any]:
    """What ``strategy`` (full, prune, hybrid, … or offload) would do to ``session``: nothing
    is written; the summary is the offline extractive one."""
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.evaluation.run import check_eval_strategies, evaluate_strategy

    check_eval_strategies([strategy])
    transcript = _load(session)
    conv = transcript.conversations[0]
    with tempfile.TemporaryDirectory(prefix="ctxcompact-mcp-") as scratch:
        run = evaluate_strategy(
            conv, strategy, source=transcript.name, work_dir=Path(scratch), counter=make_counter()
        )
    if run.skipped:
        return {"session": transcript.name, "strategy": strategy, "skipped": run.skipped}
    report = run.report
    return {
        "session": transcript.name,
        "strategy": strategy,
        "tokens_before": run.tokens_before,
        "tokens_after": run.tokens_after,
        "messages_before": len(run.original),
        "messages_after": len(run.messages),
        "messages_replaced": len(run.replaced),
        "kept": report.kept if report else 0,
        "total": report.total if report else 0,
        "by_kind": {k.kind: [k.kept, k.total] for k in report.kinds if k.total} if report else {},
        "lost": [{"kind": p.kind, "text": p.text} for p in report.lost] if report else [],
    }


def export_context(session: str) -> dict[str, Any]:
    """The messages a resumed ``session`` sends: its latest compaction point onwards."""
    import orjson

    from ctxcompact.transcripts.points.export import export_transcript

    transcript = _load(session)
    data, done = export_transcript(transcript)
    text = data.decode("utf-8")
    try:
        value: Any = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = [orjson.loads(line) for line in data.splitlines() if line.strip()]
    return {"session": transcript.name, "conversations": len(done), "context": value, "bytes": len(text)}


def _load(session: str) -> Any:
    from ctxcompact.agents.events import session_path
    from ctxcompact.transcripts.io import load_transcript

    return load_transcript(session_path(session))


def serve() -> None:
    """Run the server on stdin/stdout until the client closes it."""
    build_server().run("stdio")
