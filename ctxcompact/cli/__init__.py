"""The ``ctxcompact`` command line (Typer). Commands live in sibling modules and are
registered here explicitly; this package is the only place that imports typer."""

from __future__ import annotations

import typer

from ctxcompact import __version__
from ctxcompact.cli import compact, export, inspect, offload, restore, sessions
from ctxcompact.cli import config as config_cli
from ctxcompact.cli import eval as evaluate

app = typer.Typer(
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
    add_completion=False,
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
    config_cli.apply_config(ctx)


app.command("count")(inspect.count)
app.command("check")(inspect.check)
app.command("compact")(compact.compact)
app.command("restore-files")(restore.restore_files)
app.command("offload")(offload.offload)
app.command("export")(export.export)
app.command("sessions")(sessions.sessions)
app.command("eval")(evaluate.eval_command)
app.command("config")(config_cli.config)


def main() -> None:
    app(prog_name="ctxcompact")
