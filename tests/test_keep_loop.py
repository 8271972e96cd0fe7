"""``compact --keep-loop`` when the last user request also answers tool uses (issue 9.3).

A user message holding tool results *and* text opens the live round, yet its results answer
the assistant message before it. That assistant message belongs to the kept loop: summarizing
it away left an orphan tool_result, and the run failed its own invariant check (exit 3, "a
bug") on every such transcript.
"""

from __future__ import annotations

import copy
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run_cli
from gen_transcripts import transcripts
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ctxcompact import compact_messages
from ctxcompact.compaction.restore import InMemoryFileReader
from ctxcompact.ir import leading_system_count, tool_results
from ctxcompact.markers import SUMMARY_PREFIX
from ctxcompact.transcripts.io import load_messages
from ctxcompact.transcripts.validate import errors_only, validate_messages


def _use(i: str, path: str = "a.py") -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "read_file", "input": {"path": path}}


def _result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": f"output of {i} " * 20}


TEXT = {"type": "text", "text": "Also check b.py while you are at it."}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the tax bug in a.py."},
    {"role": "assistant", "content": [_use("h1")]},
    {"role": "user", "content": [_result("h1")]},
    {"role": "assistant", "content": "Found it; the rounding is wrong."},
    {"role": "user", "content": "Good, now fix it."},
]
THINKING = {"type": "thinking", "thinking": "Read the file first.", "signature": "sig"}

#: name -> (records, index of the assistant message the kept tail must start with)
SHAPES: dict[str, tuple[list[dict[str, Any]], int]] = {
    "result then text": (
        [
            *HISTORY,
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1"), TEXT]},
        ],
        6,
    ),
    "text then result": (
        [
            *HISTORY,
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [TEXT, _result("t1")]},
        ],
        6,
    ),
    "two results and text": (
        [
            *HISTORY,
            {"role": "assistant", "content": [THINKING, _use("t1"), _use("t2", "b.py")]},
            {"role": "user", "content": [_result("t1"), _result("t2"), TEXT]},
        ],
        6,
    ),
    "result and image": (
        [
            *HISTORY,
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1"), IMAGE]},
        ],
        6,
    ),
    "the loop goes on after it": (
        [
            *HISTORY,
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1"), TEXT]},
            {"role": "assistant", "content": [_use("t2", "b.py")]},
            {"role": "user", "content": [_result("t2")]},
        ],
        6,
    ),
    "no system prompt": (
        [
            *HISTORY[1:],
            {"role": "assistant", "content": [_use("t1")]},
            {"role": "user", "content": [_result("t1"), TEXT]},
        ],
        5,
    ),
}


@pytest.mark.parametrize("restore", [False, True], ids=["no-restore", "restore"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_keep_loop_keeps_the_tool_use_a_mixed_request_answers(
    shape: str, restore: bool, tmp_path: Path
) -> None:
    records, start = SHAPES[shape]
    snapshot = copy.deepcopy(records)
    reader = InMemoryFileReader({tmp_path / "a.py": b"A = 1\n", tmp_path / "b.py": b"B = 2\n"})
    result = compact_messages(
        records,
        summarizer="extractive",
        keep_loop=True,
        restore=restore,
        work_dir=tmp_path,
        reader=reader,
        dry_run=True,
        counter="estimate",
    )
    out = result.messages
    assert out[-(len(records) - start) :] == records[start:]  # the loop, its tool_use included
    assert any(SUMMARY_PREFIX in str(m["content"]) for m in out)
    parsed = load_messages(out).messages
    assert not errors_only(validate_messages(parsed))
    head = leading_system_count(parsed)
    roles = [m.role for m in parsed[head:]]
    assert roles[0] == "user" and all(a != b for a, b in pairwise(roles))
    assert (result.stats.restored_file_count > 0) is restore
    assert records == snapshot


def test_cli_keep_loop_on_a_mixed_request_exits_0(tmp_path: Path) -> None:
    records, _ = SHAPES["result then text"]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(records))
    result = run_cli(
        "compact", path, "--strategy", "prune,full", "--keep-loop", "--summarizer", "extractive",
        "--archive-dir", tmp_path / "a", "-q",
        env={"ANTHROPIC_API_KEY": ""},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.json()[-2:] == records[-2:]


@st.composite
def _mixed_requests(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A random transcript cut after one of its tool-result messages, text added to it."""
    _, records = draw(transcripts(dialects=("anthropic",)))
    answers = [
        i
        for i, r in enumerate(records)
        if r["role"] == "user"
        and isinstance(r["content"], list)
        and tool_results(load_messages([r]).messages[0])
    ]
    assume(answers)
    cut = draw(st.sampled_from(answers))
    records = copy.deepcopy(records[: cut + 1])
    content = records[cut]["content"]
    content.insert(draw(st.integers(0, len(content))), dict(TEXT))
    return records


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(_mixed_requests())
def test_keep_loop_never_cuts_a_pair_on_generated_mixed_requests(records: list[dict[str, Any]]) -> None:
    result = compact_messages(records, summarizer="extractive", keep_loop=True, restore=False, dry_run=True)
    assert result.messages[-2:] == records[-2:]
    assert not errors_only(validate_messages(load_messages(result.messages).messages))
