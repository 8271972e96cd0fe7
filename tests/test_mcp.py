"""``ctxcompact mcp``: the MCP SDK's own client talks to our server over stdio."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli
from conftest import CORPUS, SAMPLES, requires_corpus

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

TOOLS = {"list_sessions", "count_session", "check_session", "dry_run_compaction", "export_context"}


def server_params(tmp_path: Path) -> StdioServerParameters:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_")) and k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")
    }
    env["HOME"] = str(tmp_path)  # ~/.claude/projects and ~/.codex/sessions are the test's
    return StdioServerParameters(
        command=sys.executable, args=["-m", "ctxcompact", "mcp"], env=env, cwd=str(tmp_path)
    )


def session_home(tmp_path: Path, source: Path) -> Path:
    """A Claude Code home holding ``source`` as a session of one project."""
    project = tmp_path / ".claude" / "projects" / "-home-u-app"
    project.mkdir(parents=True)
    session = project / "11111111-2222-4333-8444-555555555555.jsonl"
    shutil.copyfile(source, session)
    return session


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        value = result.structured_content
        return value.get("result", value) if isinstance(value, dict) and set(value) == {"result"} else value
    return json.loads(result.content[0].text)


def call_all(tmp_path: Path, session: Path) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with Client(server_params(tmp_path), read_timeout_seconds=120) as client:
            listed = await client.list_tools()
            out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
            out["list"] = structured(await client.call_tool("list_sessions", {}))
            out["count"] = structured(await client.call_tool("count_session", {"session": session.stem}))
            out["check"] = structured(
                await client.call_tool("check_session", {"session": str(session), "model": "gpt-4"})
            )
            out["dry"] = structured(await client.call_tool("dry_run_compaction", {"session": str(session)}))
            out["export"] = structured(await client.call_tool("export_context", {"session": session.stem}))
            out["bad"] = await client.call_tool("count_session", {"session": "no-such-session"})
            return out

    return anyio.run(main)


def check_answers(out: dict[str, Any], session: Path) -> None:
    assert set(out["tools"]) == TOOLS
    assert out["tools"]["count_session"].input_schema["required"] == ["session"]
    [row] = out["list"]["sessions"]
    assert row["path"] == str(session) and row["agent"] == "claude-code"
    count = out["count"]
    assert count["total"] > 0 and count["transcripts"][0]["by_role"]
    assert (
        out["check"]["needs_compaction"] is True
        and out["check"]["transcripts"][0]["budget"]["model"] == "gpt-4"
    )
    dry = out["dry"]
    assert dry["strategy"] == "full" and dry["tokens_after"] < dry["tokens_before"]
    assert dry["total"] >= dry["kept"] >= 0 and isinstance(dry["lost"], list)
    assert isinstance(out["export"]["context"], list) and out["export"]["context"]
    assert (
        out["bad"].is_error and "no Claude Code or Codex session with that id" in out["bad"].content[0].text
    )


def test_the_sdk_client_lists_and_calls_every_tool(tmp_path: Path) -> None:
    session = session_home(tmp_path, SAMPLES / "claude-code-session.jsonl")
    before = session.read_bytes()
    check_answers(call_all(tmp_path, session), session)
    assert session.read_bytes() == before


@requires_corpus
@pytest.mark.corpus
def test_every_tool_on_a_corpus_session(tmp_path: Path) -> None:
    session = session_home(tmp_path, CORPUS / "claude-code" / "codemie-624a4a58-compact.jsonl")
    before = session.read_bytes()
    out = call_all(tmp_path, session)
    check_answers(out, session)
    # The corpus session was compacted by Claude Code: the export starts at its summary.
    first = out["export"]["context"][0]
    assert "continued from a previous conversation" in json.dumps(first)
    assert session.read_bytes() == before


def test_without_the_sdk_the_command_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")] or ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the extra were not installed
    monkeypatch.delitem(sys.modules, "ctxcompact.cli.mcp_server", raising=False)
    out = run_cli("mcp")
    assert out.exit_code == 2 and "pip install 'ctxcompact[mcp]'" in out.stderr
