"""``ctxcompact sessions``: the sessions under a folder, sized as ``check`` would size them.

Never reads the real home: every test passes DIR or sets HOME to a temporary folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import plain_rows, run_cli
from conftest import CORPUS
from session_builders import SessionBuilder
from test_codex import ROLLOUTS, item, line, sample, token_count, user

from ctxcompact.accounting.check import budget_for, check_conversation
from ctxcompact.accounting.sessions import list_sessions, session_files
from ctxcompact.accounting.tokens import make_counter
from ctxcompact.transcripts.io import load_transcript

BIG = "lorem ipsum dolor sit amet " * 300


def _projects(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    # Over: its last usage says 141,003 + 456; within: 20,005 + 5; then one after a /compact.
    SessionBuilder(cwd="/home/u/app").user("fix").assistant("ok", usage=(3, 1_000, 140_000, 456)).write(
        root / "-home-u-app" / "over.jsonl"
    )
    small = SessionBuilder(cwd="/home/u/lib").user("hi").assistant("hello", usage=(5, 20_000, 0, 5))
    small.user(BIG)  # counted after the usage
    small.write(root / "-home-u-lib" / "small.jsonl")
    compacted = SessionBuilder(cwd="/home/u/lib").user("a").assistant("b", usage=(1, 150_000, 0, 1))
    compacted.boundary().boundary().user("go").assistant("ok", usage=(2, 9_000, 0, 10))
    compacted.write(root / "-home-u-lib" / "compacted.jsonl")
    # A subagent run is not a session of its own.
    SessionBuilder().user("sub").write(root / "-home-u-app" / "over" / "subagents" / "agent-1.jsonl")
    return root


def test_lists_every_session_with_its_live_size(tmp_path: Path) -> None:
    rows = {Path(r.path).stem: r for r in list_sessions(_projects(tmp_path))}
    assert set(rows) == {"over", "small", "compacted"}
    over, small, compacted = rows["over"], rows["small"], rows["compacted"]
    assert (over.tokens, over.source, over.over_threshold, over.project) == (
        141_459,
        "recorded",
        True,
        "/home/u/app",
    )
    assert over.threshold == 100_800 and over.model == "claude-sonnet-4-5-20250929"
    assert small.source == "recorded" and not small.over_threshold
    assert small.tokens > 20_010 + 1_000  # our count of the message after the usage is added
    assert (compacted.compactions, compacted.tokens) == (2, 9_012)


def test_sizes_agree_with_check(tmp_path: Path) -> None:
    counter = make_counter()
    for row in list_sessions(_projects(tmp_path)):
        [conv] = load_transcript(row.path).conversations
        checked = check_conversation(conv, budget=budget_for(conv), counter=counter)
        assert (row.tokens, row.source) == (
            checked.status.tokens,
            checked.size.source if checked.size else "",
        )


def test_a_session_with_no_usage_is_estimated(tmp_path: Path) -> None:
    SessionBuilder().user("hello").assistant("hi").write(tmp_path / "p" / "plain.jsonl")
    [row] = list_sessions(tmp_path)
    assert row.source == "estimate" and row.tokens > 24_000
    [zero] = list_sessions(tmp_path, system_tokens=0)
    assert zero.tokens == row.tokens - 24_000


def test_an_unreadable_file_is_listed_with_its_error(tmp_path: Path) -> None:
    root = _projects(tmp_path)
    (root / "-home-u-app" / "broken.jsonl").write_text('{"type": "user", "message": 3}\n[1,\n')
    rows = {Path(r.path).stem: r for r in list_sessions(root)}
    assert rows["broken"].error and not rows["broken"].over_threshold
    assert rows["over"].over_threshold


def test_cli_table_json_and_over(tmp_path: Path) -> None:
    root = _projects(tmp_path)
    table = run_cli("sessions", root)
    assert table.exit_code == 0, table.stderr
    # Piped: plain text, one line per session, whole cells.
    rows = plain_rows(table.stdout, "agent ")
    assert [row[0] for row in rows[:3]] == ["claude"] * 3 and "/home/u/app" in {row[1] for row in rows}
    assert rows[3] == ["3 sessions", "$0.72", "1 over"]  # the estimated cost of the three
    data = run_cli("sessions", root, "--json").json()["sessions"]
    assert isinstance(data, list) and len(data) == 3
    assert {Path(d["path"]).stem for d in data} == {"over", "small", "compacted"}
    assert all(Path(d["path"]).is_file() for d in data)
    [over] = run_cli("sessions", root, "--json", "--over").json()["sessions"]
    assert over["path"].endswith("over.jsonl") and over["over_threshold"] is True
    # A bigger budget: nothing is over.
    assert (
        run_cli("sessions", root, "--json", "--over", "--context-window", "1000000").json()["sessions"] == []
    )


def test_default_folder_is_claude_projects_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = run_cli("sessions", env={"HOME": str(home)})
    assert missing.exit_code == 2 and ".claude/projects" in missing.stderr
    shutil.copytree(_projects(tmp_path), home / ".claude" / "projects")
    data = run_cli("sessions", "--json", env={"HOME": str(home)}).json()["sessions"]
    assert len(data) == 3 and all(d["path"].startswith(str(home)) for d in data)


def test_session_files_skip_subagents_and_hidden_folders(tmp_path: Path) -> None:
    root = _projects(tmp_path)
    (root / ".cache").mkdir()
    (root / ".cache" / "x.jsonl").write_text("{}\n")
    assert sorted(p.stem for p in session_files(root)) == ["compacted", "over", "small"]


CC = CORPUS / "claude-code"


@pytest.mark.skipif(not CC.is_dir(), reason="corpus not present")
def test_corpus_sessions_match_check(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-corpus"
    root.mkdir(parents=True)
    for path in sorted(CC.glob("*.jsonl")):
        shutil.copy(path, root / path.name)
    rows = list_sessions(tmp_path / "projects")
    assert len(rows) == len(list(CC.glob("*.jsonl")))
    counter = make_counter()
    for row in rows:
        [conv] = load_transcript(row.path).conversations
        checked = check_conversation(conv, budget=budget_for(conv), counter=counter)
        assert row.tokens == checked.status.tokens, row.path
    by_name = {Path(r.path).name: r for r in rows}
    assert by_name["codemie-624a4a58-compact.jsonl"].compactions == 1
    assert by_name["codemie-196820da-thinking.jsonl"].over_threshold
    assert json.loads(run_cli("sessions", tmp_path / "projects", "--json").stdout)["sessions"][0][
        "last_activity"
    ]


# --- Codex rollouts ---------------------------------------------------------------------------


def _rollout(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def _codex_tree(root: Path) -> Path:
    """~/.codex/sessions: a small rollout (recorded usage 2,410 on a 258,400 window), one whose
    newest token_count says it is over, one compacted twice (no usage after the compaction)."""
    day = root / "2026" / "05" / "11"
    _rollout(day / "rollout-2026-05-11T08-00-00-small.jsonl", sample())
    # Our count of what the usage covers is near it (else the record is stale and ours decides).
    big = [*sample(), item(user("lorem ipsum dolor sit amet " * 32_000)), token_count(200_000)]
    big.append(item(user("and now the tests")))
    big[0] = line("session_meta", {"id": "big-1", "cwd": "/work/big"})
    _rollout(root / "2026" / "05" / "12" / "rollout-2026-05-12T09-00-00-big.jsonl", big)
    compacted = line("compacted", {"message": "the summary", "replacement_history": [user("again")]})
    twice = [*sample(), compacted, compacted, item(user("go on"))]
    _rollout(day / "rollout-2026-05-11T07-00-00-twice.jsonl", twice)
    return root


def _check(path: str) -> tuple[int, str]:
    [conv] = load_transcript(path).conversations
    checked = check_conversation(conv, budget=budget_for(conv), counter=make_counter(), validate=False)
    return checked.status.tokens, checked.size.source if checked.size else ""


def test_codex_rollouts_are_listed_with_their_live_size(tmp_path: Path) -> None:
    root = _codex_tree(tmp_path / "sessions")
    assert len(session_files(root)) == 3
    rows = {Path(r.path).stem.rsplit("-", 1)[1]: r for r in list_sessions(root)}
    small, big, twice = rows["small"], rows["big"], rows["twice"]
    assert {r.agent for r in rows.values()} == {"codex"}
    assert (small.project, small.session_id, small.model) == ("/repo", "s1", "gpt-5.5")
    assert small.tokens < 2_000 and not small.over_threshold  # its 2,400-token record is stale
    # The recorded window (258,400) sets the budget when no --model / --context-window is given.
    assert small.threshold == budget_for(load_transcript(small.path).conversations[0]).threshold
    assert (big.project, big.session_id) == ("/work/big", "big-1")
    assert big.source == "recorded" and big.tokens > 200_010 and big.over_threshold
    assert (twice.compactions, small.compactions) == (2, 0)
    assert twice.source == "count"  # the usage before the compaction no longer counts
    for row in rows.values():
        assert (row.tokens, row.source) == _check(row.path)
    assert (
        run_cli("sessions", root, "--json", "--context-window", "1000000", "--over").json()["sessions"] == []
    )


def test_claude_and_codex_sessions_by_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _codex_tree(home / ".codex" / "sessions")
    only_codex = run_cli("sessions", "--json", env={"HOME": str(home)}).json()["sessions"]
    assert len(only_codex) == 3 and {d["agent"] for d in only_codex} == {"codex"}
    shutil.copytree(_projects(tmp_path), home / ".claude" / "projects")
    both = run_cli("sessions", "--json", env={"HOME": str(home)}).json()["sessions"]
    assert sorted(d["agent"] for d in both) == ["claude-code"] * 3 + ["codex"] * 3
    table = run_cli("sessions", env={"HOME": str(home)}).stdout
    agents = [row[0] for row in plain_rows(table, "agent ")[:-1]]
    assert sorted(agents) == ["claude"] * 3 + ["codex"] * 3


def test_a_broken_rollout_is_listed_with_its_error(tmp_path: Path) -> None:
    root = _codex_tree(tmp_path)
    bad = root / "2026" / "05" / "11" / "rollout-2026-05-11T10-00-00-bad.jsonl"
    meta = orjson.dumps(line("session_meta", {"id": "x", "cwd": "/x"}))
    # Broken inside (a half-written last line is skipped, as Codex skips it: issue 20).
    bad.write_bytes(meta + b"\n{broken\n" + meta + b"\n")
    rows = {Path(r.path).stem.rsplit("-", 1)[1]: r for r in list_sessions(root)}
    assert rows["bad"].error and rows["bad"].agent == "codex" and not rows["bad"].over_threshold
    assert rows["big"].over_threshold


@pytest.mark.skipif(not ROLLOUTS, reason="corpus not present")
def test_corpus_rollouts_match_check(tmp_path: Path) -> None:
    for path in ROLLOUTS:
        shutil.copy(path, tmp_path / path.name)
    rows = list_sessions(tmp_path)
    assert len(rows) == len(ROLLOUTS) and {r.agent for r in rows} == {"codex"}
    for row in rows:
        assert (row.tokens, row.source) == _check(row.path), row.path
        meta = orjson.loads(Path(row.path).read_bytes().split(b"\n", 1)[0])["payload"]
        assert (row.project, row.session_id) == (meta["cwd"], meta["id"])
        assert row.error is None and row.last_activity
