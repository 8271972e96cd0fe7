"""``python -m ctxcompact`` and the ``ctxcompact`` console script.

``--version`` is answered here, before the command line (typer, every command module) is
imported: it is what scripts and shells call to probe the tool, and it should cost little
more than starting Python. A command compiles each dataclass method once per cache
(:mod:`ctxcompact.cli.dataclass_cache`), and ``count``, ``check`` and ``compact``
try the fast path (:mod:`ctxcompact.cli.fast`: no typer) before the Typer app.

The console script (:func:`run`) ends the process of a finished command without tearing the
interpreter down (:func:`_end`): its output flushed and its exit handlers run, it skips
freeing, one by one, every object the operating system is about to take back — ~50 ms of CPU
after a compaction of 800K tokens (the parsed transcript, the tokenizer's tables, every
module). ``python -m ctxcompact`` returns as before (it may be run in process, by ``runpy``).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

#: The cyclic collector's first threshold in a command's process (Python's default: 700
#: allocations). Start-up makes ~100,000 objects that all live to the end (modules, classes,
#: compiled patterns), and at 700 the collector walked them ~40 times in a `count` on a small
#: file (~8 ms of ~200) and ~250 times in an `eval` of 800K tokens (~90 ms); at this figure it
#: runs a few times per command, and cyclic garbage is still collected. The library leaves
#: its host's collector alone: only the command line sets it.
GC_THRESHOLD = 50_000


def run() -> None:
    """The ``ctxcompact`` process: :func:`main`, then :func:`_end` (the console script's entry)."""
    try:
        main()
    except SystemExit as stop:
        _end(stop.code)
        raise
    _end(0)


def _end(code: object) -> None:
    """Exit with ``code`` now, as Python's own exit would but for the teardown: stdout and
    stderr flushed, the exit handlers run (caches saved, temporary folders removed). Python's
    own exit instead, as always, for an exit message, a failed flush, a thread still working,
    or a tracer or profiler that writes its figures after the program (coverage, cProfile)."""
    if code is not None and not isinstance(code, int):
        return
    threading = sys.modules.get("threading")
    if threading is not None and any(
        not t.daemon and t is not threading.main_thread() and t.is_alive() for t in threading.enumerate()
    ):
        return
    if sys.gettrace() is not None or sys.getprofile() is not None or "coverage" in sys.modules:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    atexit._clear()  # run once, whichever exit follows
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)


def main() -> None:
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    if sys.argv[1:] in (["--version"], ["-V"]):
        from ctxcompact import __version__

        try:
            sys.stdout.write(f"ctxcompact {__version__}\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `ctxcompact --version | true`: exit quietly
            pass
        return
    from ctxcompact.cli.dataclass_cache import install_dataclass_cache

    install_dataclass_cache()
    from ctxcompact.cli import FAST_COMMANDS

    if sys.argv[1:2] and sys.argv[1] in FAST_COMMANDS:
        from ctxcompact.cli.fast import run as run_fast

        if run_fast(sys.argv[1:]):
            return
    from ctxcompact.cli import main as run

    run()


if __name__ == "__main__":  # `python -m ctxcompact`: also run in process (runpy), so it returns
    main()
