"""The lazy cl100k_base counter: tiktoken's counts exactly, without loading tiktoken."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, SAMPLES
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from test_counters import _pieces

from ctxcompact.accounting import cl100k, counters
from ctxcompact.accounting.counters import (
    TiktokenCounter,
    _cl100k_spec,
    lazy_counts,
    load_encoding,
    load_rank_table,
)
from ctxcompact.accounting.tokens import block_pieces
from ctxcompact.transcripts.io import load_messages

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from gen_transcript import generate  # noqa: E402


@pytest.fixture(scope="module", name="table")
def _table() -> cl100k.RankTable:
    return cl100k.RankTable(cl100k.build_table(_cl100k_spec()["mergeable_ranks"]))


PATTERN = _cl100k_spec()["pat_str"]


def tiktoken_count(text: str) -> int:
    return len(load_encoding("cl100k_base").encode_ordinary(text))


def assert_counts_like_tiktoken(table: cl100k.RankTable, texts: list[str]) -> None:
    assert texts
    memo: dict[str, int] = {}
    found = [cl100k.count(table, text, memo) for text in texts]
    diff = [
        (t[:60], a, tiktoken_count(t)) for t, a in zip(texts, found, strict=True) if a != tiktoken_count(t)
    ]
    assert diff == []


# --- arbitrary text ---------------------------------------------------------------------------

#: What cl100k's pattern treats specially: white space runs (Rust's, and Python's that are not:
#: \x1c-\x1f), line ends, contractions (and ſ, which folds to s), digits, letters with
#: combining marks, emoji, CJK, other scripts' digits and spaces.
TRICKY = (
    " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2009\u200b\u2028\u2029\u202f\u3000"
    "'’sSdDmMtTlLvVeErRſ"
    "0123456789٣४௫²½Ⅻ"
    "aZéÉ\u0301\u0308\u20dd"
    "😀👍🏽\u200d❤\ufe0f"
    "中文字日本語한국어"
    '!?.,;:-_()[]{}<>/\\"#$%&*+=@^`|~'
)
tricky_text = st.text(alphabet=st.sampled_from(TRICKY), max_size=80)
any_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=80)
mixed_text = st.lists(
    st.one_of(tricky_text, any_text, st.sampled_from(["\r\n", "'ll", "'VE", " 's", "    "])), max_size=6
).map("".join)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(tricky_text, any_text, mixed_text))
def test_counts_like_tiktoken_on_arbitrary_text(table: cl100k.RankTable, text: str) -> None:
    found = cl100k.count(table, text, {})
    if found is None:
        # Only a character this Python's Unicode data lacks makes it hand the text over.
        assert any(unicodedata.category(ch) == "Cn" and not "\ud800" <= ch <= "\udfff" for ch in text)
    else:
        assert found == tiktoken_count(text)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(tricky_text, mixed_text))
@example("x'ſx 'ſ it's 'LL 'Ve 're")
@example("a\x1c\x1d b \x85\xa0 c\u3000\u3000d  \n\n \r\n\t")
@example("12345 ١٢٣٤ ²³ Ⅻ½ é\u0301 中文")
def test_splits_where_tiktoken_splits(text: str) -> None:
    """Counts can agree on a wrong split (both sides of a cut may merge alike: "'ſx" is three
    tokens as one piece or as "'ſ" and "x"), so the pieces themselves are compared: with an
    encoding whose tokens are the single bytes and our pieces, tiktoken returns our pieces'
    ids in order when its pattern cuts where ours does."""
    import tiktoken

    pieces = cl100k.split(text)
    assume(pieces is not None)
    ranks = {bytes([b]): b for b in range(256)}
    for piece in pieces:
        ranks.setdefault(piece.encode("utf-8"), len(ranks))
    probe = tiktoken.Encoding("probe", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
    assert probe.encode_ordinary(text) == [ranks[p.encode("utf-8")] for p in pieces]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(piece=st.binary(min_size=2, max_size=400))
def test_the_heap_merges_as_the_list_does(table: cl100k.RankTable, piece: bytes) -> None:
    """tiktoken merges pieces of 100 bytes or more with a heap; both give the same parts."""
    assert cl100k._merge_count_large(table, piece) == cl100k._merge_count(table, piece)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(
        alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzé0123456789+/=!."), min_size=100, max_size=3000
    )
)
def test_long_pieces_count_like_tiktoken(table: cl100k.RankTable, text: str) -> None:
    assert cl100k.count(table, text, {}) == tiktoken_count(text)


def test_edge_cases(table: cl100k.RankTable) -> None:
    texts = [
        "",
        "\ud800 lone surrogate",
        "pair \ud83d\ude00 joined",
        "'ſx 'ſ 'S 'LL 'Ve 're 'ſ",
        "a\x1c\x1db \x85\xa0 c\u3000",
        "x  \n\n  \r\n\t y   ",
        "   ",
        "12345678901",
        "é" * 1000,
        " " * 5000,
        "a" * 20_000,
        "é\u0301" * 300,
    ]
    assert_counts_like_tiktoken(table, texts)


def test_every_assigned_character_is_classed_as_tiktoken_classes_it() -> None:
    """The classes come from this Python's unicodedata; tiktoken's regex has its own Unicode
    tables. Each code point is read by tiktoken's own pattern in three probes (after "a", "1"
    and "!") with an encoding whose only tokens longer than a byte are the probe pairs: a pair
    comes back as one token exactly when the pattern kept it in one piece — a letter after
    "a", a number after "1", a letter or "anything else" after "!"."""
    chars = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and cl100k.char_class(chr(c)) is not None and chr(c) not in "\r\n"
    ]
    single = {bytes([b]): b for b in range(256)}
    kept: dict[str, set[str]] = {}
    for prefix, separator in (("a", "\n"), ("1", "\n"), ("!", "a")):
        ranks = dict(single)
        ids = {}
        for i, ch in enumerate(chars):
            key = (prefix + ch).encode("utf-8", "surrogatepass")
            if key not in ranks:
                ranks[key] = ids[key] = 256 + i
        import tiktoken

        probe = tiktoken.Encoding("probe", pat_str=PATTERN, mergeable_ranks=ranks, special_tokens={})
        found = probe.encode_ordinary(separator.join(prefix + ch for ch in chars))
        kept[prefix] = {chars[t - 256] for t in found if t >= 256}
    theirs = {
        ch: "L" if ch in kept["a"] else "N" if ch in kept["1"] else "P" if ch in kept["!"] else "s"
        for ch in chars
    }
    differ = [
        (hex(ord(ch)), cl100k.char_class(ch), cls)
        for ch, cls in theirs.items()
        if cl100k.char_class(ch) != cls
    ]
    assert len(chars) > 280_000 and differ == []


# --- transcripts ------------------------------------------------------------------------------


def test_counts_like_tiktoken_on_the_samples_and_generated_transcripts(table: cl100k.RankTable) -> None:
    texts = _pieces(sorted(SAMPLES.glob("*.json*")))
    for seed in range(3):
        for message in load_messages(generate(40_000, seed=seed)).messages:
            for block in message.content:
                texts.extend(block_pieces(block)[0])
    assert_counts_like_tiktoken(table, texts)


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is absent")
def test_counts_like_tiktoken_on_the_corpus(table: cl100k.RankTable) -> None:
    assert_counts_like_tiktoken(table, _pieces(sorted(p for p in CORPUS.rglob("*") if p.is_file())))


# --- when it serves ---------------------------------------------------------------------------


@pytest.fixture(name="fresh")
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A process as it starts: an empty cache dir, no tokenizer loaded, no budget spent."""
    monkeypatch.setenv("CTXCOMPACT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(counters, "_lazy_spent", 0)
    monkeypatch.setattr(counters, "load_encoding", _Unloaded())
    load_rank_table.cache_clear()
    yield tmp_path / "cache"
    load_rank_table.cache_clear()


class _Unloaded:
    """``load_encoding`` as a process sees it before its first load, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, name: str) -> Any:
        self.calls += 1
        return load_encoding(name)

    def cache_info(self) -> Any:
        return load_encoding.cache_info()._replace(currsize=self.calls)


def test_a_small_input_is_counted_without_tiktoken(fresh: Path) -> None:
    texts = ["Hello, world!", "def f(x):\n    return x  # it's fine\n", "中文 é 😀"]
    assert TiktokenCounter().count_batch(texts) == [tiktoken_count(t) for t in texts]
    assert counters.load_encoding.calls == 0  # type: ignore[attr-defined]
    assert list(fresh.glob("*.ranks")), "the table is saved for the next run"


def test_an_input_over_the_budget_loads_tiktoken(fresh: Path) -> None:
    big = "word " * (4 * counters.LAZY_TOKENS["tiktoken"])
    assert lazy_counts([big], "cl100k_base", "tiktoken") is None
    assert TiktokenCounter().count_batch([big, "x"]) == [tiktoken_count(big), 1]
    assert counters.load_encoding.calls == 1  # type: ignore[attr-defined]


def test_the_budget_is_the_processs_not_the_calls(fresh: Path) -> None:
    piece = "word " * (counters.LAZY_TOKENS["tiktoken"] // 3)  # well under the budget alone
    assert lazy_counts([piece], "cl100k_base", "tiktoken") is not None
    assert lazy_counts([piece], "cl100k_base", "tiktoken") is not None
    assert lazy_counts([piece], "cl100k_base", "tiktoken") is None  # a third would pass it


def test_a_character_unknown_here_is_left_to_tiktoken(fresh: Path) -> None:
    unknown = next(chr(c) for c in range(0x10000, 0x110000) if unicodedata.category(chr(c)) == "Cn")
    assert lazy_counts(["fine", f"new {unknown}"], "cl100k_base", "tiktoken") is None
    assert TiktokenCounter().count_batch([f"new {unknown}"]) == [tiktoken_count(f"new {unknown}")]
    assert lazy_counts(["x"], "o200k_base", "tiktoken") is None  # cl100k_base only


# --- the cache file ---------------------------------------------------------------------------


def _ranks_file(cache: Path) -> Path:
    (found,) = cache.glob("*.ranks")
    return found


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated: a run killed while writing elsewhere
        lambda data: b"",
        lambda data: b"not a rank table at all" * 100,
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one byte changed: its checksum fails
        lambda data: cl100k.build_table({b"a": 0, b"b": 1}),  # a well-formed table of other ranks
    ],
    ids=["truncated", "empty", "foreign", "altered", "other-ranks"],
)
def test_a_broken_table_is_ignored_and_rebuilt(fresh: Path, damage: Any) -> None:
    assert lazy_counts(["warm up"], "cl100k_base", "tiktoken") == [2]
    path = _ranks_file(fresh)
    good = path.read_bytes()
    path.write_bytes(damage(good))
    load_rank_table.cache_clear()
    assert lazy_counts(["hello world, it's me"], "cl100k_base", "tiktoken") == [
        tiktoken_count("hello world, it's me")
    ]
    assert path.read_bytes() == good


def test_a_table_others_may_write_is_not_used_and_is_replaced(fresh: Path) -> None:
    """A cache directory pointed at a shared folder: a table anyone could have written (world-
    writable) is ignored and replaced by one this run builds, not read."""
    assert lazy_counts(["warm up"], "cl100k_base", "tiktoken") == [2]
    path = _ranks_file(fresh)
    good = path.read_bytes()
    path.write_bytes(cl100k.build_table({b"a": 0, b"b": 1}))  # planted: counts would be wrong
    path.chmod(0o666)
    load_rank_table.cache_clear()
    assert lazy_counts(["hello world"], "cl100k_base", "tiktoken") == [2]
    assert path.read_bytes() == good and not path.stat().st_mode & 0o002


def test_a_link_planted_at_the_table_does_not_redirect_the_write(fresh: Path) -> None:
    assert lazy_counts(["warm up"], "cl100k_base", "tiktoken") == [2]
    path = _ranks_file(fresh)
    good = path.read_bytes()
    victim = fresh.parent / "victim.txt"
    victim.write_text("the user's file")
    path.unlink()
    path.symlink_to(victim)  # not a table: ignored, and the new table replaces the link
    load_rank_table.cache_clear()
    assert lazy_counts(["hello world"], "cl100k_base", "tiktoken") == [2]
    assert victim.read_text() == "the user's file"
    assert not path.is_symlink() and path.read_bytes() == good


def test_an_unwritable_cache_dir_still_counts(monkeypatch: pytest.MonkeyPatch, fresh: Path) -> None:
    blocked = fresh.parent / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("CTXCOMPACT_CACHE_DIR", str(blocked))
    assert lazy_counts(["hello world"], "cl100k_base", "tiktoken") == [2]
    assert blocked.read_text() == "not a directory"


def test_concurrent_first_runs_leave_one_whole_table(tmp_path: Path) -> None:
    """Four processes build the table at once: each counts right, one whole file is left."""
    cache = tmp_path / "cache"
    script = (
        "from ctxcompact.accounting.counters import lazy_counts;"
        "print(lazy_counts(['hello world, it is me'], 'cl100k_base', 'tiktoken'))"
    )
    env = {**os.environ, "CTXCOMPACT_CACHE_DIR": str(cache)}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert outputs == ["[6]\n"] * 4
    assert sorted(p.name for p in cache.iterdir()) == sorted(p.name for p in cache.glob("cl100k_base-*"))
    assert cl100k.RankTable(_ranks_file(cache).read_bytes()).ranks == 100_256


def test_auto_with_a_bpe_build_that_fails_to_load_counts_with_tiktoken(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``auto`` picks bpe-openai when its module is installed, without loading it; if it then
    fails to load, tiktoken counts (the same counts)."""
    monkeypatch.setattr(counters, "bpe_extension", lambda: tmp_path / "_bindings.so")
    monkeypatch.setattr(counters, "load_bpe", functools.lru_cache(lambda encoding: None))
    monkeypatch.setattr(counters, "LAZY_TOKENS", {})
    counter = counters.exact_counter()
    assert counter.tokenizer == "bpe-openai"
    assert counter.count_batch(["hello world", "x" * 700_000]) == [2, tiktoken_count("x" * 700_000)]
