"""The plain-data records of a batch: one :class:`BatchItem` per input, the
:class:`BatchResult`, and the progress events (picklable: items come back from workers)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ctxcompact.compaction.pipeline import CompactStats
from ctxcompact.status import ExitStatus

#: How an input read from stdin is named in reports and messages.
STDIN_NAME = "<stdin>"

ItemStatus = Literal["compacted", "unchanged", "failed"]
#: What became of a file, figures read: a "compacted" file whose tokens did not go down is
#: ``unchanged`` (as many) or ``grew`` (more) — never shown as compacted.
Outcome = Literal["compacted", "grew", "unchanged", "failed"]


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One input of a batch. ``before``/``after`` (tokens) and ``stats`` once it was
    compacted — kept when writing the result then failed; ``output`` once written;
    ``error`` and ``exit_code`` when it failed; ``resumed`` when an earlier run of the batch
    finished it (``--resume``: figures from its journal, no stats)."""

    input: str
    status: ItemStatus
    before: int | None = None
    after: int | None = None
    stats: tuple[CompactStats, ...] | None = None
    output: str | None = None
    error: str | None = None
    exit_code: ExitStatus = ExitStatus.SUCCESS
    resumed: bool = False
    #: left unchanged because every conversation was already under its threshold (--auto)
    within_budget: bool = False

    @property
    def ratio(self) -> float | None:
        """Tokens after / before (summed over the file's conversations)."""
        return self.after / self.before if self.before and self.after is not None else None

    @property
    def outcome(self) -> Outcome:
        """``compacted`` only when the tokens went down (see :data:`Outcome`)."""
        if self.status != "compacted":
            return self.status
        if self.before is not None and self.after is not None and self.after >= self.before:
            return "grew" if self.after > self.before else "unchanged"
        return "compacted"

    def over_ratio(self, limit: float) -> bool:
        """The ``--fail-over`` gate: this file's after/before ratio stayed above ``limit``
        (a file already within budget, or without figures — a failure — never counts)."""
        ratio = self.ratio
        return ratio is not None and ratio > limit and not self.within_budget


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Every input's outcome, in input order, and the budget warnings of the whole batch."""

    items: tuple[BatchItem, ...]
    warnings: tuple[str, ...] = ()

    @property
    def compacted(self) -> int:
        return sum(item.status == "compacted" for item in self.items)

    @property
    def failed(self) -> int:
        return sum(item.status == "failed" for item in self.items)

    @property
    def grew(self) -> tuple[BatchItem, ...]:
        """The items whose tokens went up (the ``--fail-on-growth`` gate)."""
        return tuple(item for item in self.items if item.outcome == "grew")

    @property
    def totals(self) -> tuple[int, int]:
        """Tokens before and after, summed over the items with figures."""
        done = [i for i in self.items if i.before is not None and i.after is not None]
        return sum(i.before or 0 for i in done), sum(i.after or 0 for i in done)

    @property
    def exit_code(self) -> ExitStatus:
        """The worst failure's exit code, or success."""
        return max((i.exit_code for i in self.items if i.status == "failed"), default=ExitStatus.SUCCESS)

    def over_ratio(self, limit: float) -> tuple[BatchItem, ...]:
        """The items that fail ``--fail-over limit`` (see :meth:`BatchItem.over_ratio`)."""
        return tuple(item for item in self.items if item.over_ratio(limit))

    def gate(self, fail_over: float | None = None, *, fail_on_growth: bool = False) -> ExitStatus:
        """The exit code a CI job gates on: the worst failure's; else 1 when a file stayed
        above ``fail_over``, or with ``fail_on_growth`` when a file grew; else 0."""
        if self.failed:
            return self.exit_code
        if fail_over is not None and self.over_ratio(fail_over):
            return ExitStatus.OVER_THRESHOLD
        if fail_on_growth and self.grew:
            return ExitStatus.OVER_THRESHOLD
        return ExitStatus.SUCCESS


@dataclass(frozen=True, slots=True)
class Gates:
    """What makes a batch exit 1 when no file failed: a file above ``--fail-over RATIO``, or
    with ``--fail-on-growth`` a file that grew."""

    fail_over: float | None = None
    fail_on_growth: bool = False

    def exit_code(self, batch: BatchResult) -> ExitStatus:
        return batch.gate(self.fail_over, fail_on_growth=self.fail_on_growth)


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """Reported before each input (``item`` None) and after it (``item`` its outcome)."""

    index: int
    total: int
    input: str
    item: BatchItem | None = None


ProgressCallback = Callable[[BatchProgress], None]
