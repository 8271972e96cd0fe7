"""One interop case end to end: rewrite the session, resume it with the real client, judge.

:func:`run_case` returns the findings by check (an empty list: the check holds), each a
sentence naming what went wrong, so a failing test reads as a report. Every case folder keeps
its sessions, stats and ``requests.jsonl`` (every request the fake received) for a post-mortem.
"""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cases import PROMPT, REPLY, Case, Layout, Prepared, Workspace, case_named, lay_out, prepare
from clients import ClientRun, Resume, run_claude, run_codex
from install import Clients
from sent import (
    Message,
    NotSent,
    Sent,
    aligned,
    anthropic_pair_findings,
    claude_sent,
    codex_live_items,
    codex_pair_findings,
    codex_sent,
    context_findings,
    item_findings,
    normalised,
)

#: Seconds a client may take to resume, answer and exit (they take about one).
CLIENT_TIME_LIMIT = 30.0
REFERENCE = re.compile(r"\[Content offloaded to: ([^\]\n]+)\]")

#: What each check asserts (a test per check and case; see test_interop.py).
CHECKS = {
    "exit": "the client exits 0 within the time limit",
    "context": "it sends exactly ctxcompact export's messages (plus its own additions)",
    "before": "nothing from before the boundary reaches the model",
    "pairs": "every tool call is answered in the request, and every answer has its call",
    "twice": "no block reaches the model twice",
    "restored": "a compaction that can restore files restores them",
    "references": "every offload reference resolves from the folder the client runs in",
    "after": "after the client's turn, count, check, compact and export work on the session",
}


@dataclass(frozen=True)
class Session:
    """What a session's cases share: its layout and its context before any rewrite."""

    layout: Layout
    before: list[Message]


@dataclass(frozen=True)
class Outcome:
    findings: dict[str, list[str]]  # by check
    prepared: Prepared
    run: ClientRun
    sent: Sent | None


def run_case(clients: Clients, session: Session, case: Case, folder: Path) -> Outcome:
    workspace = Workspace(folder, session.layout)
    client = session.layout.client
    prepared = prepare(workspace, case)
    exported = export(workspace, prepared.session)
    resume = Resume(prepared.session, session.layout.cwd, workspace.home, PROMPT, REPLY, CLIENT_TIME_LIMIT)
    run = run_claude(clients, resume) if client == "claude-code" else run_codex(clients, resume)
    with (folder / "requests.jsonl").open("w", encoding="utf-8") as log:
        for r in run.requests:
            log.write(
                json.dumps({"method": r.method, "path": r.path, "headers": r.headers, "body": r.body}) + "\n"
            )
    findings: dict[str, list[str]] = {check: [] for check in CHECKS}
    if run.exit_code != 0:
        findings["exit"].append(
            f"the client did not exit 0 within {CLIENT_TIME_LIMIT:.0f} s: {run.describe()}"
        )
    sent: Sent | None = None
    try:
        if client == "claude-code":
            sent = claude_sent(run.requests, PROMPT)
            sent = replace(sent, messages=aligned(sent.messages, exported, joined_last=sent.joined_last))
            findings["pairs"] += anthropic_pair_findings(sent.request.body["messages"])
        else:
            sent = codex_sent(run.requests, PROMPT, prepared.session, folder / "sent-rollout.jsonl")
            findings["pairs"] += codex_pair_findings(sent.request.body["input"])
            findings["context"] += item_findings(sent.items or [], codex_live_items(prepared.session))
    except NotSent as exc:
        findings["context"].append(f"the client sent no usable request: {exc}; {run.describe()}")
    if sent is not None:
        for check, found in context_findings(sent.messages, exported, session.before).items():
            findings[check] += found
        findings["references"] += reference_findings(sent.messages, session.layout.cwd)
    last = prepared.stats[-1] if prepared.stats else {}
    if (
        case.restores
        and session.layout.materialised
        and last.get("compacted", True)
        and not last.get("restored_file_count")
    ):
        findings["restored"].append(
            f"{len(session.layout.materialised)} file(s) to restore, restored_file_count {last.get('restored_file_count')}"
        )
    findings["after"] += after_the_client(workspace, run.session)
    return Outcome(findings, prepared, run, sent)


def reference_findings(messages: list[Message], cwd: Path) -> list[str]:
    """Every offload reference the model is sent names a file the agent can open from the
    folder it runs in."""
    refs = sorted({ref for text in _strings(messages) for ref in REFERENCE.findall(text)})
    missing = [r for r in refs if not (cwd / r).is_file()]
    if not missing:
        return []
    return [
        f"{len(missing)} of {len(refs)} references do not resolve from the client's cwd, e.g. {missing[0]}"
    ]


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def export(workspace: Workspace, session: Path) -> list[Message]:
    ran = workspace.run(["export", session, "-q"])
    if ran.exit_code != 0:
        raise AssertionError(ran.describe())
    return normalised(json.loads(ran.stdout))


def after_the_client(workspace: Workspace, session: Path) -> list[str]:
    """``count``, ``check``, ``compact`` and ``export`` on the session as the client left it;
    the export ends with the client's new turn: the prompt, then the reply."""
    findings = []
    for args, ok in (
        (["count", session], (0,)),
        (["check", session], (0, 1)),
        (["compact", session, *workspace.layout.common(), "-o", workspace.dir / "after.jsonl"], (0,)),
    ):
        ran = workspace.run(args)
        if ran.exit_code not in ok:
            findings.append(ran.describe())
    ran = workspace.run(["export", session, "-q"])
    if ran.exit_code != 0:
        return [*findings, ran.describe()]
    tail = json.dumps(json.loads(ran.stdout)[-3:], ensure_ascii=False)
    if PROMPT not in tail or REPLY not in tail:
        findings.append(f"export does not end with the client's prompt and reply: {tail[-600:]}")
    return findings


# --- many cases at once -----------------------------------------------------------------------

Key = tuple[str, Path, str]  # client, session, case


class Runs:
    """The runs of the collected tests, started at once (``jobs`` at a time) and awaited by
    each test; a session's layout is made once, by the first of its cases to need it."""

    def __init__(self, clients: Clients, scratch: Path, jobs: int) -> None:
        self.clients = clients
        self.scratch = scratch
        self.pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="interop")
        self.futures: dict[Key, Future[Outcome]] = {}
        self._sessions: dict[tuple[str, Path], Session] = {}
        self._locks: dict[tuple[str, Path], threading.Lock] = {}
        self._lock = threading.Lock()

    def start(self, key: Key) -> Future[Outcome]:
        if key not in self.futures:
            self.futures[key] = self.pool.submit(self._run, key)
        return self.futures[key]

    def outcome(self, key: Key) -> Outcome:
        return self.start(key).result()

    def _run(self, key: Key) -> Outcome:
        client, session, case = key
        folder = self.scratch / f"{client}-{session.stem}" / case
        folder.mkdir(parents=True)
        return run_case(self.clients, self._session(client, session), case_named(case), folder)

    def _session(self, client: str, session: Path) -> Session:
        with self._lock:
            lock = self._locks.setdefault((client, session), threading.Lock())
        with lock:
            if (client, session) not in self._sessions:
                layout = lay_out(self.scratch / f"{client}-{session.stem}" / "layout", session, client)
                before = export(Workspace(layout.dir, layout), session)
                self._sessions[client, session] = Session(layout, before)
            return self._sessions[client, session]
