"""Sections, parts and the word budget of the extractive summary.

A summary is a list of :class:`Section` (one Markdown heading each), a section a list of
:class:`Part` (an optional label and its items). :func:`render` writes them within
``max_words``; when everything does not fit, the budget is shared out in this order:

1. *pinned* parts (the task statement, an earlier compaction summary) claim up to
   :data:`PINNED_SHARE` of the room, first come first served;
2. the other parts share the rest by ``rank``, wherever their section: rank 0 (what the user
   said, the agent's last words and next step) may claim :data:`RANK_SHARE` of what is left,
   then rank 1 of what is left after it, and so on — inside a rank, water-filling: a part
   that needs less than an equal share gets what it needs;
3. what is left over goes back to the parts still short, rank by rank, then to the pinned
   parts.

Trimming never drops a part's label silently: what is cut is replaced by a note saying how
much ("(N more omitted)", or a marker inside a clipped task statement). ``whole`` items are
never cut inside. ``keep="each"`` shares a part's room over its items (each user message
keeps its start, rather than the middle ones going whole); a part with its own ``shorten``
(an earlier summary, section by section) is handed its room.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

Keep = Literal["first", "last", "ends", "each"]

#: The share of the room the pinned parts may claim before everything else.
PINNED_SHARE = 0.75
#: The share of what is left that the parts of one rank may claim before the next rank.
RANK_SHARE = 0.6
#: Inside a task statement too long for its share: head and tail around this marker.
CLIP_ENDS_MARKER = "[… {count:,} words of the task statement omitted …]"
_TOKEN = re.compile(r"\S+\s*")


@dataclass(frozen=True, slots=True)
class Part:
    """A run of items under an optional label, trimmed as a unit.

    ``keep`` says which items survive trimming: the ``first``, the ``last``, or both ``ends``
    (first, last, second, second to last…); ``each`` keeps every item it can, each cut to an
    equal share of the room (a short one whole), the newest served first when even that does
    not fit. Items keep their order in the output. ``pinned`` parts are served first (see the
    module docstring). ``whole``: an item is kept whole or not at all. ``quote``: items are
    multi-line text, written with their line breaks. ``shorten(items, words)``: the part's own
    way to fit ``words``, used instead of the above. ``rank``: served before the parts of a
    higher rank (see the module docstring).
    """

    label: str | None
    items: tuple[str, ...]
    keep: Keep = "first"
    pinned: bool = False
    whole: bool = False
    quote: bool = False
    shorten: Callable[[Sequence[str], int], tuple[str, ...]] | None = field(default=None, compare=False)
    rank: int = 1


@dataclass(frozen=True, slots=True)
class Section:
    """One titled section of the summary and its parts."""

    title: str
    parts: tuple[Part, ...]


def words(text: str) -> int:
    return len(text.split())


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` words with an ellipsis."""
    # Split off the first words only (the rest, when there is any, is one last piece): a
    # label of a call whose command holds a whole file does not split the file into words.
    tokens = text.split(None, max(limit, 1))
    if len(tokens) <= limit:
        return " ".join(tokens)
    return " ".join(tokens[: max(limit - 1, 1)]) + " …"


def clip_ends_words(text: str, limit: int) -> str:
    """``text`` on one line, its first and last words around an ellipsis when it has more than
    ``limit``: a train of thought keeps where it started and where it got to."""
    tokens = text.split()
    if len(tokens) <= limit:
        return " ".join(tokens)
    head = max((limit - 1) // 3, 1)
    return " ".join(tokens[:head]) + " … " + " ".join(tokens[-(limit - 1 - head) :])


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
    # Headings, plus the two words a section with nothing left to show says (NOTHING or
    # TRIMMED_EMPTY).
    fixed = sum(words(f"## {s.title}") + 2 for s in sections)
    labels = sum(words(p.label) for s in sections for p in s.parts if p.label and p.items)
    room = max(max_words - fixed - labels, 0)
    fitted = list(sections)
    # Each part's words, counted once (fitting asks for them again and again).
    sizes = {id(p): _part_words(p) for s in sections for p in s.parts}
    if sum(sizes.values()) > room:
        fitted = _fit(sections, room, sizes)
    out: list[str] = []
    for section, before in zip(fitted, sections, strict=True):
        out.append(f"## {section.title}")
        body = [line for part in section.parts for line in _part_lines(part)]
        had = any(part.items for part in before.parts)
        out.append("\n".join(body) if body else TRIMMED_EMPTY if had else NOTHING)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


#: A section with nothing to tell.
NOTHING = "None recorded."
#: A section whose items the word budget left no room for — never "None recorded.", which
#: would tell the agent that nothing happened (no file read, no error).
TRIMMED_EMPTY = "(all omitted)"


def _part_lines(part: Part) -> list[str]:
    if not part.items:
        return []
    lines = [part.label] if part.label else []
    for item in part.items:
        # An item is the transcript's own text: never let one of its lines become a heading.
        for line in item.splitlines() if part.quote else [item]:
            lines.append("\\" + line if line.lstrip().startswith("#") else line.rstrip())
    return lines


def _fit(sections: Sequence[Section], room: int, sizes: Mapping[int, int]) -> list[Section]:
    """``sections`` cut to ``room`` words; ``sizes``: each part's words, by its id."""
    pinned = [p for s in sections for p in s.parts if p.pinned]
    grants: dict[int, int] = {}
    cap = int(room * PINNED_SHARE)
    for part in pinned:
        grants[id(part)] = min(sizes[id(part)], cap)
        cap -= grants[id(part)]
    left = room - sum(grants.values())
    free = [p for s in sections for p in s.parts if not p.pinned]
    ranks = sorted({p.rank for p in free})
    for n, rank in enumerate(ranks):
        parts = [p for p in free if p.rank == rank]
        claim = left if n == len(ranks) - 1 else int(left * RANK_SHARE)
        for part, quota in zip(parts, _quotas([sizes[id(p)] for p in parts], claim), strict=True):
            grants[id(part)] = quota
            left -= quota
    for rank in ranks:  # what the caps held back goes to the parts still short
        short = [p for p in free if p.rank == rank and grants[id(p)] < sizes[id(p)]]
        for part, extra in zip(
            short, _quotas([sizes[id(p)] - grants[id(p)] for p in short], left), strict=True
        ):
            grants[id(part)] += extra
            left -= extra
    for part in pinned:
        extra = min(sizes[id(part)] - grants[id(part)], max(left, 0))
        grants[id(part)] += extra
        left -= extra
    return [
        replace(s, parts=tuple(_trim_part(p, grants[id(p)], sizes[id(p)]) for p in s.parts)) for s in sections
    ]


def _quotas(need: Sequence[int], room: int) -> list[int]:
    """Split ``room`` words by water-filling: a part that needs less than an equal share gets
    what it needs, the others share the rest."""
    quotas = [0] * len(need)
    left = room
    pending = sorted(range(len(need)), key=lambda i: (need[i], i))
    while pending:
        share = left // len(pending)
        i = pending.pop(0)
        quotas[i] = max(min(need[i], share), 0)
        left -= quotas[i]
    return quotas


def _trim_part(part: Part, quota: int, size: int) -> Part:
    """``part`` cut to ``quota`` words; ``size``: its words now."""
    if size <= quota:
        return part
    if part.shorten is not None:
        shortened = part.shorten(part.items, quota)
        return replace(part, label=part.label if shortened else None, items=shortened)
    if part.keep == "each":
        return _trim_each(part, quota)
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
        # Where the omitted items were: before the kept ones when the newest are kept.
        if part.keep == "last":
            items.insert(0, f"({omitted} earlier omitted)")
        else:
            items.append(f"({omitted} more omitted)")
    return replace(part, label=part.label if items else None, items=tuple(items))


#: The fewest words an item keeps under ``keep="each"`` before the oldest items go whole.
EACH_MIN_WORDS = 12


def _trim_each(part: Part, quota: int) -> Part:
    """Every item cut to an equal share (water-filled: a short item keeps its words); when a
    share would fall under :data:`EACH_MIN_WORDS`, the oldest items go (a note says how many)."""
    if quota < 3:
        return _empty(part)
    items = list(part.items)
    while items and len(items) * EACH_MIN_WORDS + (3 if len(items) < len(part.items) else 0) > quota:
        items.pop(0)
    omitted = len(part.items) - len(items)
    room = quota - (3 if omitted else 0)
    sizes = [words(i) for i in items]
    shares = _quotas(sizes, room) if items else []
    kept = [i if words(i) <= share else clip_words(i, share) for i, share in zip(items, shares, strict=True)]
    if omitted:
        kept.insert(0, f"({omitted} earlier omitted)")
    return replace(part, label=part.label if kept else None, items=tuple(kept))


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
