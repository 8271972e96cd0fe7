"""``python -m ctxcompact`` and the ``ctxcompact`` console script.

``--version`` is answered here, before the command line (typer, every command module) is
imported: it is what scripts and shells call to probe the tool, and it should cost little
more than starting Python. A command compiles each dataclass method once per cache
(:mod:`ctxcompact.cli.dataclass_cache`), and ``count``, ``check`` and ``compact``
try the fast path (:mod:`ctxcompact.cli.fast`: no typer) before the Typer app.
"""

from __future__ import annotations

import gc
import sys

#: The cyclic collector's first threshold in a command's process (Python's default: 700
#: allocations). Start-up makes ~100,000 objects that all live to the end (modules, classes,
#: compiled patterns), and at 700 the collector walked them ~40 times in a `count` on a small
#: file (~8 ms of ~200) and ~250 times in an `eval` of 800K tokens (~90 ms); at this figure it
#: runs a few times per command, and cyclic garbage is still collected. The library leaves
#: its host's collector alone: only the command line sets it.
GC_THRESHOLD = 50_000


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


if __name__ == "__main__":
    main()
