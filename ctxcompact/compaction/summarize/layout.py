"""Sections, parts and the word budget of the extractive summary.

A summary is a list of :class:`Section` (one Markdown heading each), a section a list of
:class:`Part` (an optional label and its items). :func:`render` writes them within
``max_words``; when everything does not fit, the budget is shared out in this order:

1. *pinned* parts (the task statement, an earlier compaction summary) claim up to
   :data:`PINNED_SHARE` of the room, first come first served;
2. the other parts share the rest: ``priority`` sections (Task Status) first, up to 40 %,
   then water-filling — a section that needs less than an equal share gets what it needs;
3. what is left over goes back to the pinned parts.

Trimming never drops a part's label silently: what is cut is replaced by a note saying how
much ("(N more omitted)", or a marker inside a clipped task statement). ``whole`` items are
never cut inside (an earlier summary is cut between its sentences, never mid-sentence).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

Keep = Literal["first", "last", "ends"]

#: The share of the room the pinned parts may claim before everything else.
PINNED_SHARE = 0.75
#: Inside a task statement too long for its share: head and tail around this marker.
CLIP_ENDS_MARKER = "[… {count:,} words of the task statement omitted …]"
_TOKEN = re.compile(r"\S+\s*")


@dataclass(frozen=True, slots=True)
class Part:
    """A run of items under an optional label, trimmed as a unit.

    ``keep`` says which items survive trimming: the ``first``, the ``last``, or both ``ends``
    (first, last, second, second to last…); items keep their order in the output. ``pinned``
    parts are served first (see the module docstring). ``whole``: an item is kept whole or
    not at all. ``quote``: items are multi-line text, written with their line breaks.
    """

    label: str | None
    items: tuple[str, ...]
    keep: Keep = "first"
    pinned: bool = False
    whole: bool = False
    quote: bool = False


@dataclass(frozen=True, slots=True)
class Section:
    title: str
    parts: tuple[Part, ...]
    #: Share of the budget this section may claim before the others (Task Status matters most).
    priority: bool = False


def words(text: str) -> int:
    return len(text.split())


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` words with an ellipsis."""
    tokens = text.split()
    if len(tokens) <= limit:
        return " ".join(tokens)
    return " ".join(tokens[: max(limit - 1, 1)]) + " …"


def clip_ends(text: str, limit: int) -> str:
    """``text`` (line breaks kept) if it has at most ``limit`` words, else its first two thirds
    and last third around :data:`CLIP_ENDS_MARKER` — the task and its closing instructions
    (a submit command, the definition of done) both survive."""
    tokens = _TOKEN.findall(text)
    if len(tokens) <= limit:
        return text
    room = max(limit - 10, 2)
    head, tail = (room * 2) // 3, room - (room * 2) // 3
    omitted = len(tokens) - head - tail
    marker = CLIP_ENDS_MARKER.format(count=omitted)
    return "".join(tokens[:head]).rstrip() + "\n" + marker + "\n" + "".join(tokens[-tail:]).rstrip()


def _part_words(part: Part) -> int:
    return sum(words(i) for i in part.items)


def render(sections: Sequence[Section], *, max_words: int) -> str:
    """Markdown for ``sections``, at most ``max_words`` words when that is at least the
    headings' own words (they are always written)."""
    # Headings, plus the two words of "None recorded." that a section trimmed empty may need.
    fixed = sum(words(f"## {s.title}") + 2 for s in sections)
    labels = sum(words(p.label) for s in sections for p in s.parts if p.label and p.items)
    room = max(max_words - fixed - labels, 0)
    if sum(_part_words(p) for s in sections for p in s.parts) > room:
        sections = _fit(sections, room)
    out: list[str] = []
    for section in sections:
        out.append(f"## {section.title}")
        body = [line for part in section.parts for line in _part_lines(part)]
        out.append("\n".join(body) if body else "None recorded.")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _part_lines(part: Part) -> list[str]:
    if not part.items:
        return []
    lines = [part.label] if part.label else []
    for item in part.items:
        # An item is the transcript's own text: never let one of its lines become a heading.
        for line in item.splitlines() if part.quote else [item]:
            lines.append("\\" + line if line.lstrip().startswith("#") else line.rstrip())
    return lines


def _fit(sections: Sequence[Section], room: int) -> list[Section]:
    pinned = [p for s in sections for p in s.parts if p.pinned]
    grants: dict[int, int] = {}
    cap = int(room * PINNED_SHARE)
    for part in pinned:
        grants[id(part)] = min(_part_words(part), cap)
        cap -= grants[id(part)]
    rest = room - sum(grants.values())
    need = [sum(_part_words(p) for p in s.parts if not p.pinned) for s in sections]
    quotas = _quotas(need, [s.priority for s in sections], rest)
    left = rest - sum(quotas)
    for part in pinned:
        extra = min(_part_words(part) - grants[id(part)], max(left, 0))
        grants[id(part)] += extra
        left -= extra
    fitted: list[Section] = []
    for section, quota in zip(sections, quotas, strict=True):
        free = [p for p in section.parts if not p.pinned]
        shares = _quotas([_part_words(p) for p in free], [False] * len(free), quota)
        by_part = dict(zip((id(p) for p in free), shares, strict=True))
        parts = tuple(_trim_part(p, grants[id(p)] if p.pinned else by_part[id(p)]) for p in section.parts)
        fitted.append(replace(section, parts=parts))
    return fitted


def _quotas(need: Sequence[int], priority: Sequence[bool], room: int) -> list[int]:
    """Split ``room`` words: priority sections first (up to 40%), then water-filling — a
    section that needs less than an equal share gets what it needs, the rest share the rest."""
    quotas = [0] * len(need)
    left = room
    for i, p in enumerate(priority):
        if p:
            quotas[i] = min(need[i], room * 2 // 5)
            left -= quotas[i]
    pending = sorted((i for i, p in enumerate(priority) if not p), key=lambda i: (need[i], i))
    while pending:
        share = left // len(pending)
        i = pending.pop(0)
        quotas[i] = min(need[i], share)
        left -= quotas[i]
    # Priority sections may take back what the others left unused.
    for i, p in enumerate(priority):
        if p and left > 0:
            extra = min(need[i] - quotas[i], left)
            quotas[i] += extra
            left -= extra
    return quotas


def _trim_part(part: Part, quota: int) -> Part:
    if _part_words(part) <= quota:
        return part
    if part.quote and len(part.items) == 1:
        return replace(part, items=(clip_ends(part.items[0], quota),)) if quota >= 12 else _empty(part)
    note_words = 3  # "(N more omitted)"
    left = quota - note_words
    kept: dict[int, str] = {}
    for index in _priority_order(len(part.items), part.keep):
        item = part.items[index]
        size = words(item)
        if size <= left:
            kept[index] = item
            left -= size
        elif left >= 6 and not part.whole:
            kept[index] = clip_words(item, left)
            left = 0
        if left <= 0:
            break
    omitted = len(part.items) - len(kept)
    items = [kept[i] for i in sorted(kept)]
    if omitted and quota >= note_words:
        items.append(f"({omitted} more omitted)")
    return replace(part, label=part.label if items else None, items=tuple(items))


def _empty(part: Part) -> Part:
    return replace(part, label=None, items=())


def _priority_order(n: int, keep: Keep) -> list[int]:
    if keep == "first":
        return list(range(n))
    if keep == "last":
        return list(range(n - 1, -1, -1))
    order: list[int] = []
    lo, hi = 0, n - 1
    while lo <= hi:
        order.append(lo)
        if hi != lo:
            order.append(hi)
        lo, hi = lo + 1, hi - 1
    return order
