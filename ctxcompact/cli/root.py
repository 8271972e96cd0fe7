"""The ``ctxcompact`` Typer app. Commands live in sibling modules and are registered in
:data:`ctxcompact.cli.COMMANDS`; this module is the only place that runs typer.

Commands are loaded lazily (click's "lazily loading subcommands" pattern): a run imports the
module of the command it runs and nothing of the others, so ``count`` does not pay for the
strategy table, the summarizers or ``eval`` (about 0.1 s of imports on this project's
machine, a fifth of counting 800K tokens). ``--help``, a config file and ``config`` load
them all, since they list every command's options.
"""

from __future__ import annotations

import difflib
import importlib
from typing import Any

import typer
from typer.core import TyperGroup
from typer.models import CommandInfo

from ctxcompact import __version__
from ctxcompact.cli import COMMANDS
from ctxcompact.cli import config as config_cli
from ctxcompact.cli.options import typer_signature


class LazyGroup(TyperGroup):
    """A group that builds a command (imports its module) the first time it is asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            callback = typer_signature(getattr(importlib.import_module(module), attr))
            self.commands[cmd_name] = typer.main.get_command_from_info(
                CommandInfo(name=cmd_name, callback=callback),
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """Typer suggests a close name from the commands built so far (none, here): suggest
        from every command's name instead."""
        try:
            return super().resolve_command(ctx, args)
        except typer._click.exceptions.UsageError as exc:
            matches = difflib.get_close_matches(args[0], list(COMMANDS)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise


app = typer.Typer(
    cls=LazyGroup,
    name="ctxcompact",
    help=(
        "Keep LLM agent transcripts inside their context window.\n\n"
        "Reads a message list (Anthropic or OpenAI dialect, a request body, JSONL, or a Claude Code "
        "session) from files or stdin. Inspection commands print reports on stdout; rewriting commands "
        "print the transcript on stdout and their stats on stderr.\n\n"
        "Exit codes: 0 ok · 1 check: compaction needed · 2 bad usage or input · 3 the work could not be done · "
        "70 internal error (a bug: set CTXCOMPACT_TRACEBACK=1 and report it)."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ctxcompact {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Keep LLM agent transcripts inside their context window."""
    try:
        config_cli.apply_config(ctx)
    except SystemExit as exc:
        # A hook exiting 2 would block Claude Code's compaction: a broken config must not.
        if ctx.invoked_subcommand == "hook" and exc.code == 2:
            raise SystemExit(1) from None
        raise


def main() -> None:
    app(prog_name="ctxcompact")
