"""Configuration on the command line: settings become click's ``default_map`` (so flags still
win), and ``ctxcompact config`` shows the effective settings and where each came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ctxcompact.cli.common import error, reports_errors
from ctxcompact.cli.options import Json
from ctxcompact.cli.streams import streams_for
from ctxcompact.config import Config, OptionSpec, find_config_file, load_config
from ctxcompact.errors import CtxcompactError, UsageError

#: Options that are not settings: they act at once or name one run's own files.
NOT_SETTINGS = frozenset(
    {
        "help",
        "version",
        "output",
        "from",
        "resume",
        "shard",
        "undo",
        "in-place",
        "force",  # rewriting a live session is decided per run, never by a config file
        "trust-session-cwd",  # what a transcript may make us read: never from a project's config
        "dry-run",
        "report",
        "stats-json",
        "yes",  # consent to spend money on an API is given per run, never by a config file
    }
)


def option_specs(ctx: Any, group: Any, *, only: str | None = None) -> list[OptionSpec]:
    """Every option of every command of ``group`` (a click group: typer vendors click, so it is
    read by its attributes) as a :class:`OptionSpec`; with ``only``, that command's alone."""
    specs: list[OptionSpec] = []
    for name in sorted(group.list_commands(ctx) if only is None else [only]):
        command = group.get_command(ctx, name)
        if name == "config" or command is None:
            continue
        for param in command.params:
            longs = [o for o in (*param.opts, *param.secondary_opts) if o.startswith("--")]
            if param.param_type_name != "option" or not longs or param.name is None:
                continue
            key = longs[0][2:]
            if key in NOT_SETTINGS:
                continue
            default = param.default() if callable(param.default) else param.default
            specs.append(
                OptionSpec(
                    name,
                    key,
                    param.name,
                    default=getattr(default, "value", default),
                    multiple=param.multiple,
                    is_path=any(t.__name__ in ("Path", "TyperPath") for t in type(param.type).__mro__),
                )
            )
    return specs


def apply_config(ctx: typer.Context) -> None:
    """Feed the config file and ``CTXCOMPACT_*`` settings to the subcommand about to run."""
    group = ctx.command
    if not hasattr(group, "commands") or ctx.invoked_subcommand in (None, "config"):
        return
    # A file's keys are checked against every command's options, which loads every command;
    # without one, only the environment can set anything, and only for this command.
    file = find_config_file(Path.cwd().resolve())
    specs = option_specs(ctx, group, only=None if file else ctx.invoked_subcommand)
    try:
        loaded = load_config(specs, file=file)
        found = loaded.default_map(specs)
        _check_values(ctx, group, loaded, found)
    except CtxcompactError as exc:  # the root callback is not a command: report it here
        raise error(ctx, str(exc), exc.exit_code) from None
    if found:
        ctx.default_map = {**(ctx.default_map or {}), **found}


def _check_values(ctx: Any, group: Any, loaded: Config, found: dict[str, dict[str, Any]]) -> None:
    """Each setting for the command about to run, converted as its option would convert it:
    a value it refuses is exit 2 naming the file (or variable) and the key, not a bare
    "Invalid value for '--threshold'" that leaves the user looking at the command line."""
    name = ctx.invoked_subcommand
    command = group.get_command(ctx, name)
    params = {p.name: p for p in getattr(command, "params", ())}
    for param_name, value in found.get(name, {}).items():
        param = params.get(param_name)
        if param is None:
            continue
        try:
            param.type_cast_value(ctx, value)
        except typer.BadParameter as exc:
            key = next(o for o in param.opts if o.startswith("--"))[2:]
            setting = loaded.lookup(name, key)
            where = setting.source if setting is not None else "config"
            if loaded.file is not None and not where.startswith("env "):
                where = str(loaded.file) + where[len(loaded.file.name) :]  # the path, and the table
            raise UsageError(
                f"{where}: {key} = {value!r} is not a valid value for --{key} of {name}: {exc.message}"
            ) from None


@reports_errors
def config(
    ctx: typer.Context,
    as_json: Json = False,
) -> None:
    """Show the effective settings and where each came from.

    Settings come, lowest precedence first, from the built-in defaults, the nearest
    ctxcompact.toml or pyproject.toml [tool.ctxcompact] (searched from the current directory
    upward; a [tool.ctxcompact.COMMAND] table for one command), CTXCOMPACT_<KEY> environment
    variables, and the command line.

    \b
    Examples:
      ctxcompact config
      CTXCOMPACT_MODEL=gpt-4o ctxcompact config --json | jq '.settings[] | select(.key=="model")'
    """
    from ctxcompact.config import effective_settings
    from ctxcompact.output.json import config_json

    assert ctx.parent is not None
    specs = option_specs(ctx.parent, ctx.parent.command)
    loaded: Config = load_config(specs)
    rows = effective_settings(loaded, specs)
    payload = config_json(rows, file=loaded.file)
    if as_json:
        streams_for(ctx).write_json(payload)
        return
    from ctxcompact.output.text import config_report

    streams_for(ctx).report(config_report(payload))
