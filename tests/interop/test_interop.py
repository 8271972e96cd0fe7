"""Every corpus session, rewritten by each case, resumed by the real client (`make interop`).

A test per (client, session, case, check): the case is run once (``conftest.Runs``) and each
check of :data:`check.CHECKS` is its own test, so a known defect marks exactly the checks it
breaks. Cases failing because of a defect of issue 20 are ``xfail(strict=True)``: the test
turns into a failure the day the defect is fixed, and the fix removes the mark.

``.ci/run`` runs the representative subset (``-m "not interop_full"``: a few sessions per
client, every case and check); ``make interop`` runs everything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cases import CASE_NAMES
from check import CHECKS, Runs

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
#: The sessions .ci/run resumes (the rest are ``interop_full``): a small session, one with
#: thinking, one Claude Code compacted itself; Codex: a TUI rollout and a desktop one.
CI_SESSIONS = frozenset(
    {
        "ccviewer-fe5e1c67-v1.0.98",
        "codemie-196820da-thinking",
        "entire-198393f2-compact-small",
        "codex-rollout-019e1625-tui",
        "codex-rollout-019e1695-desktop",
    }
)

#: Known defects: (client, case, check) -> (the sessions it shows on, or None: all; the reason,
#: naming the issue and defect). Empty: issue 20's defects 1, 3, 4, 5 and 12 (the chain walk),
#: which this suite showed, are fixed; a new one goes here with the fix that removes it.
KNOWN: dict[tuple[str, str, str], tuple[frozenset[str] | None, str]] = {}


def sessions() -> list[tuple[str, Path]]:
    """(client, session file) for every corpus session a client can resume."""
    found = [("claude-code", p) for p in sorted((CORPUS / "claude-code").glob("*.jsonl"))]
    found += [("codex", p) for p in sorted((CORPUS / "other").glob("codex-rollout-*.jsonl"))]
    return found


def not_resumable(client: str, session: Path) -> str | None:
    """Why a client cannot resume this file at all, or None."""
    if client != "claude-code":
        return None
    records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines() if line.strip()]
    entries = [r for r in records if isinstance(r, dict) and r.get("type") in ("user", "assistant")]
    if entries and all(r.get("isSidechain") for r in entries):
        return (
            "a subagent's transcript (every entry isSidechain): Claude Code resumes sessions, not subagents"
        )
    return None


def params() -> list[object]:
    out: list[object] = []
    for client, session in sessions():
        skip = not_resumable(client, session)
        for case in CASE_NAMES:
            for check in CHECKS:
                marks: list[pytest.MarkDecorator] = []
                if session.stem not in CI_SESSIONS:
                    marks.append(pytest.mark.interop_full)
                if skip:
                    marks.append(pytest.mark.skip(reason=skip))
                known = KNOWN.get((client, case, check))
                if known is not None and (known[0] is None or session.stem in known[0]):
                    marks.append(pytest.mark.xfail(strict=True, reason=known[1]))
                ident = f"{client}:{session.stem}:{case}:{check}"
                out.append(pytest.param(client, session, case, check, marks=marks, id=ident))
    if not out:
        reason = f"{CORPUS} has no Claude Code session or Codex rollout (a user's clone has no corpus)"
        out.append(
            pytest.param(None, None, None, None, marks=pytest.mark.skip(reason=reason), id="no-corpus")
        )
    return out


@pytest.mark.parametrize(("client", "session", "case", "check"), params())
def test_interop(runs: Runs, client: str, session: Path, case: str, check: str) -> None:
    findings = runs.outcome((client, session, case)).findings[check]
    assert not findings, f"{CHECKS[check]} — not so:\n" + "\n".join(f"- {f}" for f in findings)
