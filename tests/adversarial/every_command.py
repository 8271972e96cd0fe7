"""Every command that reads a transcript, run on one input (issue 23, "bad inputs × every
command"): the table of invocations, and a driver that runs them all in one process under
``resource`` limits and reports, per invocation, its exit code, time and stderr.

``python tests/adversarial/every_command.py SPEC.json`` is the driver (the test starts it with
an address-space and CPU limit); :func:`run_every_command` runs it and returns the outcomes.
In-process (Typer's runner) because a fresh interpreter per invocation would cost more than
the commands themselves; the process's peak resident size bounds every one of them.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
WORKSPACE = TESTS.parent / "sample_transcripts" / "workspace"

#: Address space the driver may map (the interpreter, tiktoken and its threads take ~400 MB of
#: it): a command that holds a hostile input several times over fails here, not on a user's box.
ADDRESS_SPACE = 3 << 30
#: CPU seconds for every command on one input together.
CPU_SECONDS = 240


@dataclass(frozen=True)
class Invocation:
    """One command line, with what it reads on stdin."""

    argv: list[str]
    stdin: str | None = None


def _hook(event: str, extra: dict[str, Any]) -> Callable[[Path, Path], Invocation]:
    def build(f: Path, t: Path) -> Invocation:
        payload = {"session_id": "s-1", "transcript_path": str(f), "cwd": str(t), **extra}
        argv = ["hook", event, "--agent", "claude-code", "--archive-dir", f"{t}/archive"]
        return Invocation(argv, json.dumps(payload))

    return build


def _out(t: Path, f: Path, name: str) -> str:
    return str(t / f"{name}{f.suffix}")


OFFLINE = ["--summarizer", "extractive", "-q", "--force"]

#: name -> (input file, scratch dir) -> invocation. Offline, every strategy family, both
#: directions of offload, the session commands and the hooks an agent runs on the file.
COMMANDS: dict[str, Callable[[Path, Path], Invocation]] = {
    "count": lambda f, t: Invocation(["count", str(f)]),
    "count --json": lambda f, t: Invocation(["count", str(f), "--json", "--timeline"]),
    "check": lambda f, t: Invocation(["check", str(f), "--model", "gpt-4"]),
    "compact": lambda f, t: Invocation(
        ["compact", str(f), *OFFLINE, "--work-dir", str(WORKSPACE), "--archive-dir", f"{t}/a",
         "-o", _out(t, f, "full")]
    ),
    "compact --auto": lambda f, t: Invocation(
        ["compact", str(f), "--auto", "-w", "4000", *OFFLINE, "--archive-dir", f"{t}/a", "-o", _out(t, f, "auto")]
    ),
    "compact prune,clean-tools": lambda f, t: Invocation(
        ["compact", str(f), "-s", "prune,clean-tools", *OFFLINE, "--archive-dir", f"{t}/a", "-o", _out(t, f, "prune")]
    ),
    "compact selective": lambda f, t: Invocation(
        ["compact", str(f), "-s", "selective", "-w", "4000", *OFFLINE, "--archive-dir", f"{t}/a",
         "-o", _out(t, f, "selective")]
    ),
    "compact key-messages": lambda f, t: Invocation(
        ["compact", str(f), "-s", "key-messages", "-w", "4000", *OFFLINE, "--archive-dir", f"{t}/a",
         "-o", _out(t, f, "key")]
    ),
    "compact hybrid --keep-loop": lambda f, t: Invocation(
        ["compact", str(f), "-s", "hybrid", "-w", "4000", "--keep-loop", *OFFLINE, "--archive-dir", f"{t}/a",
         "-o", _out(t, f, "hybrid")]
    ),
    "compact --append": lambda f, t: Invocation(
        ["compact", str(f), "--append", *OFFLINE, "--archive-dir", f"{t}/a", "-o", _out(t, f, "append")]
    ),
    "offload": lambda f, t: Invocation(
        ["offload", str(f), "--out-dir", f"{t}/o", "--min-chars", "20", "-o", _out(t, f, "offloaded")]
    ),
    # Reads what offload wrote (or, when offload refused, says the file is missing: exit 2).
    "offload --undo": lambda f, t: Invocation(
        ["offload", _out(t, f, "offloaded"), "--undo", "--out-dir", f"{t}/o", "-o", _out(t, f, "undone")]
    ),
    "restore-files": lambda f, t: Invocation(["restore-files", str(f), "--work-dir", str(WORKSPACE)]),
    "export": lambda f, t: Invocation(["export", str(f), "-q"]),
    "export --points": lambda f, t: Invocation(["export", str(f), "--points"]),
    "sessions": lambda f, t: Invocation(["sessions", str(f.parent), "--json"]),
    "eval": lambda f, t: Invocation(["eval", str(f), "-s", "full,prune", "--show-lost", "3"]),
    "uncompact --list": lambda f, t: Invocation(["uncompact", str(f), "--list"]),
    "uncompact --fork": lambda f, t: Invocation(["uncompact", str(f), "--fork", "--force"]),
    "hook pre-compact": _hook("pre-compact", {"hook_event_name": "PreCompact", "trigger": "auto"}),
    "hook session-start": _hook("session-start", {"hook_event_name": "SessionStart", "source": "compact"}),
}  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    command: str
    exit_code: int
    seconds: float
    stderr: str
    exception: str | None


@dataclass(frozen=True)
class Run:
    """Every command's outcome on one input, and the driver's peak resident size."""

    outcomes: list[Outcome]
    peak_rss_mb: float


def run_every_command(path: Path, scratch: Path, *, timeout: float = 600) -> Run:
    """Run :data:`COMMANDS` on ``path`` in the driver, under :data:`ADDRESS_SPACE` and
    :data:`CPU_SECONDS`, in ``scratch`` (its working directory)."""
    spec = scratch / "spec.json"
    spec.write_text(json.dumps({"input": str(path), "scratch": str(scratch)}))

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))

    done = subprocess.run(
        [sys.executable, __file__, str(spec)],
        cwd=scratch,
        capture_output=True,
        timeout=timeout,
        preexec_fn=limits,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"the driver died (exit {done.returncode}) on {path}:\n{done.stderr.decode()[-3000:]}"
        )
    report = json.loads(done.stdout)
    return Run([Outcome(**o) for o in report["outcomes"]], report["peak_rss_mb"])


def _drive(spec_path: str) -> None:
    sys.path.insert(0, str(TESTS))
    from cli_helpers import run_cli

    spec = json.loads(Path(spec_path).read_text())
    path, scratch = Path(spec["input"]), Path(spec["scratch"])
    outcomes = []
    for name, build in COMMANDS.items():
        invocation = build(path, scratch)
        started = time.monotonic()
        result = run_cli(
            *invocation.argv, input=invocation.stdin, env={"COLUMNS": "100"}, keep_exception=True
        )
        outcomes.append(
            Outcome(
                name,
                result.exit_code,
                time.monotonic() - started,
                result.stderr[-2000:],
                None if result.exception is None else repr(result.exception)[:500],
            ).__dict__
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"outcomes": outcomes, "peak_rss_mb": peak}))


if __name__ == "__main__":
    _drive(sys.argv[1])
