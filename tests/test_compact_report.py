"""The compact stats panel piped without rich: the very bytes Rich's panel prints."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from ctxcompact.output.panel import plain_panel
from ctxcompact.output.rich import make_console
from ctxcompact.output.terminal import Terminal

_WORDS = st.sampled_from(
    [
        "a",
        "tokens",
        "724,610",
        "→",
        "x" * 40,
        "y" * 97,
        "z" * 230,
        "/root/.local/x.jsonl",
        "文",
        "a·b",
        "… and 3 more",
    ]
)
_LINE = st.lists(st.one_of(_WORDS, st.sampled_from([" ", "  ", "   "])), max_size=30).map("".join)


def _rich(title: str, lines: list[str]) -> str:
    out = io.StringIO()
    # not a terminal: no colours, 100 columns
    console = make_console(Terminal.detect(stderr=out, stderr_isatty=False, environ={}).stderr)
    console.print(
        Panel(Group(*(Text(line) for line in lines)), title=title, title_align="left", expand=False)
    )
    return out.getvalue()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(_LINE, min_size=1, max_size=5),
    st.sampled_from(
        ["ctxcompact compact · full", "ctxcompact compact · prune,full · conversation 2", "t" * 95]
    ),
)
def test_the_plain_panel_is_what_rich_prints(lines: list[str], title: str) -> None:
    plain = plain_panel(title, lines)
    if plain is None:  # a wide character, or a title Rich would crop: Rich draws it
        assert any("文" in line for line in lines) or len(title) > 94
        return
    assert plain == _rich(title, lines)


def test_markup_tabs_and_wide_text_are_left_to_rich() -> None:
    assert plain_panel("ctxcompact compact · [bold]x", ["ok"]) is None
    assert plain_panel("ctxcompact compact · :smile:", ["ok"]) is None
    assert plain_panel("ctxcompact compact · full", ["a\tb"]) is None
    assert plain_panel("ctxcompact compact · full", ["文件"]) is None
