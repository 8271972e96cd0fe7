"""The rewrites each corpus session goes through before a client resumes it.

A session's cases share a folder laid out like the machine it was recorded on (a
:class:`Layout`): ``root/`` stands for ``/`` (``--path-map /=root``), the client runs in
``root/<the session's cwd>``, and the files the session read last are created there (a line of
text naming the file), so that restoration restores files instead of skipping them all. Each
case then works in a folder of its own (a :class:`Workspace`) on a copy of the session. The
summarizer is the offline ``extractive`` one; no command has an API key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

#: The fake's answer, and the prompt each client is given (both easy to find in a session).
PROMPT = "ctxcompact interop check: answer with the single word ok."
REPLY = "ok (the ctxcompact interop suite's fake model)"


@dataclass(frozen=True)
class Layout:
    """A session's recording machine, shared by its cases (see the module doc)."""

    dir: Path
    session: Path  # the corpus file
    client: str  # "claude-code" or "codex"
    materialised: tuple[Path, ...]  # the files created for restoration to find

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def cwd(self) -> Path:
        return self.root / recorded_cwd(self.session, self.client).lstrip("/")

    def common(self) -> list[str]:
        return ["--summarizer", "extractive", "--path-map", f"/={self.root}"]


@dataclass(frozen=True)
class Workspace:
    """One case's folder, on its session's layout."""

    dir: Path
    layout: Layout

    @property
    def home(self) -> Path:
        return self.dir / "home"

    def run(self, args: Sequence[str | Path]) -> Ran:
        return ctxcompact(args, self.dir, self.dir / "state")


@dataclass(frozen=True)
class Step:
    """One ctxcompact command: its arguments after the input file (``-o`` is added), given the
    workspace and a function counting the input's context tokens."""

    args: Callable[[Workspace, Case, Callable[[], ContextSize]], list[str]]
    stats: bool = True  # it writes --stats-json


@dataclass(frozen=True)
class Case:
    name: str
    steps: tuple[Step, ...]
    what: str
    restores: bool = False  # its last step restores files when there are any


def _compact(*extra: str) -> Step:
    return Step(lambda w, case, tokens: ["compact", *w.layout.common(), *extra])


def _windowed(*extra: str, share: float) -> Step:
    """A compaction with a window of ``share`` × the session's context, so it is due."""

    def args(w: Workspace, case: Case, size: Callable[[], ContextSize]) -> list[str]:
        window = max(int(size().tokens * share), 4000)
        return ["compact", *w.layout.common(), *extra, "--context-window", str(window)]

    return Step(args)


def _due(*extra: str) -> Step:
    """A compaction whose threshold lies halfway between what the messages cannot change (the
    system prompt and tool definitions, as the recorded usage shows them) and the whole context:
    the session is over it, and a compaction of its messages can bring it under."""

    def args(w: Workspace, case: Case, size: Callable[[], ContextSize]) -> list[str]:
        measured = size()
        threshold = measured.outside + max((measured.tokens - measured.outside) // 2, 1)
        window = max(int(threshold / 0.8), 4000)  # threshold = (window − reserve) × ratio
        return [
            "compact", *w.layout.common(), *extra,
            "--context-window", str(window), "--output-reserve", "0", "--threshold", "0.8",
        ]  # fmt: skip

    return Step(args)


def _offload(w: Workspace, case: Case, size: Callable[[], ContextSize]) -> list[str]:
    return ["offload", "--out-dir", str(w.layout.cwd / ".ctxcompact" / f"offload-{case.name}")]


def _restore(w: Workspace, case: Case, size: Callable[[], ContextSize]) -> list[str]:
    return ["restore-files", "--append", "--path-map", f"/={w.layout.root}"]


CASES: tuple[Case, ...] = (
    Case("unchanged", (), "the session as recorded (the control: the normaliser and the reader)"),
    Case("compact", (_compact(),), "compact (full: summary + restored files)", restores=True),
    Case("hybrid", (_windowed("--strategy", "hybrid", share=0.25),), "prune, then a summary if still over"),
    Case("auto", (_due("--auto"),), "compact --auto with the session over its threshold"),
    Case(
        "keep-loop", (_compact("--keep-loop"),), "summary, then the last request and its loop", restores=True
    ),
    Case(
        "keep-recent-tokens", (_compact("--keep-recent-tokens", "4000"),), "summary + the newest 4,000 tokens"
    ),
    Case("twice", (_compact(), _compact()), "compact, then compact the result again", restores=True),
    Case("offload", (Step(_offload, stats=False),), "tool results moved to files, references in their place"),
    Case("restore-files", (Step(_restore),), "restore-files --append", restores=True),
)
CASE_NAMES = tuple(c.name for c in CASES)


def case_named(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


# --- running ctxcompact ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ran:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"ctxcompact {' '.join(self.argv)} -> exit {self.exit_code}\n{self.stderr[-2000:]}"


#: The environment the harness started in, without keys or ctxcompact settings. Taken once, at
#: import: the cases run in threads while each test's fixtures set and unset variables, and
#: reading ``os.environ`` then can lose a variable between listing and reading it (KeyError).
BASE_ENV: dict[str, str] = {
    k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CTXCOMPACT_"))
}


def ctxcompact(args: Sequence[str | Path], cwd: Path, state: Path) -> Ran:
    """``python -m ctxcompact ARGS`` with no key and no settings from the environment."""
    env = dict(BASE_ENV)
    env |= {"XDG_STATE_HOME": str(state), "SOURCE_DATE_EPOCH": "1767225600", "NO_COLOR": "1"}
    argv = tuple(str(a) for a in args)
    done = subprocess.run(
        [sys.executable, "-m", "ctxcompact", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=600,
        check=False,
    )
    return Ran(
        argv, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


def lay_out(folder: Path, session: Path, client: str) -> Layout:
    """The session's recording machine in ``folder``, with the files it read last created."""
    cwd = folder / "root" / recorded_cwd(session, client).lstrip("/")
    cwd.mkdir(parents=True, exist_ok=True)
    stats = folder / "reads.json"
    probe = ["restore-files", session, "--path-map", f"/={folder / 'root'}", "--stats-json", stats, "-q"]
    ctxcompact([*probe, "-o", folder / "reads.out"], folder, folder / "state")
    made = []
    for skipped in json.loads(stats.read_text()).get("skipped", []):
        path = Path(skipped["path"])  # as looked for: already under root/, or relative to the cwd
        target = path if path.is_absolute() else cwd / path
        if skipped.get("reason") != "missing" or not target.resolve().is_relative_to(cwd.resolve()):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            f"{target.name}: a stand-in created by the ctxcompact interop suite.\n", encoding="utf-8"
        )
        made.append(target)
    return Layout(folder, session, client, tuple(made))


@dataclass(frozen=True)
class Prepared:
    """A case's rewritten session, what each step printed, and its ``--stats-json``."""

    session: Path
    runs: tuple[Ran, ...]
    stats: tuple[dict[str, Any], ...]


def prepare(workspace: Workspace, case: Case) -> Prepared:
    """Run the case's steps on a copy of the session."""
    current = workspace.dir / "session-0.jsonl"
    current.write_bytes(workspace.layout.session.read_bytes())
    runs: list[Ran] = []
    stats: list[dict[str, Any]] = []
    for k, step in enumerate(case.steps, 1):
        out, stats_file = workspace.dir / f"session-{k}.jsonl", workspace.dir / f"stats-{k}.json"
        args: list[str | Path] = [*step.args(workspace, case, partial(context_tokens, workspace, current))]
        args[1:1] = [current]
        ran = workspace.run([*args, "-o", out, *(["--stats-json", stats_file] if step.stats else [])])
        runs.append(ran)
        if ran.exit_code != 0:
            raise AssertionError(f"case {case.name}: step {k} failed\n{ran.describe()}")
        stats.append(json.loads(stats_file.read_text()) if step.stats else {})
        current = out
    return Prepared(current, tuple(runs), tuple(stats))


@dataclass(frozen=True)
class ContextSize:
    tokens: int  # the context size ``count`` shows first (the one ``check`` and ``--auto`` decide by)
    outside: int  # of it, what lies outside the messages (system prompt, tool definitions)


def context_tokens(workspace: Workspace, session: Path) -> ContextSize:
    """The session's context as ``count --json`` measures it."""
    ran = workspace.run(["count", session, "--json"])
    context = json.loads(ran.stdout)["transcripts"][0]["context"]
    return ContextSize(
        int(context["tokens"]), int(context.get("overhead") or 0) + int(context.get("system_tokens") or 0)
    )


def recorded_cwd(session: Path, client: str) -> str:
    """The working directory a session records (Claude Code: an entry's ``cwd``; Codex: the
    ``session_meta`` line's); ``/session`` when none."""
    for line in session.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        holder = record.get("payload") if client == "codex" else record
        value = holder.get("cwd") if isinstance(holder, dict) else None
        if isinstance(value, str) and value.startswith("/"):
            return value
    return "/session"
