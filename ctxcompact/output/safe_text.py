"""Text from transcripts made safe to show: the one place control characters are disarmed.

A transcript is written by an agent, a tool, a web page it fetched — anyone. Its text reaches
a terminal through previews (``count``), messages (``check``), warnings (``compact``), file
names (``restore-files``), projects (``sessions``) and lost probes (``eval --show-lost``). An
escape sequence in it would act on the terminal: set its title, clear the screen, move the
cursor over the verdict, or (OSC 52) write the clipboard; a bidi override would reorder what is
read. So every text this tool shows — plain reports on stdout, everything on stderr, and
whatever Rich draws (:mod:`ctxcompact.output.rich`) — goes through :func:`printable`: each C0
control but tab and newline, DEL, each C1 control and each bidi override or isolate becomes
its ``\\uXXXX`` escape. That spelling is also JSON's own escape for the same character, so a
JSON document passed through it decodes to the very same value (JSON output keeps the text,
escaped).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character that could act on a terminal spelled ``\\uXXXX``."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
