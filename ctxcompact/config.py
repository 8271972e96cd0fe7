"""Settings from files and the environment: ``[tool.ctxcompact]``, ``ctxcompact.toml``, ``CTXCOMPACT_*``.

Precedence, lowest first: built-in defaults; the config file's ``[tool.ctxcompact]`` table
(``pyproject.toml``) or top level (``ctxcompact.toml``), each key applying to every command
with that option; the file's per-command table (``[tool.ctxcompact.compaction.pipeline]``); a
``CTXCOMPACT_<KEY>`` environment variable; the command-line flag. Keys are option names without
the dashes (``model``, ``threshold``, ``strategy``, ``work-dir`` or ``work_dir``, ``read-tool``
as a list, ``jobs``…); an unknown key is an error naming the file, so a typo never passes
silently. Relative paths in a file are relative to the file's directory.

The file is the first ``ctxcompact.toml``, or ``pyproject.toml`` holding a ``[tool.ctxcompact``
table, found from the working directory upward. Which options exist is given by the caller
(:class:`OptionSpec`, built from the CLI's commands): this module knows no command line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcompact.errors import InputError

CONFIG_NAME = "ctxcompact.toml"
PYPROJECT = "pyproject.toml"
ENV_PREFIX = "CTXCOMPACT_"
_TABLE_MARK = "[tool.ctxcompact"


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option of one command: its ``key`` (long name without dashes) and click ``param``."""

    command: str
    key: str
    param: str
    default: Any = None
    multiple: bool = False
    is_path: bool = False


@dataclass(frozen=True, slots=True)
class Setting:
    """A value set outside the command line, and where: ``command`` None applies to all."""

    key: str
    value: Any
    source: str
    command: str | None = None


@dataclass(frozen=True, slots=True)
class Config:
    """The config file found (if any) and every setting, lowest precedence first."""

    file: Path | None
    settings: tuple[Setting, ...]

    def lookup(self, command: str, key: str) -> Setting | None:
        """The setting that wins for ``key`` of ``command``, if any."""
        found = None
        for setting in self.settings:
            if setting.key == key and setting.command in (None, command):
                found = setting
        return found

    def default_map(self, specs: Sequence[OptionSpec]) -> dict[str, dict[str, Any]]:
        """click's ``default_map``: command -> parameter name -> value (flags still win)."""
        out: dict[str, dict[str, Any]] = {}
        for spec in specs:
            setting = self.lookup(spec.command, spec.key)
            if setting is not None:
                out.setdefault(spec.command, {})[spec.param] = setting.value
        return out


@dataclass(frozen=True, slots=True)
class EffectiveSetting:
    """What ``ctxcompact config`` shows: a key's value for ``commands`` and where it came from."""

    key: str
    value: Any
    source: str
    commands: tuple[str, ...]


def effective_settings(config: Config, specs: Sequence[OptionSpec]) -> list[EffectiveSetting]:
    """Every option key with its effective value per group of commands that agree, sorted by key."""
    rows: dict[tuple[str, str, str], list[str]] = {}
    values: dict[tuple[str, str, str], Any] = {}
    for spec in specs:
        setting = config.lookup(spec.command, spec.key)
        value, source = (setting.value, setting.source) if setting else (spec.default, "default")
        ident = (spec.key, repr(value), source)
        rows.setdefault(ident, []).append(spec.command)
        values[ident] = value
    return sorted(
        (
            EffectiveSetting(k, values[(k, r, src)], src, tuple(sorted(cmds)))
            for (k, r, src), cmds in rows.items()
        ),
        key=lambda e: (e.key, e.commands),
    )


def find_config_file(start: Path) -> Path | None:
    """The nearest ``ctxcompact.toml``, or ``pyproject.toml`` with a ctxcompact table, from
    ``start`` upward (a cheap text check first: most pyproject files have none)."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        candidate = folder / PYPROJECT
        if candidate.is_file():
            try:
                if _TABLE_MARK in candidate.read_text(encoding="utf-8", errors="replace"):
                    return candidate
            except OSError:
                continue
    return None


#: :func:`load_config`'s ``file`` when the caller has not looked for the config file.
_LOOK = Path()


def load_config(
    specs: Sequence[OptionSpec],
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    file: Path | None = _LOOK,
) -> Config:
    """Every setting for ``specs`` from the config file and the environment. ``file``: the
    config file when the caller has already looked for it (:func:`find_config_file`; None:
    there is none), so the folders up from ``cwd`` are not searched again."""
    env = os.environ if environ is None else environ
    if file is _LOOK:
        file = find_config_file((cwd or Path.cwd()).resolve())
    settings: list[Setting] = []
    if file is not None:
        settings.extend(_file_settings(file, specs))
    for key in dict.fromkeys(s.key for s in specs):
        name = ENV_PREFIX + key.upper().replace("-", "_")
        value = env.get(name)
        if value:
            multiple = any(s.multiple for s in specs if s.key == key)
            parsed: Any = [v.strip() for v in value.split(",") if v.strip()] if multiple else value
            settings.append(Setting(key, parsed, f"env {name}"))
    return Config(file, tuple(settings))


def _file_settings(file: Path, specs: Sequence[OptionSpec]) -> list[Setting]:
    import tomllib  # only when there is a file: start-up matters

    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{file}: cannot read the configuration ({exc}).") from None
    table: Any = data.get("tool", {}).get("ctxcompact", {}) if file.name == PYPROJECT else data
    where = f"{file} [tool.ctxcompact]" if file.name == PYPROJECT else str(file)
    if not isinstance(table, dict):
        raise InputError(f"{where}: must be a table of settings.")
    commands = {s.command for s in specs}
    out: list[Setting] = []
    nested: list[Setting] = []
    for raw_key, value in table.items():
        if isinstance(value, dict) and raw_key in commands:
            for sub_key, sub_value in value.items():
                key = _check_key(sub_key, specs, f"{where} [{raw_key}]", command=raw_key)
                value_ = _resolve(sub_value, key, specs, file)
                nested.append(Setting(key, value_, f"{file.name} [{raw_key}]", raw_key))
            continue
        key = _check_key(raw_key, specs, where)
        out.append(Setting(key, _resolve(value, key, specs, file), file.name))
    return out + nested  # a command's own table wins over the shared keys


def _check_key(raw: str, specs: Sequence[OptionSpec], where: str, *, command: str | None = None) -> str:
    key = raw.replace("_", "-")
    if not any(s.key == key and command in (None, s.command) for s in specs):
        scope = f"the {command} command" if command else "any command"
        raise InputError(
            f"{where}: unknown setting {raw!r} (not an option of {scope}; see ctxcompact config)."
        )
    return key


def _resolve(value: Any, key: str, specs: Sequence[OptionSpec], file: Path) -> Any:
    """A path setting relative to the config file's folder; everything else as written."""
    if not any(s.key == key and s.is_path for s in specs):
        return value
    if isinstance(value, str):
        value = os.path.expanduser(value)
        return value if os.path.isabs(value) else str((file.parent / value).resolve())
    return value
