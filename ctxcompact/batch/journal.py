"""The journal that lets an interrupted batch resume (``compact --resume``).

A JSONL file: a header line naming the batch's options (a fingerprint), then one line per
finished input, appended with a single ``write`` and flushed to disk before the next input is
reported — so a batch killed at any moment leaves a journal whose every complete line is a
finished input (a torn last line is ignored). Only successes are recorded: a failed input is
tried again. An entry is honoured on resume only while its input still has the size and
modification time recorded after it was done (an edited input is done again) and its output
still exists; a journal written under other options is ignored (everything is done again).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ctxcompact.batch.results import BatchItem
from ctxcompact.errors import OptionError, WorkFailedError

#: The journal's file name inside ``--out-dir`` (hidden: never taken as an input).
JOURNAL_NAME = ".ctxcompact-journal.jsonl"
JOURNAL_VERSION = 1


def options_fingerprint(options: object) -> str:
    """A short digest of a batch's options (their repr: plain frozen data)."""
    return hashlib.sha256(repr(options).encode("utf-8")).hexdigest()[:16]


def _stamp(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


@dataclass
class BatchJournal:
    """Open with :meth:`open`; :meth:`finished` answers for earlier runs, :meth:`record`
    appends. ``resume`` False starts the file afresh (earlier entries are dropped)."""

    path: Path
    fingerprint: str
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path, *, options: object, resume: bool) -> BatchJournal:
        journal = cls(Path(path), options_fingerprint(options))
        if resume:
            journal.entries = journal._load()
        # Rewritten through a temp file: earlier entries still valid are kept, the rest dropped.
        from ctxcompact.transcripts.fileio import make_parent_dir, write_file

        make_parent_dir(path)
        header = {"ctxcompact_journal": JOURNAL_VERSION, "options": journal.fingerprint}
        lines = [orjson.dumps(header), *(orjson.dumps(e) for e in journal.entries.values())]
        write_file(path, b"".join(line + b"\n" for line in lines))
        return journal

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return {}
        if not lines or _parse(lines[0]).get("options") != self.fingerprint:
            return {}
        entries: dict[str, dict[str, Any]] = {}
        for line in lines[1:]:
            entry = _parse(line)
            if isinstance(entry.get("key"), str):
                entries[entry["key"]] = entry
        return entries

    def finished(self, key: str, path: str | None) -> BatchItem | None:
        """The item an earlier run finished for ``key``, if it still stands."""
        entry = self.entries.get(key)
        if entry is None or path is None or _stamp(path) != entry.get("stamp"):
            return None
        output = entry.get("output")
        if output is not None and not os.path.exists(output):
            return None
        return BatchItem(
            entry["input"],
            entry["status"],
            before=entry.get("before"),
            after=entry.get("after"),
            output=output,
            resumed=True,
            within_budget=bool(entry.get("within_budget")),
        )

    def record(self, key: str, path: str | None, item: BatchItem) -> None:
        """Append ``item`` (a success of an input read from a file). The line is handed to the
        OS at once, so an interrupted or killed run (Ctrl-C, kill -9) finds it; it is not
        fsynced — one sync per file cost the parent more than a worker's whole compaction, and
        after a power loss a missing line only means that file is compacted again."""
        if item.status == "failed" or path is None:
            return
        entry = {
            "key": key,
            "input": item.input,
            "status": item.status,
            "before": item.before,
            "after": item.after,
            "output": item.output,
            "within_budget": item.within_budget,
            "stamp": _stamp(path),
        }
        self.entries[key] = entry
        from ctxcompact.transcripts.fileio import append_fully

        try:
            append_fully(self.path, orjson.dumps(entry) + b"\n", sync=False, create=True)
        except OSError as exc:
            raise WorkFailedError(
                f"{self.path}: cannot record a finished file in the journal ({exc.strerror or exc})."
            ) from None


def _parse(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def journal_path(*, out_dir: Path | None, in_place: bool, report: Path | None, dry_run: bool) -> Path | None:
    """Where a batch keeps its journal: in ``out_dir``; rewriting in place, beside the report
    (``REPORT.journal``); none for a dry run (nothing is written to resume)."""
    if dry_run:
        return None
    if out_dir is not None and not in_place:
        return out_dir / JOURNAL_NAME
    if report is not None and str(report) != "-":
        return Path(f"{report}.journal")
    return None


def open_journal(
    options: Any, *, out_dir: Path | None, in_place: bool, report: Path | None, resume: bool
) -> BatchJournal | None:
    """The batch's journal (see :func:`journal_path`), or None when it keeps none; ``resume``
    without one is a :class:`~ctxcompact.errors.OptionError`."""
    where = journal_path(out_dir=out_dir, in_place=in_place, report=report, dry_run=options.dry_run)
    if where is None:
        if resume:
            raise OptionError(
                "{resume} needs a journal: give {out_dir}, or {report} with {in_place}.",
                "resume",
                "out_dir",
                "report",
                "in_place",
            )
        return None
    return BatchJournal.open(where, options=options, resume=resume)
