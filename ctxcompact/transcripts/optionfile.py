"""Files that options name — ``--from``, ``--rules``, ``--models-file`` (and
``$CTXCOMPACT_MODELS_FILE``), an offload manifest — read with the checks transcripts get.

Only a regular file is read (a FIFO would block forever, ``/dev/zero`` never ends, a directory
is a mistake): anything else is refused before a byte is read, as is a file over
:data:`OPTION_FILE_MAX_BYTES`; stdin (``--from -``) is read up to the same limit. Parsing never
ends in a traceback: JSON goes through :mod:`~ctxcompact.transcripts.jsontext` (nesting bounded,
numbers exact), TOML through ``tomllib`` with its recursion and its integer-size errors caught.
Every problem is an :class:`~ctxcompact.errors.OptionError` (exit 2) naming the option (by its
library name; the command line says its flag) and the file.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

from ctxcompact.errors import InputError, OptionError
from ctxcompact.transcripts.fileio import read_bytes
from ctxcompact.transcripts.jsontext import loads

#: Far above any real path list (a million sessions), rules or models file; far below memory.
OPTION_FILE_MAX_BYTES = 64 * 1024 * 1024


def read_option_text(
    path: str | os.PathLike[str] | None,
    *,
    option: str,
    stdin: BinaryIO | None = None,
    max_bytes: int = OPTION_FILE_MAX_BYTES,
) -> str:
    """The UTF-8 text of the file ``option`` names (None or ``-``: stdin)."""
    try:
        name, data = read_bytes(
            path, stdin, max_bytes=max_bytes, what="a regular file", limit_hint="no option's file needs more"
        )
    except InputError as exc:
        raise _error(option, str(exc)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(option, f"{name}: not UTF-8 text (byte {exc.start}).") from None


def parse_json(text: str, *, option: str, name: str) -> Any:
    """``text`` (the file ``name`` of ``option``) as JSON."""
    value, error = loads(text.encode("utf-8", "surrogatepass"))
    if error is not None:
        raise _error(option, f"{name}: not valid JSON ({error}).")
    return value


def parse_toml(text: str, *, option: str, name: str) -> dict[str, Any]:
    """``text`` (the file ``name`` of ``option``) as TOML — deep nesting and integers of more
    than 4,300 digits included, which ``tomllib`` raises as bugs."""
    import tomllib  # only when there is such a file: start-up matters

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _error(option, f"{name}: not valid TOML ({exc}).") from None
    except RecursionError:
        raise _error(option, f"{name}: not valid TOML (nested too deeply).") from None
    except ValueError:  # what tomllib's int() raises past Python's 4,300-digit limit
        raise _error(option, f"{name}: not valid TOML (an integer of more than 4,300 digits).") from None


def _error(option: str, message: str) -> OptionError:
    """``{option} message``, the message taken as text (never as a template)."""
    return OptionError("{" + option + "} {message}", option, message=message)
