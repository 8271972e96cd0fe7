"""Where a command's words go: its product on stdout, everything said about it on stderr.

Every command makes one :class:`Streams` on the run's :class:`~ctxcompact.output.terminal.Terminal`
(:func:`streams_for`): the terminal is detected once per run and kept on the root context,
so a test sets it (``run_cli(..., terminal={...})``) and every stream, width and colour below
follows. Rich is imported only when something is drawn for a terminal.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxcompact.output.safe_text import printable
from ctxcompact.output.terminal import Terminal

if TYPE_CHECKING:
    import typer
    from rich.console import Console

    from ctxcompact.batch.results import BatchProgress, ProgressCallback
    from ctxcompact.output.table import Block


def terminal_of(ctx: typer.Context | None) -> Terminal:
    """The run's terminal, detected on first use and kept on the root context. A caller (a
    test, an embedding program) may put a :class:`Terminal` there, or the overrides to detect
    one with (``app(args, obj={"stdout_isatty": True, "width": 80})``)."""
    if ctx is None:
        return Terminal.detect()
    root = ctx.find_root()
    if not isinstance(root.obj, Terminal):
        overrides: Mapping[str, Any] = root.obj if isinstance(root.obj, Mapping) else {}
        root.obj = Terminal.detect(**overrides)
    return root.obj


def streams_for(ctx: typer.Context, *, quiet: bool = False) -> Streams:
    return Streams(terminal_of(ctx), quiet=quiet)


class Streams:
    """stdout for what a command produces, stderr for everything said about it.

    The Rich consoles are made on first use, so a ``--json`` run that has nothing to say
    never imports rich at all. ``quiet`` (``-q``) silences what goes to stderr except errors.
    """

    def __init__(self, terminal: Terminal, *, quiet: bool = False) -> None:
        self.terminal = terminal
        self.quiet = quiet
        self._out: Console | None = None
        self._err: Console | None = None

    @property
    def out(self) -> Console:
        if self._out is None:
            from ctxcompact.output.rich import make_console

            self._out = make_console(self.terminal.stdout)
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            from ctxcompact.output.rich import make_console

            self._err = make_console(self.terminal.stderr)
            self._err.quiet = self.quiet
        return self._err

    # --- stdout: the product ---------------------------------------------------------------

    def write_text(self, text: str) -> None:
        """Print a command's product (JSON, a plain report) on stdout. A reader that went away
        (``| head``) is not an error: the rest is dropped and the command still exits with its
        own status."""
        file = self.terminal.stdout.file
        encoding = getattr(file, "encoding", None) or "utf-8"
        # Control characters from a transcript never reach the terminal; in JSON their
        # \uXXXX spelling decodes to the same text (:mod:`ctxcompact.output.safe_text`).
        data = (printable(text) + "\n").encode(encoding, getattr(file, "errors", None) or "strict")
        try:
            self._write_stdout(data)
        except BrokenPipeError:
            self.silence_stdout()

    def _write_stdout(self, data: bytes) -> None:
        """All of ``data`` on stdout or exit 3 naming it (a full disk under a redirect); what
        was written of it is taken back from a regular file (:func:`~ctxcompact.transcripts.fileio.write_stream`)."""
        from ctxcompact.transcripts.fileio import write_stream

        write_stream(self.terminal.stdout.file, data)

    def write_json(self, payload: Any) -> None:
        """A JSON document on stdout, indented by two spaces."""
        import orjson

        self.write_text(orjson.dumps(payload, option=orjson.OPT_INDENT_2).decode())

    def write_output(self, data: bytes, output: Path | None) -> None:
        """``data`` to ``output`` atomically, or to stdout for None / ``-``.

        A failed write is exit 3 (the work could not be done); the old file, if any, is intact,
        and what was written of it to stdout is taken back when that is a regular file.
        """
        if output is None or str(output) == "-":
            self._write_stdout(data)
            return
        from ctxcompact.transcripts.fileio import write_file

        write_file(output, data)

    def write_json_file(self, path: Path | None, payload: Any) -> None:
        """``--stats-json`` / ``--report``: pretty JSON to ``path`` (``-``: stdout) when one
        was given."""
        import orjson

        if path is not None:
            self.write_output(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n", path)

    def silence_stdout(self) -> None:
        """After a closed pipe, Python's final flush would raise again: point stdout at devnull."""
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.terminal.stdout.file.fileno())
        except (OSError, ValueError):
            pass

    def report(self, blocks: Sequence[Block], *, to_stderr: bool = False) -> None:
        """A report on stdout (``count``, ``check``, ``sessions``, ``config``, ``eval``) or,
        with ``to_stderr``, one about the work (``restore-files``' table): Rich tables on a
        terminal; plain aligned text otherwise (one line per row for grep and awk; rich is
        never imported)."""
        stream = self.terminal.stderr if to_stderr else self.terminal.stdout
        if not stream.is_terminal:
            from ctxcompact.output.table import plain_text

            if to_stderr:
                self.write_stderr(plain_text(blocks) + "\n")
            else:
                self.write_text(plain_text(blocks))
            return
        from ctxcompact.output.rich import print_blocks

        print_blocks(blocks, self.err if to_stderr else self.out)

    # --- stderr: what is said about the work -----------------------------------------------

    def error(self, message: str) -> None:
        """``ctxcompact: error: …`` on stderr, on one line (soft_wrap: whole for grep and
        people), even under ``-q``; plain text, without importing rich, on a pipe."""
        text = f"ctxcompact: error: {message}"
        if not self.terminal.stderr.is_terminal:
            self.write_stderr(text + "\n")
            return
        from ctxcompact.output.rich import make_console

        make_console(self.terminal.stderr).print(text, markup=False, highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """One line about the work on stderr, as it is (no markup), unless quiet."""
        if self.quiet:
            return
        if self.terminal.stderr.takes_plain and text.isprintable():
            self.write_stderr(text + "\n")
        else:
            self.err.print(text, markup=False, highlight=False, soft_wrap=True)

    def warnings(self, warnings: Sequence[str]) -> None:
        """``warning: …`` lines on stderr, each once: yellow on a terminal, plain otherwise."""
        unique = list(dict.fromkeys(warnings))
        if self.quiet or not unique:
            return
        if self.terminal.stderr.takes_plain and all(w.isprintable() for w in unique):
            self.write_stderr("".join(f"warning: {w}\n" for w in unique))
        else:
            from ctxcompact.output.rich import render_warnings

            render_warnings(unique, self.err)

    def panels(self, panels: Sequence[str | None], draw: Callable[[], None]) -> None:
        """Stats panels on stderr: on a pipe their plain copies
        (:func:`ctxcompact.output.panel.plain_panel`, Rich's very bytes, no rich imported)
        when every one has one; else ``draw()`` with Rich."""
        if panels and all(panel is not None for panel in panels) and self.terminal.stderr.takes_plain:
            self.write_stderr("".join(panel or "" for panel in panels))
        else:
            draw()

    def batch_progress(self, total: int) -> AbstractContextManager[ProgressCallback]:
        """The callback a batch of ``total`` files reports its progress to: a transient Rich
        bar on a terminal's stderr; on a log, a line per file as it is done
        (:func:`~ctxcompact.output.batch_table.progress_line`, through :meth:`note`: without
        rich, and nothing under ``-q``)."""
        if self.terminal.stderr.is_terminal:
            from ctxcompact.output.rich.batch import batch_progress

            return batch_progress(self.err, total)
        return nullcontext(self._progress_line)

    def _progress_line(self, event: BatchProgress) -> None:
        from ctxcompact.output.batch_table import progress_line

        line = progress_line(event)
        if line is not None:
            self.note(line)

    def files_progress(self, total: int, doing: str) -> AbstractContextManager[Callable[[str], None]]:
        """``advance(name)``, to call as each of ``total`` files is done: a transient Rich bar
        on a terminal's stderr for two files or more; nothing otherwise (a pipe gets the
        command's result, which is what a log needs) — and rich is not imported."""
        if not self.terminal.stderr.is_terminal or total < 2:
            return nullcontext(_ignore)
        from ctxcompact.output.rich.batch import files_progress

        return files_progress(self.err, total, doing)

    def write_stderr(self, text: str) -> None:
        """Plain text on stderr; a reader that went away is no reason to fail (as Rich's)."""
        file = self.terminal.stderr.file
        try:
            file.write(printable(text))
            file.flush()
        except (BrokenPipeError, ValueError):
            pass


def _ignore(_name: str) -> None:
    pass
