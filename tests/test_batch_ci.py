"""Batch mode for CI: inputs (trees, globs, path lists), --jobs, --resume, --shard, --fail-over."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from hypothesis import given
from hypothesis import strategies as st

from ctxcompact.batch.files import FileOptions, compact_files
from ctxcompact.batch.inputs import (
    BatchInput,
    find_inputs,
    parse_shard,
    read_path_list,
    select_shard,
    shard_of,
)
from ctxcompact.batch.journal import JOURNAL_NAME, BatchJournal
from ctxcompact.compaction.pipeline import CompactOptions
from ctxcompact.compaction.summarize.llm import LLMSummarizer
from ctxcompact.errors import CtxcompactError
from ctxcompact.llm.gate import install_request_gate
from ctxcompact.llm.transport import TextReply, TransportFailure
from ctxcompact.names import LocalCounterName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.io import load_messages

SESSION = SAMPLES / "anthropic-session.json"
OPENAI = SAMPLES / "openai-chat.json"


@pytest.fixture(name="tree")
def _tree(tmp_path: Path) -> Path:
    """sessions/{a.json, sub/a.json, sub/deep/b.jsonl-ish .json, bad.json, notes.txt, .hidden/x.json}"""
    root = tmp_path / "sessions"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    shutil.copy(SESSION, root / "a.json")
    shutil.copy(SESSION, root / "sub" / "a.json")
    shutil.copy(OPENAI, root / "sub" / "deep" / "b.json")
    shutil.copy(SESSION, root / ".hidden" / "x.json")
    (root / "bad.json").write_text("{nope")
    (root / "notes.txt").write_text("not a transcript")
    return root


def offline(tmp_path: Path, *extra: str) -> list[str]:
    return ["--summarizer", "extractive", "--no-restore", "--counter", "estimate", *extra]


def report_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


# --- inputs --------------------------------------------------------------------------------


def test_a_directory_gives_each_file_its_path_below_it_and_a_file_its_name(tree: Path) -> None:
    found = find_inputs([str(tree), str(SESSION)])
    assert [i.name for i in found] == ["a.json", "bad.json", "sub/a.json", "sub/deep/b.json", SESSION.name]
    assert found[2] == BatchInput(str(tree / "sub" / "a.json"), "sub/a.json")
    assert [i.name for i in find_inputs([str(tree)], globs=["sub/*"])] == ["sub/a.json", "sub/deep/b.json"]
    assert [i.name for i in find_inputs([str(tree)], globs=["*.txt"])] == ["notes.txt"]
    with pytest.raises(CtxcompactError, match=r"no \*\.md files"):
        find_inputs([str(tree)], globs=["*.md"])


def test_a_path_list_is_lines_or_json() -> None:
    assert read_path_list("a.json\n\n# comment\n b.json \n", source="x") == ["a.json", "b.json"]
    assert read_path_list('["a.json", {"path": "b.json"}]', source="x") == ["a.json", "b.json"]
    assert read_path_list('{"sessions": [{"path": "s.jsonl"}]}', source="x") == ["s.jsonl"]
    with pytest.raises(CtxcompactError, match="entry 0 names no path"):
        read_path_list("[1]", source="x")


def test_out_dir_mirrors_the_input_tree_and_a_bad_file_never_stops_the_batch(
    tree: Path, tmp_path: Path
) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"
    before = (tree / "bad.json").read_bytes()
    result = run_cli("compact", tree, "--out-dir", out, "--report", report, *offline(tmp_path))
    assert result.status == ExitStatus.BAD_INPUT, result.stderr
    written = sorted(
        p.relative_to(out).as_posix() for p in out.rglob("*.json") if ".ctxcompact" not in str(p)
    )
    assert written == ["a.json", "sub/a.json", "sub/deep/b.json"]
    assert (tree / "bad.json").read_bytes() == before  # the bad input is reported, never lost
    data = report_of(report)
    assert [r["status"] for r in data["inputs"]] == ["compacted", "failed", "compacted", "compacted"]
    assert data["exit_code"] == 2
    # what the rewrites replaced is archived beside the outputs, not in the cwd
    assert list((out / ".ctxcompact-archive").glob("*.jsonl"))


def test_from_reads_the_path_list_from_stdin(tree: Path, tmp_path: Path) -> None:
    listed = f"{tree / 'a.json'}\n{tree / 'sub' / 'deep' / 'b.json'}\n"
    out = tmp_path / "out"
    result = run_cli("compact", "--from", "-", "--out-dir", out, *offline(tmp_path), input=listed)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.glob("*.json")) == ["a.json", "b.json"]


# --- shards --------------------------------------------------------------------------------


@given(
    names=st.lists(st.text(min_size=1, max_size=12), max_size=40, unique=True),
    count=st.integers(min_value=1, max_value=7),
)
def test_the_shards_of_a_list_are_every_input_exactly_once(names: list[str], count: int) -> None:
    inputs = [BatchInput(f"/x/{n}", n) for n in names]
    shards = [select_shard(inputs, i, count) for i in range(1, count + 1)]
    joined = [item for shard in shards for item in shard]
    assert sorted(joined, key=lambda i: i.name) == sorted(inputs, key=lambda i: i.name)
    assert all(shard == [i for i in inputs if i in shard] for shard in shards)  # input order kept


def test_a_shard_is_a_stable_hash_of_the_relative_path_not_of_where_it_lives() -> None:
    assert shard_of("sub/a.json", 2) == shard_of("sub/a.json", 2)
    assert [shard_of(f"s{i}.jsonl", 3) for i in range(6)] == [2, 1, 3, 2, 2, 2]  # pinned: sha256
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(CtxcompactError):
            parse_shard(bad)


def test_two_cli_shards_together_cover_the_batch(tree: Path, tmp_path: Path) -> None:
    (tree / "bad.json").unlink()
    seen: list[str] = []
    for index in (1, 2):
        report = tmp_path / f"r{index}.json"
        args = ["--out-dir", tmp_path / f"out{index}", "--report", report, "--shard", f"{index}/2"]
        result = run_cli("compact", tree, *args, *offline(tmp_path))
        assert result.exit_code == 0, result.stderr
        seen += [r["input"] for r in report_of(report)["inputs"]]
    assert sorted(seen) == sorted(i.path or "" for i in find_inputs([str(tree)]))


# --- jobs ----------------------------------------------------------------------------------


def test_two_jobs_write_what_one_job_writes_and_report_in_input_order(tree: Path, tmp_path: Path) -> None:
    outputs = {}
    for jobs in ("1", "2"):
        out, report = tmp_path / f"out{jobs}", tmp_path / f"r{jobs}.json"
        result = run_cli(
            "compact", tree, "--out-dir", out, "--report", report, "--jobs", jobs, *offline(tmp_path)
        )
        assert result.status == ExitStatus.BAD_INPUT, result.stderr
        rows = report_of(report)["inputs"]
        assert [r["input"] for r in rows] == [i.path for i in find_inputs([str(tree)])]
        outputs[jobs] = {
            p.relative_to(out): p.read_bytes() for p in out.rglob("*.json") if "archive" not in str(p)
        }
    assert outputs["1"] == outputs["2"] and len(outputs["1"]) == 3


def test_a_summary_request_holds_a_gate_slot_but_not_while_it_backs_off() -> None:
    held = threading.BoundedSemaphore(1)
    calls: list[str] = []

    class Flaky:
        name = "flaky"

        def complete(self, **kwargs: Any) -> TextReply:
            assert not held.acquire(blocking=False)  # the request holds the only slot
            calls.append("request")
            if len(calls) == 1:
                raise TransportFailure("429 rate limited", retryable=True, status=429)
            return TextReply("<summary>done</summary>")

    def sleep(seconds: float) -> None:
        assert held.acquire(blocking=False)  # backing off, the slot is free for others
        held.release()
        calls.append("sleep")

    messages = load_messages([{"role": "user", "content": "hello"}]).messages
    install_request_gate(held)
    try:
        summarizer = LLMSummarizer(Flaky(), "m", max_retries=2, sleep=sleep, jitter=lambda: 0.0)
        summary = summarizer.summarize(messages)
    finally:
        install_request_gate(None)
    assert summary.text == "done" and calls == ["request", "sleep", "request"]


# --- fail-over, resume ----------------------------------------------------------------------


def test_fail_over_exits_1_only_when_a_file_stays_above_the_ratio(tmp_path: Path) -> None:
    args = ["compact", SESSION, OPENAI, "--out-dir", tmp_path / "out", *offline(tmp_path)]
    strict = run_cli(*args, "--fail-over", "0.01", "--report", tmp_path / "r.json")
    assert strict.status == ExitStatus.OVER_THRESHOLD, strict.stderr
    assert "still above --fail-over 0.01" in strict.stderr
    assert report_of(tmp_path / "r.json")["over_fail_over"] == 2
    assert run_cli(*args, "--fail-over", "0.99").exit_code == 0


def batch_options(tmp_path: Path) -> FileOptions:
    compact = CompactOptions.from_keywords(strategies=("prune",), keep=0, archive_dir=tmp_path / "archive")
    return FileOptions(compact=compact, counter=LocalCounterName.estimate)


def test_an_interrupted_batch_resumes_where_it_stopped(tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    paths: list[str | None] = []
    for n in range(4):
        shutil.copy(SESSION, src / f"s{n}.json")
        paths.append(str(src / f"s{n}.json"))
    out = tmp_path / "out"
    options = batch_options(tmp_path)

    def interrupt_after_two(event: Any) -> None:
        if event.item is not None and event.index == 1:
            raise KeyboardInterrupt

    journal = BatchJournal.open(out / JOURNAL_NAME, options=options, resume=False)
    with pytest.raises(KeyboardInterrupt):
        compact_files(paths, options=options, out_dir=out, progress=interrupt_after_two, journal=journal)
    assert sorted(p.name for p in out.glob("*.json")) == ["s0.json", "s1.json"]
    (src / "s0.json").write_bytes(OPENAI.read_bytes())  # an input edited since: done again

    journal = BatchJournal.open(out / JOURNAL_NAME, options=options, resume=True)
    result = compact_files(paths, options=options, out_dir=out, journal=journal)
    assert [i.resumed for i in result.items] == [False, True, False, False]
    assert [i.status for i in result.items] == ["compacted"] * 4
    assert result.items[1].before is not None and result.items[1].after is not None

    other = FileOptions(compact=options.compact, counter=LocalCounterName.tiktoken)
    journal = BatchJournal.open(out / JOURNAL_NAME, options=other, resume=True)
    assert not any(i.resumed for i in compact_files(paths, options=other, out_dir=out, journal=journal).items)


@pytest.mark.skipif(sys.platform != "linux", reason="reads the children from /proc")
def test_ctrl_c_on_a_two_job_batch_exits_130_reaps_its_workers_and_keeps_the_journal_true(
    tmp_path: Path,
) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    for n in range(300):
        shutil.copy(SESSION, src / f"s{n:03}.json")
    argv = [sys.executable, "-m", "ctxcompact", "compact", str(src), "--out-dir", str(out), "--jobs", "2"]
    proc = subprocess.Popen([*argv, *offline(tmp_path), "-q"], stderr=subprocess.PIPE)
    journal = out / JOURNAL_NAME
    children: set[int] = set()
    deadline = time.monotonic() + 60
    while (
        time.monotonic() < deadline and len(journal.read_bytes().splitlines() if journal.exists() else []) < 6
    ):
        with contextlib.suppress(OSError):
            children |= {
                int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
            }
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C reaches the parent
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == ExitStatus.INTERRUPTED, stderr
    assert b"Traceback" not in stderr
    for pid in children:  # reaped by the batch, not left to init
        assert not Path(f"/proc/{pid}").exists()
    lines = journal.read_bytes().splitlines()[1:]
    assert 5 <= len(lines) < 300
    for line in lines:  # every file the journal says is done is there, whole
        entry = json.loads(line)
        assert json.loads(Path(entry["output"]).read_bytes())
    again = run_cli("compact", src, "--out-dir", out, "--jobs", "2", "--resume", *offline(tmp_path), "-q")
    assert again.exit_code == 0, again.stderr
    assert len(list(out.glob("*.json"))) == 300


def test_cli_resume_skips_finished_files_and_says_so(tree: Path, tmp_path: Path) -> None:
    (tree / "bad.json").unlink()
    out, report = tmp_path / "out", tmp_path / "r.json"
    args = ["compact", tree, "--out-dir", out, "--report", report, *offline(tmp_path)]
    assert run_cli(*args).exit_code == 0
    assert (out / JOURNAL_NAME).is_file()
    again = run_cli(*args, "--resume")
    assert again.exit_code == 0, again.stderr
    assert all(r.get("resumed") for r in report_of(report)["inputs"])
    plain = run_cli(*args)  # without --resume the journal starts afresh: everything is done again
    assert plain.exit_code == 0 and not any(r.get("resumed") for r in report_of(report)["inputs"])
    refused = run_cli("compact", SESSION, OPENAI, "--in-place", "--resume", *offline(tmp_path))
    assert refused.exit_code == 2 and "--resume needs a journal" in refused.stderr


def test_the_default_archive_is_the_users_state_dir_not_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    result = run_cli(
        "compact", SESSION, "--summarizer", "extractive", "--no-restore", "-o", tmp_path / "o.json"
    )
    assert result.exit_code == 0, result.stderr
    assert list((tmp_path / "state" / "ctxcompact" / "archive").glob("*.jsonl"))
    assert not (tmp_path / ".ctxcompact").exists()
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert (
        CompactOptions().resolved_archive_dir == Path.home() / ".local" / "state" / "ctxcompact" / "archive"
    )
