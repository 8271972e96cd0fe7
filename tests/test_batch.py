"""batch.py: compact_files composes one frozen item per input; a bad input never stops the others."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

from ctxcompact.accounting.check import BudgetSpec
from ctxcompact.batch.files import BatchProgress, FileOptions, batch_targets, compact_file, compact_files
from ctxcompact.compaction.pipeline import CompactOptions
from ctxcompact.errors import CtxcompactError, WorkFailedError
from ctxcompact.names import LocalCounterName
from ctxcompact.status import ExitStatus

SESSION = SAMPLES / "anthropic-session.json"


def options(tmp_path: Path, **kw: Any) -> FileOptions:
    compact = CompactOptions.from_keywords(strategies=("prune",), keep=0, archive_dir=tmp_path / "archive")
    return FileOptions(compact=compact, counter=LocalCounterName.estimate, **kw)


@pytest.fixture(name="inputs")
def _inputs(tmp_path: Path) -> list[str | None]:
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    shutil.copy(SESSION, src / "a.json")
    shutil.copy(SESSION, src / "sub" / "a.json")  # same name: its output gets a suffix
    (src / "bad.json").write_text("{nope")
    return [str(src / "a.json"), str(src / "bad.json"), str(src / "sub" / "a.json")]


def test_every_input_gets_an_item_and_a_bad_one_does_not_stop_the_rest(
    tmp_path: Path, inputs: list[str | None]
) -> None:
    out = tmp_path / "out"
    result = compact_files(inputs, options=options(tmp_path), out_dir=out)
    good, bad, other = result.items
    assert (good.status, bad.status, other.status) == ("compacted", "failed", "compacted")
    assert good.output == str(out / "a.json") and other.output == str(out / "a-1.json")
    assert good.before is not None and good.after is not None and good.after < good.before
    assert good.ratio == good.after / good.before and good.stats is not None
    assert bad.exit_code == ExitStatus.BAD_INPUT and bad.error and "bad.json" in bad.error
    assert (bad.before, bad.stats, bad.output) == (None, None, None)
    assert (result.compacted, result.failed, result.exit_code) == (2, 1, ExitStatus.BAD_INPUT)
    assert sorted(p.name for p in out.iterdir()) == ["a-1.json", "a.json"]


def test_targets_are_decided_before_any_work_in_input_order(tmp_path: Path) -> None:
    targets = batch_targets(["x/t.json", None, "y/t.json", "t.json"], tmp_path)
    assert [p.name for p in targets.values()] == ["t.json", "stdin.json", "t-1.json", "t-2.json"]


def test_progress_hears_about_each_input_before_and_after(tmp_path: Path, inputs: list[str | None]) -> None:
    events: list[BatchProgress] = []
    compact_files(inputs, options=options(tmp_path, dry_run=True), progress=events.append)
    assert [(e.index, e.total, e.item is None) for e in events] == [
        (0, 3, True),
        (0, 3, False),
        (1, 3, True),
        (1, 3, False),
        (2, 3, True),
        (2, 3, False),
    ]
    assert events[3].item is not None and events[3].item.status == "failed"


def test_dry_run_writes_nothing(tmp_path: Path, inputs: list[str | None]) -> None:
    result = compact_files(inputs, options=options(tmp_path, dry_run=True), out_dir=tmp_path / "out")
    assert all(item.output is None for item in result.items)
    assert not (tmp_path / "out").exists() and not (tmp_path / "archive").exists()


def test_in_place_keeps_a_backup_and_never_replaces_one(tmp_path: Path, inputs: list[str | None]) -> None:
    first = str(inputs[0])
    original = Path(first).read_bytes()
    compact_files([first], options=options(tmp_path), in_place=True)
    compacted = Path(first).read_bytes()
    compact_files([first], options=options(tmp_path), in_place=True)  # nothing left to do
    assert Path(first).read_bytes() == compacted and not Path(first + ".bak.1").exists()
    Path(first).write_bytes(original)
    compact_files([first], options=options(tmp_path), in_place=True)
    assert Path(first + ".bak").read_bytes() == original
    assert Path(first + ".bak.1").read_bytes() == original and Path(first).read_bytes() == compacted


def test_a_bug_is_recorded_as_exit_70_or_raised_when_asked(
    tmp_path: Path, inputs: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("ctxcompact.batch.files.compact_conversation", broken)
    result = compact_files(inputs[:1], options=options(tmp_path, dry_run=True))
    item = result.items[0]
    assert item.exit_code == ExitStatus.INTERNAL_ERROR and item.error
    assert "internal error: RuntimeError: boom" in item.error
    with pytest.raises(RuntimeError, match="boom"):
        compact_files(inputs[:1], options=options(tmp_path, dry_run=True), raise_bugs=True)


def test_a_bug_in_a_cli_batch_honours_ctxcompact_traceback(
    tmp_path: Path, inputs: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("ctxcompact.batch.files.compact_conversation", broken)
    argv = ["compact", *map(str, inputs), "--dry-run", "--jobs", "1", "--report", str(tmp_path / "r.json")]
    plain = run_cli(*argv, env={"CTXCOMPACT_TRACEBACK": None})
    assert plain.status == ExitStatus.INTERNAL_ERROR and plain.exception is None
    rows = orjson.loads((tmp_path / "r.json").read_bytes())["inputs"]
    assert rows[0]["exit_code"] == 70 and "RuntimeError: boom" in rows[0]["error"]

    traced = run_cli(*argv, env={"CTXCOMPACT_TRACEBACK": "1"}, keep_exception=True)
    assert isinstance(traced.exception, RuntimeError) and str(traced.exception) == "boom"


def test_compact_file_names_the_file_in_its_errors(tmp_path: Path) -> None:
    bad = tmp_path / "t.json"
    bad.write_text('[{"role": "user", "content": "hi"}]')
    with pytest.raises(CtxcompactError) as caught:
        compact_file(
            str(bad), options=options(tmp_path, budget=BudgetSpec(context_window=100, output_reserve=200))
        )
    assert str(caught.value).startswith(f"{bad}: output_reserve 200 leaves no room")
    assert caught.value.exit_code == ExitStatus.BAD_INPUT
    done = compact_file(str(SESSION), options=options(tmp_path, dry_run=True))
    assert done.input == str(SESSION) and done.status == "compacted" and len(done.stats) == 1


def test_a_failed_input_keeps_the_warnings_found_before_it_failed(
    tmp_path: Path, inputs: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise WorkFailedError("summary failed")

    monkeypatch.setattr("ctxcompact.batch.files.compact_conversation", failing)
    result = compact_files(
        inputs[:1], options=options(tmp_path, budget=BudgetSpec("my-local-llm"), dry_run=True)
    )
    assert result.items[0].status == "failed"
    assert result.warnings == (
        "unknown model (my-local-llm): assuming a 96,000-token window; pass --model or --context-window, or add it with --models-file.",
    )
