"""A bound on concurrent summary requests, shared by every process of a batch.

``compact --jobs N`` runs files in N worker processes; each may summarize. The batch hands
every worker one cross-process semaphore (``--llm-concurrency``, default 4) and the worker
installs it here; :class:`~ctxcompact.compaction.summarize.llm.LLMSummarizer` holds a slot for the
duration of each request only — never while it backs off after a 429/529 — so a rate-limited
server sees at most that many requests at once, whatever ``--jobs`` is. Outside a batch no gate
is installed and a request takes no slot.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

_gate: AbstractContextManager[Any] | None = None


def install_request_gate(gate: AbstractContextManager[Any] | None) -> None:
    """Make ``gate`` (a semaphore, or None to remove it) bound this process's requests."""
    global _gate  # one per worker process, installed by the pool's initializer
    _gate = gate


def request_slot() -> AbstractContextManager[Any]:
    """A context manager holding one request slot (a no-op without a gate)."""
    return _gate if _gate is not None else nullcontext()
