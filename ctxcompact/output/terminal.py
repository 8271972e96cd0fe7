"""The terminal a run talks to: its streams and what each one can show.

One :class:`Terminal` is made per run (:meth:`Terminal.detect`, by the command line's root
callback) and handed down, instead of each function asking ``sys.stdout.isatty()`` on its
own: tests set one (``run_cli(..., terminal={"stdout_isatty": True, "width": 80})``, like
httpie's ``MockEnvironment``), so the terminal's output is testable at a chosen width.

The rules, in one place:

- a stream is drawn **for a terminal** (Rich tables, panels, progress bars) when it is a
  terminal, or when ``FORCE_COLOR`` is set and not empty (https://force-color.org/); else it
  gets plain text, one line per row;
- a stream drawn for a terminal is **coloured** unless ``NO_COLOR`` is set and not empty
  (https://no-color.org/; bold and dim stay, as the convention allows);
- its **width** is the one given, else ``COLUMNS``, else the terminal's own size, else 100
  columns (a pipe: a stable width, so piped output does not depend on who runs it).

Nothing here imports ``rich``: a piped ``count`` never loads it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

#: Columns of a stream that is not a terminal (and of one whose size cannot be read).
PIPED_WIDTH = 100


@dataclass(frozen=True, slots=True)
class Stream:
    """One output stream and how to draw on it."""

    file: TextIO
    #: Drawn for a terminal: Rich tables, panels and progress; else plain text.
    is_terminal: bool
    #: Colours (only ever on a stream drawn for a terminal).
    color: bool
    #: Columns to lay out in.
    width: int
    encoding: str = "utf-8"

    @property
    def takes_plain(self) -> bool:
        """Whether plain copies of Rich's output can stand in for it (written without
        importing rich): not drawn for a terminal, and UTF-8 (elsewhere Rich draws ASCII)."""
        return not self.is_terminal and self.encoding.lower().replace("-", "").startswith("utf")


@dataclass(frozen=True, slots=True)
class Terminal:
    """stdin, stdout and stderr as one run sees them (see the module's rules)."""

    stdout: Stream
    stderr: Stream
    stdin: TextIO | None
    #: Whether a person may be typing on stdin (no transcript is read from a terminal, and a
    #: question is asked only there).
    stdin_isatty: bool

    @property
    def stdin_piped(self) -> bool:
        """Whether stdin can carry a transcript: open, and not a person's terminal."""
        return self.stdin is not None and not self.stdin_isatty

    @classmethod
    def detect(
        cls,
        *,
        environ: Mapping[str, str] | None = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        stdin_isatty: bool | None = None,
        stdout_isatty: bool | None = None,
        stderr_isatty: bool | None = None,
        width: int | None = None,
    ) -> Terminal:
        """The process's terminal (``sys.std*``, ``os.environ``); any argument given wins
        over what would be detected (tests: a terminal of 60 columns on a captured stream)."""
        env = os.environ if environ is None else environ
        stdin = sys.stdin if stdin is None else stdin
        out = sys.stdout if stdout is None else stdout
        err = sys.stderr if stderr is None else stderr
        force = env.get("FORCE_COLOR", "") != ""
        no_color = env.get("NO_COLOR", "") != ""
        columns = env.get("COLUMNS", "")
        fixed = width if width is not None else (int(columns) if columns.isdigit() and int(columns) else None)

        def stream(file: TextIO, isatty: bool | None) -> Stream:
            tty = _isatty(file) if isatty is None else isatty
            drawn = tty or force
            return Stream(
                file,
                is_terminal=drawn,
                color=drawn and not no_color,
                width=fixed or (_size(file) if tty else None) or PIPED_WIDTH,
                encoding=getattr(file, "encoding", None) or "utf-8",
            )

        return cls(
            stdout=stream(out, stdout_isatty),
            stderr=stream(err, stderr_isatty),
            stdin=stdin,
            stdin_isatty=(stdin is not None and _isatty(stdin)) if stdin_isatty is None else stdin_isatty,
        )


def _isatty(file: Any) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError, OSError):  # no such method, or a closed stream
        return False


def _size(file: Any) -> int | None:
    try:
        return os.get_terminal_size(file.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        return None
