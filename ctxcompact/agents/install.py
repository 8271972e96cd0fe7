"""The hook entries ``ctxcompact hook install`` writes into an agent's settings, and removes.

Both agents read the same shape (Claude Code's ``settings.json``, Codex's ``hooks.json``)::

    {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "…", "timeout": 60}]}],
               "SessionStart": [{"matcher": "compact", "hooks": [...]}],
               "PostCompact": [{"hooks": [...]}]}}

Where: Claude Code ``.claude/settings.json`` in the project (``--project``) or
``~/.claude/settings.json`` (``--user``; ``$CLAUDE_CONFIG_DIR``); Codex ``.codex/hooks.json``
in the project or ``~/.codex/hooks.json`` (``$CODEX_HOME``). A group is *ours* when one of
its commands runs ``ctxcompact hook EVENT``: installing replaces our group where it is (or
appends it) and leaves every other entry and key as it was; uninstalling removes exactly our
groups (and an event list or ``hooks`` table left empty). Installing twice changes nothing.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcompact.agents.events import CLAUDE_CODE, EVENTS, claude_home, codex_home
from ctxcompact.errors import InputError

#: Seconds an agent waits for a hook: our own compaction may call a summary model.
TIMEOUT = 60
REPLACE_TIMEOUT = 600
_OURS = re.compile(r"\bctxcompact(?:\.exe)?['\"]?\s+hook\s+(pre-compact|session-start|post-compact)\b")


@dataclass(frozen=True, slots=True)
class InstallPlan:
    """The settings file, its text now (None: no file) and after the change."""

    path: Path
    before: str | None
    after: str

    @property
    def changed(self) -> bool:
        if self.before is None:
            return True
        try:
            return bool(json.loads(self.before) != json.loads(self.after))
        except ValueError:
            return True

    def diff(self) -> str:
        """A unified diff of the file, before → after."""
        old = (self.before or "").splitlines(keepends=True)
        new = self.after.splitlines(keepends=True)
        name = str(self.path)
        return "".join(difflib.unified_diff(old, new, f"{name} (now)", f"{name} (after)"))


def settings_path(agent: str, *, user: bool, project: Path) -> Path:
    """The file the hooks go into for ``agent``: the user's, or the ``project`` folder's."""
    if agent == CLAUDE_CODE:
        return claude_home() / "settings.json" if user else project / ".claude" / "settings.json"
    return codex_home() / "hooks.json" if user else project / ".codex" / "hooks.json"


def our_groups(agent: str, command: str, *, replace: bool) -> dict[str, dict[str, Any]]:
    """Our group for each event: ``command`` is how to run ctxcompact (``… -m ctxcompact``)."""
    groups: dict[str, dict[str, Any]] = {}
    for event, name in EVENTS.items():
        flags = " --replace" if replace and event == "pre-compact" else ""
        hook = {
            "type": "command",
            "command": f"{command} hook {event} --agent {agent}{flags}",
            "timeout": REPLACE_TIMEOUT if flags else TIMEOUT,
        }
        group: dict[str, Any] = {"hooks": [hook]}
        if name == "SessionStart":
            group = {"matcher": "compact", **group}
        groups[name] = group
    return groups


def plan_install(
    agent: str, path: Path, *, command: str, replace: bool = False, uninstall: bool = False
) -> InstallPlan:
    """What installing (or with ``uninstall``, removing) our hooks does to ``path``."""
    before = _read(path)
    settings = _parse(path, before)
    hooks = settings.get("hooks")
    if hooks is None:
        hooks = {}
    if not isinstance(hooks, dict):
        raise InputError(f'{path}: its "hooks" is not an object; fix it by hand first.')
    wanted = {} if uninstall else our_groups(agent, command, replace=replace)
    for name in EVENTS.values():
        groups = hooks.get(name, [])
        if not isinstance(groups, list):
            raise InputError(f"{path}: hooks.{name} is not a list; fix it by hand first.")
        merged = _merge(groups, wanted.get(name))
        if merged:
            hooks[name] = merged
        else:
            hooks.pop(name, None)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    after = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    return InstallPlan(path, before, after)


def _merge(groups: list[Any], ours: dict[str, Any] | None) -> list[Any]:
    """``groups`` with our group in place of the first one of ours (or appended), and no other."""
    out: list[Any] = []
    placed = ours is None
    for group in groups:
        if is_ours(group):
            if not placed:
                out.append(ours)
                placed = True
            continue
        out.append(group)
    if not placed:
        out.append(ours)
    return out


def is_ours(group: Any) -> bool:
    """Whether a hook group (or a single hook) runs ``ctxcompact hook EVENT``."""
    if not isinstance(group, Mapping):
        return False
    hooks = group.get("hooks")
    entries = hooks if isinstance(hooks, list) else [group]
    return any(
        isinstance(h, Mapping) and isinstance(h.get("command"), str) and _OURS.search(h["command"])
        for h in entries
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc}).") from None


def _parse(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path}: is not valid JSON ({exc}); fix it by hand first.") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: is not a JSON object; fix it by hand first.")
    return value
