"""Tool-result offload: seed 001 exactly (strings, boundaries, duplicates, stats), then safe
names, no-clobber writes, idempotence, options, undo, and failures that leave no trace."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_files, requires_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import CachedCounter, EstimateCounter, count_tokens
from ctxcompact.errors import UsageError, WorkFailedError
from ctxcompact.ir import Message
from ctxcompact.offload.store import MANIFEST_NAME, DiskWriter, file_name_for, safe_id
from ctxcompact.offload.tool_results import (
    content_chars,
    discard_offload,
    offload_tool_results,
    reference_for,
    undo_offload,
)
from ctxcompact.output.json import offload_stats_json
from ctxcompact.transcripts.io import dump_transcript, load_messages, load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

COUNTER = EstimateCounter()


def convo(*results: tuple[str, Any]) -> list[dict[str, Any]]:
    """A user request, one assistant turn calling every tool, and one message of results."""
    return [
        {"role": "user", "content": "Look at the project."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": "x"}} for i, _ in results
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": i, "content": c} for i, c in results],
        },
    ]


def ir(records: list[dict[str, Any]], dialect: str | None = None) -> tuple[Message, ...]:
    return load_messages(records, dialect=dialect).messages


def offload(messages: Any, out_dir: Path, **options: Any) -> Any:
    return offload_tool_results(messages, out_dir=out_dir, counter=COUNTER, **options)


def results_of(messages: Any) -> list[Any]:
    return [b.get("content") for m in messages for b in m.content if b.get("type") == "tool_result"]


# --- seed 001 ----------------------------------------------------------------------------------


def test_uc001_large_result_goes_to_a_file_and_a_reference_replaces_it(tmp_path: Path) -> None:
    content = "line of output\n" * 20
    result = offload(ir(convo(("toolu_01abc", content))), tmp_path)
    assert results_of(result.messages) == ["[Content offloaded to: ./tool-result-toolu_01abc.md]"]
    path = tmp_path / "tool-result-toolu_01abc.md"
    assert path.read_text(encoding="utf-8") == content
    assert result.offloaded_count == 1
    assert result.freed_chars == len(content)
    assert result.files == (str(path.resolve()),)
    assert Path(result.files[0]).is_absolute()
    assert result.tokens_freed is not None and result.tokens_freed > 0


class RefusingCounter:
    name = "refusing"

    def count_batch(self, texts: Any) -> list[int]:
        raise AssertionError(f"asked to encode {len(texts)} strings")


def test_offload_asked_not_to_measure_encodes_nothing_and_writes_the_same(tmp_path: Path) -> None:
    messages = ir(convo(("t1", "x" * 500), ("t2", "y" * 50)))
    unmeasured = offload_tool_results(
        messages, out_dir=tmp_path / "a", counter=RefusingCounter(), measure_tokens=False
    )
    measured = offload(messages, tmp_path / "b")
    assert unmeasured.tokens_freed is None and measured.tokens_freed
    assert results_of(unmeasured.messages) == results_of(measured.messages)
    assert (tmp_path / "a" / MANIFEST_NAME).read_bytes() == (tmp_path / "b" / MANIFEST_NAME).read_bytes()


_IDS = st.sampled_from(["t1", "t1", "t2", "a/b", "x" * 200, "", "..", "tool-result-t1"])
_CONTENTS = st.one_of(
    st.text(st.sampled_from("ab\n"), max_size=300),
    st.lists(
        st.fixed_dictionaries({"type": st.just("text"), "text": st.text("ab", max_size=200)}), max_size=2
    ),
)


@given(
    st.lists(st.tuples(_IDS, _CONTENTS), max_size=6),
    st.sampled_from([0, 20, 100]),
    st.sampled_from([0, 5]),
    st.sampled_from(["./", "session/offload/"]),
)
@settings(max_examples=150, deadline=None)
def test_offload_without_files_gives_what_a_run_into_an_empty_directory_gives(
    results: list[tuple[str, Any]], min_chars: int, preview: int, directory: str
) -> None:
    # eval scores offload's messages, not its files: none is written, nothing digested.
    import tempfile

    messages = ir(convo(*results))
    options = {"min_chars": min_chars, "preview": preview, "reference_dir": directory}
    with tempfile.TemporaryDirectory() as scratch:
        written = offload_tool_results(
            messages, out_dir=Path(scratch) / "out", measure_tokens=False, **options
        )
        alone = offload_tool_results(messages, out_dir=Path(scratch) / "none", files=False, **options)
        assert not (Path(scratch) / "none").exists()
    assert results_of(alone.messages) == results_of(written.messages)
    kept = [[m is n for m, n in zip(run.messages, messages, strict=True)] for run in (alone, written)]
    assert kept[0] == kept[1]  # unchanged messages are the input's own objects either way
    assert (alone.offloaded_count, alone.freed_chars) == (written.offloaded_count, written.freed_chars)


class RecordingCounter:
    name = "recording"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def count_batch(self, texts: Any) -> list[int]:
        self.encoded.extend(texts)
        return COUNTER.count_batch(texts)


def test_offload_reads_the_callers_run_cache_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    # eval measures a conversation, then offloads it with the same run cache: the contents
    # it just counted are not encoded a second time for "tokens freed".
    messages = ir(convo(("t1", "alpha " * 100), ("t2", "beta " * 100)))
    spy = RecordingCounter()
    run = CachedCounter(spy)
    count_tokens(messages, counter=run)
    before, spy.encoded = dict(run.counts), []
    result = offload_tool_results(messages, out_dir=tmp_path / "a", counter=run)
    assert result.tokens_freed == offload(messages, tmp_path / "b").tokens_freed
    assert spy.encoded and not any("alpha" in t or "beta" in t for t in spy.encoded)
    assert run.counts == before  # a counter kept across runs keeps no strings of this one


def test_boundaries_99_stays_100_goes_empty_stays(tmp_path: Path) -> None:
    messages = ir(convo(("t99", "a" * 99), ("t100", "b" * 100), ("tempty", "")))
    result = offload(messages, tmp_path)
    assert results_of(result.messages) == ["a" * 99, "[Content offloaded to: ./tool-result-t100.md]", ""]
    assert sorted(p.name for p in tmp_path.glob("tool-result-*")) == ["tool-result-t100.md"]
    assert (result.offloaded_count, result.freed_chars) == (1, 100)


def test_block_list_is_measured_by_its_compact_json_and_becomes_a_string(tmp_path: Path) -> None:
    def blocks(n: int) -> list[dict[str, str]]:
        # len('[{"type":"text","text":""}]') == 27
        return [{"type": "text", "text": "x" * (n - 27)}]

    assert content_chars(blocks(99)) == 99
    assert content_chars(blocks(100)) == 100
    result = offload(ir(convo(("small", blocks(99)), ("big", blocks(100)))), tmp_path)
    small, big = results_of(result.messages)
    assert small == blocks(99)
    assert big == "[Content offloaded to: ./tool-result-big.md]"
    assert result.freed_chars == 100
    # The file holds the JSON so that undo gives the very same list back.
    assert json.loads((tmp_path / "tool-result-big.md").read_text()) == blocks(100)


def test_uc003_mixed_only_large_ones_move(tmp_path: Path) -> None:
    result = offload(ir(convo(("a", "short"), ("b", "L" * 500), ("c", "tiny"))), tmp_path)
    assert results_of(result.messages) == ["short", "[Content offloaded to: ./tool-result-b.md]", "tiny"]


def test_uc004_no_tool_result_returns_the_same_messages_and_writes_nothing(tmp_path: Path) -> None:
    messages = ir(
        [{"role": "user", "content": "hi " * 100}, {"role": "assistant", "content": "hello " * 100}]
    )
    result = offload(messages, tmp_path / "out")
    assert all(a is b for a, b in zip(result.messages, messages, strict=True))
    assert (result.offloaded_count, result.freed_chars, result.files) == (0, 0, ())
    assert list((tmp_path / "out").iterdir()) == []


def test_empty_list(tmp_path: Path) -> None:
    result = offload((), tmp_path)
    assert (result.messages, result.offloaded_count, result.freed_chars, result.files) == ((), 0, 0, ())
    assert offload_stats_json("t.json", [result]) == {
        "version": 1,
        "input": "t.json",
        "offloaded_count": 0,
        "freed_chars": 0,
        "files": [],
        "tokens_freed": 0,
        "reused_files": 0,
        "out_dir": str(tmp_path.resolve()),
    }


def test_duplicate_ids_get_numbered_suffixes(tmp_path: Path) -> None:
    records = convo(("dup", "1" * 150))
    records += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "dup", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "dup", "content": "2" * 150}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "dup", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "dup", "content": "3" * 150}]},
    ]
    result = offload(ir(records), tmp_path)
    assert results_of(result.messages) == [
        "[Content offloaded to: ./tool-result-dup.md]",
        "[Content offloaded to: ./tool-result-dup-1.md]",
        "[Content offloaded to: ./tool-result-dup-2.md]",
    ]
    assert (tmp_path / "tool-result-dup-2.md").read_text() == "3" * 150
    assert [Path(f).name for f in result.files] == [
        "tool-result-dup.md",
        "tool-result-dup-1.md",
        "tool-result-dup-2.md",
    ]


def test_output_directory_is_created_recursively(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    offload(ir(convo(("x", "y" * 200))), target)
    assert (target / "tool-result-x.md").is_file()


def test_input_is_not_mutated_and_unchanged_messages_are_shared(tmp_path: Path) -> None:
    records = convo(("keep", "small"), ("move", "big " * 100))
    pristine = copy.deepcopy(records)
    messages = ir(records)
    blocks_before = [m.content for m in messages]
    result = offload(messages, tmp_path)
    assert records == pristine
    assert [m.content for m in messages] == blocks_before
    assert result.messages[0] is messages[0] and result.messages[1] is messages[1]
    changed = result.messages[2]
    assert changed is not messages[2] and changed.changed and changed.source is messages[2].source
    assert changed.content[0] is messages[2].content[0]  # the untouched block is shared


def test_openai_tool_messages_are_offloaded_and_written_back_as_tool_messages(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "out " * 60},
    ]
    transcript = load_transcript(data=json.dumps(records))
    conv = transcript.conversations[0]
    result = offload(conv.messages, tmp_path)
    written = json.loads(
        dump_transcript(transcript.with_conversations([conv.with_messages(result.messages)]))
    )
    assert written[:2] == records[:2]
    assert written[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "[Content offloaded to: ./tool-result-call_1.md]",
    }


# --- safe names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool_id",
    [
        "../../etc/passwd",
        "a/b",
        "a\\b",
        "..",
        ".hidden",
        "nul\x00byte",
        "tab\there",
        "x" * 500,
        "",
        "ünï",
        "a..b",
    ],
)
def test_hostile_ids_never_leave_the_directory(tmp_path: Path, tool_id: str) -> None:
    name = file_name_for(tool_id, 0)
    assert "/" not in name and "\\" not in name and "\x00" not in name and ".." not in name
    assert not name.startswith(".") and len(name) <= len("tool-result-") + 100 + 9 + 3
    out = tmp_path / "out"
    result = offload(ir(convo((tool_id, "data " * 50)), dialect="anthropic"), out)
    assert result.offloaded_count == 1
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.parent for p in written} == {out}


def test_safe_id_keeps_clean_ids_and_disambiguates_changed_ones() -> None:
    assert safe_id("toolu_01A09q90qw90lq917835lq9") == "toolu_01A09q90qw90lq917835lq9"
    assert safe_id("call_abc-1.2") == "call_abc-1.2"
    assert safe_id("a/b") != safe_id("a_b")
    assert safe_id("a/b").startswith("a_b-")
    assert safe_id(None).startswith("none-")
    assert len(safe_id("y" * 1000)) == 100 + 9


# --- never overwrite, idempotent -------------------------------------------------------------


def test_existing_file_with_other_content_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "tool-result-x.md").write_text("someone else's notes")
    result = offload(ir(convo(("x", "z" * 300))), tmp_path)
    assert (tmp_path / "tool-result-x.md").read_text() == "someone else's notes"
    assert results_of(result.messages) == ["[Content offloaded to: ./tool-result-x-1.md]"]
    assert (tmp_path / "tool-result-x-1.md").read_text() == "z" * 300


def test_same_input_twice_writes_nothing_new(tmp_path: Path) -> None:
    messages = ir(convo(("x", "z" * 300), ("y", "w" * 300)))
    first = offload(messages, tmp_path)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.iterdir())
    second = offload(messages, tmp_path)
    assert results_of(second.messages) == results_of(first.messages)
    assert all(e.reused for e in second.entries)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in tmp_path.iterdir()) == before


def test_offloading_its_own_output_changes_nothing(tmp_path: Path) -> None:
    first = offload(ir(convo(("x", "z" * 300))), tmp_path, preview=20)
    second = offload(first.messages, tmp_path, min_chars=1)
    assert second.offloaded_count == 0
    assert all(a is b for a, b in zip(second.messages, first.messages, strict=True))


# --- options -------------------------------------------------------------------------------------


def test_keep_recent_leaves_the_newest_results(tmp_path: Path) -> None:
    result = offload(ir(convo(("a", "A" * 200), ("b", "B" * 200), ("c", "c"))), tmp_path, keep_recent=2)
    # The newest two are b and c (c is small, but it still counts as a recent result).
    assert results_of(result.messages) == ["[Content offloaded to: ./tool-result-a.md]", "B" * 200, "c"]


def test_protect_loop_leaves_the_current_tool_loop(tmp_path: Path) -> None:
    records = [
        *convo(("old", "O" * 200)),
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "new", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "new", "content": "N" * 200}]},
    ]
    protected = offload(ir(records), tmp_path / "p", protect_loop=True)
    assert results_of(protected.messages) == ["[Content offloaded to: ./tool-result-old.md]", "N" * 200]
    seed_default = offload(ir(records), tmp_path / "s")
    assert seed_default.offloaded_count == 2


def test_preview_keeps_the_first_characters(tmp_path: Path) -> None:
    content = "0123456789" * 30
    result = offload(ir(convo(("x", content))), tmp_path, preview=25)
    assert results_of(result.messages) == [
        "[Content offloaded to: ./tool-result-x.md]\n"
        "Preview (first 25 characters):\n0123456789012345678901234…"
    ]
    # A preview as long as the content would not save anything: the result stays.
    assert offload(ir(convo(("y", "y" * 150))), tmp_path, preview=200).offloaded_count == 0


def test_reference_never_longer_than_the_content(tmp_path: Path) -> None:
    long_id = "i" * 90
    result = offload(ir(convo((long_id, "c" * 110))), tmp_path)
    assert result.offloaded_count == 0  # its reference would be ~130 characters
    assert (
        reference_for("tool-result-x.md", "text", preview=0) == "[Content offloaded to: ./tool-result-x.md]"
    )


def test_negative_options_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        offload((), tmp_path, min_chars=-1)


# --- undo ----------------------------------------------------------------------------------------


def test_undo_restores_strings_and_block_lists_exactly(tmp_path: Path) -> None:
    blocks = [
        {"type": "text", "text": "part one " * 20},
        {"type": "image", "source": {"type": "url", "url": "u"}},
    ]
    messages = ir(convo(("s", "line\n" * 50), ("b", blocks), ("u", "ünïcødé ✓ " * 20), ("small", "ok")))
    result = offload(messages, tmp_path)
    assert result.offloaded_count == 3
    back = undo_offload(result.messages, out_dir=tmp_path)
    assert back.restored_count == 3
    assert [m.content for m in back.messages] == [m.content for m in messages]
    assert back.messages[0] is messages[0]


def test_undo_of_a_written_transcript_is_byte_identical(tmp_path: Path) -> None:
    records = convo(("a", "A" * 300), ("b", [{"type": "text", "text": "B" * 300}]))
    original = json.dumps(records, indent=2).encode() + b"\n"
    transcript = load_transcript(data=original)
    conv = transcript.conversations[0]
    lean = dump_transcript(
        transcript.with_conversations([conv.with_messages(offload(conv.messages, tmp_path).messages)])
    )
    reread = load_transcript(data=lean)
    restored = undo_offload(reread.messages, out_dir=tmp_path)
    assert (
        dump_transcript(reread.with_conversations([reread.conversations[0].with_messages(restored.messages)]))
        == original
    )


def test_undo_refuses_a_missing_or_changed_file_and_restores_nothing(tmp_path: Path) -> None:
    result = offload(ir(convo(("a", "A" * 300), ("b", "B" * 300))), tmp_path)
    (tmp_path / "tool-result-a.md").unlink()
    (tmp_path / "tool-result-b.md").write_text("B" * 299 + "!")
    with pytest.raises(WorkFailedError) as err:
        undo_offload(result.messages, out_dir=tmp_path)
    message = str(err.value)
    assert "nothing was restored" in message
    assert "tool-result-a.md is missing" in message
    assert "tool-result-b.md has changed" in message


def test_undo_leaves_what_the_manifest_does_not_vouch_for(tmp_path: Path) -> None:
    """Issue 23, defect 12: a tool output that merely looks like a reference (another
    directory's, another id's, or genuine text) is left as it is and named — never an error
    that blocks the undo, never another transcript's content pasted in."""
    result = offload(ir(convo(("a", "A" * 300))), tmp_path / "one")
    (tmp_path / "two").mkdir()
    elsewhere = undo_offload(result.messages, out_dir=tmp_path / "two")
    assert elsewhere.restored_count == 0 and "offloaded to another directory" in elsewhere.left[0]
    assert all(a is b for a, b in zip(elsewhere.messages, result.messages, strict=True))
    # A reference moved to another tool result is caught by the recorded id.
    records = convo(("zzz", "[Content offloaded to: ./tool-result-a.md]"))
    moved = undo_offload(ir(records), out_dir=tmp_path / "one")
    assert moved.restored_count == 0 and "another tool_use_id" in moved.left[0]


def test_undo_without_references_changes_nothing(tmp_path: Path) -> None:
    messages = ir(convo(("a", "text")))
    back = undo_offload(messages, out_dir=tmp_path / "nowhere")
    assert back.restored_count == 0 and all(a is b for a, b in zip(back.messages, messages, strict=True))


# --- failures ------------------------------------------------------------------------------------


class FailingWriter(DiskWriter):
    """Fails the n-th new file, or the manifest, like a full disk would."""

    def __init__(self, *, fail_create_at: int | None = None, fail_manifest: bool = False) -> None:
        self.creates = 0
        self.fail_create_at = fail_create_at
        self.fail_manifest = fail_manifest

    def create(self, path: Path, data: bytes) -> bool:
        self.creates += 1
        if self.creates == self.fail_create_at:
            raise OSError(28, "No space left on device")
        return super().create(path, data)

    def replace(self, path: Path, data: bytes) -> None:
        if self.fail_manifest:
            raise OSError(28, "No space left on device")
        super().replace(path, data)


@pytest.mark.parametrize("writer", [FailingWriter(fail_create_at=2), FailingWriter(fail_manifest=True)])
def test_write_failure_raises_and_leaves_no_file_behind(tmp_path: Path, writer: FailingWriter) -> None:
    messages = ir(convo(("a", "A" * 300), ("b", "B" * 300)))
    with pytest.raises(WorkFailedError, match="No space left on device"):
        offload_tool_results(messages, out_dir=tmp_path, writer=writer, counter=COUNTER)
    assert list(tmp_path.iterdir()) == []


def test_unwritable_directory_is_a_work_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(WorkFailedError, match="cannot create the offload directory"):
        offload(ir(convo(("a", "A" * 300))), blocker / "sub")


def test_discard_offload_takes_back_created_files_only(tmp_path: Path) -> None:
    earlier = offload(ir(convo(("a", "A" * 300))), tmp_path)
    now = offload(ir(convo(("a", "A" * 300), ("b", "B" * 300))), tmp_path)
    discard_offload([now])
    assert sorted(p.name for p in tmp_path.iterdir()) == [MANIFEST_NAME, "tool-result-a.md"]
    assert undo_offload(earlier.messages, out_dir=tmp_path).restored_count == 1


# --- real transcripts ------------------------------------------------------------------------------


@pytest.mark.corpus
@requires_corpus
@pytest.mark.parametrize("path", corpus_files("anthropic", "openai", "claude-code"), ids=lambda p: p.name)
def test_corpus_offload_is_valid_and_undoable(tmp_path: Path, path: Path) -> None:
    transcript = load_transcript(path)
    convs = transcript.conversations
    results = [offload(conv.messages, tmp_path, min_chars=1000) for conv in convs]
    for conv, result in zip(convs, results, strict=True):
        assert not errors_only(validate_messages(result.messages, dialect=conv.dialect))
    lean = dump_transcript(
        transcript.with_conversations(
            [c.with_messages(r.messages) for c, r in zip(convs, results, strict=True)]
        )
    )
    reread = load_transcript(data=lean, dialect=transcript.dialect)
    restored = [undo_offload(c.messages, out_dir=tmp_path) for c in reread.conversations]
    for conv, back in zip(convs, restored, strict=True):
        assert [m.content for m in back.messages] == [m.content for m in conv.messages]
    # Undo gives the transcript back as ctxcompact writes it: the same bytes as the original's
    # canonical serialization (raw=None: no pass-through of the input bytes), every dialect.
    again = reread.with_conversations(
        [c.with_messages(r.messages) for c, r in zip(reread.conversations, restored, strict=True)]
    )
    assert dump_transcript(replace(again, raw=None)) == dump_transcript(replace(transcript, raw=None))
