"""Text that looks like ctxcompact's own (issue 23, defects 10, 11, 12): mixed dialects, a
tool output equal to an offload reference, outputs that merely start with a marker, a user
message opening like our summary, and orphan cleaning without a manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

REF = "[Content offloaded to: ./tool-result-zz.md]"


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records))
    return path


def _pair(call_id: str, result: Any, *, command: str = "ls") -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": command}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]},
    ]


def _transcript(*pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for pair in pairs:
        records += pair
    return [*records, {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]


def test_a_tool_output_equal_to_a_reference_survives_undo(tmp_path: Path) -> None:
    source = _write(tmp_path / "t.json", _transcript(_pair("zz", REF), _pair("t2", "x" * 500)))
    lean = tmp_path / "lean.json"
    assert run_cli("offload", source, "--out-dir", tmp_path / "off", "-q", "-o", lean).exit_code == 0
    back = run_cli("offload", "--undo", lean, "--out-dir", tmp_path / "off")
    assert back.exit_code == 0, back.stderr
    assert json.loads(back.stdout) == json.loads(source.read_text())
    assert "tool-result-zz.md" in back.stderr  # said, not silently skipped


def test_a_shared_out_dir_never_pastes_another_transcripts_content(tmp_path: Path) -> None:
    """Transcript A offloads its result ``zz``; transcript B (same id, another call) holds a
    genuine output equal to A's reference. B's undo must keep B's text."""
    out = tmp_path / "shared"
    a = _write(tmp_path / "a.json", _transcript(_pair("zz", "secret of A " * 50, command="cat a")))
    b = _write(tmp_path / "b.json", _transcript(_pair("zz", REF, command="echo hi")))
    assert run_cli("offload", a, "--out-dir", out, "-q", "-o", tmp_path / "a-lean.json").exit_code == 0
    assert (out / "tool-result-zz.md").is_file()
    back = run_cli("offload", "--undo", b, "--out-dir", out)
    assert back.exit_code == 0, back.stderr
    assert "secret of A" not in back.stdout
    assert json.loads(back.stdout) == json.loads(b.read_text())


@pytest.mark.parametrize(
    "prefix",
    [
        REF + "\n",
        "[Tool result cleared by ctxcompact: bash output, 9 tokens]\n",
        "[… truncated by ctxcompact: 5 tokens, about 1 kept]\n",
    ],
)
def test_a_large_output_that_starts_like_a_marker_is_still_content(tmp_path: Path, prefix: str) -> None:
    big = prefix + "log line that matters\n" * 50_000  # ~1 MB
    source = _write(tmp_path / "t.json", _transcript(_pair("t1", big), _pair("t2", "ok")))
    off = run_cli("offload", source, "--out-dir", tmp_path / "off", "-q")
    assert off.exit_code == 0, off.stderr
    assert "log line that matters" not in off.stdout  # offloaded
    pruned = run_cli("compact", source, "--strategy", "prune", "--keep", "0", "--include-loop", "-q")
    assert pruned.exit_code == 0, pruned.stderr
    assert "log line that matters" not in pruned.stdout  # pruned


def test_a_user_message_opening_like_our_summary_is_not_protected(tmp_path: Path) -> None:
    """key-messages kept such a message as an earlier summary: output 28x the threshold."""
    records: list[dict[str, Any]] = [
        {"role": "user", "content": "[Conversation compressed]\n\n" + "filler words " * 20_000}
    ]
    for n in range(30):
        records += [{"role": "assistant", "content": f"step {n}"}, {"role": "user", "content": f"go on {n}"}]
    source = _write(tmp_path / "t.json", records)
    stats = tmp_path / "s.json"
    done = run_cli(
        "compact", source, "--strategy", "key-messages", "-w", "20000", "--output-reserve", "0",
        "--no-pin-first", "--stats-json", stats, "-q",
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    assert json.loads(stats.read_text())["compacted_token_count"] < 20_000


MIXED = [
    {"role": "user", "content": "hi"},
    *_pair("t1", "b" * 200),
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "c" * 200},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "next"},
]


@pytest.mark.parametrize(
    "command",
    [
        ["count"],
        ["check"],
        ["compact", "--summarizer", "extractive", "-q"],
        ["compact", "--strategy", "prune", "-q"],
        ["offload", "--out-dir", "{tmp}/off", "-q"],
        ["export"],
        ["restore-files"],
    ],
)
@pytest.mark.parametrize("forced", [None, "openai", "anthropic"])
def test_mixed_dialects_are_refused_not_rewritten(
    tmp_path: Path, command: list[str], forced: str | None
) -> None:
    """Defect 10: an OpenAI ``tool`` message in an Anthropic transcript (or Anthropic tool
    blocks read as OpenAI) gave output no API accepts, or was converted by offload."""
    source = _write(tmp_path / "t.json", MIXED)
    args = [a.format(tmp=tmp_path) for a in command]
    done = run_cli(args[0], source, *args[1:], *(["--format", forced] if forced else []))
    assert done.exit_code == 2, done.stderr
    assert "dialect" in done.stderr and "internal error" not in done.stderr


def test_a_non_object_part_in_an_openai_tool_content_list_is_exit_2(tmp_path: Path) -> None:
    records = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a" * 200}, 5, None]},
        {"role": "assistant", "content": "ok"},
    ]
    source = _write(tmp_path / "t.json", records)
    for args in (
        ["offload", "--out-dir", tmp_path / "off", "-q"],
        ["count"],
        ["compact", "--strategy", "prune"],
    ):
        done = run_cli(args[0], source, *args[1:])
        assert done.exit_code == 2 and "content part 1" in done.stderr, done.stderr


def test_clean_orphans_without_a_manifest_removes_nothing(tmp_path: Path) -> None:
    """Defect 11: with no manifest every ``tool-result-*.md`` was deleted — the only copy of
    content a transcript may still refer to."""
    out = tmp_path / "off"
    out.mkdir()
    for n in range(3):
        (out / f"tool-result-t{n}.md").write_text(f"offloaded output {n}")
    done = run_cli("offload", "--clean-orphans", "--out-dir", out)
    assert done.exit_code == 3, done.stderr
    assert "no offload-manifest.json" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"tool-result-t{n}.md" for n in range(3)]
