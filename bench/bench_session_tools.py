"""Beside the tools users run on the same Claude Code sessions (issue 24), in the same run.

For each Claude Code session of ``../shared/corpus/claude-code/`` (skipped when absent), these
are timed, interleaved, ``--runs`` times each (CPU time of the process, ``os.wait4``; the
median):

``compact --auto``   ``ctxcompact compact --auto SESSION -o OUT`` (the session's own model).
``cozempic treat``   ``cozempic treat COPY --execute`` (a PyPI session pruner, ``make bench``
                     installs it with the ``bench`` extra) on a fresh copy each run: it rewrites
                     the file in place and keeps a backup.
``count``            ``ctxcompact count SESSION``.
``ccusage``          ``ccusage session --json --offline`` (npm; ``make bench`` installs a pinned
                     version into ``.venv/bench-node``) over a Claude config folder holding only
                     that session; from PATH when not installed there; skipped when absent.

Targets: compact --auto no slower than cozempic treat, count no slower than ccusage, summed
over the sessions (exit 1 when one is missed; a tool that is not installed is a SKIP).

Usage: ``python bench/bench_session_tools.py [--runs N]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_count import Run, child_env, ctxcompact_argv, run_once, verdict  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus" / "claude-code"


def tool(name: str) -> str | None:
    """The tool beside this interpreter (the bench extra), in the venv's ``bench-node`` folder
    (``make bench``'s npm install), or on PATH."""
    bin_dir = Path(sys.executable).parent
    for beside in (bin_dir / name, bin_dir.parent / "bench-node" / "node_modules" / ".bin" / name):
        if beside.exists():
            return str(beside)
    return shutil.which(name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args, _ = parser.parse_known_args(argv)
    sessions = sorted(CORPUS.glob("*.jsonl")) if CORPUS.is_dir() else []
    if not sessions:
        print("SKIP  ../shared/corpus/claude-code is absent")
        return 0
    cozempic, ccusage = tool("cozempic"), tool("ccusage")
    ok = True
    with tempfile.TemporaryDirectory(prefix="ctxcompact-bench-tools-") as tmp:
        work = Path(tmp)
        env = child_env(work)
        env.pop("ANTHROPIC_API_KEY", None)
        commands: dict[str, Callable[[Path, int], list[str]]] = {
            "compact --auto": lambda s, i: [
                *ctxcompact_argv(),
                "compact",
                "--auto",
                str(s),
                "-o",
                str(work / "out.jsonl"),
                "-q",
            ],
            "count": lambda s, i: [*ctxcompact_argv(), "count", str(s)],
        }
        if cozempic:

            def treat(session: Path, i: int) -> list[str]:
                copy = work / f"copy-{i}" / session.name
                copy.parent.mkdir(exist_ok=True)
                shutil.copyfile(session, copy)
                return [cozempic, "treat", str(copy), "--execute"]

            commands["cozempic treat"] = treat
        if ccusage:

            def usage(session: Path, i: int) -> list[str]:
                home = work / "claude" / session.stem
                project = home / "projects" / "bench"
                if not project.is_dir():
                    project.mkdir(parents=True)
                    shutil.copyfile(session, project / session.name)
                return ["env", f"CLAUDE_CONFIG_DIR={home}", ccusage, "session", "--json", "--offline"]

            commands["ccusage"] = usage
        totals: dict[str, float] = dict.fromkeys(commands, 0.0)
        for session in sessions:
            runs: dict[str, list[Run]] = {name: [] for name in commands}
            for i in range(args.runs + 1):
                for name, argv in commands.items():
                    run = run_once(argv(session, i), cwd=work, env=env)
                    if i:
                        runs[name].append(run)
                for copy in work.glob("copy-*"):
                    shutil.rmtree(copy, ignore_errors=True)
            line = "  ".join(
                f"{n} {statistics.median(r.cpu_seconds for r in rs) * 1000:5.0f} ms" for n, rs in runs.items()
            )
            print(f"{session.name[:40]:<40} {session.stat().st_size / 1000:6.0f} KB  {line}")
            for name, rs in runs.items():
                totals[name] += statistics.median(r.cpu_seconds for r in rs)
        print("sum of medians (CPU): " + ", ".join(f"{n} {t:.2f} s" for n, t in totals.items()))
        for ours, theirs in (("compact --auto", "cozempic treat"), ("count", "ccusage")):
            if theirs not in totals:
                print(f"  SKIP  {ours} beside {theirs}: {theirs.split()[0]} is not installed")
                continue
            r = totals[ours] / totals[theirs]
            print(f"  {verdict(r <= 1.0)}  {ours} / {theirs} = {r:.2f} (target <= 1)")
            ok = ok and r <= 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
