"""``python -m ctxcompact`` and the ``ctxcompact`` console script.

``--version`` is answered here, before the command line (typer, every command module) is
imported: it is what scripts and shells call to probe the tool, and it should cost little
more than starting Python.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from ctxcompact import __version__

        try:
            sys.stdout.write(f"ctxcompact {__version__}\n")
            sys.stdout.flush()
        except BrokenPipeError:  # `ctxcompact --version | true`: exit quietly
            pass
        return
    from ctxcompact.cli import main as run

    run()


if __name__ == "__main__":
    main()
