"""Run the installed Claude Code or Codex CLI offline on one session (see install.py).

Each client gets a fresh ``HOME`` (Codex: ``CODEX_HOME``) holding only the session and the
settings below, an environment built from nothing (no real key, no user settings), a loopback
fake as its API, and the same fake as its HTTP(S) proxy — so an attempt to reach any other host
is recorded and refused, and nothing leaves the machine.

* Claude Code reads ``$HOME/.claude/projects/<cwd, every non-alphanumeric character
  replaced by ->/<session id>.jsonl`` and is run as ``claude -p PROMPT --resume ID`` with
  ``ANTHROPIC_BASE_URL``, a fake ``ANTHROPIC_API_KEY``,
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and ``DISABLE_AUTOUPDATER=1``.
* Codex reads ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl``; it refuses
  to move a thread to another provider on resume, so the built-in ``openai`` provider is
  pointed at the fake (``openai_base_url`` in ``config.toml``); it is run as
  ``codex exec --skip-git-repo-check -s read-only resume ID PROMPT``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from fake_anthropic import RecordedRequest
from fake_apis import FakeClientAPIs
from install import Clients

FAKE_KEY = "sk-interop-fake-key"
#: Codex's settings: the built-in provider on the fake, no update check, no analytics.
CODEX_CONFIG = """openai_base_url = "{base_url}/v1"
check_for_update_on_startup = false

[analytics]
enabled = false
"""


# --- one run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientRun:
    """What one resumed run did: its exit (None: killed at the time limit), how long it took,
    what it printed, every request the fake received, and where the session file now is."""

    client: str
    argv: tuple[str, ...]
    exit_code: int | None
    seconds: float
    stdout: str
    stderr: str
    requests: tuple[RecordedRequest, ...]
    session: Path

    def describe(self) -> str:
        exit_text = "killed at the time limit" if self.exit_code is None else f"exit {self.exit_code}"
        calls = ", ".join(f"{r.method} {r.path}" for r in self.requests) or "none"
        return (
            f"{self.client} ({exit_text}, {self.seconds:.1f} s; requests: {calls})\n"
            f"stdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}"
        )


def project_folder(cwd: Path) -> str:
    """Claude Code's folder name for a working directory."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def claude_session_id(session: Path) -> str:
    for line in session.read_text(encoding="utf-8").splitlines():
        record = _json_line(line)
        if isinstance(record, dict) and isinstance(record.get("sessionId"), str):
            return record["sessionId"]
    raise ValueError(f"{session}: no sessionId")


def codex_thread(rollout: Path) -> tuple[str, str]:
    """The thread id and start time (``session_meta``) of a rollout."""
    for line in rollout.read_text(encoding="utf-8").splitlines():
        record = _json_line(line)
        if isinstance(record, dict) and record.get("type") == "session_meta":
            payload = record["payload"]
            return str(payload["id"]), str(payload.get("timestamp") or record["timestamp"])
    raise ValueError(f"{rollout}: no session_meta line")


@dataclass(frozen=True)
class Resume:
    """One resumed run to make: the session file, the folder the client runs in, a fresh home
    for it, the prompt, the fake's answer, and the time limit in seconds."""

    session: Path
    cwd: Path
    home: Path
    prompt: str
    reply: str
    timeout: float


def run_claude(clients: Clients, resume: Resume) -> ClientRun:
    """Resume the session with Claude Code and ask the prompt."""
    session_id = claude_session_id(resume.session)
    placed = resume.home / ".claude" / "projects" / project_folder(resume.cwd) / f"{session_id}.jsonl"
    placed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(resume.session, placed)

    argv = (str(clients.claude), "-p", resume.prompt, "--resume", session_id)
    env = partial(claude_env, home=resume.home)
    return run_client(
        "claude-code", argv, env, resume.cwd, FakeClientAPIs(resume.reply), resume.timeout, placed
    )


def run_codex(clients: Clients, resume: Resume) -> ClientRun:
    """Resume the rollout with Codex and ask the prompt."""
    thread_id, started = codex_thread(resume.session)
    year, month, day = started[:10].split("-")
    stamp = started[:19].replace(":", "-")
    codex_home = resume.home / ".codex"
    placed = codex_home / "sessions" / year / month / day / f"rollout-{stamp}-{thread_id}.jsonl"
    placed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(resume.session, placed)

    argv = (*codex_exec(clients), "resume", thread_id, resume.prompt)
    env = partial(codex_env, home=resume.home)
    return run_client("codex", argv, env, resume.cwd, FakeClientAPIs(resume.reply), resume.timeout, placed)


def claude_env(api: FakeClientAPIs, *, home: Path) -> dict[str, str]:
    """Claude Code's environment: its API on the fake, nothing else reached."""
    return _base_env(api, home) | {
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def codex_env(api: FakeClientAPIs, *, home: Path, settings: str = "") -> dict[str, str]:
    """Codex's environment (``CODEX_HOME`` is ``home/.codex``), with its ``config.toml``
    written for the fake; ``settings``: top-level keys to add to it."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(settings + CODEX_CONFIG.format(base_url=api.base_url))
    return _base_env(api, home) | {"CODEX_HOME": str(codex_home), "OPENAI_API_KEY": FAKE_KEY}


def codex_exec(clients: Clients) -> tuple[str, ...]:
    """``codex exec`` as every run calls it: no git repository needed, a read-only sandbox."""
    return (str(clients.codex), "exec", "--skip-git-repo-check", "-s", "read-only")


def _base_env(api: FakeClientAPIs, home: Path) -> dict[str, str]:
    node = shutil.which("node")
    dirs = [str(Path(node).parent)] if node else []
    return {
        "PATH": os.pathsep.join(dict.fromkeys([*dirs, "/usr/bin", "/bin"])),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "HTTP_PROXY": api.base_url,
        "HTTPS_PROXY": api.base_url,
        "ALL_PROXY": api.base_url,
        "NO_PROXY": "127.0.0.1,localhost",
    }


def run_client(
    client: str,
    argv: Sequence[str],
    env: Callable[[FakeClientAPIs], Mapping[str, str]],
    cwd: Path,
    fake: FakeClientAPIs,
    timeout: float,
    session: Path,
) -> ClientRun:
    """Run ``argv`` in ``cwd`` against ``fake`` (started here, with the environment ``env``
    builds for it); kill its whole process group at the time limit. ``session``: the file
    the run is about, for its report."""
    with fake as api:
        start = time.monotonic()
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env(api)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=timeout)
            code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            code = None
        seconds = time.monotonic() - start
        requests = tuple(api.requests)
    return ClientRun(
        client,
        tuple(argv),
        code,
        seconds,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        requests,
        session,
    )


def _json_line(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None
