"""Lean start-up: ``ctxcompact --version`` costs little more than starting Python."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctxcompact import __version__

PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    from ctxcompact.__main__ import main
    main()
    loaded = sorted(m for m in ("typer", "rich", "tiktoken", "anthropic", "ctxcompact.cli", "mcp") if m in sys.modules)
    print(f"LOADED {loaded}")
    """
)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_answered_before_the_command_line_is_imported(flag: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, flag], capture_output=True, text=True, timeout=60, env=env
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"ctxcompact {__version__}\nLOADED []\n"


COMMAND_PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    from ctxcompact.__main__ import main
    try:
        main()
    except SystemExit:
        pass
    heavy = ("typer", "click", "rich", "anthropic", "ctxcompact.compaction.strategies", "ctxcompact.compaction.summarize", "ctxcompact.evaluation.run",
             "ctxcompact.cli.compact", "ctxcompact.cli.eval", "ctxcompact.offload.tool_results", "genai_prices",
             "mcp", "ctxcompact.agents.hooks", "hashlib", "tiktoken.load", "ctxcompact.llm.retry", "inspect",
             "ctxcompact.transcripts.dialects.claude_code", "ctxcompact.transcripts.dialects.codex",
             "ctxcompact.transcripts.dialects.openai", "ctxcompact.transcripts.dialects.text_action",
             "importlib.metadata")
    print(f"LOADED {sorted(m for m in heavy if m in sys.modules)}", file=sys.stderr)
    """
)


def run_probe(
    probe: str, argv: list[str], *, cwd: os.PathLike[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``probe`` (one of the scripts here) run as ``ctxcompact ARGV`` in a fresh interpreter,
    without API keys or ctxcompact settings from the environment; ``cwd``: a folder with no
    config file above it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    return subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


@pytest.mark.parametrize(
    ("argv", "printed"),
    [
        (["count", "--json"], '"total"'),
        (["count"], "By role"),
        (["check"], "within budget"),  # and a warning on stderr: unknown model
        (["check", "--model", "gpt-4"], "threshold 3,686"),
        # No usage recorded, so no cost to show: neither the price table nor its version (the
        # package metadata) is loaded.
        (["count", "--timeline"], "no API usage recorded"),
    ],
)
def test_a_command_imports_only_what_it_uses(
    tmp_path: os.PathLike[str], argv: list[str], printed: str
) -> None:
    # `count` and `check` run on the fast path (no typer, no click) and load their own command
    # only: not the strategy table, the summarizers, eval or offload; and no rich, since a pipe
    # gets the report as plain text; nor the price table, which only a shown cost loads; nor
    # inspect (dataclasses' import of it is deferred: cli/dataclass_cache.py), nor the dialect
    # adapters detection did not pick.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    sample = os.path.join(os.path.dirname(__file__), "..", "sample_transcripts", "anthropic-session.json")
    proc = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE, argv[0], sample, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,  # no config file above a temporary directory
    )
    assert printed in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "LOADED []"


@pytest.mark.parametrize("tokenizer", ["auto", "tiktoken"])
def test_a_small_count_loads_no_tokenizer(tmp_path: Path, tokenizer: str) -> None:
    """A small input is counted from the cached rank table (accounting/cl100k.py): neither
    tiktoken (its import and its Rust tables) nor bpe-openai's module is loaded. The first run
    builds the table; the second is what every later run costs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    env |= {"CTXCOMPACT_CACHE_DIR": str(tmp_path / "cache"), "CTXCOMPACT_TOKENIZER": tokenizer}
    sample = tmp_path / "small.json"  # ~6 KB, under either budget (LAZY_TOKENS)
    turns = [
        ("user", "Why does the build fail? It's the 2nd time — héllo 中文 😀\n" * 20),
        ("assistant", "Let me look.\n" * 200),
    ]
    sample.write_text(json.dumps([{"role": role, "content": text} for role, text in turns]), encoding="utf-8")
    probe = COMMAND_PROBE.replace(
        '"ctxcompact.llm.retry")', '"ctxcompact.llm.retry", "tiktoken", "bpe_openai._bindings")'
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe, "count", str(sample), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        for _ in range(2)
    ]
    assert runs[0].stdout == runs[1].stdout and '"total"' in runs[1].stdout
    assert runs[1].stderr.strip().splitlines()[-1] == "LOADED []"


@pytest.mark.parametrize(
    ("sample", "adapter"),
    [
        ("anthropic-request.json", "anthropic"),
        ("openai-chat.json", "openai"),
        ("claude-code-session.jsonl", "claude_code"),
    ],
)
def test_a_file_loads_only_the_dialect_adapter_that_reads_it(
    tmp_path: Path, sample: str, adapter: str
) -> None:
    """Detection runs the checks of dialects/detect.py and loads the one adapter it picks (and
    the default, Anthropic's): not every dialect's parser and writer."""
    from conftest import SAMPLES

    proc = run_probe(MODULES_PROBE, ["count", str(SAMPLES / sample), "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    modules = set(proc.stderr.splitlines()[-1].split()[1:])
    adapters = {"anthropic", "openai", "text_action", "claude_code", "codex"}
    loaded = {a for a in adapters if f"ctxcompact.transcripts.dialects.{a}" in modules}
    assert loaded == {"anthropic", adapter}


def test_help_and_errors_of_the_parser_still_come_from_the_typer_app(tmp_path: Path) -> None:
    """The fast path hands what it does not parse to the Typer app: --help and click's usage
    errors are the same as ever."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    for argv, code, said in (
        (["count", "--help"], 0, "Where do my tokens go?"),
        (["count", "x.json", "--topp", "3"], 2, "No such option: --topp"),
        (["check", "x.json", "--threshold", "high"], 2, "Invalid value for '--threshold' / '-t'"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "ctxcompact", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        assert proc.returncode == code and said in proc.stdout + proc.stderr, proc.stderr


def test_a_typo_still_gets_a_suggestion() -> None:
    from cli_helpers import run_cli

    out = run_cli("cuont", "x")
    assert out.exit_code == 2 and "Did you mean 'count'?" in out.stderr


def test_an_error_on_a_pipe_does_not_import_rich(tmp_path: os.PathLike[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    proc = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE, "count", "missing.json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stderr.splitlines() == ["ctxcompact: error: missing.json: no such file.", "LOADED []"]


def test_a_piped_compaction_does_not_import_rich_or_anthropic(tmp_path: os.PathLike[str]) -> None:
    """Stats and warnings on a pipe are Rich's bytes written without rich (see
    tests/test_compact_report.py); the offline summary never loads the SDK."""
    from conftest import SAMPLES

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    sample = str(SAMPLES / "anthropic-session.json")
    argv = ["compact", sample, "--summarizer", "extractive", "--archive-dir", str(tmp_path), "-o", os.devnull]
    proc = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.stderr.startswith("╭─ ctxcompact compact · full ")
    loaded = proc.stderr.splitlines()[-1]
    assert "'rich'" not in loaded and "'anthropic'" not in loaded, loaded
    assert "'typer'" not in loaded and "'click'" not in loaded, loaded  # the fast path


def test_a_piped_offload_draws_its_panel_without_rich(tmp_path: Path) -> None:
    """More than ten files: the panel's "… and N more" line is drawn without rich too."""
    from conftest import SAMPLES

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    sample = str(SAMPLES / "anthropic-session.json")
    argv = ["offload", sample, "--min-chars", "100", "--out-dir", str(tmp_path / "out"), "-o", os.devnull]
    proc = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.stderr.startswith("╭─ ctxcompact offload · ") and "… and " in proc.stderr
    loaded = proc.stderr.splitlines()[-1]
    assert "'rich'" not in loaded and "'anthropic'" not in loaded, loaded


MODULES_PROBE = textwrap.dedent(
    """
    import sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    from ctxcompact.__main__ import main
    try:
        main()
    except SystemExit:
        pass
    print("MODULES " + " ".join(sorted(m for m in sys.modules if m.startswith("ctxcompact"))), file=sys.stderr)
    """
)
OTHER_STRATEGIES = {
    f"ctxcompact.compaction.strategies.{name}"
    for name in ("key_messages", "selective", "selective_rules", "hybrid", "prune", "clean_tools")
}
SUMMARIZERS = {
    "ctxcompact.compaction.summarize.extractive",
    "ctxcompact.compaction.summarize.facts",
    "ctxcompact.compaction.summarize.llm",
    "ctxcompact.compaction.summarize.readings",
}
#: Not on a plain compaction: the journal (--resume), the JSON reports (--stats-json, --report),
#: the API module (an explicit --summarizer extractive).
OPTIONAL = {"ctxcompact.batch.journal", "ctxcompact.output.json", "ctxcompact.llm.anthropic_api"}


@pytest.mark.parametrize(
    ("strategy", "loaded", "not_loaded"),
    [
        (
            None,
            {"ctxcompact.compaction.strategies.full", "ctxcompact.compaction.summarize.extractive"},
            OTHER_STRATEGIES | OPTIONAL,
        ),
        (
            "prune",
            {"ctxcompact.compaction.strategies.prune"},
            SUMMARIZERS
            | (OTHER_STRATEGIES - {"ctxcompact.compaction.strategies.prune"})
            | {"ctxcompact.compaction.strategies.full"},
        ),
    ],
)
def test_a_compaction_imports_only_the_strategy_it_runs(
    tmp_path: Path, strategy: str | None, loaded: set[str], not_loaded: set[str]
) -> None:
    """Start-up (issue 12): the table imports a strategy's code on its first run, and the
    CLI declares its options from the light options module only."""
    from conftest import SAMPLES

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    argv = ["compact", str(SAMPLES / "anthropic-session.json"), "--summarizer", "extractive"]
    argv += ["--archive-dir", str(tmp_path), "-o", str(tmp_path / "out.json")]
    argv += ["--strategy", strategy] if strategy else []
    proc = subprocess.run(
        [sys.executable, "-c", MODULES_PROBE, *argv], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0 and (tmp_path / "out.json").stat().st_size > 0, proc.stderr
    modules = set(proc.stderr.splitlines()[-1].split()[1:])
    assert loaded <= modules and not (not_loaded & modules), sorted(not_loaded & modules)


@pytest.mark.parametrize("files", [1, 2])
def test_a_piped_eval_does_not_import_rich(tmp_path: Path, files: int) -> None:
    """eval's table on a pipe is plain text, and its progress bar is drawn only on a terminal
    (for two files or more): on a pipe rich is not loaded, as for the other commands."""
    from conftest import SAMPLES

    argv = ["eval", *[str(SAMPLES / "anthropic-session.json")] * files, "--strategy", "prune", "--jobs", "1"]
    proc = run_probe(COMMAND_PROBE, argv, cwd=tmp_path)
    assert proc.returncode == 0 and "prune" in proc.stdout, proc.stderr
    loaded = proc.stderr.splitlines()[-1]
    assert loaded.startswith("LOADED") and "'rich'" not in loaded, loaded


EXIT_PROBE = textwrap.dedent(
    """
    import atexit, sys
    sys.argv = ["ctxcompact", *sys.argv[1:]]
    atexit.register(lambda: print("exit handler ran", file=sys.stderr))
    from ctxcompact.__main__ import run
    run()
    print("not reached", file=sys.stderr)
    """
)


@pytest.mark.parametrize(
    ("argv", "status", "stdout"),
    [
        (["count", "SAMPLE", "--json"], 0, '"total"'),
        (["--version"], 0, f"ctxcompact {__version__}"),
        (["count", "no-such-file.json"], 2, ""),
        (["count", "--no-such-option"], 2, ""),
    ],
)
def test_the_process_ends_with_its_output_its_status_and_its_exit_handlers(
    tmp_path: Path, argv: list[str], status: int, stdout: str
) -> None:
    """The console script ends a finished command without tearing the interpreter down
    (``__main__.run``): what it printed, still buffered, is all there, its exit status is the
    command's, and the exit handlers ran (the dataclass cache is saved by one) — once."""
    from conftest import SAMPLES

    argv = [str(SAMPLES / "anthropic-session.json") if a == "SAMPLE" else a for a in argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CTXCOMPACT_"))}
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == status, proc.stderr
    assert stdout in proc.stdout
    assert proc.stderr.count("exit handler ran") == 1 and "not reached" not in proc.stderr, proc.stderr
    if stdout.startswith('"'):
        assert json.loads(proc.stdout)["total"] > 0  # the whole document, flushed


def test_a_piped_batch_compaction_does_not_import_rich(tmp_path: Path) -> None:
    """On a log, a batch says each file as it is done and ends with its table, all plain
    text: rich is loaded only for a terminal's progress bar."""
    from conftest import SAMPLES

    inputs = [str(SAMPLES / "anthropic-session.json"), str(SAMPLES / "claude-code-session.jsonl")]
    argv = [
        "compact",
        *inputs,
        "--out-dir",
        str(tmp_path / "out"),
        "--summarizer",
        "extractive",
        "--jobs",
        "1",
    ]
    proc = run_probe(COMMAND_PROBE, argv, cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0].startswith(f"[1/2] {inputs[0]}: compacted ") and lines[1].startswith(
        f"[2/2] {inputs[1]}: "
    )
    assert "'rich'" not in lines[-1], lines[-1]
