"""The selective rule table as data, its tool-field thresholds, and
``--rules FILE``, which overrides them from TOML (the shape is in
:mod:`ctxcompact.compaction.strategies.selective`'s docstring)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ctxcompact.compaction.strategies.options import ACTIONS as ACTIONS
from ctxcompact.compaction.strategies.options import DEFAULT_OPTIONS as DEFAULT_OPTIONS
from ctxcompact.compaction.strategies.options import DEFAULT_RULES as DEFAULT_RULES
from ctxcompact.compaction.strategies.options import ITEM_TYPES as ITEM_TYPES
from ctxcompact.compaction.strategies.options import NEVER as NEVER
from ctxcompact.compaction.strategies.options import Action as Action
from ctxcompact.compaction.strategies.options import ItemType as ItemType
from ctxcompact.compaction.strategies.options import Rule as Rule
from ctxcompact.compaction.strategies.options import SelectiveOptions as SelectiveOptions
from ctxcompact.errors import OptionError
from ctxcompact.transcripts.optionfile import parse_toml, read_option_text


def load_rules(path: Path, base: SelectiveOptions = DEFAULT_OPTIONS) -> SelectiveOptions:
    """``base`` with the rules and fields a TOML file overrides (``--rules FILE``).

    ``[rules.<type>]`` tables set ``action``, ``keep_recent`` and ``priority`` of one type;
    ``[fields]`` sets the thresholds. Types that never compact (summaries, system prompts,
    memory) cannot be given another action. A bad file is a usage error naming it.
    """
    data = parse_toml(read_option_text(path, option="rules"), option="rules", name=str(path))
    unknown = set(data) - {"rules", "fields"}
    if unknown:
        raise OptionError(
            "{rules} {path}: unknown table {table!r} (expected rules, fields).",
            "rules",
            path=path,
            table=sorted(unknown)[0],
        )
    rules: dict[str, Rule] = {r.item_type: r for r in base.rules}
    for name, table in _table(data.get("rules", {}), path, "rules").items():
        if name not in ITEM_TYPES:
            raise OptionError(
                "{rules} {path}: unknown item type {name!r}; expected one of {types}.",
                "rules",
                path=path,
                name=name,
                types=", ".join(ITEM_TYPES),
            )
        rules[name] = _rule(rules[name], _table(table, path, f"rules.{name}"), path)
    fields = _table(data.get("fields", {}), path, "fields")
    allowed = {"tool_input_threshold", "tool_result_threshold", "preview_tokens"}
    for key, value in fields.items():
        if key not in allowed or not isinstance(value, int) or isinstance(value, bool):
            raise OptionError(
                "{rules} {path}: fields.{key} is not one of {allowed} as an integer.",
                "rules",
                path=path,
                key=key,
                allowed=", ".join(sorted(allowed)),
            )
    return replace(base, rules=tuple(rules.values()), **fields)


def _table(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise OptionError("{rules} {path}: {where} must be a table.", "rules", path=path, where=where)
    return value


def _rule(rule: Rule, table: Mapping[str, Any], path: Path) -> Rule:
    def refuse(problem: str, **values: object) -> OptionError:
        where = f"rules.{rule.item_type}"
        return OptionError("{rules} {path}: {where}: " + problem, "rules", path=path, where=where, **values)

    unknown = set(table) - {"action", "keep_recent", "priority"}
    if unknown:
        raise refuse("unknown key {key!r}.", key=sorted(unknown)[0])
    action = table.get("action", rule.action)
    if action not in ACTIONS:
        raise refuse("action must be one of {actions}.", actions=", ".join(ACTIONS))
    if rule.item_type in NEVER and action != "none":
        raise refuse("{item} is never compacted.", item=rule.item_type)
    values = {k: table.get(k, getattr(rule, k)) for k in ("keep_recent", "priority")}
    if any(not isinstance(v, int) or isinstance(v, bool) or v < 0 for v in values.values()):
        raise refuse("keep_recent and priority must be integers, 0 or more.")
    return Rule(rule.item_type, action, values["keep_recent"], values["priority"])


def load_rules_file(path: Path | None) -> SelectiveOptions | None:
    """``--rules FILE`` as the options it gives (None: no file, the defaults)."""
    return None if path is None else load_rules(path)
