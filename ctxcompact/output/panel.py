"""Rich's stats panels, written without ``rich`` when stderr is a pipe.

:func:`plain_panel` writes the very bytes Rich's ``Panel`` (``expand=False``, title on the
left, on a piped console of the run's width) would, so a piped ``compact`` or ``offload`` never imports
``rich`` (~30 ms of its start-up). It covers printable ASCII (and "→", "·", "…") only and
says None for anything else (wide or combining characters, tabs, markup in the title), where
the caller lets Rich draw.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctxcompact.output.terminal import PIPED_WIDTH

_WORD = re.compile(r"\s*\S+\s*")  # Rich's word: leading and trailing whitespace included
#: Printable ASCII and the other characters the panels themselves write ("→", "·", "…"): one
#: terminal cell each, so lengths are widths.
_PLAIN = re.compile(r"[ -~→·…]*")


def plain_panel(title: str, lines: Sequence[str], *, width: int = PIPED_WIDTH) -> str | None:
    """What a piped Rich console of ``width`` columns prints for ``Panel(Group(*lines),
    title=title, title_align="left", expand=False)``; None unless the lines and the title are
    printable ASCII (or "→", "·"), the title without markup or emoji codes."""
    if not lines or not all(_PLAIN.fullmatch(line) for line in lines):
        return None
    if not _PLAIN.fullmatch(title) or "[" in title or ":" in title:
        return None
    if len(title) + 2 > width - 4:
        return None  # Rich would crop the title
    inner = min(max(len(line) for line in lines), width - 4) + 2
    inner = min(width - 2, max(inner, len(title) + 4))
    text_width = inner - 2
    head = f" {title} "
    out = [f"╭─{head}{'─' * (inner - 2 - len(head))}─╮"]
    for line in lines:
        for piece in _wrap(line, text_width):
            out.append(f"│ {piece}{' ' * (text_width - len(piece))} │")
    out.append(f"╰{'─' * inner}╯")
    return "\n".join(out) + "\n"


def _wrap(line: str, width: int) -> list[str]:
    """Rich's word wrap of one ASCII line (``rich._wrap.divide_line`` with folding, then each
    piece's trailing spaces past ``width`` dropped and the rest cropped to ``width``)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for k, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if k == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    pieces = [line[a:b] for a, b in zip([0, *breaks], [*breaks, len(line)], strict=True)]
    out = []
    for piece in pieces:
        if len(piece) > width:
            spaces = len(piece) - len(piece.rstrip())
            piece = piece[: len(piece) - min(spaces, len(piece) - width)]
        out.append(piece[:width])
    return out
