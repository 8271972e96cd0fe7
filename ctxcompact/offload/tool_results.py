"""Tool-result offload: move bulky tool output to files, reversibly.

``offload_tool_results`` walks the messages oldest first. A ``tool_result`` whose content has
at least ``min_chars`` characters — the string's length, or the length of the compact JSON of a
block list — is written to ``{out_dir}/tool-result-{id}.md`` and its content
becomes the string ``[Content offloaded to: ./tool-result-{id}.md]``. A repeated id gets
``-1``, ``-2``… (the seed's rule: ``docs/decisions/0001-reference-designs.md``). OpenAI ``tool`` messages are tool_result blocks in the IR, so
they are handled the same way and written back as ``tool`` messages.

Beyond the seed, and why (files, names, the manifest and its lock: :mod:`ctxcompact.offload.store`):

* **Safe names.** Ids are sanitized (:func:`~ctxcompact.offload.store.safe_id`), every name is one
  plain component of ``out_dir``: a hostile id such as ``../../x`` can never write elsewhere.
* **Never overwrite, idempotent.** A file is created with ``O_CREAT | O_EXCL`` (never
  replacing anything, never through a symlink); the batch is made durable at once (one sync,
  then the manifest that names the files) before the transcript that refers to them is
  emitted, and a failure removes the files the run created. An existing file with the *same* bytes is reused (so running
  the same offload twice writes nothing new); one with different bytes is left alone and the
  next suffix is tried. Content that already is a reference is skipped, so ``offload`` on its
  own output offloads nothing.
* **Reversible.** ``offload-manifest.json`` in ``out_dir`` records, per file name, the
  tool_use id, the sha256 of the file and how the content is stored (``text``: the file *is*
  the string, UTF-8; ``json``: the JSON of the content, for block lists and strings UTF-8
  cannot hold). :func:`undo_offload` puts every referenced content back, identical to what
  was offloaded, and refuses (naming the files) when a file is missing, changed or unknown.
* **All or nothing, one run at a time.** A write failure removes the files this call created
  and raises :class:`~ctxcompact.errors.WorkFailedError`; the input messages are never mutated.
  Runs sharing ``out_dir`` take turns under a lock, so no run's manifest entries are lost.
* **Never longer.** A result whose reference (with its preview) would be at least as long as
  its content is left as it is: only possible with very long ids, a large ``preview`` or a
  small ``min_chars``. The seed's own rule can cost tokens at its low default (a 100-character
  result becomes a ~60-character reference whose random id tokenizes badly): use a larger
  ``min_chars`` (1,000+) to save tokens rather than follow the seed.
* **Options.** ``keep_recent`` leaves the newest N tool results (counted over all of them,
  large or small) in place, since the agent may still need them; ``protect_loop`` leaves the
  current tool loop (:func:`ctxcompact.ir.current_loop_start`) alone. Both are off by default,
  so the seed's behaviour (every result is a candidate, the live loop included) is the default.
  ``preview`` keeps the first N characters of the text after the reference line.

Character counts are Python string lengths (code points); the seed's JavaScript counts UTF-16
units, which differs only for characters outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from ctxcompact.accounting.tokens import CachedCounter, TokenCounter, block_tokens, cached
from ctxcompact.errors import OptionError, WorkFailedError
from ctxcompact.ir import Block, Message, current_loop_start, replace_blocks, tool_result_text
from ctxcompact.markers import OFFLOAD_REFERENCE_PREFIX, OFFLOAD_REFERENCE_RE, offload_reference
from ctxcompact.offload.store import (
    MANIFEST_NAME,
    DiskWriter,
    ManifestEntry,
    OffloadWriter,
    StoredAs,
    call_digest,
    decode_content,
    encode_content,
    file_name_for,
    manifest_bytes,
    os_reason,
    path_inside,
    read_manifest,
    remove_entries,
    resolved_dir,
    sha256_hex,
)

REFERENCE_PREFIX = OFFLOAD_REFERENCE_PREFIX
DEFAULT_MIN_CHARS = 100
#: Where offload writes its files and manifest unless told otherwise (relative to the cwd).
DEFAULT_OUT_DIR = Path(".ctxcompact/offload")
#: The directory a reference names by default: the file's own folder, ``./``.
SEED_REFERENCE_DIR = "./"
#: What a reference looks like: the seed's line (``./NAME``, or for a session a path the
#: agent can open from its cwd, ``DIR/NAME``), optionally followed by a preview.
REFERENCE_RE = OFFLOAD_REFERENCE_RE


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffloadResult:
    """``messages``: the new list (unchanged messages are the input's objects).

    ``offloaded_count``, ``freed_chars`` (sum of the offloaded contents' sizes) and ``files``
    (absolute paths, one per offloaded result, in message order) are the seed's stats;
    ``tokens_freed`` is measured with the counter (tokens before minus after, of the changed
    blocks), None when not measured (``measure_tokens=False``: nobody reads it, and it costs a
    tokenizer pass over every offloaded content); ``entries`` are the manifest records.
    """

    messages: tuple[Message, ...]
    offloaded_count: int = 0
    freed_chars: int = 0
    files: tuple[str, ...] = ()
    tokens_freed: int | None = 0
    entries: tuple[ManifestEntry, ...] = ()
    out_dir: str = ""

    @property
    def changed(self) -> bool:
        return self.offloaded_count > 0


@dataclass(frozen=True, slots=True)
class UndoResult:
    """``messages`` with every offloaded content put back; ``files`` the absolute paths read."""

    messages: tuple[Message, ...]
    restored_count: int = 0
    restored_chars: int = 0
    files: tuple[str, ...] = ()
    out_dir: str = ""
    #: Tool outputs that look like a reference but that the manifest does not vouch for
    #: (another directory's, or genuine text): left as they are, one line each on why.
    left: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return self.restored_count > 0


# --- pure helpers ----------------------------------------------------------------------------


def content_chars(content: Any) -> int:
    """What ``min_chars`` measures: a string's length; for a block list, the length of its compact JSON
    (what ``JSON.stringify`` gives); a missing content counts 0."""
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    return len(json.dumps(content, ensure_ascii=False, separators=(",", ":")))


def reference_for(file_name: str, text: str, *, preview: int, directory: str = SEED_REFERENCE_DIR) -> str:
    """The string that replaces offloaded content: the seed's exact line, plus, with
    ``preview``, the first characters of the text so the model still sees what it was.
    ``directory`` (ending in ``/``) is how the file's folder is named."""
    line = f"{REFERENCE_PREFIX}{directory}{file_name}]"
    if preview <= 0 or not text:
        return line
    head = text[:preview]
    more = "…" if len(text) > preview else ""
    return f"{line}\nPreview (first {min(preview, len(text)):,} characters):\n{head}{more}"


def is_reference(content: Any) -> bool:
    """True for content this module produced (so it is never offloaded twice): its whole
    shape (:func:`ctxcompact.markers.offload_reference`), not a mere prefix."""
    return offload_reference(content) is not None


# --- offload -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Plan:
    """One tool_result chosen for offload, before any file is written."""

    message_index: int
    block_index: int
    block: Block
    data: bytes
    stored_as: StoredAs
    chars: int
    text: str
    call: str | None = None
    entry: ManifestEntry | None = None
    new_block: dict[str, Any] = field(default_factory=dict)


def offload_tool_results(
    messages: Sequence[Message],
    *,
    out_dir: str | os.PathLike[str],
    min_chars: int = DEFAULT_MIN_CHARS,
    keep_recent: int = 0,
    preview: int = 0,
    protect_loop: bool = False,
    writer: OffloadWriter | None = None,
    counter: TokenCounter | None = None,
    reference_dir: str = SEED_REFERENCE_DIR,
    measure_tokens: bool = True,
    files: bool = True,
) -> OffloadResult:
    """Offload large tool_result contents of ``messages`` to files in ``out_dir``.

    Returns an :class:`OffloadResult`; never mutates ``messages`` (changed messages are new
    objects built with ``with_content``, the others are the input's own objects). Creates
    ``out_dir`` (with parents) if missing. Raises :class:`UsageError` for negative options and
    :class:`WorkFailedError` when a file cannot be written, after removing the files it
    created. ``counter`` measures ``tokens_freed`` (default: tiktoken); with
    ``measure_tokens=False`` nothing is counted and ``tokens_freed`` is None. ``reference_dir``
    names ``out_dir`` in the references (seed: ``./``; a session: a path from its cwd).
    ``files=False``: the messages alone, as a run into an empty ``out_dir`` makes them — no
    file, no manifest, nothing encoded or digested (``eval`` scores what offload leaves in
    the context); ``files``, ``entries`` and ``tokens_freed`` are then empty.
    """
    if min_chars < 0 or keep_recent < 0 or preview < 0:
        raise OptionError(
            "{min_chars}, {keep_recent} and {preview} must be 0 or more.",
            "min_chars",
            "keep_recent",
            "preview",
        )
    plans = _plan_offload(
        messages, min_chars=min_chars, keep_recent=keep_recent, protect_loop=protect_loop, files=files
    )
    if not files:
        done = _name_all(plans, preview=preview, directory=reference_dir)
        return OffloadResult(
            messages=replace_blocks(messages, {(p.message_index, p.block_index): p.new_block for p in done}),
            offloaded_count=len(done),
            freed_chars=sum(p.chars for p in done),
            tokens_freed=None,
            out_dir=str(out_dir),
        )
    writer = writer or DiskWriter()
    root = resolved_dir(writer, out_dir)
    if not plans:
        return OffloadResult(tuple(messages), out_dir=str(root))

    # One run at a time in a directory: the manifest is read, the files written and the
    # manifest merged and written back under the directory's lock (no lost entries).
    with writer.lock(root):
        done = _store_all(writer, root, plans, preview=preview, directory=reference_dir)
    entries = tuple(p.entry for p in done if p.entry is not None)
    return OffloadResult(
        messages=replace_blocks(messages, {(p.message_index, p.block_index): p.new_block for p in done}),
        offloaded_count=len(done),
        freed_chars=sum(p.chars for p in done),
        files=tuple(e.path for e in entries),
        tokens_freed=_tokens_freed(done, counter) if measure_tokens else None,
        entries=entries,
        out_dir=str(root),
    )


def _store_all(
    writer: OffloadWriter, root: Path, plans: Sequence[_Plan], *, preview: int, directory: str
) -> list[_Plan]:
    """Write the plans' files and add their entries to the manifest; all or nothing."""
    manifest = read_manifest(writer, root)
    created: list[Path] = []
    claimed: set[str] = set()
    done: list[_Plan] = []
    try:
        for plan in plans:
            entry = _store(
                writer, root, plan, manifest, claimed, created, preview=preview, directory=directory
            )
            if entry is None:
                continue
            claimed.add(entry.file_name)
            plan.entry = entry
            _refer(plan, entry.file_name, preview=preview, directory=directory)
            done.append(plan)
        # Entries of earlier runs stay; ours are added. A run that only reused files writes
        # nothing at all, not even the manifest. Like a database commit: every file is
        # written, then made durable at once (the files, then the directory), then the
        # manifest that names them; the transcript is emitted only after that.
        updates = {p.entry.file_name: p.entry.to_json() for p in done if p.entry is not None}
        try:
            writer.sync(root)
        except OSError as exc:
            raise WorkFailedError(f"cannot sync the offload files in {root}: {os_reason(exc)}.") from None
        if any(manifest.get(name) != record for name, record in updates.items()):
            manifest.update(updates)
            try:
                writer.replace(root / MANIFEST_NAME, manifest_bytes(manifest))
                writer.sync(root)
            except OSError as exc:
                raise WorkFailedError(f"cannot write {root / MANIFEST_NAME}: {os_reason(exc)}.") from None
    except BaseException:
        for path in created:
            try:
                writer.remove(path)
            except OSError:
                pass
        raise
    return done


def _name_all(plans: Sequence[_Plan], *, preview: int, directory: str) -> list[_Plan]:
    """The plans :func:`_store_all` stores in an empty directory, each given its reference:
    the first name of its id no earlier plan took (:func:`_store`: a name is only taken by
    this run there), none when that reference would not be shorter than the content."""
    claimed: set[str] = set()
    done: list[_Plan] = []
    for plan in plans:
        tool_use_id = plan.block.get("tool_use_id")
        name = next(
            n
            for n in (file_name_for(None if tool_use_id is None else str(tool_use_id), a) for a in count())
            if n not in claimed
        )
        if len(reference_for(name, plan.text, preview=preview, directory=directory)) >= plan.chars:
            continue
        claimed.add(name)
        _refer(plan, name, preview=preview, directory=directory)
        done.append(plan)
    return done


def _refer(plan: _Plan, file_name: str, *, preview: int, directory: str) -> None:
    """The plan's block, its content the reference to ``file_name``."""
    plan.new_block = {
        **plan.block,
        "content": reference_for(file_name, plan.text, preview=preview, directory=directory),
    }


def _plan_offload(
    messages: Sequence[Message], *, min_chars: int, keep_recent: int, protect_loop: bool, files: bool = True
) -> list[_Plan]:
    """The tool results to offload, in order; ``files``: with the bytes to write and the call
    they answer (else neither: :func:`_name_all` needs them not)."""
    positions = [
        (i, j)
        for i, message in enumerate(messages)
        for j, block in enumerate(message.content)
        if block.get("type") == "tool_result"
    ]
    protected = set(positions[len(positions) - keep_recent :]) if keep_recent else set()
    loop_start = current_loop_start(messages) if protect_loop else len(messages)
    plans: list[_Plan] = []
    for i, j in positions:
        if (i, j) in protected or i >= loop_start:
            continue
        block = messages[i].content[j]
        content = block.get("content")
        chars = content_chars(content)
        if chars < min_chars or chars == 0 or is_reference(content):
            continue
        text = content if isinstance(content, str) else tool_result_text(block)
        if not files:
            plans.append(_Plan(i, j, block, b"", "text", chars, text))
            continue
        data, stored_as = encode_content(content)
        call = call_digest(answered_call(messages, i, block.get("tool_use_id")))
        plans.append(_Plan(i, j, block, data, stored_as, chars, text, call))
    return plans


def _store(
    writer: OffloadWriter,
    root: Path,
    plan: _Plan,
    manifest: Mapping[str, Mapping[str, Any]],
    claimed: set[str],
    created: list[Path],
    *,
    preview: int,
    directory: str,
) -> ManifestEntry | None:
    """Write (or reuse) the file for one plan, trying ``-1``, ``-2``… past taken names.

    None when the reference would not be shorter than the content (names only grow with
    the suffix, so a longer name cannot help either).
    """
    tool_use_id = plan.block.get("tool_use_id")
    tool_use_id = None if tool_use_id is None else str(tool_use_id)
    digest = sha256_hex(plan.data)
    attempt = 0
    while True:
        name = file_name_for(tool_use_id, attempt)
        attempt += 1
        if name in claimed:
            continue
        if len(reference_for(name, plan.text, preview=preview, directory=directory)) >= plan.chars:
            return None
        path = path_inside(root, name)
        try:
            # Create first (no-clobber): the common case costs one open, not a check and then
            # a create; a name already taken is read and compared.
            if writer.create(path, plan.data):
                created.append(path)
                calls = (plan.call,) if plan.call else ()
                return ManifestEntry(
                    name, str(path), tool_use_id, digest, plan.stored_as, plan.chars, calls=calls
                )
            existing = writer.read(path)
        except OSError as exc:
            raise WorkFailedError(f"cannot write offload file {path}: {os_reason(exc)}.") from None
        known = manifest.get(name)
        same_record = known is None or (
            known.get("stored_as") == plan.stored_as and known.get("tool_use_id") == tool_use_id
        )
        if existing == plan.data and same_record:
            return ManifestEntry(
                name,
                str(path),
                tool_use_id,
                digest,
                plan.stored_as,
                plan.chars,
                reused=True,
                calls=_with_call(known, plan.call),
            )


def _with_call(known: Mapping[str, Any] | None, call: str | None) -> tuple[str, ...]:
    """A reused file's calls: those recorded, and this one (identical content, so either is
    right to put back)."""
    recorded = known.get("calls") if known is not None else None
    calls = [c for c in recorded if isinstance(c, str)] if isinstance(recorded, list) else []
    if call and call not in calls:
        calls.append(call)
    return tuple(calls)


def answered_call(messages: Sequence[Message], index: int, tool_use_id: Any) -> Block | None:
    """The ``tool_use`` block of the assistant message before ``messages[index]`` that the
    result with ``tool_use_id`` answers, if there is one."""
    if index == 0 or messages[index - 1].role != "assistant":
        return None
    return next(
        (
            b
            for b in messages[index - 1].content
            if b.get("type") == "tool_use" and b.get("id") == tool_use_id
        ),
        None,
    )


def _tokens_freed(plans: Sequence[_Plan], counter: TokenCounter | None) -> int:
    if not plans:
        return 0
    # A per-run cache (identical contents encoded once) that reads, never grows, the caller's.
    run = cached(counter)
    if isinstance(counter, CachedCounter):
        run.counts.update(counter.counts)
    counts = block_tokens([p.block for p in plans] + [p.new_block for p in plans], run)
    return sum(counts[: len(plans)]) - sum(counts[len(plans) :])


def discard_offload(results: Sequence[OffloadResult], *, writer: OffloadWriter | None = None) -> None:
    """Take back the file side effects of successful offloads when a later step fails (the
    next conversation of a collection, writing the transcript): the files they *created* are
    removed with their manifest entries; reused files, written by earlier runs, stay.
    Best effort: errors are ignored, since the caller is already reporting a failure."""
    writer = writer or DiskWriter()
    by_dir: dict[str, list[ManifestEntry]] = {}
    for result in results:
        by_dir.setdefault(result.out_dir, []).extend(e for e in result.entries if not e.reused)
    for out_dir, entries in by_dir.items():
        if entries:
            remove_entries(writer, Path(out_dir), entries)


# --- undo ------------------------------------------------------------------------------------


def undo_offload(
    messages: Sequence[Message],
    *,
    out_dir: str | os.PathLike[str],
    writer: OffloadWriter | None = None,
) -> UndoResult:
    """Put offloaded tool_result contents back from the files in ``out_dir`` (``--undo``).

    A reference comes back only where the manifest vouches for it — it names the file for the
    same tool_use id and (for manifests that record it) the same tool call — so a tool output
    that merely looks like a reference is left as it is (listed in ``left``). Each file's
    sha256 must match what was recorded at offload time: the content comes back identical (a
    block list as the same list). If a vouched-for file is missing or changed, nothing is
    restored and :class:`WorkFailedError` names each problem. Never writes or deletes files;
    never mutates ``messages``.
    """
    writer = writer or DiskWriter()
    root = Path(out_dir).resolve()
    found: list[tuple[int, int, str]] = []
    for i, message in enumerate(messages):
        for j, block in enumerate(message.content):
            if block.get("type") != "tool_result":
                continue
            content = block.get("content")
            match = offload_reference(content)
            if match:
                found.append((i, j, match.group("name")))
    if not found:
        return UndoResult(tuple(messages), out_dir=str(root))

    manifest = read_manifest(writer, root)
    problems: list[str] = []
    left: list[str] = []
    restored: dict[tuple[int, int], Block | None] = {}
    files: list[str] = []
    chars = 0
    for i, j, name in found:
        block = messages[i].content[j]
        unvouched = _not_vouched(messages, i, block, manifest.get(name), name, root)
        if unvouched is not None:
            left.append(f"message {_where(messages[i], i)}: {unvouched}")
            continue
        content, problem = _read_offloaded(writer, root, name, block, manifest)
        if problem:
            problems.append(f"message {_where(messages[i], i)}: {problem}")
            continue
        new_block = dict(block)
        new_block["content"] = content
        restored[(i, j)] = new_block
        files.append(str(root / name))
        chars += content_chars(content)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise WorkFailedError(f"cannot undo the offload, nothing was restored: {shown}.")
    return UndoResult(
        replace_blocks(messages, restored), len(restored), chars, tuple(files), str(root), tuple(left)
    )


def _not_vouched(
    messages: Sequence[Message],
    index: int,
    block: Block,
    entry: Mapping[str, Any] | None,
    name: str,
    root: Path,
) -> str | None:
    """Why a reference-shaped output is left as it is — the manifest names no such file, or
    one offloaded for another id or another call — or None when the manifest vouches for it."""
    if entry is None:
        return f"{name} is not in {root / MANIFEST_NAME}: left as it is (offloaded to another directory?)"
    tool_use_id = block.get("tool_use_id")
    if entry.get("tool_use_id") != (None if tool_use_id is None else str(tool_use_id)):
        return f"{name} was offloaded for another tool_use_id: left as it is"
    recorded = entry.get("calls")  # absent in manifests written before calls were: the id only
    call = call_digest(answered_call(messages, index, tool_use_id))
    if isinstance(recorded, list) and recorded and call not in recorded:
        return f"{name} was offloaded for another tool call: left as it is"
    return None


def _read_offloaded(
    writer: OffloadWriter, root: Path, name: str, block: Block, manifest: Mapping[str, Mapping[str, Any]]
) -> tuple[Any, str | None]:
    entry = manifest[name]
    try:
        path = path_inside(root, name)
        data = writer.read(path)
    except OSError as exc:
        return None, f"cannot read {root / name}: {os_reason(exc)}"
    if data is None:
        return None, f"{root / name} is missing"
    if sha256_hex(data) != entry.get("sha256"):
        return None, f"{root / name} has changed since it was offloaded (sha256 mismatch)"
    try:
        return decode_content(data, str(entry.get("stored_as"))), None
    except (UnicodeDecodeError, ValueError):
        return None, f"{root / name} cannot be decoded as {entry.get('stored_as')}"


def _where(message: Message, position: int) -> str:
    index = message.index
    return f"{position}" if index is None or index == position else f"{position} (record {index})"
