"""``hook``: answer Claude Code's and Codex's compaction hooks, or install them.

``ctxcompact hook pre-compact|session-start|post-compact`` reads the agent's JSON payload on
stdin and answers on stdout in the agent's own format (:mod:`ctxcompact.agents.events`);
``ctxcompact hook install`` writes the entries that make the agent call them. One command
with the event as its argument, so its options (``survive``, ``pin``, ``archive-dir``…) are
settings like any other command's (``[tool.ctxcompact.hook]``).

A hook that fails exits 1 with the reason on stderr — never 2, which Claude Code reads as
"block the compaction": a broken hook must not stop the agent.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxcompact.cli.common import reports_errors
from ctxcompact.cli.options import ArchiveDir
from ctxcompact.cli.options.compaction import Pin, PinFirst, from_flag
from ctxcompact.cli.strategies import pin_options
from ctxcompact.cli.streams import Streams, streams_for
from ctxcompact.compaction.strategies.options import FullOptions
from ctxcompact.errors import CtxcompactError, UsageError
from ctxcompact.names import AgentName, HookEventName, SummarizerName
from ctxcompact.status import ExitStatus

if TYPE_CHECKING:
    from ctxcompact.agents.hooks import HookSettings
    from ctxcompact.batch.files import FileOptions

#: The exit status of a hook that could not do its work: reported, never blocking.
HOOK_FAILED = ExitStatus.OVER_THRESHOLD


@reports_errors
def hook(
    ctx: typer.Context,
    event: HookEventName = typer.Argument(
        ..., help="pre-compact, session-start, post-compact (the hook to answer), or install."
    ),
    agent: AgentName | None = typer.Option(
        None,
        "--agent",
        case_sensitive=False,
        help="claude-code or codex. Hooks: detected from the payload when not given; install: claude-code.",
    ),
    replace: bool = typer.Option(
        False,
        "--replace",
        help="pre-compact: compact the session with ctxcompact and block the agent's own compaction "
        "(install: install pre-compact that way).",
    ),
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            "-s",
            help="--replace: the strategy (full or prune,full: a summary the agent resumes from).",
        ),
    ] = "full",
    summarizer: Annotated[
        SummarizerName,
        from_flag(
            FullOptions,
            "summarizer",
            help="--replace: who writes the summary (default extractive: offline, no key).",
            case_sensitive=False,
        ),
    ] = SummarizerName.extractive,
    summary_model: Annotated[
        str | None, from_flag(FullOptions, "summary_model", help="--replace: the summary model.")
    ] = None,
    pin: Pin = None,
    pin_first: PinFirst = None,
    survive: list[str] | None = typer.Option(
        None,
        "--survive",
        help="session-start: a file, or one Markdown section FILE#Heading (CLAUDE.md#Rules), that must "
        "survive the compaction (repeatable; relative to the session's folder).",
    ),
    archive_dir: ArchiveDir = None,
    user: bool = typer.Option(
        False, "--user/--project", help="install: the user's settings instead of this project's."
    ),
    uninstall: bool = typer.Option(False, "--uninstall", help="install: remove exactly our hook entries."),
    yes: bool = typer.Option(False, "--yes", "-y", help="install: write without asking."),
) -> None:
    """Run inside the agent's loop: back up before it compacts, score its summary, bring back what must survive.

    \b
    Events (the agent writes its JSON payload on stdin; the answer is on stdout):
      pre-compact    back the session up into the archive; with --replace compact it with
                     ctxcompact and block the agent's compaction (Codex: appended to the
                     rollout; Claude Code: into a new session, the reason names it)
      post-compact   record the agent's summary and what of the history it kept (eval's probes)
      session-start  after a compaction: re-inject pins and --survive files the summary dropped
      install        write these hooks into .claude/settings.json or .codex/hooks.json
                     (--user: the user's), showing the diff first

    \b
    Examples:
      ctxcompact hook install --agent claude-code
      ctxcompact hook install --agent codex --user --replace --yes
      ctxcompact hook install --uninstall --yes
      ctxcompact hook pre-compact --agent claude-code < payload.json
    """
    streams = streams_for(ctx)
    if event is HookEventName.install:
        _install(
            streams, agent or AgentName.claude_code, user=user, replace=replace, uninstall=uninstall, yes=yes
        )
        return
    from ctxcompact.agents.hooks import HookSettings
    from ctxcompact.compaction.archive import default_archive_dir

    try:
        settings = HookSettings(
            archive_dir=archive_dir or default_archive_dir(),
            pins=pin_options(pin, pin_first),
            survive=tuple(survive or ()),
            replace=_replacement(strategy, summarizer, summary_model, archive_dir) if replace else None,
        )
        _answer(streams, event, agent, settings)
    except CtxcompactError as exc:
        streams.error(f"hook {event.value}: {exc}")
        raise SystemExit(HOOK_FAILED) from None


def _answer(streams: Streams, event: HookEventName, agent: AgentName | None, settings: HookSettings) -> None:
    from ctxcompact.agents import hooks
    from ctxcompact.agents.events import parse_hook_input
    from ctxcompact.transcripts.fileio import read_bytes

    _, data = read_bytes(None)
    payload = parse_hook_input(data, event=event.value, agent=agent.value if agent else None)
    handler = {
        HookEventName.pre_compact: hooks.pre_compact,
        HookEventName.session_start: hooks.session_start,
        HookEventName.post_compact: hooks.post_compact,
    }[event]
    answer = handler(payload, settings)
    for note in answer.notes:
        streams.note(note)
    if answer.output is not None:
        streams.write_json(answer.output)


def _replacement(
    strategy: str, summarizer: SummarizerName, summary_model: str | None, archive_dir: Path | None
) -> FileOptions:
    from ctxcompact.batch.files import FileOptions
    from ctxcompact.compaction.options import CompactOptions
    from ctxcompact.compaction.strategies import check_strategy_names

    names = check_strategy_names(s.strip() for s in strategy.split(",") if s.strip())
    if names[-1] != "full":
        raise UsageError(
            "hook --replace: the strategy must end with full (full, prune,full): the agent resumes from a summary."
        )
    full = FullOptions(summarizer=summarizer, summary_model=summary_model)
    return FileOptions(compact=CompactOptions(strategies=names, archive_dir=archive_dir, configured=(full,)))


def _install(
    streams: Streams, agent: AgentName, *, user: bool, replace: bool, uninstall: bool, yes: bool
) -> None:
    from ctxcompact.agents.install import plan_install, settings_path
    from ctxcompact.transcripts.fileio import make_parent_dir, write_file

    path = settings_path(agent.value, user=user, project=Path.cwd())
    plan = plan_install(agent.value, path, command=ctxcompact_command(), replace=replace, uninstall=uninstall)
    if not plan.changed:
        streams.note(
            f"{path}: {'no ctxcompact hooks to remove' if uninstall else 'the hooks are installed already'}."
        )
        return
    streams.write_text(plan.diff().rstrip("\n"))
    if not yes:
        if not streams.terminal.stdin_isatty:
            raise UsageError(
                f"not writing {path} without confirmation (stdin is not a terminal): pass --yes."
            )
        if not typer.confirm(f"Write {path}?", default=False, err=True):
            raise SystemExit(ExitStatus.SUCCESS)
    make_parent_dir(path)
    write_file(path, plan.after.encode("utf-8"))
    what = "removed ctxcompact's hooks from" if uninstall else "installed ctxcompact's hooks in"
    streams.note(f"{what} {path}.")
    if agent is AgentName.codex and not uninstall:
        streams.note(
            "Codex runs a new hook once you trust it: open /hooks in codex (a project's hooks need a trusted project)."
        )


def ctxcompact_command() -> str:
    """How the agent runs this very ctxcompact: this Python with ``-m ctxcompact``."""
    return f"{shlex.quote(sys.executable)} -m ctxcompact"
