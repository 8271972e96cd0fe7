"""One way to run the command line in tests (httpie's ``http()`` helper, Typer's CliRunner).

``run_cli`` runs the app in-process and returns what a user would see, kept apart: stdout,
stderr and the exit code. Typer's runner keeps the two streams separate. ``terminal`` sets
the run's terminal as httpie's ``MockEnvironment`` does (``{"stdout_isatty": True, "width":
80}``: Rich tables, 80 columns; see :meth:`ctxcompact.output.terminal.Terminal.detect`);
by default both streams are pipes, as under CI. An exception that
escapes the app (a bug, or one let through by ``CTXCOMPACT_TRACEBACK=1``) is re-raised so
the test shows its traceback, unless ``keep_exception`` asks for it on the outcome instead.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from typer.testing import CliRunner

from ctxcompact.cli import app
from ctxcompact.status import ExitStatus


@dataclass(frozen=True)
class CliOutcome:
    """What one run printed and how it exited."""

    stdout_bytes: bytes
    stderr_bytes: bytes
    exit_code: int
    exception: BaseException | None = None

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def status(self) -> ExitStatus:
        return ExitStatus(self.exit_code)

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return orjson.loads(self.stdout_bytes)


def run_cli(
    *args: str | Path,
    input: bytes | str | None = None,
    env: Mapping[str, str | None] | None = None,
    keep_exception: bool = False,
    terminal: Mapping[str, Any] | None = None,
) -> CliOutcome:
    """``ctxcompact ARGS…`` in-process, with ``input`` on stdin, ``env`` set (None unsets) and
    the terminal's detected facts overridden by ``terminal``."""
    result = CliRunner().invoke(app, [str(a) for a in args], input=input, env=env, obj=dict(terminal or {}))
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    if escaped is not None and not keep_exception:
        raise escaped
    return CliOutcome(result.stdout_bytes, result.stderr_bytes, result.exit_code, escaped)


def run_fast(*args: str | Path, env: Mapping[str, str | None] | None = None) -> CliOutcome:
    """``ctxcompact ARGS…`` in-process through the fast path (:mod:`ctxcompact.cli.fast`), on
    piped streams and an empty stdin as :func:`run_cli` gives; fails if the fast path hands
    the command line to the Typer app."""
    from ctxcompact.cli import fast

    stdout, stderr = io.BytesIO(), io.BytesIO()
    streams = [io.TextIOWrapper(b, encoding="utf-8") for b in (io.BytesIO(), stdout, stderr)]
    saved = (sys.stdin, sys.stdout, sys.stderr, dict(os.environ))
    sys.stdin, sys.stdout, sys.stderr = streams
    for key, value in (env or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        code = 0 if fast.run([str(a) for a in args]) else None
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        for stream in streams:
            stream.flush()
        sys.stdin, sys.stdout, sys.stderr, environ = saved
        os.environ.clear()
        os.environ.update(environ)
    assert code is not None, f"the fast path handed {args} to the Typer app"
    return CliOutcome(stdout.getvalue(), stderr.getvalue(), code)


def plain_rows(stdout: str, header: str) -> list[list[str]]:
    """The rows of the piped (plain text) table whose header line starts with ``header``, up
    to the next blank line, as cells: split at runs of two or more spaces (empty cells drop)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(re.split(r" {2,}", line.strip()))
    return rows
