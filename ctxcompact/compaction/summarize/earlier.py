"""An earlier compaction summary, carried forward: whole, or shortened section by section.

Claude Code's nine sections (Primary Request and Intent … Optional Next Step), Codex's handoff
notes and our own five are all read the same way: a *section* starts at a Markdown heading, a
numbered label ("1. Primary Request and Intent:"), a bold label line ("**Current Work**") or
``Analysis:`` / ``Summary:``. The wrapper sentences of Claude Code ("This session is being
continued…", "Please continue the conversation…") are not part of it.

When the work went on after that summary, its *Current Work* and *Next Step* sections (and
the like: current state, in progress, task status) describe a past state: their titles say
"superseded".

Shortened (:func:`shortener`), every section keeps its title and its first lines, in its
order: the budget is water-filled over the sections (one that needs less than an equal share
gets what it needs), the chronological *Analysis* and the superseded sections last; inside a
section, code blocks go first, then lines from the end; a line is never cut inside a sentence
(a long line is cut between its sentences) and each cut says how much went.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxcompact.compaction.summarize.statements import sentences

SUPERSEDED = " (superseded: the work went on after this summary)"
_TITLE = re.compile(
    r"^\s*(?:#{1,6}\s+(?P<h>.+?)|(?P<n>(?:\d{1,2}|[IVX]{1,4})\.\s+[A-Z][^:\n*]{2,60}?):?"
    r"|\*\*(?P<b>[^*\n]{2,60}?):?\*\*:?|(?P<a>Analysis|Summary):)\s*$"
)
_WRAPPER = re.compile(
    r"^(?:This session is being continued from a previous conversation that ran out of context\.[^\n]*"
    r"|Please continue the conversation from where we left (?:it )?off[^\n]*)$"
)
_SUPERSEDED_TITLE = re.compile(
    r"current work|next step|current state|in progress|task status|where we left", re.I
)
_SECONDARY_TITLE = re.compile(r"^analysis$", re.I)
_FENCE = re.compile(r"^\s*(```|~~~)")
LONG_LINE_WORDS = 60
NOTE = "({count} more omitted)"
CODE_NOTE = "[code omitted]"


@dataclass(frozen=True, slots=True)
class Section:
    """One section of an earlier summary: its title line (``""`` for text before the first
    title), its body as units (lines; a code block is one unit), and whether it is served
    last when shortening."""

    title: str
    units: tuple[str, ...]
    secondary: bool


def parse(text: str, *, superseded: bool) -> list[Section]:
    """The sections of an earlier summary (see the module docstring)."""
    sections: list[Section] = []
    title = ""
    units: list[str] = []
    fence: list[str] | None = None

    def close() -> None:
        if title or units:
            secondary = bool(_SECONDARY_TITLE.match(title)) or (
                superseded and bool(_SUPERSEDED_TITLE.search(title))
            )
            shown = f"**{title}**" + (SUPERSEDED if superseded and _SUPERSEDED_TITLE.search(title) else "")
            sections.append(Section(shown if title else "", tuple(units), secondary))

    for line in text.splitlines():
        if fence is not None:
            fence.append(line.rstrip())
            if _FENCE.match(line):
                units.append("\n".join(fence))
                fence = None
            continue
        if _FENCE.match(line):
            fence = [line.rstrip()]
            continue
        if not line.strip() or _WRAPPER.match(line.strip()):
            continue
        match = _TITLE.match(line)
        if match:
            close()
            title = next(g for g in match.group("h", "n", "b", "a") if g).strip().strip("*").strip()
            units = []
            continue
        units.extend(_units(line.rstrip()))
    if fence is not None:
        units.append("\n".join(fence))
    close()
    return sections


def _units(line: str) -> list[str]:
    if len(line.split()) <= LONG_LINE_WORDS:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    return [indent + s for s in sentences(line)]


def render(section: Section, units: Sequence[str] | None = None, note: str = "") -> str:
    body = list(section.units if units is None else units)
    if note:
        body.append(note)
    return "\n".join(([section.title] if section.title else []) + body)


def _words(text: str) -> int:
    return len(text.split())


def shortener(sections: Sequence[Section]) -> Callable[[Sequence[str], int], tuple[str, ...]]:
    """A :class:`~.layout.Part` ``shorten`` function for the rendered ``sections``: the items
    it gets are :func:`render` of each section, in order."""

    def shorten(items: Sequence[str], quota: int) -> tuple[str, ...]:
        return shorten_sections(sections, quota)

    return shorten


def shorten_sections(sections: Sequence[Section], quota: int) -> tuple[str, ...]:
    """``sections`` rendered in at most ``quota`` words (see the module docstring)."""
    titles = [_words(s.title) for s in sections]
    kept = list(range(len(sections)))
    while kept and sum(titles[i] for i in kept) > quota:
        kept.pop()  # not even the titles fit: the last sections go
    room = quota - sum(titles[i] for i in kept)
    need = {i: sum(_words(u) for u in sections[i].units) for i in kept}
    shares = dict.fromkeys(kept, 0)
    # First each main section's first line (and the note after it), in order; then the rest
    # water-filled, main sections before the secondary ones.
    for i in kept:
        body = sections[i].units
        if body and not sections[i].secondary:
            first = _words(CODE_NOTE if _FENCE.match(body[0]) else body[0]) + (3 if len(body) > 1 else 0)
            if first <= room:
                shares[i] = first
                room -= first
    for tier in (False, True):
        order = [i for i in kept if sections[i].secondary is tier]
        room = _water_fill(order, {i: need[i] - shares[i] for i in order}, shares, room)
    out: list[str] = []
    for i in kept:
        section = sections[i]
        if shares[i] >= need[i]:
            out.append(render(section))
        else:
            units, omitted = _shorten_units(section.units, shares[i])
            out.append(render(section, units, NOTE.format(count=omitted) if omitted else ""))
    while out and sum(_words(o) for o in out) > quota:
        out.pop()  # a budget too small for the notes: the last sections go
    return tuple(out)


def _water_fill(order: list[int], need: dict[int, int], shares: dict[int, int], room: int) -> int:
    """Adds to ``shares`` what each of ``order`` still ``need``s, water-filled in ``room``;
    returns what is left."""
    pending = sorted(order, key=lambda i: (need[i], i))
    while pending:
        share = room // len(pending)
        i = pending.pop(0)
        extra = max(min(need[i], share), 0)
        shares[i] += extra
        room -= extra
    return room


def _shorten_units(units: Sequence[str], quota: int) -> tuple[list[str], int]:
    """The first units of a section within ``quota`` words, a note's three words included;
    code blocks become a two-word marker first."""
    room = quota - 3
    plain = [CODE_NOTE if _FENCE.match(u) else u for u in units]
    kept: list[str] = []
    for unit in plain:
        size = _words(unit)
        if size > room:
            break
        kept.append(unit)
        room -= size
    return kept, len(units) - len(kept)
