"""What the Typer app builds, written out as data for the fast path:
``python -m ctxcompact.cli.declared`` rewrites :mod:`ctxcompact.cli.parameters` from the
commands' declarations (``tests/test_fast_cli.py`` fails when the file has drifted from them).

Each parameter of a fast command becomes a tuple ``(name, kind, opts, secondary_opts, type,
default, multiple)``: ``kind`` is ``argument`` or ``option``; ``type`` is how a typed value is
converted (``("flag",)``, ``("str",)``, ``("path",)``, ``("int", min, max)``, ``("float", min,
max)``, ``("size", minimum)``, ``("choice", "module:Enum", choices)``); ``default`` is click's
(an enum's value). ``SETTINGS`` is every command's options that a config file or a
``CTXCOMPACT_*`` variable may set (:func:`ctxcompact.cli.config.option_specs`, without the
defaults).
"""

from __future__ import annotations

import enum
import sys
import typing
from pathlib import Path
from typing import Any

import typer

from ctxcompact.cli import COMMANDS, FAST_COMMANDS
from ctxcompact.cli.config import option_specs
from ctxcompact.cli.root import app
from ctxcompact.cli.sizes import Size

TARGET = Path(__file__).with_name("parameters.py")

HEADER = '''"""Every parameter of the commands the fast path runs, and every option a setting may give:
GENERATED from the Typer declarations by ``python -m ctxcompact.cli.declared`` (see there for
the format); do not edit. ``tests/test_fast_cli.py`` fails when this has drifted from them."""

# fmt: off
'''


def _enum_of(annotation: Any) -> type[enum.Enum]:
    """The enum class in a parameter's annotation (``Annotated[X | None, ...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation
    for arg in typing.get_args(annotation):
        try:
            return _enum_of(arg)
        except LookupError:
            continue
    raise LookupError(annotation)


def _type(param: Any, annotation: Any) -> tuple[Any, ...]:
    kind = type(param.type).__name__
    if getattr(param, "is_flag", False):
        return ("flag",)
    if kind == "StringParamType":
        return ("str",)
    if kind == "TyperPath":
        return ("path",)
    if kind in ("IntParamType", "IntRange", "FloatParamType", "FloatRange"):
        number = "int" if kind.startswith("Int") else "float"
        return (number, getattr(param.type, "min", None), getattr(param.type, "max", None))
    if kind == "FuncParamType" and isinstance(param.type.func, Size):
        return ("size", param.type.func.minimum)
    if kind == "TyperChoice":
        found = _enum_of(annotation)
        assert not param.type.case_sensitive, param.name
        return ("choice", f"{found.__module__}:{found.__qualname__}", tuple(param.type.choices))
    raise TypeError(f"{param.name}: no fast conversion for {kind}")


def _parameter(param: Any, annotation: Any) -> tuple[Any, ...]:
    default = param.default() if callable(param.default) else param.default
    default = default.value if isinstance(default, enum.Enum) else default
    return (
        param.name,
        param.param_type_name,
        tuple(param.opts),
        tuple(param.secondary_opts),
        _type(param, annotation),
        default,
        bool(param.multiple or param.nargs == -1),
    )


def source() -> str:
    """The text of :mod:`ctxcompact.cli.parameters` as the declarations make it now."""
    group: Any = typer.main.get_command(app)  # the LazyGroup
    ctx = typer.Context(group)
    parameters = {}
    for name in FAST_COMMANDS:
        command = group.get_command(ctx, name)
        module, attr = COMMANDS[name]
        annotations = getattr(sys.modules[module], attr).__annotations__
        parameters[name] = tuple(_parameter(p, annotations.get(p.name)) for p in command.params)
    settings = [(s.command, s.key, s.param, s.multiple, s.is_path) for s in option_specs(ctx, group)]
    lines = [HEADER, "PARAMETERS = {"]
    for name, params in parameters.items():
        lines += [f"    {name!r}: (", *(f"        {p!r}," for p in params), "    ),"]
    lines += ["}", "", "#: (command, key, parameter, multiple, is_path)", "SETTINGS = ("]
    lines += [f"    {s!r}," for s in settings]
    return "\n".join([*lines, ")", ""])


if __name__ == "__main__":
    TARGET.write_text(source(), encoding="utf-8")
    print(f"wrote {TARGET}")
