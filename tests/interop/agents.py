"""A stage for the agents' own compactions: a fresh home where the real client writes a
session itself, ctxcompact's hooks installed the way a user installs them, and the runs that
follow (``test_agent_hooks.py``).

A :class:`Stage` is one folder: ``home/`` (the client's ``HOME``; Codex's ``CODEX_HOME`` is
``home/.codex``) and ``project/`` (where the client runs, and where ``ctxcompact hook install
--project`` writes Claude Code's ``.claude/settings.json``). The hooks run inside the client,
with its environment: their archive is ``home/.local/state/ctxcompact/archive``. ctxcompact's
own commands run with the same ``HOME`` and ``CODEX_HOME``, no key and no settings from the
environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from cases import BASE_ENV, Ran
from clients import ClientRun, claude_env, codex_env, codex_exec, project_folder, run_client
from fake_apis import FakeClientAPIs
from install import Clients

from ctxcompact.agents.store import read_records

#: Seconds one client run may take: a compaction runs three hooks (Python processes) and,
#: for --replace, ctxcompact's own compaction, on a machine that may be loaded.
TIME_LIMIT = 180.0


@dataclass(frozen=True)
class Stage:
    dir: Path
    clients: Clients

    @property
    def home(self) -> Path:
        return self.dir / "home"

    @property
    def project(self) -> Path:
        return self.dir / "project"

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def archive(self) -> Path:
        return self.home / ".local" / "state" / "ctxcompact" / "archive"

    def prepare(self) -> Stage:
        self.project.mkdir(parents=True, exist_ok=True)
        self.codex_home.mkdir(parents=True, exist_ok=True)
        return self

    # --- the clients ------------------------------------------------------------------------

    def claude(self, *args: str, fake: FakeClientAPIs) -> ClientRun:
        """``claude ARGS`` in the project, against ``fake``."""
        argv = (str(self.clients.claude), *args)
        env = partial(claude_env, home=self.home)
        return run_client("claude-code", argv, env, self.project, fake, TIME_LIMIT, self.project)

    def codex(self, *args: str, fake: FakeClientAPIs, compact_over: int | None = None) -> ClientRun:
        """``codex exec ARGS`` in the project, against ``fake``, running the installed hooks
        (``--dangerously-bypass-hook-trust``: a hook runs only once trusted, which a user
        does in the TUI's ``/hooks``); ``compact_over``: Codex compacts before a turn whose
        context is over this many tokens (``model_auto_compact_token_limit``)."""
        argv = (*codex_exec(self.clients), "--dangerously-bypass-hook-trust", *args)
        limit = f"model_auto_compact_token_limit = {compact_over}\n" if compact_over is not None else ""
        env = partial(codex_env, home=self.home, settings=limit)
        return run_client("codex", argv, env, self.project, fake, TIME_LIMIT, self.project)

    # --- what the clients wrote -------------------------------------------------------------

    def claude_session(self, session_id: str) -> Path:
        return self.home / ".claude" / "projects" / project_folder(self.project) / f"{session_id}.jsonl"

    def rollout(self, thread_id: str) -> Path:
        [found] = sorted((self.codex_home / "sessions").rglob(f"rollout-*-{thread_id}.jsonl"))
        return found

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").rglob("rollout-*.jsonl"))

    def records(self, agent: str, session_id: str) -> list[dict[str, Any]]:
        """What the hooks recorded about a session (``compactions.jsonl``)."""
        return read_records(self.archive, agent, session_id)

    # --- ctxcompact ---------------------------------------------------------------------------

    def ctxcompact(self, *args: str | Path) -> Ran:
        """``python -m ctxcompact ARGS`` in the project, with the clients' homes."""
        env = dict(BASE_ENV)
        env |= {"HOME": str(self.home), "CODEX_HOME": str(self.codex_home), "NO_COLOR": "1"}
        env.pop("CLAUDE_CONFIG_DIR", None)
        env.pop("XDG_STATE_HOME", None)
        argv = tuple(str(a) for a in args)
        done = subprocess.run(
            [sys.executable, "-m", "ctxcompact", *argv],
            cwd=self.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=600,
            check=False,
        )
        out, err = (done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))
        return Ran(argv, done.returncode, out, err)

    def export(self, session: Path) -> list[Any]:
        ran = self.ctxcompact("export", session, "-q")
        if ran.exit_code != 0:
            raise AssertionError(ran.describe())
        return list(json.loads(ran.stdout))


def session_id_of(run: ClientRun) -> str:
    """The session a ``claude -p … --output-format json`` run wrote."""
    if run.exit_code != 0:
        raise AssertionError(run.describe())
    return str(json.loads(run.stdout)["session_id"])


def thread_id_of(stage: Stage, before: list[Path]) -> str:
    """The thread of the one rollout a ``codex exec`` run created."""
    [new] = [p for p in stage.rollouts() if p not in before]
    return new.name.removesuffix(".jsonl")[-36:]
