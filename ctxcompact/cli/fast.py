"""The fast path: ``count``, ``check`` and ``compact`` without typer.

On a small file these commands spent most of their time loading typer and having it build
the command from the function's signature. Here their command line is parsed as click parses
it, from :mod:`ctxcompact.cli.parameters` (what the Typer app builds from the declarations,
generated and checked by ``tests/test_fast_cli.py``); the config file and the ``CTXCOMPACT_*``
variables apply as :func:`ctxcompact.cli.config.apply_config` applies them; and the command's
own function runs with the same arguments Typer would give it. Whatever this parser is not
sure to read as click would (``--help``, an unknown option, a bad value, a bad setting,
``-abc``, ``--``, completion, ``CTXCOMPACT_TRACEBACK``) is handed to the Typer app, which
says it as always: output, errors and exit codes do not depend on the path taken.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcompact.cli import COMMANDS, FAST_COMMANDS
from ctxcompact.cli.common import traceback_wanted
from ctxcompact.cli.sizes import size_of
from ctxcompact.errors import CtxcompactError

#: What typer's shell completion sets; such a run is the Typer app's.
COMPLETION_ENV = "_CTXCOMPACT_COMPLETE"


class Declined(Exception):
    """The command line is not one this path is sure to read as click would."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter as the Typer app builds it (see :mod:`ctxcompact.cli.declared`)."""

    name: str
    kind: str
    opts: tuple[str, ...]
    secondary_opts: tuple[str, ...]
    type: tuple[Any, ...]
    default: Any
    multiple: bool


@dataclass(frozen=True, slots=True)
class _Command:
    """What a command reads of click's command: its parameters."""

    params: list[Parameter]


class Invocation:
    """What a command reads of its click context, for a run without click: the root
    context's ``obj`` (the run's terminal, :func:`~ctxcompact.cli.streams.terminal_of`) and
    the command's parameters (:func:`~ctxcompact.cli.common.flag_of`)."""

    def __init__(self, params: list[Parameter]) -> None:
        self.command = _Command(params)
        self.obj: Any = None

    def find_root(self) -> Invocation:
        return self


def run(argv: Sequence[str]) -> bool:
    """Run ``ctxcompact ARGV`` if it is a common invocation of a fast command and return True
    (an exit other than 0 is a :class:`SystemExit`, as from the Typer app); False: the Typer
    app is to run it."""
    found = arguments(argv)
    if found is None:
        return False
    params, values = found
    module, attr = COMMANDS[argv[0]]
    command = getattr(importlib.import_module(module), attr)
    command(ctx=Invocation(params), **values)
    return True


def arguments(argv: Sequence[str]) -> tuple[list[Parameter], dict[str, Any]] | None:
    """The command's parameters and the value of each, as Typer would call the command
    ``argv[0]`` with; None when the Typer app is to run ``argv``."""
    if not argv or argv[0] not in FAST_COMMANDS or COMPLETION_ENV in os.environ or traceback_wanted():
        return None
    from ctxcompact.cli.parameters import PARAMETERS

    params = [Parameter(*p) for p in PARAMETERS[argv[0]]]
    try:
        given = _parse(argv[1:], params)
        settings = _settings(argv[0])
        return params, {p.name: _value(p, given, settings) for p in params}
    except Declined:
        return None


def _parse(args: Sequence[str], params: list[Parameter]) -> dict[str, Any]:
    """What the command line gives each parameter (click's parser for the plain forms:
    ``--opt VALUE``, ``--opt=VALUE``, ``-o VALUE``, flags, ``--no-flag``, positionals in any
    place); a name given twice keeps its last value unless it is repeatable."""
    options: dict[str, tuple[Parameter, Any]] = {}
    for p in params:
        if p.kind == "option":
            for opt in p.opts:
                options[opt] = (p, True)
            for opt in p.secondary_opts:
                options[opt] = (p, False)
    [argument] = [p for p in params if p.kind == "argument"]
    given: dict[str, Any] = {argument.name: []}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "-" or not arg.startswith("-"):
            given[argument.name].append(arg)
            continue
        opt, has_value, value = arg.partition("=")
        found = options.get(opt)
        if found is None or arg == "--" or (has_value and not opt.startswith("--")):
            raise Declined(arg)  # -abc, -n5, --: click's rarer forms; unknown: its error
        param, flag_value = found
        if param.type[0] == "flag":
            if has_value:
                raise Declined(arg)
            given[param.name] = flag_value
            continue
        if not has_value:
            if not rest:
                raise Declined(arg)
            value = rest.pop(0)
        if param.multiple:
            given.setdefault(param.name, []).append(value)
        else:
            given[param.name] = value
    if not given[argument.name]:
        del given[argument.name]
    return given


def _settings(command: str) -> dict[str, Any]:
    """The values a config file and the environment give ``command``'s parameters, as
    :func:`ctxcompact.cli.config.apply_config` finds them (a bad setting: the Typer app says so)."""
    from ctxcompact.cli.parameters import SETTINGS
    from ctxcompact.config import OptionSpec, find_config_file, load_config

    try:
        file = find_config_file(Path.cwd().resolve())
        specs = [
            OptionSpec(c, key, param, multiple=multiple, is_path=is_path)
            for c, key, param, multiple, is_path in SETTINGS
            if file is not None or c == command
        ]
        return load_config(specs, file=file).default_map(specs).get(command, {})
    except (CtxcompactError, OSError) as exc:  # OSError: no current directory, say
        raise Declined(str(exc)) from None


def _value(param: Parameter, given: dict[str, Any], settings: dict[str, Any]) -> Any:
    """A parameter's value as the command function receives it from Typer: from the command
    line, else a setting, else the default; converted by its type, then as Typer converts it
    (a path, an enum member; an empty list of a parameter that defaults to None is None)."""
    if param.name in given:
        raw = given[param.name]
    elif param.name in settings:
        raw = settings[param.name]
    else:
        raw = param.default
    if raw is None:
        return None
    if not param.multiple:
        return _convert(param.type, raw)
    if isinstance(raw, str | bytes) or not isinstance(raw, list | tuple):
        raise Declined(param.name)
    values = [_convert(param.type, v) for v in raw]
    return values if values or param.default is not None else None


def _convert(kind: tuple[Any, ...], value: Any) -> Any:
    """``value`` converted as the parameter's click type (and then Typer) converts it;
    :class:`Declined` where click would refuse it or where the rule is not simple."""
    name = kind[0]
    try:
        if name == "flag" and isinstance(value, bool):
            return value
        if name == "str" and not isinstance(value, bytes):
            return str(value)
        if name == "path" and isinstance(value, str | os.PathLike):
            return value if isinstance(value, Path) else Path(value)
        if name in ("int", "float"):
            number = (int if name == "int" else float)(value)
            low, high = kind[1], kind[2]
            if (low is None or number >= low) and (high is None or number <= high):
                return number
        if name == "size":
            return size_of(value, minimum=kind[1])
        if name == "choice" and isinstance(value, str):
            return _choice(kind[1], kind[2], value)
    except (ValueError, TypeError, OverflowError):
        pass
    raise Declined(repr(value))


def _choice(enum: str, choices: tuple[str, ...], value: str) -> Any:
    """A case-insensitive choice: the declared choice it names, as the enum's member."""
    for choice in choices:
        if choice.casefold() == value.casefold():
            module, _, attr = enum.partition(":")
            return getattr(importlib.import_module(module), attr)(choice)
    raise ValueError(value)
