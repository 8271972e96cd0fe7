"""The README documents every command and every option the CLI has (docs that cannot drift)."""

from __future__ import annotations

import re

import pytest
import typer
from conftest import ROOT

from ctxcompact.cli import app

README = (ROOT / "README.md").read_text(encoding="utf-8")
GROUP = typer.main.get_command(app)
CTX = typer.Context(GROUP)
COMMANDS = sorted(GROUP.list_commands(CTX))  # type: ignore[attr-defined]


def test_every_command_has_a_section() -> None:
    expected = [
        "count",
        "check",
        "compact",
        "restore-files",
        "offload",
        "export",
        "config",
        "eval",
        "sessions",
        "models",
        "hook",
        "uncompact",
        "mcp",
    ]
    assert sorted(expected) == COMMANDS
    for name in COMMANDS:
        assert f"### `ctxcompact {name}`" in README


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_documented(name: str) -> None:
    command = GROUP.get_command(CTX, name)  # type: ignore[attr-defined]
    options = [o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
    missing = [o for o in options if o != "--help" and not re.search(re.escape(o) + r"(?![\w-])", README)]
    assert not missing, f"{name}: undocumented options {missing}"
