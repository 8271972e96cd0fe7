"""The fast scans answer as the obvious ones do: a case-insensitive pattern searched in lowered
ASCII text finds what ``IGNORECASE`` finds, lines cut lazily are ``str.splitlines``', a line
pattern tried after line breaks finds what ``finditer`` finds, and words clipped after
splitting off only the first ones are the words clipped after splitting them all."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.compaction import retention, scan
from ctxcompact.compaction.scan import (
    Caseless,
    ascii_alternatives,
    lines_of,
    lowered_pattern,
    top_level_alternatives,
)
from ctxcompact.compaction.summarize import outcomes, statements
from ctxcompact.compaction.summarize.layout import clip_words

#: Every Caseless pattern of the summary, by name.
PATTERNS = {
    "USER_RULE": statements.USER_RULE,
    "CONCLUSION": statements.CONCLUSION,
    "INTENT": statements.INTENT,
    "HEDGE": statements.HEDGE,
    "INSTRUCTION": retention._INSTRUCTION,
}

#: Pieces of the patterns' words in several cases, and the characters IGNORECASE folds oddly.
_PIECES = [
    "The issue is", "ROOT CAUSE", "because", "I found ", "Let me", "NEXT, ", "next step", "Remaining: ",
    "must", "MUST", "Don't", "should", "is fixed", "Tests Pass", "all 3 tests pass", "maybe", "?",
    "必须", "问题是", "接下来", " ", "\n", ".", "a", "K", "\u212a", "\u017f", "\u0131", "\u0130", "é", "_",
    "works now", "you're right", "decided", "result:", "instead of", "1", "—", "don’t", "问题", "原因",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from(sorted(PATTERNS)))
def test_caseless_search_finds_what_ignorecase_finds(pieces: list[str], name: str) -> None:
    text = "".join(pieces)
    pattern = PATTERNS[name]
    assert pattern.search(text) == (pattern.pattern.search(text) is not None)
    assert pattern.match(text) == (pattern.pattern.match(text) is not None)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=40))
def test_caseless_on_any_ascii_text(text: str) -> None:
    for pattern in PATTERNS.values():
        assert pattern.search(text) == (pattern.pattern.search(text) is not None)


def test_lowered_pattern_keeps_escapes_and_refuses_cased_non_ascii_letters() -> None:
    assert lowered_pattern(r"\S+Error\b").pattern == r"\S+error\b"
    assert lowered_pattern(r"[A-Z]\W").pattern == r"[a-z]\W"
    assert lowered_pattern("必须").pattern == "必须"
    with pytest.raises(ValueError):
        lowered_pattern("café")
    error_head = Caseless(outcomes._ERROR_HEAD)
    assert error_head.match("  ValueError: bad") and not error_head.match("x ValueError: bad")


def test_ascii_text_is_searched_without_the_alternatives_only_other_text_matches() -> None:
    """The Chinese words of a statement pattern are left out of its ASCII search (each is one
    more try at every position); an alternative that can match the empty string never is."""
    source = r"\b(?:a|b)\b|[|\]]x|\|y|问题(?:是|在于)|必须"
    assert "|".join(top_level_alternatives(source)) == source
    assert top_level_alternatives(source) == [r"\b(?:a|b)\b", r"[|\]]x", r"\|y", "问题(?:是|在于)", "必须"]
    assert ascii_alternatives(source) == [r"\b(?:a|b)\b", r"[|\]]x", r"\|y"]
    assert ascii_alternatives("a|必(?:须)?") == ["a"]
    assert ascii_alternatives("a|(?:必须)?") == ["a", "(?:必须)?"]  # it matches "": kept
    assert not Caseless("必须").search("anything ascii") and Caseless("必须").search("你必须")
    assert "问题" not in statements.CONCLUSION._lowered.pattern
    with pytest.raises(ValueError):  # the Kelvin sign matches "k" under IGNORECASE: refused
        Caseless("a|\u212a")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t\r\x0b。！？")), max_size=30))
def test_ascii_text_is_cut_into_the_same_sentences(text: str) -> None:
    ascii_text = text.encode("ascii", "ignore").decode()
    for sample in (text, ascii_text):
        assert statements._ASCII_SENTENCE_SPLIT.split(ascii_text) == statements.SENTENCE_SPLIT.split(
            ascii_text
        )
        assert statements.sentences(sample) == [
            s
            for s in (p.replace("**", "").strip(" -*•\t#>") for p in statements.SENTENCE_SPLIT.split(sample))
            if s
        ]


_LINE_PARTS = ["a", "bc", "x" * 9, "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", ""]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_LINE_PARTS), max_size=30), st.integers(min_value=1, max_value=8))
def test_lines_of_cuts_the_lines_splitlines_cuts(parts: list[str], piece: int) -> None:
    text = "".join(parts)
    original = scan._FIRST_PIECE
    scan._FIRST_PIECE = piece  # small pieces: every cut falls somewhere tricky
    try:
        assert list(lines_of(text)) == text.splitlines()
    finally:
        scan._FIRST_PIECE = original


_TEST_OUTPUT_PARTS = [
    "\n", "\r\n", "\n\n", " ", "  ", "=", "== ", "3 passed", "1 failed", ", ", " in 0.2s", "Ran 4 tests in 0.1s", "OK",
    "OK (skipped=1)", "FAILED (failures=1)", "Tests: 2 passed, 3 total", "Test Files  1 passed", "test result: ok.",
    "ok  pkg/x 0.3s", "FAIL", "PASS", "5 passing", "2 failing", "3 examples, 0 failures", "FAILED tests/a.py::t",
    "ERROR b", "--- FAIL: TestX", "FAIL: test_y (m.T)", "x", "\t", "\x0b", "E", "    ", "12", " in ", "s", ",",
]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_TEST_OUTPUT_PARTS), max_size=20))
def test_line_patterns_find_the_matches_finditer_finds(parts: list[str]) -> None:
    text = "".join(parts)
    for pattern in (outcomes._TEST_SUMMARY, outcomes._TEST_FAILED_NAME):
        assert list(pattern.groups_of(text)) == [m.groups() for m in pattern.pattern.finditer(text)]
    # The possessive runs of the summary pattern find what the same runs written plain find.
    plain = re.compile(
        outcomes._TEST_SUMMARY.pattern.pattern.replace("*+", "*").replace("++", "+"), re.MULTILINE
    )
    assert plain.pattern != outcomes._TEST_SUMMARY.pattern.pattern
    assert [m.groups() for m in plain.finditer(text)] == [
        m.groups() for m in outcomes._TEST_SUMMARY.pattern.finditer(text)
    ]


def _clip_words_by_splitting_all(text: str, limit: int) -> str:
    """clip_words as first written: every word split off, then the first ones kept."""
    tokens = text.split()
    if len(tokens) <= limit:
        return " ".join(tokens)
    return " ".join(tokens[: max(limit - 1, 1)]) + " …"


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \n\t\u3000\x1c…")), max_size=30), st.integers(-2, 8))
def test_clip_words_splits_off_only_the_words_it_keeps_and_says_the_same(text: str, limit: int) -> None:
    assert clip_words(text, limit) == _clip_words_by_splitting_all(text, limit)


_FRAME_PARTS = [
    "\n", " ", "x", "</output>", "[exit code: 1]", "[exit code: -2]", "[exit code: ]", "(Open file: a.py)",
    "\n(Current directory: /r)\n", "bash-$", "\t", "output", "</output", "[exit code: 0]\n",
]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_FRAME_PARTS), max_size=12))
def test_a_harness_frame_at_the_end_is_found_where_the_regex_finds_it(parts: list[str]) -> None:
    end = "".join(parts)
    found = outcomes._FRAME_TAIL.search(end)
    assert outcomes._frame_tail_start(end) == (found.start() if found else None)
