"""Every exit status ctxcompact uses, in one place (httpie's ``status.py`` pattern).

The README's "Guarantees" table (its exit rows) documents the same values; scripts and CI
jobs gate on them.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    #: the command did what was asked
    SUCCESS = 0
    #: ``check`` (and ``compact --fail-over``-style gates): over the threshold, compaction is due
    OVER_THRESHOLD = 1
    #: bad usage or bad input: a clear message names the file, line/column or message index
    BAD_INPUT = 2
    #: the requested work could not be done (e.g. the summarizer failed under --on-failure error)
    WORK_FAILED = 3
    #: a bug in ctxcompact (the message says so; CTXCOMPACT_TRACEBACK=1 shows the traceback)
    INTERNAL_ERROR = 70
    #: interrupted by Ctrl-C (128 + SIGINT)
    INTERRUPTED = 130
