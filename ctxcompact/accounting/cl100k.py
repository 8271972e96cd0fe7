"""cl100k_base counts without tiktoken: what a small input costs when loading is the cost.

tiktoken needs ~75–85 ms per process before its first count (import ~12 ms, the 100K ranks
~25 ms from our marshal cache, its Rust constructor ~48 ms building its tables), while a 12 KB
transcript is ~3,000 tokens. This module counts exactly as tiktoken's ``encode_ordinary`` does
with nothing to build:

* **The ranks** are a file in the cache directory (:func:`build_table`, written once from
  tiktoken's hash-checked load): an open-addressing hash table keyed by ``zlib.crc32`` of the
  token's bytes, mapped and looked up in place (:class:`RankTable`; ~2.7 MB, ~1 ms to map and
  verify its checksum). A file that is short, foreign or altered fails its checks and
  is rebuilt by the caller.
* **The split** is cl100k's pattern (``'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++|
  \\p{N}{1,3}+| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s``) written for
  Python's ``re`` over ASCII classes (:data:`_SPLIT`). A text with other characters is matched
  through a copy of the same length in which each of them stands for its class — a letter
  (``\\p{L}``), a number (``\\p{N}``), white space (Rust's ``White_Space``, which unlike Python's
  ``\\s`` leaves out ``\\x1c``–``\\x1f``) or anything else — so the pieces are the same spans.
  Classes come from :mod:`unicodedata`; a character it does not know (unassigned in this
  Python's Unicode version, which may be assigned in tiktoken's newer one) makes the text not
  ours: :func:`count` answers None and tiktoken counts it. A test compares every assigned code
  point's class with tiktoken's regex.
* **The merges** are tiktoken's ``byte_pair_merge``: repeatedly join the adjacent pair of parts
  whose bytes have the lowest rank, the leftmost on ties; the count is the parts left. A piece
  that is itself a token is one.
"""

from __future__ import annotations

import mmap
import os
import re
import zlib
from array import array
from collections.abc import Mapping

#: File header: magic, then slots, ranks, blob length and the CRC-32 of everything after it.
MAGIC = b"ctxcompact-bpe\x00\x01"
_HEADER = len(MAGIC) + 5 * 4
_NATIVE = 0x01020304  # written in the header: a file from a machine of the other byte order fails
_EMPTY = 0
_MAX = 1 << 32

_WS = "\t\n\x0b\x0c\r "
#: cl100k's pattern over ASCII: \p{L} = [A-Za-z], \p{N} = [0-9], \s = Rust's White_Space
#: (tab, line feed, vertical tab, form feed, carriage return, space; not \x1c-\x1f), $ = \Z.
_SPLIT = re.compile(
    rf"""'(?:[sdmtSDMT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{{1,3}}+"""
    rf"""| ?[^{_WS}A-Za-z0-9]++[\r\n]*+|[{_WS}]++\Z|[{_WS}]*[\r\n]|[{_WS}]+(?![^{_WS}])|[{_WS}]"""
)
#: Non-ASCII white space (Unicode's White_Space property, which Rust's \s is).
_WHITE_SPACE = frozenset(
    "\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
#: What stands for a non-ASCII character in the copy the pattern reads: its class's ASCII
#: member that the pattern treats the same (a tab is white space that is not " ", \r or \n).
#: U+017F (long s) folds to "s" case-insensitively, so "'ſ" is a contraction as "'s" is.
_STAND_IN = {"L": "a", "N": "0", "s": "\t", "P": "!"}
_FOLDS = {"\u017f": "s"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_BY_CHAR: dict[str, str] = {}  # this process's classes of the characters seen so far


class RankTable:
    """The cl100k ranks as :func:`build_table` wrote them: ``rank(token bytes)`` or None."""

    __slots__ = ("_blob", "_data", "_mask", "_slots")

    def __init__(self, data: bytes | mmap.mmap) -> None:
        if len(data) < _HEADER or data[: len(MAGIC)] != MAGIC:
            raise ValueError("not a rank table")
        native, slots, _ranks, blob_len, crc = array("I", data[len(MAGIC) : _HEADER])
        if native != _NATIVE or slots & (slots - 1) or len(data) != _HEADER + slots * 8 + blob_len:
            raise ValueError("a rank table of another shape")
        if zlib.crc32(memoryview(data)[_HEADER:]) != crc:
            raise ValueError("a rank table that was altered")
        self._data = data
        self._slots = memoryview(data)[_HEADER : _HEADER + slots * 8].cast("I")
        self._mask = slots - 1
        self._blob = _HEADER + slots * 8

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> RankTable:
        """The table in ``path``, mapped rather than read: only the pages a lookup touches are
        loaded (a read copied 2.7 MB: ~2–5 ms; the checksum still reads it all, ~0.8 ms). The
        file is never rewritten in place (it is replaced by a rename), so the mapping stays
        whole. ``OSError`` or ``ValueError`` when it cannot be read or is not a table."""
        from ctxcompact.caches import check_own_cache_file

        with open(path, "rb") as handle:
            check_own_cache_file(handle.fileno())
            return cls(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))

    @property
    def ranks(self) -> int:
        return int(array("I", self._data[len(MAGIC) : _HEADER])[2])

    def rank(self, key: bytes) -> int | None:
        slots, data, mask, size = self._slots, self._data, self._mask, len(key)
        i = zlib.crc32(key) & mask
        while True:
            ref = slots[2 * i]
            if ref == _EMPTY:
                return None
            if ref & 0xFF == size:
                at = self._blob + (ref >> 8)
                if data[at : at + size] == key:
                    return int(slots[2 * i + 1])
            i = (i + 1) & mask


def build_table(ranks: Mapping[bytes, int]) -> bytes:
    """The file :class:`RankTable` reads: slots of (offset << 8 | length, rank), at most half full."""
    slots = 1 << max(4, (len(ranks) * 2 - 1).bit_length())
    mask = slots - 1
    table = array("I", bytes(slots * 8))
    blob = bytearray()
    for key, rank in ranks.items():
        if not 0 < len(key) < 256 or len(blob) >= 1 << 24:
            raise ValueError("a token this table cannot hold")
        i = zlib.crc32(key) & mask
        while table[2 * i] != _EMPTY:
            i = (i + 1) & mask
        table[2 * i] = len(blob) << 8 | len(key)
        table[2 * i + 1] = rank
        blob += key
    body = table.tobytes() + bytes(blob)
    header = array("I", [_NATIVE, slots, len(ranks), len(blob), zlib.crc32(body)]).tobytes()
    return MAGIC + header + body


def count(table: RankTable, text: str, memo: dict[str, int]) -> int | None:
    """``len(encoding.encode_ordinary(text))`` for cl100k_base, or None when ``text`` holds a
    character this Python's Unicode data does not know (tiktoken's may: let it count).

    ``memo`` holds each piece's count for the caller's lifetime (pieces repeat: words, indents).
    """
    pieces = split(text)
    if pieces is None:
        return None
    total = 0
    for piece in pieces:
        known = memo.get(piece)
        if known is None:
            known = memo[piece] = _piece_count(table, piece.encode("utf-8"))
        total += known
    return total


def split(text: str) -> list[str] | None:
    """The pieces cl100k's pattern cuts ``text`` into (after tiktoken's reading of surrogates:
    a pair joined, a lone one as U+FFFD), or None as :func:`count` says."""
    mapped = text
    if not text.isascii():
        if _SURROGATE.search(text):
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        found = _classes(text)
        if found is None:
            return None
        mapped = found
    return [text[m.start() : m.end()] for m in _SPLIT.finditer(mapped)]


def _classes(text: str) -> str | None:
    """``text`` with each non-ASCII character replaced by its class's stand-in (same length)."""
    stand_in: dict[int, str] = {}
    for ch in set(text):
        if ch < "\x80":
            continue
        found = _BY_CHAR.get(ch)
        if found is None:
            cls = char_class(ch)
            if cls is None:
                return None
            found = _BY_CHAR[ch] = _FOLDS.get(ch) or _STAND_IN[cls]
        stand_in[ord(ch)] = found
    return text.translate(stand_in)


def char_class(ch: str) -> str | None:
    """The class cl100k's pattern sees in ``ch``: ``L`` (``\\p{L}``), ``N`` (``\\p{N}``), ``s``
    (Rust's ``\\s``: Unicode White_Space) or ``P`` (anything else); None for a character this
    Python's Unicode data does not have (tiktoken's newer data may class it otherwise)."""
    if ch < "\x80":
        return "L" if ch.isalpha() else "N" if ch.isdigit() else "s" if ch in _WS else "P"
    if ch in _WHITE_SPACE:
        return "s"
    import unicodedata

    category = unicodedata.category(ch)
    if category == "Cn":
        return None
    return category[0] if category[0] in "LN" else "P"


def _piece_count(table: RankTable, piece: bytes) -> int:
    if len(piece) == 1 or table.rank(piece) is not None:
        return 1
    if len(piece) < 100:
        return _merge_count(table, piece)
    return _merge_count_large(table, piece)


def _merge_count(table: RankTable, piece: bytes) -> int:
    """tiktoken's ``_byte_pair_merge``: ``bounds[i]`` starts part i, ``ranks[i]`` is the rank of
    parts i and i + 1 joined (the last two entries are sentinels)."""
    rank = table.rank
    bounds = list(range(len(piece) + 1))
    ranks = [_rank_or_max(rank(piece[i : i + 2])) for i in range(len(piece) - 1)] + [_MAX, _MAX]
    while True:
        low = min(ranks)
        if low == _MAX:
            return len(bounds) - 1
        i = ranks.index(low)
        if i > 0:
            ranks[i - 1] = _pair(rank, piece, bounds, i - 1)
        ranks[i] = _pair(rank, piece, bounds, i)
        del bounds[i + 1], ranks[i + 1]


def _pair(rank: object, piece: bytes, bounds: list[int], i: int) -> int:
    # Parts i and i + 1 joined once part i + 1 has merged into part i (bounds[i + 1] goes next).
    if i + 3 < len(bounds):
        return _rank_or_max(rank(piece[bounds[i] : bounds[i + 3]]))  # type: ignore[operator]
    return _MAX


def _rank_or_max(found: int | None) -> int:
    return _MAX if found is None else found


def _merge_count_large(table: RankTable, piece: bytes) -> int:
    """The same merges with a heap (tiktoken's ``_byte_pair_merge_large``, for pieces of 100
    bytes or more): pop the lowest (rank, start); skip entries a merge made stale."""
    import heapq  # only a long piece needs it

    rank = table.rank
    size = len(piece)
    end = list(range(1, size + 1))  # end[i]: where the part starting at i ends
    prev = list(range(-1, size - 1))
    pair_rank = [_MAX] * size  # rank of the part at i joined with the next one
    heap: list[tuple[int, int]] = []
    for i in range(size - 1):
        found = rank(piece[i : i + 2])
        if found is not None:
            pair_rank[i] = found
            heap.append((found, i))
    heapq.heapify(heap)
    parts = size
    while heap:
        found, start = heapq.heappop(heap)
        if pair_rank[start] != found:
            continue  # stale: a part here has changed since
        right = end[start]
        right_end = end[right]
        end[start] = right_end
        pair_rank[right] = _MAX
        parts -= 1
        if right_end < size:
            prev[right_end] = start
        for left in (start, prev[start]) if start > 0 else (start,):
            stop = end[end[left]] if end[left] < size else size + 1
            joined = rank(piece[left:stop]) if stop <= size else None
            pair_rank[left] = _MAX if joined is None else joined
            if joined is not None:
                heapq.heappush(heap, (joined, left))
    return parts
