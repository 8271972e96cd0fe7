"""``compact`` and ``restore-files``: transcripts on stdout (or files), stats on stderr."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ctxcompact.cli.common import (
    CONTEXT_WINDOW_OPT,
    EXIT_INTERNAL,
    FILES_ARG,
    FORMAT_OPT,
    MODEL_OPT,
    MODELS_FILE_OPT,
    OUTPUT_OPT,
    OUTPUT_RESERVE_OPT,
    QUIET_OPT,
    STATS_JSON_OPT,
    THRESHOLD_OPT,
    Format,
    LocalCounterName,
    OnFailure,
    Streams,
    SummarizerName,
    ensure_writable_dir,
    expand_inputs,
    reports_errors,
    write_json_file,
    write_output,
)
from ctxcompact.cli.local_options import (
    FALLBACK_ROUNDS_OPT,
    KEEP_RECENT_TOKENS_OPT,
    KEEP_USER_TOKENS_OPT,
    MIN_RECENT_OPT,
    PIN_FIRST_OPT,
    PIN_OPT,
    RULES_OPT,
    TARGET_USAGE_OPT,
    VERBOSE_OPT,
    local_strategy_options,
    pin_options,
    render_lines,
    timeline,
)
from ctxcompact.errors import CtxcompactError, InputError, UsageError
from ctxcompact.fileio import write_new_file
from ctxcompact.models import load_registry, validate_ratio
from ctxcompact.restore import DEFAULT_MAX_FILES, DEFAULT_MAX_TOKENS_PER_FILE, DEFAULT_MAX_TOKENS_TOTAL
from ctxcompact.strategies import AUTO_STRATEGIES, DEFAULT_STRATEGIES, STRATEGY_NAMES, check_strategy_names
from ctxcompact.strategies.clean_tools import DEFAULT_ROUNDS, CleanToolsOptions
from ctxcompact.strategies.full import DEFAULT_SUMMARY_MAX_WORDS, FullOptions
from ctxcompact.strategies.prune import DEFAULT_CLEAR_AT_LEAST, DEFAULT_KEEP, PruneOptions
from ctxcompact.summarize.llm import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from ctxcompact.compact import CompactResult
    from ctxcompact.restore import ReadTool
    from ctxcompact.transcript import Transcript

FULL = "Full compaction (--strategy full)"
RESTORE = "File restoration"
PRUNE = "Pruning (--strategy prune)"
CLEAN = "Tool cleaning (--strategy clean-tools)"
BUDGET = "Budget (--auto)"
OUTPUT = "Input and output"


# File restoration, shared by compact and restore-files (seed 000 F-005).
RESTORE_PANEL = "File restoration"
WORK_DIR_OPT = typer.Option(
    Path("."),
    "--work-dir",
    help="Files are resolved in, and must stay inside, this directory.",
    rich_help_panel=RESTORE_PANEL,
)
READ_TOOL_OPT = typer.Option(
    None,
    "--read-tool",
    help="TOOL:FIELD that reads a file (repeatable) [default: read_file:path, plus Read:file_path for Claude Code sessions].",
    rich_help_panel=RESTORE_PANEL,
)
MAX_FILES_OPT = typer.Option(
    DEFAULT_MAX_FILES, "--max-files", help="Restore at most this many files.", rich_help_panel=RESTORE_PANEL
)
MAX_TOKENS_PER_FILE_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_PER_FILE,
    "--max-tokens-per-file",
    help="Skip files larger than this.",
    rich_help_panel=RESTORE_PANEL,
)
MAX_TOKENS_TOTAL_OPT = typer.Option(
    DEFAULT_MAX_TOKENS_TOTAL,
    "--max-tokens-total",
    help="Stop restoring past this total.",
    rich_help_panel=RESTORE_PANEL,
)


def _read_tools(specs: list[str] | None) -> tuple[ReadTool, ...] | None:
    """The user's --read-tool specs, or None: the core then picks by dialect."""
    from ctxcompact.restore import parse_read_tool

    return tuple(parse_read_tool(s) for s in specs) if specs else None


def _compact_transcript(transcript: Transcript, run: Any) -> tuple[Transcript, list[CompactResult]]:
    try:
        results = [run(conv) for conv in transcript.conversations]
    except CtxcompactError as exc:
        if str(exc).startswith(transcript.name):
            raise
        # Name the file: in a batch or a script, "summary failed" alone does not say which.
        named = CtxcompactError(f"{transcript.name}: {exc}")
        named.exit_code = exc.exit_code
        raise named from None
    return transcript.with_conversations([r.conversation for r in results]), results


@reports_errors
def compact(
    files: list[Path] | None = FILES_ARG,
    strategy: str | None = typer.Option(
        None,
        "--strategy",
        "-s",
        help=f"One or more of {', '.join(STRATEGY_NAMES)}, comma-separated, run in order (e.g. prune,full). "
        f"Default {','.join(DEFAULT_STRATEGIES)}; with --auto {','.join(AUTO_STRATEGIES)}.",
        rich_help_panel=OUTPUT,
    ),
    output: Path | None = OUTPUT_OPT,
    out_dir: Path | None = typer.Option(
        None,
        "--out-dir",
        help="Batch mode: write each input's result here under its own name.",
        rich_help_panel=OUTPUT,
    ),
    in_place: bool = typer.Option(
        False,
        "--in-place",
        "-i",
        help="Rewrite each input file atomically, keeping FILE.bak.",
        rich_help_panel=OUTPUT,
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Show the plan and before/after figures; write nothing (the summarizer still runs).",
        rich_help_panel=OUTPUT,
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Batch mode: write a JSON report of every input here.", rich_help_panel=OUTPUT
    ),
    stats_json: Path | None = STATS_JSON_OPT,
    quiet: bool = QUIET_OPT,
    fmt: Format | None = FORMAT_OPT,
    auto: bool = typer.Option(
        False,
        "--auto",
        help="Compact only when check says it is due; otherwise pass the input through unchanged.",
        rich_help_panel=BUDGET,
    ),
    model: str | None = MODEL_OPT,
    context_window: int | None = CONTEXT_WINDOW_OPT,
    output_reserve: int | None = OUTPUT_RESERVE_OPT,
    threshold: float = THRESHOLD_OPT,
    models_file: Path | None = MODELS_FILE_OPT,
    counter_name: LocalCounterName = typer.Option(
        LocalCounterName.tiktoken,
        "--counter",
        case_sensitive=False,
        help="Token counter for the figures: tiktoken or estimate.",
        rich_help_panel=BUDGET,
    ),
    summarizer: SummarizerName = typer.Option(
        SummarizerName.auto,
        "--summarizer",
        case_sensitive=False,
        help="auto (anthropic when ANTHROPIC_API_KEY is set, else extractive), anthropic, or extractive (offline, deterministic).",
        rich_help_panel=FULL,
    ),
    summary_model: str | None = typer.Option(
        None,
        "--summary-model",
        help="Model that writes the summary [default: a fast Claude model].",
        rich_help_panel=FULL,
    ),
    summary_max_words: int = typer.Option(
        DEFAULT_SUMMARY_MAX_WORDS,
        "--summary-max-words",
        help="Word limit for the summary.",
        rich_help_panel=FULL,
    ),
    instructions: str | None = typer.Option(
        None,
        "--instructions",
        help="Extra focus for the summary, like /compact's argument.",
        rich_help_panel=FULL,
    ),
    on_failure: OnFailure = typer.Option(
        OnFailure.fallback,
        "--on-failure",
        case_sensitive=False,
        help="When the LLM fails after retries: fallback (extractive), skip (output = input), error (exit 3).",
        rich_help_panel=FULL,
    ),
    timeout: float = typer.Option(
        DEFAULT_TIMEOUT, "--timeout", help="Seconds per summary request.", rich_help_panel=FULL
    ),
    max_retries: int = typer.Option(
        DEFAULT_MAX_RETRIES,
        "--max-retries",
        help="Retries on 429/5xx/overloaded/connection errors, with backoff.",
        rich_help_panel=FULL,
    ),
    keep_loop: bool = typer.Option(
        False,
        "--keep-loop",
        help="Keep the last user request and its tool loop verbatim after the summary, so the result is a request you can send.",
        rich_help_panel=FULL,
    ),
    archive_dir: Path | None = typer.Option(
        None,
        "--archive-dir",
        help="Where replaced messages are archived [default: WORK_DIR/.ctxcompact/archive].",
        rich_help_panel=FULL,
    ),
    restore: bool = typer.Option(
        True,
        "--restore/--no-restore",
        help="Re-read the files the agent read most recently.",
        rich_help_panel=RESTORE,
    ),
    work_dir: Path = WORK_DIR_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    keep: int = typer.Option(
        DEFAULT_KEEP, "--keep", help="Keep the N most recent tool uses untouched.", rich_help_panel=PRUNE
    ),
    clear_at_least: int = typer.Option(
        DEFAULT_CLEAR_AT_LEAST,
        "--clear-at-least",
        help="Change nothing unless at least this many tokens can be freed.",
        rich_help_panel=PRUNE,
    ),
    exclude_tools: str | None = typer.Option(
        None, "--exclude-tools", help="Comma-separated tool names never cleared.", rich_help_panel=PRUNE
    ),
    clear_tool_inputs: bool = typer.Option(
        False,
        "--clear-tool-inputs",
        help="Also blank the inputs of cleared tool uses.",
        rich_help_panel=PRUNE,
    ),
    keep_thinking: str = typer.Option(
        "all",
        "--keep-thinking",
        help="Keep thinking of the last N assistant turns, or 'all'.",
        rich_help_panel=PRUNE,
    ),
    rounds: int = typer.Option(
        DEFAULT_ROUNDS, "--rounds", help="Keep tool calls of the last N rounds.", rich_help_panel=CLEAN
    ),
    include_loop: bool = typer.Option(
        False,
        "--include-loop",
        help="Let prune clear inside the current tool loop too (as the API's own edit does).",
        rich_help_panel=PRUNE,
    ),
    rules: Path | None = RULES_OPT,
    target_usage: float = TARGET_USAGE_OPT,
    min_recent: int = MIN_RECENT_OPT,
    fallback_rounds: int = FALLBACK_ROUNDS_OPT,
    pin: list[str] | None = PIN_OPT,
    pin_first: bool | None = PIN_FIRST_OPT,
    keep_recent_tokens: int | None = KEEP_RECENT_TOKENS_OPT,
    keep_user_tokens: int = KEEP_USER_TOKENS_OPT,
    verbose: bool = VERBOSE_OPT,
) -> None:
    """Rewrite a transcript to fit: summarize history and restore recent files, or prune locally.

    The default strategy (full) replaces everything after the system prompt with a structured
    summary followed by the files the agent read most recently, re-read from disk. The
    messages it replaces are archived first. Without ANTHROPIC_API_KEY the offline extractive
    summarizer writes the summary: no network, same input → same output.

    \b
    Examples:
      ctxcompact compact t.json -o small.json
      cat t.json | ctxcompact compact --auto --model gpt-4o > next.json
      ctxcompact compact t.json --summarizer extractive --work-dir ~/project
      ctxcompact compact session.jsonl --strategy prune,full --read-tool Read:file_path
      ctxcompact compact sessions/ --out-dir compacted/ --report report.json
    """
    from ctxcompact.compact import CompactOptions, compact_conversation
    from ctxcompact.render import render_batch, render_compact_stats, render_warnings
    from ctxcompact.tokens import make_counter
    from ctxcompact.transcript import dump_transcript, load_transcript
    from ctxcompact.usage import budget_for, unknown_model_warning

    streams = Streams(quiet=quiet)
    validate_ratio(threshold)
    thinking = (
        None
        if keep_thinking.strip().lower() == "all"
        else _non_negative_int(keep_thinking, "--keep-thinking")
    )
    selective, key_messages = local_strategy_options(
        rules=rules, target_usage=target_usage, min_recent=min_recent, fallback_rounds=fallback_rounds
    )
    chosen = (
        strategy.split(",") if strategy is not None else (AUTO_STRATEGIES if auto else DEFAULT_STRATEGIES)
    )
    options = CompactOptions(
        strategies=check_strategy_names(s.strip() for s in chosen if s.strip()),
        work_dir=work_dir,
        archive_dir=archive_dir,
        full=FullOptions(
            summarizer=summarizer.value,
            summary_model=summary_model,
            summary_max_words=summary_max_words,
            instructions=instructions,
            on_failure=on_failure.value,
            timeout=timeout,
            max_retries=max_retries,
            restore=restore,
            keep_loop=keep_loop,
            read_tools=_read_tools(read_tool),
            max_files=max_files,
            max_tokens_per_file=max_tokens_per_file,
            max_tokens_total=max_tokens_total,
            keep_recent_tokens=keep_recent_tokens,
            keep_user_tokens=keep_user_tokens,
        ),
        prune=PruneOptions(
            keep=keep,
            clear_at_least=clear_at_least,
            exclude_tools=tuple(t.strip() for t in (exclude_tools or "").split(",") if t.strip()),
            clear_tool_inputs=clear_tool_inputs,
            keep_thinking=thinking,
            include_loop=include_loop,
        ),
        clean_tools=CleanToolsOptions(rounds=rounds),
        selective=selective,
        key_messages=key_messages,
        pins=pin_options(pin, pin_first),
    )
    registry = load_registry(models_file)
    counter = make_counter(counter_name.value)
    inputs = expand_inputs(files, exclude=(out_dir, report, stats_json, archive_dir))
    if output is not None and out_dir is not None:
        raise UsageError(
            "-o/--output names one output file and --out-dir a directory for several: give one of them."
        )
    if output is not None and in_place:
        raise UsageError("--in-place rewrites each input file: it does not combine with -o/--output.")
    batch = len(inputs) > 1 or out_dir is not None
    if batch and out_dir is None and not in_place and not dry_run:
        raise UsageError("several inputs: give --out-dir DIR (or --in-place) so each result has a file.")
    if output is not None and batch:
        raise UsageError("-o/--output takes one input; use --out-dir for several.")
    if in_place and None in inputs:
        raise UsageError("--in-place needs files, not stdin.")
    for option, target in (("--stats-json", stats_json), ("--report", report)):
        ensure_writable_dir(target, option)
    warnings: list[str] = []

    def run(conv: Any) -> CompactResult:
        budget = None
        if auto or model or context_window:
            budget = budget_for(
                conv,
                model=model,
                context_window=context_window,
                output_reserve=output_reserve,
                ratio=threshold,
                registry=registry,
            )
            warning = unknown_model_warning(budget)
            if warning:
                warnings.append(warning)
        return compact_conversation(
            conv, options=options, budget=budget, auto=auto, dry_run=dry_run, counter=counter
        )

    if not batch:
        path = inputs[0]
        transcript = load_transcript(path, dialect=fmt.value if fmt else None)
        new, results = _compact_transcript(transcript, run)
        render_warnings(list(dict.fromkeys(warnings)), streams.err)
        # The transcript first: stats that say "compacted" only once the output exists.
        if not dry_run:
            data = dump_transcript(new)
            if in_place and path is not None:
                _replace_in_place(Path(path), data)
            else:
                write_output(data, output)
        for r in results:
            render_compact_stats(
                r.stats, streams.err, label=r.conversation.label if len(results) > 1 else None
            )
            if verbose or dry_run:
                render_lines(timeline(r.stats.steps), streams.err)
        stats_payload = [r.stats.to_dict() for r in results]
        write_json_file(stats_json, stats_payload[0] if len(stats_payload) == 1 else stats_payload)
        if report is not None:
            row: dict[str, Any] = {
                "input": path or "<stdin>",
                "status": "compacted" if any(r.compacted for r in results) else "unchanged",
            }
            row["output"] = path if in_place else (str(output) if output else None)
            row["stats"] = stats_payload
            write_json_file(
                report, {"inputs": [row], "compacted": int(row["status"] == "compacted"), "failed": 0}
            )
        return

    rows = _run_batch(inputs, fmt, run, out_dir, in_place, dry_run, streams)
    render_warnings(list(dict.fromkeys(warnings)), streams.err)
    render_batch(rows, streams.err)
    payload = {
        "inputs": rows,
        "compacted": sum(r["status"] == "compacted" for r in rows),
        "failed": sum(r["status"] == "failed" for r in rows),
    }
    write_json_file(report, payload)
    write_json_file(stats_json, payload)
    codes = [r["exit_code"] for r in rows if r["status"] == "failed"]
    if codes:
        raise typer.Exit(max(codes))


def _non_negative_int(value: str, option: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{option} takes a whole number or 'all', got {value!r}.") from None
    if n < 0:
        raise UsageError(f"{option} must not be negative.")
    return n


def _replace_in_place(path: Path, data: bytes) -> None:
    """Rewrite ``path`` atomically after saving its current bytes as ``FILE.bak`` — or, when
    that exists from an earlier run, ``FILE.bak.1``, ``.bak.2``…: a backup is never replaced."""
    path = Path(os.path.realpath(path))  # a symlinked input: back up and rewrite its target
    backup = path.with_name(path.name + ".bak")
    n = 0
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.bak.{n}")
    try:
        write_new_file(backup, path.read_bytes(), mode_of=path)
    except OSError as exc:
        raise InputError(
            f"{path}: cannot keep a backup at {backup} ({exc.strerror or exc}); file left unchanged."
        ) from None
    write_output(data, path)


def _run_batch(
    inputs: list[str | None],
    fmt: Format | None,
    run: Any,
    out_dir: Path | None,
    in_place: bool,
    dry_run: bool,
    streams: Streams,
) -> list[dict[str, Any]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ctxcompact.transcript import dump_transcript, load_transcript

    rows: list[dict[str, Any]] = []
    used_names: set[str] = set()
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=streams.err,
        transient=True,
    ) as progress:
        task = progress.add_task("compacting", total=len(inputs))
        for path in inputs:
            name = path or "<stdin>"
            progress.update(task, description=f"compacting {Path(name).name}")
            row: dict[str, Any] = {"input": name}
            try:
                target = None
                if out_dir is not None and not in_place and not dry_run:
                    # Decided before any work: nothing is summarized or archived for an input
                    # whose result could not be written.
                    target = _batch_target(out_dir, name, used_names)
                    if path is not None and target.resolve() == Path(path).resolve():
                        raise UsageError(f"{target} is the input itself; use --in-place to overwrite inputs.")
                transcript = load_transcript(path, dialect=fmt.value if fmt else None)
                new, results = _compact_transcript(transcript, run)
                before = sum(r.stats.original_tokens for r in results)
                after = sum(r.stats.compacted_tokens for r in results)
                row.update(
                    status="compacted" if any(r.compacted for r in results) else "unchanged",
                    before=before,
                    after=after,
                    ratio=after / before if before else None,
                    stats=[r.stats.to_dict() for r in results],
                )
                if not dry_run:
                    data = dump_transcript(new)
                    if in_place and path is not None:
                        _replace_in_place(Path(path), data)
                        row["output"] = path
                    elif target is not None:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        write_output(data, target)
                        row["output"] = str(target)
            except CtxcompactError as exc:
                row.update(status="failed", error=str(exc), exit_code=exc.exit_code)
            except Exception as exc:  # a bug on one input must not cost the others their results
                row.update(
                    status="failed",
                    error=f"internal error: {type(exc).__name__}: {exc} (a bug in ctxcompact; please report it)",
                    exit_code=EXIT_INTERNAL,
                )
            rows.append(row)
            progress.advance(task)
    return rows


def _batch_target(out_dir: Path, name: str, used: set[str]) -> Path:
    base = Path(name).name if name != "<stdin>" else "stdin.json"
    candidate = base
    n = 1
    while candidate in used:
        stem, dot, suffix = base.partition(".")
        candidate = f"{stem}-{n}{dot}{suffix}"
        n += 1
    used.add(candidate)
    return out_dir / candidate


@reports_errors
def restore_files(
    file: Path | None = typer.Argument(
        None, help="The transcript; '-' or nothing reads stdin.", show_default=False
    ),
    work_dir: Path = WORK_DIR_OPT,
    read_tool: list[str] | None = READ_TOOL_OPT,
    max_files: int = MAX_FILES_OPT,
    max_tokens_per_file: int = MAX_TOKENS_PER_FILE_OPT,
    max_tokens_total: int = MAX_TOKENS_TOTAL_OPT,
    append: bool = typer.Option(
        False, "--append", help="Print the whole transcript with the restored-file messages appended."
    ),
    output: Path | None = OUTPUT_OPT,
    fmt: Format | None = FORMAT_OPT,
    stats_json: Path | None = STATS_JSON_OPT,
    quiet: bool = QUIET_OPT,
) -> None:
    """Re-read the files the agent read last and emit them as message pairs.

    Scans the assistant's read calls (read_file:path by default), newest first, last access
    wins; takes the newest --max-files paths, then skips missing, binary, non-UTF-8, too large
    or outside --work-dir ones (symlinks resolved). Prints the restored-file message pairs in the
    transcript's dialect, or the whole transcript with --append.

    \b
    Examples:
      ctxcompact restore-files t.json --work-dir ~/project
      ctxcompact restore-files session.jsonl --read-tool Read:file_path --append -o t2.jsonl
    """
    import orjson

    from ctxcompact.dialects import DIALECTS
    from ctxcompact.render import render_restore
    from ctxcompact.restore import read_tools_for, restore_recent_files
    from ctxcompact.strategies.full import restored_pairs
    from ctxcompact.transcript import dump_records, dump_transcript, load_transcript

    streams = Streams(quiet=quiet)
    for name, value in (
        ("--max-files", max_files),
        ("--max-tokens-per-file", max_tokens_per_file),
        ("--max-tokens-total", max_tokens_total),
    ):
        if value < 0:
            raise UsageError(f"{name} must not be negative.")
    transcript = load_transcript(file, dialect=fmt.value if fmt else None)
    if len(transcript.conversations) != 1:
        raise InputError(
            f"{transcript.name} holds {len(transcript.conversations)} conversations; restore-files takes one."
        )
    conv = transcript.conversations[0]
    result = restore_recent_files(
        conv.messages,
        work_dir=work_dir,
        max_files=max_files,
        max_tokens_per_file=max_tokens_per_file,
        max_tokens_total=max_tokens_total,
        tools=_read_tools(read_tool) or read_tools_for(conv.dialect),
    )
    render_restore(result, streams.err)
    write_json_file(
        stats_json,
        {
            "restoredFileCount": len(result.files),
            "restoredTokenCount": result.tokens,
            "files": [
                {"path": f.path, "resolved": str(f.resolved), "tokens": f.tokens} for f in result.files
            ],
            "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        },
    )
    pairs = restored_pairs(result)
    if append:
        last = conv.messages[-1] if conv.messages else None
        if (
            last is not None
            and last.role == "assistant"
            and any(b.get("type") == "tool_use" for b in last.content)
        ):
            raise InputError(
                f"{transcript.name}: the last message is a tool call still waiting for its result; "
                "appending after it would orphan the call. Append once the results are in."
            )
        new = transcript.with_conversations([conv.with_messages([*conv.messages, *pairs])])
        write_output(dump_transcript(new), output)
        return
    render = DIALECTS[conv.dialect].render_message
    records = [r for m in pairs for r in render(m)]
    if transcript.container in ("jsonl", "claude-code"):  # in the transcript's own form
        write_output(dump_records(records), output)
    else:
        write_output(orjson.dumps(records, option=orjson.OPT_INDENT_2) + b"\n", output)
