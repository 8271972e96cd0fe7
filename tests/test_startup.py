"""Lean start-up: ``ctxcompact --version`` costs little more than starting Python."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from ctxcompact import __version__

PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    from ctxcompact.__main__ import main
    main()
    loaded = sorted(m for m in ("typer", "rich", "tiktoken", "anthropic", "ctxcompact.cli") if m in sys.modules)
    print(f"LOADED {loaded}")
    """
)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_answered_before_the_command_line_is_imported(flag: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, flag], capture_output=True, text=True, timeout=60, env=env
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"ctxcompact {__version__}\nLOADED []\n"
