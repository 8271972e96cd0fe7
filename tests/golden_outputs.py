"""Golden outputs: every command on every sample and corpus transcript, as sha256 digests.

Refactors must not change what a user sees. ``tests/test_golden.py`` runs each case in-process
and compares the exit code and the digests of stdout and stderr with ``tests/golden.json``.
A change that is *meant* to alter output regenerates the file and says why in its commit:

    .venv/bin/python tests/golden_outputs.py --update            # every case
    .venv/bin/python tests/golden_outputs.py --update corpus/claude-code   # cases whose key has this

Temporary directories in stderr are replaced by ``<TMP>``, archive timestamps by ``<TS>``,
before hashing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cli_helpers import CliOutcome

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_transcripts"
CORPUS = ROOT.parent / "shared" / "corpus"
GOLDEN = Path(__file__).resolve().parent / "golden.json"
# Paths are given relative to the repo root and the commands run there, so the output does not
# depend on where the clone lives (CI clones to a fresh directory).
WORKSPACE = "sample_transcripts/workspace"

#: name -> argument builder (input path, scratch dir) -> argv
Args = Callable[[str, str], list[str]]
COMMANDS: dict[str, Args] = {
    "count-json": lambda f, t: ["count", f, "--json", "--top", "5"],
    "count-table": lambda f, t: ["count", f, "--top", "3"],
    "count-estimate": lambda f, t: ["count", f, "--json", "--counter", "estimate"],
    "check-json": lambda f, t: ["check", f, "--json", "--model", "claude-sonnet-4-5"],
    "check-table": lambda f, t: ["check", f, "--model", "gpt-4"],
    "compact-full": lambda f, t: [
        "compact", f, "--summarizer", "extractive", "--work-dir", WORKSPACE,
        "--archive-dir", f"{t}/archive", "--stats-json", f"{t}/stats.json",
    ],
    "compact-keep-loop": lambda f, t: [
        "compact", f, "--strategy", "prune,full", "--keep-loop", "--summarizer", "extractive",
        "--archive-dir", f"{t}/archive", "-q",
    ],
    "compact-prune": lambda f, t: ["compact", f, "--strategy", "prune", "--archive-dir", f"{t}/archive"],
    "compact-clean-tools": lambda f, t: [
        "compact", f, "--strategy", "clean-tools", "--archive-dir", f"{t}/archive", "-q",
    ],
    "compact-auto": lambda f, t: [
        "compact", f, "--auto", "--model", "gpt-4", "--summarizer", "extractive",
        "--archive-dir", f"{t}/archive", "-q",
    ],
    "offload": lambda f, t: ["offload", f, "--out-dir", f"{t}/offload", "--min-chars", "400"],
    "restore-files": lambda f, t: ["restore-files", f, "--work-dir", WORKSPACE],
}  # fmt: skip


@dataclass(frozen=True)
class Case:
    key: str
    path: Path
    command: str


def inputs() -> Iterator[tuple[str, Path]]:
    for p in sorted(SAMPLES.glob("*.json*")):
        yield f"samples/{p.name}", p
    if CORPUS.is_dir():
        for p in sorted(CORPUS.rglob("*")):
            if p.is_file() and p.suffix in (".json", ".jsonl", ".traj"):
                yield f"corpus/{p.relative_to(CORPUS).as_posix()}", p


def cases() -> Iterator[Case]:
    for label, path in inputs():
        for command in COMMANDS:
            yield Case(f"{label}::{command}", path, command)


#: archive names start with a UTC timestamp (archive.py); the rest of the name is content-derived
_TIMESTAMP = re.compile(rb"\d{8}T\d{12}Z")
_TOKENS = re.compile(rb"[\d,]+ tokens")
_NOTE_TOKENS = re.compile(rb'"context":\{"tokens":\d+')


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_case(case: Case, run: Callable[..., CliOutcome] | None = None) -> dict[str, object]:
    """Run one case in-process (``run``: the Typer app's :func:`run_cli`, or the fast path's
    ``run_fast``); the exit code and the digests of both streams."""
    from cli_helpers import run_cli

    run = run or run_cli
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(ROOT):
        argv = COMMANDS[case.command](os.path.relpath(case.path, ROOT), tmp)
        # The tokenizer is pinned: `count --json` names it, and bpe-openai (same counts) is
        # optional, so the digests must not depend on whether it is installed.
        env = {"COLUMNS": "100", "ANTHROPIC_API_KEY": "", "CTXCOMPACT_TOKENIZER": "tiktoken"}
        # A fixed clock: a compaction point records its time (compact_boundary's timestamp).
        result = run(*argv, env={**env, "SOURCE_DATE_EPOCH": "1700000000"})
        stderr = _TIMESTAMP.sub(b"<TS>", result.stderr_bytes.replace(tmp.encode(), b"<TMP>"))
        # A session's offload references name the out dir by its absolute path: that path is
        # masked, and so are the token figures, which depend on how the random name tokenizes.
        stdout = result.stdout_bytes.replace(os.path.realpath(tmp).encode(), b"<TMP>").replace(
            tmp.encode(), b"<TMP>"
        )
        if stdout != result.stdout_bytes:
            stderr = _TOKENS.sub(b"<N> tokens", stderr)
            # ... and the size a rewrite writes on its records (its "ctxcompact" note).
            stdout = _NOTE_TOKENS.sub(b'"context":{"tokens":<N>', stdout)
        return {
            "exit": result.exit_code,
            "stdout": _digest(stdout),
            "stderr": _digest(stderr),
        }


def load_golden() -> dict[str, dict[str, object]]:
    return json.loads(GOLDEN.read_text()) if GOLDEN.is_file() else {}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("--update", "--check"):
        print(__doc__)
        return 2
    os.environ.pop("ANTHROPIC_API_KEY", None)
    os.environ["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
    os.environ.setdefault("CTXCOMPACT_CACHE_DIR", tempfile.mkdtemp(prefix="ctxcompact-cache-"))
    selector = argv[1] if len(argv) > 1 else ""
    golden = load_golden()
    differ = []
    for case in cases():
        if selector not in case.key:
            continue
        got = run_case(case)
        if golden.get(case.key) != got:
            differ.append(case.key)
            if argv[0] == "--update":
                golden[case.key] = got
    if argv[0] == "--update":
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        print(f"{len(differ)} case(s) updated")
        return 0
    for key in differ:
        print("differs:", key)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main(sys.argv[1:]))
