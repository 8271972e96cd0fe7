"""What must survive an agent's compaction, and which of it its summary dropped.

Sources, in this order:

* **pinned messages** of the history that was compacted: a record carrying
  ``"ctxcompact_pin": true``, a message matching a ``--pin REGEX`` (``compact``'s pins,
  :mod:`ctxcompact.compaction.pins`), the task with ``--pin-first``;
* **named files** (``--survive FILE``, or a ``survive`` list in the config): a whole file, or
  one Markdown section of it, ``FILE#Heading`` (the heading's line through the line before the
  next heading of the same or a higher level) — ``CLAUDE.md#Rules``, ``AGENTS.md#Testing``.
  Relative paths are taken from the session's folder.

An item is *held* by the new context when it would pass ``eval``'s sentence probe: its
normalised text is in the context, or at least 80 % of its distinctive words are
(:mod:`ctxcompact.evaluation.probes`). The others are what a ``SessionStart`` hook re-injects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxcompact.compaction.pins import PinOptions, pinned_indices
from ctxcompact.evaluation.probes import Probe, score_probes
from ctxcompact.ir import Message, text_of

#: additionalContext beyond this is cut (Codex passes 10,000 characters of a hook's context
#: whole to the model and truncates the rest; Claude Code caps hook output at a similar size).
MAX_CONTEXT_CHARS = 10_000
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True, slots=True)
class SurviveItem:
    """One thing that must survive: a ``label`` saying where it comes from, and its text."""

    label: str
    text: str


@dataclass(frozen=True, slots=True)
class SurviveCheck:
    """The items, split into those the new context holds and those it lost."""

    held: tuple[SurviveItem, ...]
    lost: tuple[SurviveItem, ...]


def pinned_items(history: Sequence[Message], pins: PinOptions) -> list[SurviveItem]:
    """The pinned messages of ``history`` (tool blocks widened, in order)."""
    out: list[SurviveItem] = []
    for i in sorted(pinned_indices(history, pins, first_default=False)):
        text = text_of(history[i], include_tool_results=True).strip()
        if text:
            out.append(SurviveItem(f"pinned message {i + 1} ({history[i].role})", text))
    return out


def file_items(specs: Sequence[str], *, cwd: Path | None) -> tuple[list[SurviveItem], list[str]]:
    """The named files or sections, and a warning for each one that cannot be read."""
    items: list[SurviveItem] = []
    warnings: list[str] = []
    for spec in specs:
        name, _, section = spec.partition("#")
        path = Path(name).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            warnings.append(f"survive {spec}: cannot read {path} ({getattr(exc, 'strerror', None) or exc}).")
            continue
        if section:
            found = markdown_section(text, section)
            if found is None:
                warnings.append(f"survive {spec}: {path} has no heading {section!r}.")
                continue
            text = found
        if text.strip():
            items.append(SurviveItem(f"{name} § {section}" if section else name, text.strip()))
    return items, warnings


def markdown_section(text: str, heading: str) -> str | None:
    """The section of Markdown ``text`` under ``heading`` (compared without case), heading
    line included, up to the next heading of the same or a higher level; None if absent."""
    lines = text.splitlines()
    wanted = heading.strip().lower()
    for i, line in enumerate(lines):
        match = _HEADING.match(line)
        if match and match.group(2).strip().lower() == wanted:
            level = len(match.group(1))
            end = next(
                (
                    j
                    for j in range(i + 1, len(lines))
                    if (m := _HEADING.match(lines[j])) and len(m.group(1)) <= level
                ),
                len(lines),
            )
            return "\n".join(lines[i:end]).strip()
    return None


def check_items(items: Sequence[SurviveItem], context: str) -> SurviveCheck:
    """Which ``items`` the text ``context`` holds (the sentence-probe rule)."""
    report = score_probes([Probe("instruction", item.text) for item in items], context)
    lost_texts = {p.text for p in report.lost}
    held = tuple(i for i in items if i.text not in lost_texts)
    lost = tuple(i for i in items if i.text in lost_texts)
    return SurviveCheck(held, lost)


def reinjection_text(items: Sequence[SurviveItem], *, limit: int = MAX_CONTEXT_CHARS) -> str:
    """The ``additionalContext`` that brings ``items`` back, cut to ``limit`` characters."""
    parts = [
        "ctxcompact: the conversation was just compacted, and its summary dropped what follows, "
        "which must survive. Treat it as still in force."
    ]
    parts.extend(f"[{item.label}]\n{item.text}" for item in items)
    text = "\n\n".join(parts)
    if len(text) <= limit:
        return text
    marker = f"\n[… cut by ctxcompact: more than {limit:,} characters]"
    return text[: limit - len(marker)] + marker
