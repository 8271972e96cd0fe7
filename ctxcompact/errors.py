"""One exception family for everything a user can get wrong or a run cannot do.

Each error carries the process exit code the CLI maps it to and a message written for the
person at the terminal. Bugs are *not* wrapped in these: an unexpected exception keeps its
traceback so it gets reported and fixed instead of being shown as "bad input".
"""

from __future__ import annotations

from ctxcompact.status import ExitStatus


class CtxcompactError(Exception):
    """Base class: ``exit_code`` is what the CLI exits with, ``str(err)`` what it prints."""

    exit_code: ExitStatus = ExitStatus.WORK_FAILED


class InputError(CtxcompactError):
    """The input (a file, stdin, an option value) is not something we can work with: exit 2."""

    exit_code = ExitStatus.BAD_INPUT


class UsageError(InputError):
    """Options that contradict each other or are out of range: exit 2."""


class WorkFailedError(CtxcompactError):
    """The requested work could not be done (summarizer failed under --on-failure error,
    an archive or offload file could not be written): exit 3. The input is left unchanged."""

    exit_code = ExitStatus.WORK_FAILED
