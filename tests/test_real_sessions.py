"""Issue 20: every real session read and written back right (Claude Code, Codex, text-action
agents) — each test here failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import corpus_files
from hypothesis import given, settings
from hypothesis import strategies as st
from session_builders import SessionBuilder

from ctxcompact.accounting.tokens import ENCRYPTED_CHARS_PER_TOKEN
from ctxcompact.transcripts.io import load_transcript

BIG = "lorem ipsum dolor sit amet " * 400


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _resume_turn(path: Path, text: str, usage: tuple[int, int, int, int]) -> None:
    """What Claude Code appends when it resumes: a prompt and an answer with its usage, chained
    onto the file's last entry."""
    last = _lines(path)[-1]
    prompt = {**{k: last[k] for k in ("sessionId", "cwd", "version") if k in last}, "type": "user"}
    prompt |= {"uuid": "11111111-0000-4000-8000-000000000001", "parentUuid": last["uuid"]}
    prompt |= {"timestamp": "2027-01-01T00:00:00.000Z", "isSidechain": False}
    prompt["message"] = {"role": "user", "content": text}
    answer = {**prompt, "type": "assistant", "uuid": "11111111-0000-4000-8000-000000000002"}
    answer |= {"parentUuid": prompt["uuid"], "timestamp": "2027-01-01T00:00:01.000Z"}
    answer["message"] = {
        "id": "msg_resumed",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "resumed"}],
        "usage": dict(
            zip(
                ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"),
                usage,
                strict=True,
            )
        ),
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(prompt) + "\n" + json.dumps(answer) + "\n")


def _session(tmp_path: Path) -> Path:
    builder = SessionBuilder().user("fix the bug " + BIG).assistant("looking", usage=(10, 20_000, 0, 5))
    builder.user("go on " + BIG).assistant("done", usage=(3, 1_000, 140_000, 456))
    builder.user("and the tests").assistant("passing now", usage=(3, 1_000, 141_000, 30))
    return builder.write(tmp_path / "s.jsonl")


def _compact(path: Path, *extra: str) -> None:
    archive = path.parent / "archive"
    result = run_cli(
        "compact",
        path,
        "-i",
        "--force",
        "--trust-session-cwd",
        "--summarizer",
        "extractive",
        "--archive-dir",
        archive,
        *extra,
    )
    assert result.exit_code == 0, result.stderr


# --- defect 6: usage recorded after our boundary is read -------------------------------------


def test_usage_recorded_after_our_compaction_is_read(tmp_path: Path) -> None:
    path = _session(tmp_path)
    _compact(path)
    [row] = run_cli("check", path, "--json").json()["transcripts"]
    assert row["source"] != "recorded"  # nothing sent since our compaction
    _resume_turn(path, "continue", (7, 2_000, 9_000, 50))
    [row] = run_cli("check", path, "--json").json()["transcripts"]
    assert row["source"] == "recorded" and row["tokens"] == 11_057


def test_usage_copied_with_a_kept_loop_is_not_read_as_new(tmp_path: Path) -> None:
    path = _session(tmp_path)
    _compact(path, "--keep-loop")
    # The copied answer carries the usage of the old, longer context: stale.
    [row] = run_cli("check", path, "--json").json()["transcripts"]
    assert row["source"] != "recorded" and row["tokens"] < 141_000


# --- defect 8: Codex encrypted reasoning counts as what it costs ------------------------------


def _rollout_line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-05-11T08:27:17.490Z", "type": kind, "payload": payload}


def _encrypted_rollout(path: Path, *, reasoning: bool = True, recorded: int = 0) -> Path:
    """A Codex session whose reasoning items carry ``encrypted_content`` (base64 of ciphertext,
    which a tokenizer splits at ~1.4 characters a token) of the size the corpus shows for 250
    reasoning tokens, and whose last call the API recorded as ``recorded`` input tokens."""
    import base64
    import random

    rng = random.Random(8)
    lines = [_rollout_line("session_meta", {"id": "s", "cwd": "/repo"})]
    lines.append(_rollout_line("turn_context", {"cwd": "/repo", "model": "gpt-5.5"}))
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "explain " + BIG}]}
    lines.append(_rollout_line("response_item", ask))
    for n in range(8):
        if reasoning:
            blob = base64.b64encode(rng.randbytes(3_500)).decode()
            item = {"type": "reasoning", "summary": [], "content": None, "encrypted_content": blob}
            lines.append(_rollout_line("response_item", item))
        args = json.dumps({"cmd": f"cat m{n}.py"})
        call = {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": f"c{n}"}
        lines.append(_rollout_line("response_item", call))
        out = {"type": "function_call_output", "call_id": f"c{n}", "output": f"x{n} = 1\n" * 300}
        lines.append(_rollout_line("response_item", out))
    usage = {"input_tokens": recorded, "cached_input_tokens": recorded // 2, "output_tokens": 300}
    usage |= {"reasoning_output_tokens": 250, "total_tokens": recorded + 300}
    info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258_400}
    lines.insert(-1, _rollout_line("event_msg", {"type": "token_count", "info": info}))
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_codex_encrypted_reasoning_counts_what_it_costs(tmp_path: Path) -> None:
    plain = _encrypted_rollout(tmp_path / "plain.jsonl", reasoning=False, recorded=1)
    [row] = run_cli("count", plain, "--json").json()["transcripts"]
    # The API's figure: the messages plus what the eight reasoning items of 250 tokens cost.
    path = _encrypted_rollout(tmp_path / "rollout.jsonl", recorded=row["total"] + 8 * 250)
    [row] = run_cli("count", path, "--json").json()["transcripts"]
    context = row["context"]
    assert context["source"] == "recorded"
    assert abs(context["difference_percent"]) < 25, context
    assert row["by_type"]["redacted_thinking"] < row["by_type"]["tool_result"] / 2
    assert row["largest_messages"][0]["role"] == "user"  # a tool output, not a turn of ciphertext


def test_the_encrypted_reasoning_rate_is_the_corpus_s() -> None:
    """ENCRYPTED_CHARS_PER_TOKEN is what the corpus's Codex rollouts that record usage show:
    characters of ``encrypted_content`` per reasoning token the API reported."""
    rollouts = corpus_files("other")
    measured = []
    for path in rollouts:
        if not path.name.startswith("codex-rollout-"):
            continue
        chars, reasoning = 0, 0
        for record in _lines(path):
            payload = record.get("payload") or {}
            if payload.get("type") == "reasoning" and payload.get("encrypted_content"):
                chars += len(payload["encrypted_content"])
            if payload.get("type") == "token_count" and payload.get("info"):
                reasoning = payload["info"]["total_token_usage"].get("reasoning_output_tokens", 0)
        if chars and reasoning:
            measured.append(chars / reasoning)
    if not measured:
        pytest.skip("no Codex rollout with recorded reasoning in the corpus")
    assert min(measured) * 0.8 <= ENCRYPTED_CHARS_PER_TOKEN <= max(measured) * 1.2


# --- defects 3 and 7: restored files, a second time; isMeta; the model ------------------------


def _reading_session(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    builder = SessionBuilder(cwd=str(work)).user("read the modules " + BIG)
    for n in range(3):
        source = work / f"m{n}.py"
        source.write_text(f"VALUE_{n} = {n}\n" * 40, encoding="utf-8")
        builder.tool_call("Read", {"file_path": str(source)}, source.read_text(), call_id=f"toolu_{n}")
    builder.assistant("read them all", usage=(3, 1_000, 141_000, 30))
    return builder.write(tmp_path / "s.jsonl")


def _restored(path: Path) -> list[dict[str, Any]]:
    return [e for e in _lines(path) if "[Restored after compact]" in json.dumps(e.get("message", {}))]


def test_a_second_compaction_restores_the_files_again(tmp_path: Path) -> None:
    path = _reading_session(tmp_path)
    _compact(path)
    first = _restored(path)
    assert len(first) == 3
    _resume_turn(path, "go on " + BIG, (7, 2_000, 9_000, 50))
    _compact(path)
    second = _restored(path)[len(first) :]
    assert len(second) == 3
    # The old files' text is restored, not carried inside the new summary.
    [summary] = [e for e in _lines(path) if e.get("isCompactSummary")][-1:]
    assert "VALUE_1 = 1" not in summary["message"]["content"]


def test_restored_file_entries_are_meta_and_the_model_survives(tmp_path: Path) -> None:
    path = _reading_session(tmp_path)
    _compact(path)
    assert all(e.get("isMeta") is True for e in _restored(path))
    [conv] = load_transcript(path).conversations
    assert conv.model == "claude-sonnet-4-5-20250929"


# --- defect 2: restore-files --append invents no acknowledgement -------------------------------


def test_restore_files_append_on_a_session_writes_meta_file_entries_only(tmp_path: Path) -> None:
    path = _reading_session(tmp_path)
    out = tmp_path / "out.jsonl"
    result = run_cli("restore-files", path, "--append", "--trust-session-cwd", "-o", out)
    assert result.exit_code == 0, result.stderr
    added = _lines(out)[len(_lines(path)) :]
    assert len(added) == 3
    # Claude Code hangs on an assistant entry without message.model, id and usage.
    assert all(e["type"] == "user" and e.get("isMeta") is True for e in added)
    assert [e["parentUuid"] for e in added[1:]] == [e["uuid"] for e in added[:-1]]
    assert added[0]["parentUuid"] == _lines(path)[-1]["uuid"]


# --- defect 1: copies after our boundary are responses of their own -----------------------------


def _looping_session(tmp_path: Path) -> Path:
    builder = SessionBuilder().user("first task " + BIG).assistant("done", usage=(3, 1_000, 90_000, 30))
    builder.user("now run the tests")
    builder.tool_call("Bash", {"command": "pytest -q"}, "3 passed", call_id="toolu_a")
    builder.tool_call("Bash", {"command": "ruff check"}, "All checks passed!", call_id="toolu_b")
    # One response written as two entries (thinking, then text), as Claude Code writes it.
    builder.assistant("all green", usage=(3, 1_000, 141_000, 30))
    builder.entries[-1]["message"]["content"].insert(
        0, {"type": "thinking", "thinking": "ok", "signature": "s"}
    )
    return builder.write(tmp_path / "s.jsonl")


def test_keep_loop_copies_take_fresh_message_ids_and_times(tmp_path: Path) -> None:
    path = _looping_session(tmp_path)
    before = _lines(path)
    _compact(path, "--keep-loop")
    after = _lines(path)[len(before) :]
    old_ids = {e["message"].get("id") for e in before if e["type"] == "assistant"}
    copies = [e for e in after if e["type"] == "assistant"]
    assert copies and all(e["message"]["id"] not in old_ids for e in copies)
    boundary = after[0]
    assert all(e["timestamp"] == boundary["timestamp"] for e in after)


# --- defect 12: the parentUuid chain, as Claude Code resumes it ----------------------------------


def _chain_session(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    builder = SessionBuilder().user("first " + BIG).assistant("one", usage=(3, 1_000, 50_000, 30))
    builder.user("second").assistant("two").user("third").assistant("three", usage=(3, 1_000, 60_000, 30))
    return builder.write(tmp_path / "s.jsonl"), builder.entries


def test_a_broken_chain_is_invalid_and_read_as_claude_code_resumes_it(tmp_path: Path) -> None:
    path, entries = _chain_session(tmp_path)
    # A tool dropped the entry "two" without relinking its child.
    del entries[3]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    [conv] = load_transcript(path).conversations
    assert [m.content[0]["text"] for m in conv.messages] == ["third", "three"]
    result = run_cli("check", path)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "line 4" in result.stdout + result.stderr and "parentUuid" in result.stdout + result.stderr


def test_an_unreachable_tail_is_invalid(tmp_path: Path) -> None:
    path, entries = _chain_session(tmp_path)
    stray = {**entries[-1], "uuid": "99999999-0000-4000-8000-000000000009", "parentUuid": entries[1]["uuid"]}
    stray["message"] = {**stray["message"], "id": "msg_stray"}
    stray["timestamp"] = "2026-01-01T00:00:00.000Z"  # older than the leaf: not resumed
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(stray) + "\n")
    result = run_cli("check", path)
    assert result.exit_code == 2
    assert "line 7" in result.stdout + result.stderr and "unreachable" in result.stdout + result.stderr


def test_a_whole_chain_checks_clean(tmp_path: Path) -> None:
    path, _ = _chain_session(tmp_path)
    assert "resume_chain" not in run_cli("check", path).stdout


# --- defect 11: a session being written ------------------------------------------------------------


def test_a_half_written_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    path, entries = _chain_session(tmp_path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entries[-1])[:60])  # Claude Code is writing the next entry
    result = run_cli("check", path)
    assert result.exit_code == 0, result.stderr
    assert "line 7" in result.stderr and "skipped" in result.stderr
    [row] = run_cli("count", path, "--json").json()["transcripts"]
    assert row["message_count"] == 6


def test_a_session_we_write_ends_with_a_newline(tmp_path: Path) -> None:
    """Claude Code appends its next entry right after the last byte: without a final newline it
    would be glued onto our last line."""
    path = _session(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    _compact(path)
    assert path.read_bytes().endswith(b"\n")
    small = SessionBuilder().user("hi").assistant("hello", usage=(5, 100, 0, 3)).write(tmp_path / "t.jsonl")
    small.write_bytes(small.read_bytes().rstrip(b"\n"))
    out = tmp_path / "out.jsonl"
    result = run_cli(
        "compact", small, "-o", out, "--auto", "--summarizer", "extractive", "--archive-dir", tmp_path
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == small.read_bytes() + b"\n"  # passed through, made appendable


# --- defect 4: Codex restored files do not pile up ------------------------------------------------


def _codex_reading_rollout(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    lines = [_rollout_line("session_meta", {"id": "s", "cwd": str(work)})]
    lines.append(_rollout_line("turn_context", {"cwd": str(work), "model": "gpt-5.5"}))
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "read " + BIG}]}
    lines.append(_rollout_line("response_item", ask))
    for n in range(3):
        (work / f"m{n}.py").write_text(f"VALUE_{n} = {n}\n" * 40, encoding="utf-8")
        args = json.dumps({"cmd": f"cat m{n}.py"})
        call = {"type": "function_call", "name": "exec_command", "arguments": args, "call_id": f"c{n}"}
        out = {"type": "function_call_output", "call_id": f"c{n}", "output": f"VALUE_{n} = {n}\n" * 40}
        lines += [_rollout_line("response_item", call), _rollout_line("response_item", out)]
    done = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "read"}]}
    lines.append(_rollout_line("response_item", done))
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _codex_restored(path: Path) -> int:
    [conv] = load_transcript(path).conversations
    return sum(
        1 for m in conv.messages for b in m.content if "[Restored after compact]" in str(b.get("text", ""))
    )


def test_codex_restored_files_do_not_pile_up(tmp_path: Path) -> None:
    path = _codex_reading_rollout(tmp_path)
    counts = []
    for _ in range(3):
        _compact(path)
        counts.append(_codex_restored(path))
        line = _rollout_line(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "more " + BIG}]},
        )
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
    assert counts == [3, 3, 3]


# --- defect 5: Codex offload references resolve from the session's folder ------------------------


def test_codex_offload_references_name_the_folder_from_the_session_s_cwd(tmp_path: Path) -> None:
    path = _codex_reading_rollout(tmp_path)
    store = tmp_path / "store"
    out = tmp_path / "out.jsonl"
    result = run_cli("offload", path, "-d", store, "--min-chars", "100", "-o", out)
    assert result.exit_code == 0, result.stderr
    outputs = [
        e["payload"]["output"] for e in _lines(out) if e["payload"].get("type") == "function_call_output"
    ]
    assert outputs and all(str(store) + "/tool-result-" in o for o in outputs), outputs[0][:200]


# --- defect 9: Codex's legacy shell tool, export, --format -----------------------------------------


def _legacy_shell_rollout(path: Path) -> Path:
    lines = [_rollout_line("session_meta", {"id": "s", "cwd": "/repo", "cli_version": "0.58.0"})]
    lines.append(_rollout_line("turn_context", {"cwd": "/repo", "model": "gpt-5-codex"}))
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it " + BIG}]}
    lines.append(_rollout_line("response_item", ask))
    runs = [
        ("pytest -q tests/test_a.py", 1, "FAILED tests/test_a.py::test_x - AssertionError\n1 failed"),
        ("cat src/a.py", 0, "def f():\n    return 1\n"),
        ("python -c 'import a'", 1, "ModuleNotFoundError: No module named 'a'"),
    ]
    for n, (script, code, text) in enumerate(runs):
        args = json.dumps({"command": ["bash", "-lc", script], "workdir": "/repo", "timeout_ms": 120_000})
        call = {"type": "function_call", "name": "shell", "arguments": args, "call_id": f"call_{n}"}
        envelope = json.dumps({"output": text, "metadata": {"exit_code": code, "duration_seconds": 0.4}})
        lines.append(_rollout_line("response_item", call))
        lines.append(
            _rollout_line(
                "response_item", {"type": "function_call_output", "call_id": f"call_{n}", "output": envelope}
            )
        )
    done = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Still failing."}],
    }
    lines.append(_rollout_line("response_item", done))
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_codex_legacy_shell_calls_and_their_failures_reach_the_summary(tmp_path: Path) -> None:
    path = _legacy_shell_rollout(tmp_path / "rollout.jsonl")
    result = run_cli("compact", path, "--summarizer", "extractive", "-q")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])["payload"]["message"]
    assert "shell(pytest -q tests/test_a.py)" in summary
    errors = summary.split("## Errors & Resolutions")[1]
    assert "1 failed" in errors and "ModuleNotFoundError" in errors
    assert "`src/a.py`" in summary.split("## File Operations")[1].split("##")[0]


def test_codex_export_names_its_compaction_points(tmp_path: Path) -> None:
    path = _legacy_shell_rollout(tmp_path / "rollout.jsonl")
    _compact(path)
    listing = run_cli("export", path, "--points").json()
    assert len(listing["points"]) == 1
    result = run_cli("export", path)
    assert "no compaction point" not in result.stderr


def test_forcing_claude_code_on_a_codex_rollout_is_refused(tmp_path: Path) -> None:
    path = _legacy_shell_rollout(tmp_path / "rollout.jsonl")
    result = run_cli("count", path, "--format", "claude-code")
    assert result.exit_code == 2
    assert "not a Claude Code session" in result.stderr


# --- defect 10: text-action agents (mini-swe-agent 1.x, SWE-agent) ----------------------------------


def _usage(prompt: int) -> dict[str, Any]:
    return {
        "response": {"model": "deepseek-chat", "usage": {"prompt_tokens": prompt, "completion_tokens": 40}}
    }


def _miniswe_text_trajectory(path: Path, *, usage: bool = True) -> Path:
    """A mini-swe-agent 1.x trajectory: actions in fenced bash blocks, outputs as user messages."""
    steps = [
        ("Let me look at the module.", "cat src/app.py", 0, "def main():\n    return 1\n" * 600),
        ("Fix the return value.", "sed -i 's/return 1/return 2/' src/app.py", 0, ""),
        ("Run it.", "python -c 'import app; app.main()'", 1, "ModuleNotFoundError: No module named 'app'"),
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "<pr_description>main() must return 2</pr_description> " + BIG},
    ]
    prompt = 3_000
    for thought, command, code, output in steps:
        reply = f"THOUGHT: {thought}\n\n```bash\n{command}\n```"
        messages.append(
            {"role": "assistant", "content": reply, **({"extra": _usage(prompt)} if usage else {})}
        )
        observation = f"<returncode>{code}</returncode>\n<output>\n{output}</output>"
        messages.append({"role": "user", "content": observation})
        prompt += 2_500
    info = {"config": {"model": {"model_name": "deepseek/deepseek-chat"}}, "exit_status": "Submitted"}
    body = {
        "info": info,
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
        "instance_id": "x__y-1",
    }
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")
    return path


def test_a_mini_swe_text_trajectory_is_read_as_commands_and_outputs(tmp_path: Path) -> None:
    path = _miniswe_text_trajectory(tmp_path / "t.traj.json")
    [row] = run_cli("count", path, "--json").json()["transcripts"]
    assert row["dialect"] == "text-action"
    assert row["context"]["source"] == "recorded"
    assert row["by_type"]["tool_result"] > 1_000  # the outputs, as tool results
    result = run_cli("compact", path, "--summarizer", "extractive", "-q")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    summary = next(m["content"] for m in out["messages"] if "## Errors" in str(m.get("content")))
    assert "bash(cat src/app.py)" in summary or "cat src/app.py" in summary
    assert "`src/app.py`" in summary.split("## File Operations")[1].split("##")[0]
    assert "ModuleNotFoundError" in summary.split("## Errors & Resolutions")[1]
    # What the model reads stays text: no tool_calls, no content blocks.
    assert all(isinstance(m["content"], str) and "tool_calls" not in m for m in out["messages"])


def test_a_text_action_trajectory_prunes_its_outputs_and_restores_its_files(tmp_path: Path) -> None:
    path = _miniswe_text_trajectory(tmp_path / "t.traj.json", usage=False)
    result = run_cli(
        "compact",
        path,
        "--strategy",
        "prune",
        "--include-loop",
        "--keep",
        "1",
        "-w",
        "8000",
        "--output-reserve",
        "1000",
        "-q",
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    observation = out["messages"][3]["content"]
    assert isinstance(observation, str) and "cleared" in observation and len(observation) < 200
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 2\n", encoding="utf-8")
    restored = run_cli("restore-files", path, "--work-dir", tmp_path, "-q")
    assert restored.exit_code == 0, restored.stderr
    assert "return 2" in restored.stdout


def test_swe_agent_trajectories_are_read() -> None:
    for path in corpus_files("other"):
        if path.suffix != ".traj":
            continue
        [row] = run_cli("count", path, "--json").json()["transcripts"]
        assert row["dialect"] == "text-action" and row["total"] > 1_000
        assert run_cli("check", path).exit_code in (0, 1)


# --- defect 13: lines we did not change stay byte for byte ------------------------------------------


def test_a_rewrite_keeps_the_spelling_of_the_lines_it_did_not_change(tmp_path: Path) -> None:
    path = _codex_reading_rollout(tmp_path)
    # Not the compact JSON spelling: spaces after separators, non-ASCII escaped.
    records = _lines(path)
    records[2]["payload"]["content"][0]["text"] += " café"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert run_cli("offload", path, "-d", tmp_path / "store", "--min-chars", "100", "-o", out).exit_code == 0
    before = path.read_bytes().splitlines()
    after = out.read_bytes().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    outputs = [i for i, r in enumerate(records) if r["payload"].get("type") == "function_call_output"]
    assert changed == outputs


def test_offload_undo_gives_back_a_minified_body_byte_for_byte(tmp_path: Path) -> None:
    big = "line of output\n" * 400
    messages = [
        {"role": "user", "content": "run it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big}]},
    ]
    path = tmp_path / "body.json"
    path.write_bytes(
        json.dumps({"model": "claude-sonnet-4-5", "messages": messages}, separators=(",", ":")).encode()
    )
    store, lean, back = tmp_path / "store", tmp_path / "lean.json", tmp_path / "back.json"
    assert run_cli("offload", path, "-d", store, "-o", lean).exit_code == 0
    assert b"\n" not in lean.read_bytes().strip()
    assert run_cli("offload", "--undo", lean, "-d", store, "-o", back).exit_code == 0
    assert back.read_bytes() == path.read_bytes()


def test_a_local_command_entry_is_sent_as_claude_code_sends_it(tmp_path: Path) -> None:
    builder = SessionBuilder().user("first task").assistant("done", usage=(3, 1_000, 20_000, 30))
    last = builder.entries[-1]
    command = {
        **{k: last[k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version")},
        "parentUuid": last["uuid"],
        "type": "system",
        "subtype": "local_command",
        "content": "<command-name>/cost</command-name>\n<local-command-stdout>Total cost: $0.42</local-command-stdout>",
        "level": "info",
        "uuid": "22222222-0000-4000-8000-000000000001",
        "timestamp": "2026-01-02T11:00:00.000Z",
        "isMeta": False,
    }
    builder.entries.append(command)
    builder._parent = command["uuid"]
    builder.user("next task").assistant("ok")
    path = builder.write(tmp_path / "s.jsonl")
    [conv] = load_transcript(path).conversations
    texts = [b.get("text", "") for m in conv.messages for b in m.content]
    assert any("Total cost: $0.42" in t for t in texts)
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]


def test_keep_loop_on_a_session_that_is_all_one_loop_writes_nothing(tmp_path: Path) -> None:
    """One request, then a long tool loop: --keep-loop would summarize a sliver and append a
    copy of the whole loop (a Codex rollout grew 78 %)."""
    path = _codex_reading_rollout(tmp_path)
    records = _lines(path)
    records[2]["payload"]["content"][0]["text"] = "read the modules"
    hello = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}
    hi = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    records[2:2] = [_rollout_line("response_item", hello), _rollout_line("response_item", hi)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    before = path.read_bytes()
    out = tmp_path / "out.jsonl"
    stats = tmp_path / "stats.json"
    result = run_cli(
        "compact", path, "--keep-loop", "--summarizer", "extractive", "-o", out, "--stats-json", stats
    )
    assert result.exit_code == 0, result.stderr
    assert any("--keep-loop leaves too little" in w for w in json.loads(stats.read_text())["warnings"])
    assert out.read_bytes() == before


def test_the_last_leaf_in_the_file_is_resumed_whatever_its_timestamp(tmp_path: Path) -> None:
    """The real client resumes our second compaction, written last but stamped earlier than the
    turn it resumed (SOURCE_DATE_EPOCH fixes our time): so does our reader."""
    path = _reading_session(tmp_path)
    fixed = {"SOURCE_DATE_EPOCH": "1767225600"}  # 2026-01-01, before the resumed turn below
    archive = tmp_path / "archive"
    args = ["compact", path, "-i", "--force", "--summarizer", "extractive", "--archive-dir", archive]
    assert run_cli(*args, env=fixed).exit_code == 0
    _resume_turn(path, "go on " + BIG, (7, 2_000, 9_000, 50))
    assert run_cli(*args, env=fixed).exit_code == 0
    [conv] = load_transcript(path).conversations
    boundary = max(i for i, e in enumerate(_lines(path)) if e.get("subtype") == "compact_boundary")
    assert all(i > boundary for m in conv.messages if m.source for i in m.source.indices)
    assert "resume_chain" not in run_cli("check", path).stdout


def test_a_second_compaction_of_a_re_rooted_session_restores_its_files(tmp_path: Path) -> None:
    """``--path-map /=ROOT``: the first compaction restores the files under ROOT and names them
    so; the second must not root them twice."""
    root = tmp_path / "root"
    builder = SessionBuilder(cwd="/proj").user("read the modules " + BIG)
    for n in range(2):
        source = root / "proj" / f"m{n}.py"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"VALUE_{n} = {n}\n", encoding="utf-8")
        builder.tool_call("Read", {"file_path": f"/proj/m{n}.py"}, source.read_text(), call_id=f"toolu_{n}")
    builder.assistant("read them", usage=(3, 1_000, 141_000, 30))
    path = builder.write(tmp_path / "s.jsonl")
    for _ in range(2):
        stats = tmp_path / "stats.json"
        _compact(path, "--path-map", f"/={root}", "--stats-json", stats)
        assert json.loads(stats.read_text())["restored_file_count"] == 2


# --- properties of the chain reader -------------------------------------------------------------


@given(st.lists(st.sampled_from(["turn", "tool", "parallel"]), min_size=1, max_size=8), st.data())
@settings(max_examples=40, deadline=None)
def test_a_whole_chain_reads_as_its_lines_and_a_cut_one_is_reported(
    steps: list[str], data: st.DataObject
) -> None:
    builder = SessionBuilder().user("start")
    for n, step in enumerate(steps):
        if step == "turn":
            builder.assistant(f"answer {n}").user(f"next {n}")
        elif step == "tool":
            builder.tool_call("Bash", {"command": f"echo {n}"}, f"{n}", call_id=f"toolu_{n}")
        else:  # one response, two calls: Claude Code chains the entries and branches the results
            builder.tool_call("Bash", {"command": f"ls {n}"}, "a", call_id=f"toolu_{n}a")
            call, result = builder.entries[-2], builder.entries[-1]
            builder.tool_call("Bash", {"command": f"ls {n}"}, "b", call_id=f"toolu_{n}b")
            builder.entries[-2]["message"]["id"] = call["message"]["id"]
            builder.entries[-2]["parentUuid"] = call["uuid"]
            result["parentUuid"] = call["uuid"]
    entries = builder.entries
    data_of = "".join(json.dumps(e) + "\n" for e in entries)
    [conv] = load_transcript(data=data_of, name="s.jsonl").conversations
    read = sorted(i for m in conv.messages if m.source for i in m.source.indices)
    assert read == list(range(len(entries))) and not conv.problems
    # Cut an entry the resumed chain passes through (not the first, not the last).
    by_uuid = {e["uuid"]: e for e in entries}
    chain, at = [], entries[-1]
    while at is not None:
        chain.append(at)
        at = by_uuid.get(at["parentUuid"]) if at["parentUuid"] else None
    inner = chain[1:-1]
    if not inner:
        return
    cut = data.draw(st.sampled_from(inner))
    kept = [e for e in entries if e is not cut]
    [conv] = load_transcript(data="".join(json.dumps(e) + "\n" for e in kept), name="s.jsonl").conversations
    assert conv.problems and "broken parentUuid chain" in conv.problems[0]


def test_text_action_commands_and_failures_are_probes(tmp_path: Path) -> None:
    from ctxcompact.evaluation.probes import extract_probes

    path = _miniswe_text_trajectory(tmp_path / "t.traj.json")
    [conv] = load_transcript(path).conversations
    probes = {(p.kind, p.text) for p in extract_probes(conv.messages)}
    assert ("path", "src/app.py") in probes
    assert any(kind == "error" and "ModuleNotFoundError" in text for kind, text in probes)
