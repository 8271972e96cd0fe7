"""Which files a batch works on: paths, directories, path lists, globs and shards.

Every input is a :class:`BatchInput`: its path and its *name*, the path relative to the root
it was found under (a file named directly is its own root: its name is its file name). The
name is where ``--out-dir`` writes its result (the input tree mirrored) and what ``--shard``
hashes, so the split does not depend on where a CI machine checked the files out.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ctxcompact.errors import InputError, OptionError

TRANSCRIPT_SUFFIXES = (".json", ".jsonl")
OFFLOAD_MANIFEST = "offload-manifest.json"  # offload's own bookkeeping, not a transcript


@dataclass(frozen=True, slots=True)
class BatchInput:
    """One input: ``path`` (None: stdin) and ``name``, its path relative to its root (posix)."""

    path: str | None
    name: str


def find_inputs(
    paths: Sequence[str],
    *,
    globs: Sequence[str] = (),
    exclude: Sequence[Path | None] = (),
) -> list[BatchInput]:
    """``paths`` as given, ``-`` meaning stdin; a directory stands for the files below it
    (recursively, sorted): those matching one of ``globs`` (matched against the path relative
    to the directory, or the file name) or, without globs, the ``.json``/``.jsonl`` files.
    Hidden files and folders (archives, journals, editor files) and anything under
    ``exclude`` (a batch's own outputs) are left out. A directory with no match is an error."""
    out: list[BatchInput] = []
    skip = [e.resolve() for e in exclude if e is not None]
    for given in paths:
        if given == "-":
            out.append(BatchInput(None, "stdin.json"))
            continue
        path = Path(given)
        if not path.is_dir():
            out.append(BatchInput(given, path.name))
            continue
        found = sorted(p for p in path.rglob("*") if _wanted(p, path, globs, skip))
        if not found:
            what = " or ".join(globs) if globs else ".json or .jsonl"
            left = " once --out-dir, --report and hidden folders are left out" if exclude else ""
            raise InputError(f"{path}: directory has no {what} files{left}.")
        out.extend(BatchInput(str(p), p.relative_to(path).as_posix()) for p in found)
    return out


def _wanted(p: Path, root: Path, globs: Sequence[str], skip: Sequence[Path]) -> bool:
    rel = p.relative_to(root)
    if any(part.startswith(".") for part in rel.parts) or p.name == OFFLOAD_MANIFEST:
        return False
    if globs:
        if not any(fnmatch.fnmatch(rel.as_posix(), g) or fnmatch.fnmatch(p.name, g) for g in globs):
            return False
    elif p.suffix not in TRANSCRIPT_SUFFIXES:
        return False
    if not p.is_file():  # a directory, a dangling symlink, a symlink loop: not a transcript
        return False
    try:
        resolved = p.resolve()
    except (OSError, RuntimeError):  # a loop made between the two calls (RuntimeError before 3.13)
        return False
    return not any(resolved == s or resolved.is_relative_to(s) for s in skip)


def read_path_list(text: str, *, source: str) -> list[str]:
    """The paths of a ``--from`` list: one path a line (blank lines and ``#`` comments
    ignored), or JSON — a list of paths, of objects with a ``path`` key, or an object holding
    such a list under ``sessions`` or ``inputs`` (``ctxcompact sessions --json``, a report)."""
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return [
            line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
        ]
    from ctxcompact.transcripts.optionfile import parse_json

    data = parse_json(text, option="from_list", name=source)
    if isinstance(data, dict):
        data = next((data[k] for k in ("sessions", "inputs") if isinstance(data.get(k), list)), None)
    if not isinstance(data, list):
        raise OptionError(
            "{from_list} {source}: JSON path list must be a list, or hold one under 'sessions'.",
            "from_list",
            source=source,
        )
    paths: list[str] = []
    for index, entry in enumerate(data):
        value = entry.get("path", entry.get("input")) if isinstance(entry, dict) else entry
        if not isinstance(value, str) or not value:
            raise OptionError(
                "{from_list} {source}: entry {index} names no path (a string, or an object with 'path').",
                "from_list",
                source=source,
                index=index,
            )
        paths.append(value)
    return paths


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (1 ≤ I ≤ N) as (I, N)."""
    index, slash, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not slash or n < 1 or not 1 <= i <= n:
        raise OptionError("{shard} takes I/N with 1 <= I <= N (e.g. 1/2), got {text!r}.", "shard", text=text)
    return i, n


def shard_of(name: str, count: int) -> int:
    """The shard (1-based) of an input named ``name``: sha256 of the name, modulo ``count``.
    Stable across machines, Python versions and runs (unlike ``hash()``)."""
    import hashlib  # here: loading OpenSSL (~7 ms) is paid by the runs that make a digest

    digest = hashlib.sha256(PurePosixPath(name).as_posix().encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def select_shard(inputs: Iterable[BatchInput], index: int, count: int) -> list[BatchInput]:
    """The inputs of shard ``index`` of ``count``; the shards of one list partition it."""
    return [item for item in inputs if shard_of(item.name, count) == index]
