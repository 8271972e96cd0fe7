"""The ``ctxcompact`` command line: Typer-declared, with a fast path that does not load typer.

Every command's options are declared once, with Typer, in its module (the options every
command shares in :mod:`ctxcompact.cli.options`); :mod:`ctxcompact.cli.root` is the Typer app,
the only place that runs typer. The commands people run on small files (``count``, ``check``,
``compact``) would spend most of their time loading typer and having it build the command
from the signature, so :mod:`ctxcompact.cli.fast` parses their common invocations from
:mod:`ctxcompact.cli.parameters` (what typer builds, generated from the declarations and
checked against them by a test) and runs the same function; anything else (``--help``, an
error, completion, an unusual spelling) goes to the Typer app, which says it as always.

This package's ``__init__`` loads nothing: ``app`` and ``main`` are the Typer app's, imported
on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxcompact.cli.root import app, main

#: command name -> (module, function), in the order ``--help`` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "count": ("ctxcompact.cli.count", "count"),
    "check": ("ctxcompact.cli.check", "check"),
    "compact": ("ctxcompact.cli.compact", "compact"),
    "restore-files": ("ctxcompact.cli.restore", "restore_files"),
    "offload": ("ctxcompact.cli.offload", "offload"),
    "export": ("ctxcompact.cli.export", "export"),
    "sessions": ("ctxcompact.cli.sessions", "sessions"),
    "eval": ("ctxcompact.cli.eval", "eval_command"),
    "models": ("ctxcompact.cli.models", "models"),
    "config": ("ctxcompact.cli.config", "config"),
    "hook": ("ctxcompact.cli.hook", "hook"),
    "uncompact": ("ctxcompact.cli.uncompact", "uncompact"),
    "mcp": ("ctxcompact.cli.mcp", "mcp"),
}

#: The commands :mod:`ctxcompact.cli.fast` runs without typer (their parameters are in
#: :mod:`ctxcompact.cli.parameters`).
FAST_COMMANDS = ("count", "check", "compact")

__all__ = ["COMMANDS", "FAST_COMMANDS", "app", "main"]


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        from ctxcompact.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
