"""Fidelity probes: deterministic facts from the compacted-away part, and how they are scored."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_builders import msg, result, text, use

from ctxcompact.evaluation.probes import (
    PROBE_KINDS,
    Probe,
    ProbeSet,
    context_text,
    extract_probes,
    normalise,
    score_probes,
    words,
)

SESSION = [
    msg(
        "user",
        text(
            "<system-reminder>You must ignore this.</system-reminder>Speed up `load_config` in "
            "src/config.py; it takes 30 s. You must not change the public API. 必须保留测试。 "
            "See https://example.com/issue/7."
        ),
    ),
    msg(
        "assistant",
        text("I'll read `load_config` first; `load_config` parses YAML."),
        use("a", "Read", file_path="src/config.py"),
    ),
    msg("user", result("a", "def load_config(): ...")),
    msg(
        "assistant", use("b", "Bash", command="sed -i 's/yaml.load/yaml.safe_load/' src/config.py && pytest")
    ),
    msg("user", result("b", "Traceback (most recent call last):\nKeyError: 'path'", is_error=True)),
    msg("user", text("Also never touch the docs.")),
    msg("assistant", text("Fixed the key. Next I will run the benchmark again.")),
]


def kinds(probes: tuple[Probe, ...], kind: str) -> list[str]:
    return [p.text for p in probes if p.kind == kind]


def test_every_kind_is_extracted_and_boilerplate_is_not() -> None:
    probes = extract_probes(SESSION)
    assert kinds(probes, "task") == [
        "Speed up `load_config` in src/config.py; it takes 30 s.",
        "You must not change the public API.",
    ]
    assert kinds(probes, "path") == [
        "src/config.py"
    ]  # changed by the sed -i (read-only files are not probed)
    assert kinds(probes, "change") == ["s/yaml.load/yaml.safe_load/"]
    assert kinds(probes, "identifier") == ["load_config"]
    assert kinds(probes, "number") == ["30 s"]
    # The meaningful line of the failure, not its Traceback header.
    assert kinds(probes, "error") == ["KeyError: 'path'"]
    assert kinds(probes, "url") == ["https://example.com/issue/7"]
    assert kinds(probes, "instruction") == [
        "You must not change the public API.",
        "必须保留测试。",
        "Also never touch the docs.",
    ]
    assert kinds(probes, "last_request") == ["Also never touch the docs."]
    assert kinds(probes, "next_step") == ["Next I will run the benchmark again."]
    assert not any("ignore this" in p.text for p in probes)


def test_decisions_statements_and_test_status_are_probed() -> None:
    messages = [
        msg("user", text("Why do invoices come out a cent short?")),
        msg(
            "assistant",
            text(
                "The issue is that `compute_tax` rounds half to even, so 3.625 becomes 3.62. "
                "The rounding lives in `src/invoice/tax.py` at line 57 and nowhere else."
            ),
            use("t", "Bash", command="pytest -q | tail -3"),
        ),
        msg(
            "user",
            result(
                "t",
                "FAILED tests/test_tax.py::test_half_cent - AssertionError\n1 failed, 34 passed in 0.12s\n",
            ),
        ),
    ]
    probes = extract_probes(messages)
    assert kinds(probes, "decision") == [
        "The issue is that `compute_tax` rounds half to even, so 3.625 becomes 3.62."
    ]
    assert kinds(probes, "statement") == [
        "The rounding lives in `src/invoice/tax.py` at line 57 and nowhere else."
    ]
    assert kinds(probes, "test") == ["1 failed, 34 passed", "tests/test_tax.py::test_half_cent"]


def test_a_bare_path_list_does_not_keep_the_changes() -> None:
    messages = [
        msg("user", text("Round half up.")),
        msg(
            "assistant",
            use(
                "e",
                "Edit",
                file_path="src/tax.py",
                old_string="x",
                new_string="return value.quantize(CENT, rounding=ROUND_HALF_UP)",
            ),
        ),
        msg("user", result("e", "ok")),
    ]
    probes = [p for p in extract_probes(messages) if p.kind in ("path", "change")]
    listed = score_probes(probes, "Files: - edited: `src/tax.py`")
    assert listed.score("path") == 1.0 and listed.score("change") == 0.0
    shown = score_probes(
        probes, "- `src/tax.py` (Edit): x → return value.quantize(CENT, rounding=ROUND_HALF_UP)"
    )
    assert shown.category("artifacts").score == 1.0


def test_the_score_is_the_mean_of_the_categories() -> None:
    probes = [
        Probe("task", "Port the parser to Rust quickly."),
        *(Probe("path", f"src/m{i}.rs") for i in range(9)),
    ]
    report = score_probes(
        probes, "src/m0.rs src/m1.rs src/m2.rs src/m3.rs src/m4.rs src/m5.rs src/m6.rs src/m7.rs src/m8.rs"
    )
    # Nine paths kept out of ten probes, but the task is gone: half the categories.
    assert report.overall == 0.9 and report.mean == 0.5


def test_extraction_is_deterministic_and_leaves_the_input_alone() -> None:
    snapshot = copy.deepcopy([m.content for m in SESSION])
    assert extract_probes(SESSION) == extract_probes(SESSION)
    assert [m.content for m in SESSION] == snapshot


def test_normalisation_ignores_case_quotes_and_separators() -> None:
    assert normalise('Run `Make Test`  in "C:\\Repo\\src"') == "run make test in c:/repo/src"


def test_scores_per_kind_overall_and_lost_probes() -> None:
    probes = extract_probes(SESSION)
    summary = (
        "Task: speed up LOAD_CONFIG in `src/config.py` (30 s); never touch the docs. "
        "Error: KeyError: 'path'. You must not change the public API."
    )
    report = score_probes(probes, summary)
    assert report.score("path") == 1.0
    assert report.score("error") == 1.0
    assert report.score("url") == 0.0
    assert report.score("next_step") == 0.0
    assert [k.kind for k in report.kinds] == list(PROBE_KINDS)
    assert report.total == len(probes) and report.kept + len(report.lost) == report.total
    assert Probe("url", "https://example.com/issue/7") in report.lost
    assert report.overall == report.kept / report.total


def test_a_restored_file_keeps_its_path_probe() -> None:
    report = score_probes([Probe("path", "src/config.py")], "nothing here", restored=["/repo/src/config.py"])
    assert report.score("path") == 1.0


def test_a_paraphrased_sentence_is_kept_a_lost_one_is_not() -> None:
    probe = Probe("instruction", "You must not change the public API of the loader.")
    assert (
        score_probes([probe], "Constraint: the public API of the loader must not change.").score(
            "instruction"
        )
        == 1.0
    )
    assert score_probes([probe], "Constraint: keep it fast.").score("instruction") == 0.0


def test_context_text_reads_tool_inputs_and_results() -> None:
    out = context_text(SESSION)
    assert "src/config.py" in out and "KeyError" in out and "safe_load" in out
    # A tool input's strings as the model reads them, not JSON-escaped: a change quoted in an
    # edit is found where it was written.
    edit = msg("assistant", use("e", "Edit", file_path="a.py", new_string='print("hi")\nx = 1'))
    assert 'print("hi")\nx = 1' in context_text([edit])


def test_kinds_without_probes_have_no_score() -> None:
    report = score_probes([], "x")
    assert report.overall is None and report.score("path") is None


def _reference(probes: list[Probe], messages: list) -> set[int]:
    """The kept probes the plain way: each normalised probe looked for in the joined context."""
    haystack = normalise(context_text(messages))
    return {i for i, p in enumerate(probes) if normalise(p.text) and normalise(p.text) in haystack}


_BITS = ["ab", "b", "A'b", "c d", " ", "\n", "\\x", "`q`", "Σ", "é", "a", "b c"]


@given(
    st.lists(st.lists(st.sampled_from(_BITS), max_size=6).map("".join), min_size=1, max_size=6),
    st.lists(st.lists(st.sampled_from(_BITS), min_size=1, max_size=4).map("".join), max_size=8),
    st.lists(st.lists(st.integers(0, 5), max_size=6), max_size=3),
)
@settings(max_examples=300, deadline=None)
def test_a_probe_set_finds_what_a_scan_per_probe_finds(texts: list, needles: list, picks: list) -> None:
    # Issue 24: one `in` per probe over the whole context was quadratic; the probe set reads each
    # message once and the places where messages meet (for the probes holding a space): the
    # same answer, whatever the subset.
    messages = [msg("user", text(t)) for t in texts]
    probes = [Probe("identifier", n) for n in needles]
    probe_set = ProbeSet(probes)
    for pick in [list(range(len(messages))), *picks]:
        context = [messages[i] for i in pick if i < len(messages)]
        report = probe_set.score(context)
        lost = {id(p) for p in report.lost}
        assert {i for i, p in enumerate(probes) if id(p) not in lost} == _reference(probes, context)
        assert score_probes(probes, context_text(context)).lost == report.lost


def test_a_file_restored_in_the_messages_keeps_the_probes_naming_it() -> None:
    # eval scores a context whose files were restored after the summary: a path probe for one
    # of them is kept by the restored file itself, whichever strategy's message holds it.
    from ctxcompact.markers import restored_text

    probes = ProbeSet([Probe("path", "./src/config.py"), Probe("path", "src/other.py")])
    restored = msg("user", text(restored_text("/repo/src/config.py", "DEBUG = False")))
    report = probes.score([msg("user", text("the summary")), restored])
    assert [p.text for p in report.lost] == ["src/other.py"]
    assert [p.text for p in probes.score([msg("user", text("the summary"))]).lost] == [
        "./src/config.py",
        "src/other.py",
    ]


def test_a_probe_that_runs_across_two_messages_is_found_where_they_meet() -> None:
    messages = [
        msg("user", text("it was the")),
        msg("assistant", text("x")),
        msg("user", text("load_config step")),
    ]
    probes = [
        Probe("identifier", "the x load_config"),
        Probe("identifier", "x load"),
        Probe("identifier", "was x"),
    ]
    report = ProbeSet(probes).score(messages)
    assert [p.text for p in report.lost] == ["was x"]


@pytest.mark.parametrize(
    ("left", "right", "probe"),
    [
        # Each meets the other at the space beside a one-letter word: the farthest it can reach.
        ("it took 5", "ms to run", "5 ms"),  # short, at its first space
        ("one two three four", "x", "four x"),  # short, at its last
        ("it was a", "stale cache entry in the store", "a stale cache entry in the store"),  # long
        ("the stale cache entry in the store is", "x", "the stale cache entry in the store is x"),
    ],
)
def test_a_probe_is_found_across_two_messages_whatever_space_they_meet_at(
    left: str, right: str, probe: str
) -> None:
    messages = [msg("user", text(left)), msg("assistant", text(right))]
    assert ProbeSet([Probe("identifier", probe)]).score(messages).lost == ()
    assert ProbeSet([Probe("identifier", probe)]).score(messages[1:]).lost != ()


# Text where normalising and word-splitting can go wrong: quotes, backslashes, every kind of
# white space (Unicode's too), digits and underscores inside words, CJK and kana (and the
# kana middle dot, which is in the range but no letter), letters whose lower case grows.
_TRICKY = st.text(
    st.sampled_from(
        list("abcdEFGH xyz_019\\\"'`‘’“”«»\t\n\r\x0b\x0c\x1c\u00a0\u2003\u3000中文字・ーかナéßİ")
    ),
    max_size=60,
)


@given(st.one_of(_TRICKY, st.text(st.characters(max_codepoint=127), max_size=60)))
def test_normalise_is_its_definition(value: str) -> None:
    # ASCII text is normalised in bytes, the rest with the pattern: the same definition.
    import re

    quotes = re.compile(r"[\"'`‘’“”«»]")
    defined = re.sub(r"\s+", " ", quotes.sub("", value.replace("\\", "/")).lower()).strip()
    assert normalise(value) == defined


@given(st.one_of(_TRICKY, st.text(max_size=60)))
def test_words_are_the_word_pattern_s_matches(value: str) -> None:
    # ASCII text takes a faster pattern; the words are the same.
    from ctxcompact.evaluation.probes import _WORD, words

    assert words(value) == _WORD.findall(value)
    assert words(normalise(value)) == _WORD.findall(normalise(value))


_ASCII_CHUNKS = ["word", "Word", "abc", "xy", "_", "0", "9", " ", "-", "/", "\n"]
_CHUNKS = [*_ASCII_CHUNKS, "中文字", "か", "ナ", "é", "ß", "İ", "Σ", "\u00a0"]
#: Texts of words and what may border one: ASCII ones (read in bytes) or not.
_WORDY = st.one_of(
    *(st.lists(st.sampled_from(c), max_size=12).map("".join) for c in (_ASCII_CHUNKS, _CHUNKS))
)


@given(st.lists(_WORDY, min_size=1, max_size=4), st.data())
@settings(max_examples=300, deadline=None)
def test_the_words_a_context_holds_are_its_words(sentences: list[str], data: st.DataObject) -> None:
    # A sentence probe is kept by the words of it the context holds: ASCII text is read for
    # them in bytes, not with the pattern; the words found are the pattern's.
    probes = ProbeSet([Probe("statement", s) for s in [*sentences, "word wordword worde wordß 中文字 か"]])
    text = normalise(data.draw(_WORDY))
    assert probes._present(text) == probes._all_wanted & set(words(text))


@given(_TRICKY, st.integers(1, 12))
def test_a_text_read_in_pieces_normalises_as_a_whole(value: str, size: int) -> None:
    # score_text reads a long context in pieces (its cost grew faster than the text when it
    # was normalised whole); joined, the normalised pieces are the normalised text.
    from ctxcompact.evaluation.probes import _pieces

    pieces = list(_pieces(value, size))
    assert "".join(pieces) == value
    assert " ".join(p for p in map(normalise, pieces) if p) == normalise(value)


@given(
    st.lists(st.sampled_from([*_BITS, "Error loading things", "loading", "things went"]), max_size=30).map(
        "".join
    ),
    st.lists(
        st.tuples(
            st.sampled_from(["identifier", "statement"]),
            st.lists(st.sampled_from([*_BITS, "loading", "things"]), min_size=1, max_size=4).map("".join),
        ),
        max_size=8,
    ),
)
@settings(max_examples=300, deadline=None)
def test_a_text_scored_in_small_pieces_scores_as_a_whole(context: str, probes: list) -> None:
    from unittest import mock

    from ctxcompact.evaluation import probes as module

    probe_list = [Probe(kind, needle) for kind, needle in probes]
    whole = ProbeSet(probe_list).score_text(context)
    with mock.patch.object(module, "PIECE_CHARS", 1):
        pieces = ProbeSet(probe_list).score_text(context)
    assert pieces == whole
    lost = {id(p) for p in whole.lost}
    assert {i for i, p in enumerate(probe_list) if p.kind == "identifier" and id(p) not in lost} == {
        i
        for i, p in enumerate(probe_list)
        if p.kind == "identifier" and normalise(p.text) and normalise(p.text) in normalise(context)
    }
