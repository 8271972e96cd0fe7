"""The run's total deadline (the CLI's ``--deadline``): its default and its ``deadline_at``.

Apart from :mod:`.retry`, which enforces it, so a command declares the option without loading
the request machinery (``count`` and ``check`` reach the network only with
``--counter anthropic``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The default total deadline, seconds: a Message Batch ends (or expires) within 24 hours.
DEFAULT_DEADLINE = 26 * 3600.0


def deadline_in(seconds: float | None, clock: Callable[[], float] = time.monotonic) -> float | None:
    """The ``deadline_at`` of a run that may take ``seconds`` from now (None: no deadline)."""
    return None if seconds is None else clock() + seconds
