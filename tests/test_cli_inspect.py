"""``ctxcompact count`` and ``check`` end to end: stdout, stderr and exit codes kept apart.

``run_cli`` (tests/cli_helpers.py: Typer's ``CliRunner``, ``stdout`` and ``stderr`` kept
separate) runs the app in-process; what needs a fresh interpreter (imports, closed pipes) runs
``python -m ctxcompact`` in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import plain_rows, run_cli
from fake_anthropic import COUNT_TOKENS_PATH, FakeAnthropicServer, Reply

from ctxcompact import __version__
from ctxcompact.accounting.check import count_message_tokens
from ctxcompact.accounting.context_size import CLAUDE_TOKEN_FACTOR


def run_json(*args: str | Path, input: bytes | str | None = None, code: int = 0) -> dict[str, Any]:
    result = run_cli(*args, "--json", input=input)
    assert result.exit_code == code, result.stderr
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def write(path: Path, value: Any) -> Path:
    path.write_bytes(orjson.dumps(value))
    return path


SESSION = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Why does the build fail?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/build.py"}},
            {"type": "tool_use", "id": "t2", "name": "run_command", "input": {"cmd": "make"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "def build():\n    return compile_all()\n" * 30,
            },
            {"type": "tool_result", "tool_use_id": "t2", "content": "error: missing header foo.h"},
        ],
    },
    {"role": "assistant", "content": "The header foo.h is missing from the include path."},
]


@pytest.fixture(autouse=True)
def _short_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Work in the temp dir so labels are short relative paths (Rich wraps lines at 100)."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def session() -> Path:
    return write(Path("session.json"), SESSION)


def long_session(turns: int) -> list[dict[str, Any]]:
    """SESSION's tool loop repeated with unique tool ids (a valid, larger transcript)."""
    records: list[dict[str, Any]] = [SESSION[0]]
    for n in range(turns):
        records.append({"role": "user", "content": f"Step {n}: why does the build fail?"})
        records.append(
            {
                **SESSION[2],
                "content": [{**b, "id": f"{b['id']}-{n}"} if "id" in b else b for b in SESSION[2]["content"]],
            }
        )
        records.append(
            {
                **SESSION[3],
                "content": [{**b, "tool_use_id": f"{b['tool_use_id']}-{n}"} for b in SESSION[3]["content"]],
            }
        )
        records.append(SESSION[4])
    return records


# --- count -------------------------------------------------------------------------------------


def test_count_table(session: Path) -> None:
    expected = count_message_tokens(SESSION, counter="estimate")
    result = run_cli("count", session, "--counter", "estimate", "--model", "claude-sonnet-4-5")
    assert result.exit_code == 0
    assert result.stderr == ""
    out = result.stdout
    assert f"{session}  anthropic · 5 messages · counter estimate" in out
    # The headline is the size check decides by (a calibrated estimate for a Claude model);
    # our own count stands beside it.
    estimate = round(expected.total * CLAUDE_TOKEN_FACTOR)
    assert f"context {estimate:,} tokens" in out and f"our count {expected.total:,}" in out
    assert "of claude-sonnet-4-5's 200,000-token window" in out
    for title in ("By role", "By block type", "Largest messages (top 10)", "Largest tool results (top 10)"):
        assert title in out
    assert {row[0] for row in plain_rows(out, "role ")} == {"user", "assistant", "system"}
    assert {"tool_result", "tool_use", "text", "overhead"} <= {
        row[0] for row in plain_rows(out, "block type ")
    }
    biggest = expected.largest_tool_results(1)[0]
    row = next(line for line in out.splitlines() if "read_file" in line and "def build()" in line)
    assert f"{biggest.tokens:,}" in row
    assert "run_command" in out


def test_count_json_schema(session: Path) -> None:
    data = run_json("count", session, "--model", "gpt-4o", "--top", "2")
    assert set(data) == {"version", "total", "transcripts"} and data["version"] == 1
    [row] = data["transcripts"]
    assert set(row) == {
        "label",
        "dialect",
        "counter",
        "encoding",
        "tokenizer",
        "total",
        "exact_total",
        "per_message_approximate",
        "message_count",
        "by_role",
        "by_type",
        "largest_messages",
        "largest_tool_results",
        "model",
        "context_window",
        "window_share",
        "context",
        "breakdown",
    }
    assert (row["label"], row["dialect"], row["counter"], row["encoding"]) == (
        str(session),
        "anthropic",
        "tiktoken",
        "cl100k_base",
    )
    assert row["tokenizer"] in ("tiktoken", "bpe-openai")  # the library that counted
    assert row["total"] == data["total"] == sum(row["by_role"].values()) == sum(row["by_type"].values())
    assert row["message_count"] == 5
    assert (row["model"], row["context_window"]) == ("gpt-4o", 128_000)
    assert row["window_share"] == round(row["total"] / 128_000, 4)
    assert len(row["largest_messages"]) == 2
    assert set(row["largest_messages"][0]) == {"index", "role", "tokens", "preview"}
    assert row["largest_messages"][0]["index"] == 3
    [first, second] = row["largest_tool_results"]
    assert set(first) == {"message_index", "tool_use_id", "tool_name", "tokens", "preview"}
    assert (first["tool_name"], first["tool_use_id"], first["message_index"]) == ("read_file", "t1", 3)
    assert first["tokens"] > second["tokens"]
    assert first["preview"].startswith("def build(): return compile_all()")


def test_count_without_model_has_no_window_fields(session: Path) -> None:
    row = run_json("count", session)["transcripts"][0]
    assert "context_window" not in row


def test_several_files_give_a_row_each_and_a_total(session: Path) -> None:
    other = write(Path("other.json"), SESSION[:2])
    data = run_json("count", session, other, "--counter", "estimate")
    assert [t["label"] for t in data["transcripts"]] == [str(session), str(other)]
    assert data["total"] == sum(t["total"] for t in data["transcripts"])

    table = run_cli("count", session, other, "--counter", "estimate").stdout
    assert "Tokens per transcript" in table
    rows = {row[0]: row for row in plain_rows(table, "transcript ")}
    assert set(rows) == {str(session), str(other), "total"}
    assert rows["total"][-1] == f"{data['total']:,}"


def test_directories_expand_to_their_transcripts(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    (folder / "nested").mkdir(parents=True)
    write(folder / "b.json", SESSION)
    (folder / "a.jsonl").write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in SESSION[:2]))
    write(folder / "nested" / "c.json", SESSION[:1])
    (folder / "notes.txt").write_text("not a transcript", encoding="utf-8")
    data = run_json("count", folder, "--counter", "estimate")
    names = [Path(t["label"]).relative_to(folder).as_posix() for t in data["transcripts"]]
    assert names == ["a.jsonl", "b.json", "nested/c.json"]

    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("count", empty)
    assert result.exit_code == 2
    assert "directory has no .json or .jsonl files" in result.stderr


def test_stdin_with_no_path_and_with_dash() -> None:
    data = orjson.dumps(SESSION)
    for args in (("count",), ("count", "-")):
        out = run_json(*args, "--counter", "estimate", input=data)
        assert out["transcripts"][0]["label"] == "<stdin>"
        assert out["transcripts"][0]["message_count"] == 5


def test_format_option_forces_the_dialect(session: Path, tmp_path: Path) -> None:
    plain = write(
        tmp_path / "plain.json", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    )
    assert run_json("count", plain, "--format", "openai")["transcripts"][0]["dialect"] == "openai"
    # Anthropic tool blocks read as OpenAI would be a mix no API accepts (issue 23, defect 10).
    assert run_cli("count", session, "--format", "openai").exit_code == 2
    result = run_cli("count", session, "--format", "gemini")
    assert result.exit_code == 2
    assert "gemini" in result.stderr


def test_empty_list_counts_zero_tokens(tmp_path: Path) -> None:
    path = write(tmp_path / "empty.json", [])
    data = run_json("count", path)
    assert data["total"] == 0
    assert data["transcripts"][0]["message_count"] == 0
    check = run_cli("check", path, "--model", "gpt-4o")
    assert check.exit_code == 0


def test_unknown_model_warns_on_stderr_and_keeps_stdout_clean(session: Path) -> None:
    result = run_cli("count", session, "--model", "my-local-llm", "--json")
    assert result.exit_code == 0
    warning = (
        "warning: unknown model (my-local-llm): assuming a 96,000-token window; pass --model or "
        "--context-window, or add it with --models-file."
    )
    assert result.stderr == warning + "\n"  # one warning, worded as check and compact word it
    assert orjson.loads(result.stdout)["transcripts"][0]["context_window"] == 96_000

    check = run_cli("check", session, "--model", "my-local-llm")
    assert check.exit_code == 0
    assert warning in check.stderr
    assert "(unknown: default window)" in check.stdout


def test_uncached_encoding_is_a_clear_error(session: Path, tmp_path: Path) -> None:
    cache = tmp_path / "empty-cache"
    cache.mkdir()
    result = run_cli("count", session, "--encoding", "o200k_base", env={"TIKTOKEN_CACHE_DIR": str(cache)})
    assert result.exit_code == 2
    assert "tiktoken encoding 'o200k_base' is not available offline" in result.stderr
    assert result.stdout == ""


def test_count_with_the_exact_anthropic_counter(session: Path, fake_api: FakeAnthropicServer) -> None:
    fake_api.enqueue(Reply(body={"input_tokens": 4321}), path=COUNT_TOKENS_PATH)
    env = {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake_api.base_url}
    result = run_cli(
        "count", session, "--counter", "anthropic", "--model", "claude-sonnet-4-5", "--json", env=env
    )
    assert result.exit_code == 0, result.stderr
    row = orjson.loads(result.stdout)["transcripts"][0]
    assert (row["total"], row["counter"], row["exact_total"], row["per_message_approximate"]) == (
        4321,
        "anthropic",
        True,
        True,
    )
    [request] = fake_api.requests_to(COUNT_TOKENS_PATH)
    assert request.body["model"] == "claude-sonnet-4-5"
    assert request.body["system"] == "You are a coding agent."
    assert "test-key" not in result.stdout + result.stderr

    table = run_cli("count", session, "--counter", "anthropic", env=env)
    assert "exact total; parts approximate" in table.stdout


def test_exact_counter_without_a_key(session: Path) -> None:
    result = run_cli("count", session, "--counter", "anthropic")
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.stderr


# --- check -------------------------------------------------------------------------------------


def test_check_within_budget_exits_0(session: Path) -> None:
    result = run_cli("check", session, "--model", "claude-sonnet-4-5")
    assert result.exit_code == 0
    assert result.stderr == ""
    out = result.stdout
    assert "claude-sonnet-4-5" in out
    assert "window 200,000" in out
    assert "output reserve 32,000" in out
    assert "ratio 0.6 (cost-first)" in out
    assert "threshold 100,800" in out
    assert "within budget" in out
    assert "tokens left before the threshold" in out
    assert "[█" in out or "[░" in out  # the usage bar


def test_check_over_threshold_exits_1(session: Path) -> None:
    result = run_cli(
        "check", session, "--context-window", "300", "--output-reserve", "0", "--threshold", "0.4"
    )
    assert result.exit_code == 1
    assert "compaction needed" in result.stdout
    assert "tokens over the threshold" in result.stdout


def test_check_json(session: Path) -> None:
    data = run_json("check", session, "--model", "gpt-4o", "--threshold", "0.75")
    [row] = data["transcripts"]
    budget = row["budget"]
    assert budget["model"] == "gpt-4o"
    assert (budget["model_known"], budget["model_match"]) == (True, "exact")
    assert (budget["context_window"], budget["output_reserve"], budget["ratio"]) == (128_000, 32_000, 0.75)
    assert budget["strategy"] == "balanced"
    assert budget["threshold"] == 72_000
    assert (data["needs_compaction"], data["valid"]) == (False, True)
    assert row["remaining"] == 72_000 - row["tokens"]
    assert row["violations"] == []
    over = run_json("check", session, "-w", "300", "--output-reserve", "0", code=1)
    assert over["needs_compaction"] is True
    assert over["transcripts"][0]["remaining"] < 0


@pytest.mark.parametrize("ratio", ["0.39", "0.91", "1.5"])
def test_threshold_out_of_range_exits_2(session: Path, ratio: str) -> None:
    result = run_cli("check", session, "--threshold", ratio)
    assert result.exit_code == 2
    assert f"--threshold must be between 0.4 and 0.9, got {float(ratio)}" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("ratio", ["0.4", "0.9"])
def test_threshold_bounds_are_accepted(session: Path, ratio: str) -> None:
    assert run_cli("check", session, "--threshold", ratio, "-m", "gpt-4o").exit_code == 0


def test_check_validation_errors_exit_2_unless_disabled(tmp_path: Path) -> None:
    broken = write(
        tmp_path / "broken.json",
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zzz", "content": "?"}]},
            {"role": "assistant", "content": "ok"},
        ],
    )
    result = run_cli("check", broken, "-m", "gpt-4o")
    assert result.exit_code == 2
    assert "error: message 2: tool_result zzz answers no tool_use" in result.stdout
    assert "[unanswered_tool_use]" in result.stdout
    data = run_json("check", broken, "-m", "gpt-4o", code=2)
    assert data["valid"] is False
    assert {v["code"] for v in data["transcripts"][0]["violations"]} == {
        "orphan_tool_result",
        "unanswered_tool_use",
    }
    assert run_cli("check", broken, "-m", "gpt-4o", "--no-validate").exit_code == 0


def test_check_several_files_exit_1_if_any_needs_compaction() -> None:
    small = write(Path("small.json"), SESSION[:2])
    big = write(Path("big.json"), [{"role": "user", "content": "word " * 2000}])
    data = run_json("check", small, big, "-w", "3000", "--output-reserve", "0", code=1)
    assert [t["needs_compaction"] for t in data["transcripts"]] == [False, True]


def test_a_registry_file_adds_models(tmp_path: Path, session: Path) -> None:
    models = tmp_path / "models.toml"
    models.write_text('"house-model" = 50000\n', encoding="utf-8")
    data = run_json("check", session, "-m", "house-model-v3", "--models-file", models)
    budget = data["transcripts"][0]["budget"]
    assert (budget["context_window"], budget["model_match"]) == (50_000, "prefix")
    bad = tmp_path / "bad.json"
    bad.write_text("{", encoding="utf-8")
    result = run_cli("check", session, "--models-file", bad)
    assert result.exit_code == 2
    assert "bad.json: not valid JSON" in result.stderr


# --- bad input ---------------------------------------------------------------------------------


def test_invalid_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'[{"role": "user", "content": "hi"},\n {"role": "assistant", "content": "x",}\n]')
    for command in ("count", "check"):
        result = run_cli(command, path)
        assert result.exit_code == 2
        assert result.stdout == ""
        assert f"ctxcompact: error: {path}: invalid JSON at line 2, column 39" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1  # one line, never wrapped mid-path


def test_message_without_role_names_its_index(tmp_path: Path) -> None:
    path = write(tmp_path / "norole.json", [{"role": "user", "content": "hi"}, {"content": "x"}])
    result = run_cli("count", path)
    assert result.exit_code == 2
    assert f"{path}: message 1 has no 'role'" in result.stderr


def test_truncated_jsonl_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        b'{"role": "user", "content": "a"}\n{"role": "assistant", "content": "b"}\n{"role": "user", "cont'
    )
    result = run_cli("check", path)
    assert result.exit_code == 2
    assert f"{path}: invalid JSON on line 3" in result.stderr
    assert "truncated" in result.stderr


def test_object_that_is_not_a_transcript(tmp_path: Path) -> None:
    path = write(tmp_path / "config.json", {"name": "x", "version": 2})
    result = run_cli("count", path)
    assert result.exit_code == 2
    assert (
        "expected a message array, a request body with 'messages', JSONL or a Claude Code session"
        in result.stderr
    )


def test_missing_file_and_invalid_stdin() -> None:
    result = run_cli("count", "no/such/file.json")
    assert result.exit_code == 2
    assert "no/such/file.json: no such file." in result.stderr
    result = run_cli("check", input=b"not json at all")  # count reads it as plain text
    assert result.exit_code == 2
    assert "<stdin>: invalid JSON at line 1, column 1" in result.stderr


# --- subprocess: imports, --version, closed pipes ----------------------------------------------

IMPORT_PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    from ctxcompact.cli import main
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    heavy = sorted(m for m in ("anthropic", "tiktoken", "tiktoken_ext") if m in sys.modules)
    print(f"\\nEXIT {code} HEAVY {heavy}")
    """
)


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ANTHROPIC_API_KEY", None)
    return env


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["count", "--help"], ["check", "--help"]])
def test_version_and_help_load_neither_anthropic_nor_tiktoken(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=python_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("EXIT 0 HEAVY []"), proc.stdout[-300:]
    if args == ["--version"]:
        assert proc.stdout.startswith(f"ctxcompact {__version__}\n")


def test_module_entry_point_prints_the_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ctxcompact", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env=python_env(),
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"ctxcompact {__version__}\n", "")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["count"], 0),
        (["count", "--json"], 0),
        (["check", "-m", "gpt-4o"], 0),
        (["check", "-w", "4000", "--output-reserve", "0", "--json"], 1),
    ],
    ids=["count-table", "count-json", "check-table", "check-json-over"],
)
def test_a_closed_pipe_exits_quietly_with_the_commands_own_status(
    tmp_path: Path, args: list[str], code: int
) -> None:
    """``ctxcompact count big.json | head -1``: no traceback, no 'Exception ignored', and the
    exit status is the command's (``check`` keeps its verdict), not an artefact of the pipe."""
    path = write(tmp_path / "big.json", long_session(40))
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxcompact", args[0], str(path), *args[1:], "--counter", "estimate"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=python_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == code, err
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert "BrokenPipe" not in err


def test_check_on_many_conversations_prints_one_row_each(tmp_path: Path) -> None:
    collection = [{"task_id": i, "traj": [{"role": "user", "content": f"task {i}"}]} for i in range(6)]
    path = tmp_path / "trajs.json"
    path.write_bytes(orjson.dumps(collection))
    result = run_cli("check", str(path), "--model", "gpt-4o")
    assert result.exit_code == 0, result.stderr
    assert "6 transcripts" in result.stdout and "0 need compaction" in result.stdout
    assert result.stdout.count("within budget") == 6
    rows = plain_rows(result.stdout, "transcript ")  # rows, not one panel per conversation
    assert len(rows) == 7 and rows[-1][0] == "6 transcripts"


def test_check_flags_a_thinking_request_that_ends_with_a_plain_assistant_turn(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Understood."}],
    }
    path = tmp_path / "req.json"
    path.write_bytes(orjson.dumps(body))
    result = run_cli("check", str(path))
    assert result.exit_code == 2
    assert "assistant_last_with_thinking" in result.stdout
    body["messages"][1] = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "…", "signature": "s"}],
    }
    path.write_bytes(orjson.dumps(body))
    assert run_cli("check", str(path)).exit_code == 0  # a pause_turn continuation is fine


def test_count_over_a_directory_reports_bad_files_and_counts_the_rest(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_bytes(orjson.dumps([{"role": "user", "content": "hello there"}]))
    (tmp_path / "bad.json").write_text("[{")
    (tmp_path / "offload-manifest.json").write_text('{"format": "ctxcompact-offload-manifest", "files": {}}')
    result = run_cli("count", str(tmp_path), "--json")
    assert result.exit_code == 2
    assert "bad.json: invalid JSON" in result.stderr and "offload-manifest" not in result.stderr
    data = orjson.loads(result.stdout)
    assert [t["label"] for t in data["transcripts"]] == [str(tmp_path / "good.json")]


def test_count_json_does_not_import_rich() -> None:
    """--json renders nothing: the terminal library stays unloaded (start-up is most of a count)."""
    code = (
        "import sys, runpy; sys.argv = ['ctxcompact', 'count', sys.argv[1], '--json', '--counter', 'estimate']\n"
        "try:\n    runpy.run_module('ctxcompact', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "print('RICH' if any(m == 'rich' or m.startswith('rich.') for m in sys.modules) else 'NO-RICH', file=sys.stderr)"
    )
    sample = Path(__file__).resolve().parent.parent / "sample_transcripts" / "openai-chat.json"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(sample)], capture_output=True, text=True, timeout=60
    )
    assert "NO-RICH" in proc.stderr, proc.stderr
    assert orjson.loads(proc.stdout)["total"] > 0


def test_check_of_several_files_reports_each_ones_budget(tmp_path: Path) -> None:
    """Each input is decided against its own model's budget, and says so (the report used to
    carry one budget, the last input's, for every file)."""
    small = tmp_path / "small.json"
    large = tmp_path / "large.json"
    small.write_text(json.dumps({"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}))
    large.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
    data = run_json("check", small, large)
    budgets = [(t["budget"]["model"], t["budget"]["context_window"]) for t in data["transcripts"]]
    assert budgets == [("gpt-4", 8_192), ("gpt-4o", 128_000)]
    text = run_cli("check", small, large).stdout
    assert text.count("model gpt-4 ") == 1 and text.count("model gpt-4o ") == 1
