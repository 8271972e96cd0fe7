"""``eval --judge``: check the key, plan and price the requests, ask before spending, run the
judge (:mod:`ctxcompact.evaluation.judge`) and hand its scores to the reports. No rule lives here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from ctxcompact.cli.streams import Streams
from ctxcompact.errors import InputError, UsageError
from ctxcompact.names import JudgeName

if TYPE_CHECKING:
    from ctxcompact.evaluation.judge.ask import Asker
    from ctxcompact.evaluation.judge.result import JudgeResult
    from ctxcompact.evaluation.run import EvalResult
    from ctxcompact.llm.transport import BatchPoll


def check_judge_key(judge: JudgeName) -> None:
    """Exit 2 when no API key is set."""
    from ctxcompact.llm.anthropic_api import API_KEY_ENV, api_key_available

    if not api_key_available():
        raise InputError(
            f"eval --judge {judge.value} calls the Anthropic API and needs a key: set {API_KEY_ENV} "
            "(eval without --judge needs none)."
        )


def make_asker(judge: JudgeName, streams: Streams, *, deadline_at: float | None = None) -> Asker:
    """The asker for ``--judge`` (exit 2 when no API key is set), within ``--deadline``."""
    check_judge_key(judge)
    if judge == JudgeName.anthropic_batch:
        from ctxcompact.evaluation.judge.ask import BatchAsker
        from ctxcompact.llm.anthropic_api import AnthropicBatches
        from ctxcompact.llm.retry import RequestLimits

        def on_poll(poll: BatchPoll) -> None:
            streams.note(poll.describe())

        backend = AnthropicBatches(limits=RequestLimits(deadline_at=deadline_at))
        return BatchAsker(backend, on_poll=on_poll, deadline_at=deadline_at)
    from ctxcompact.evaluation.judge.ask import DirectAsker
    from ctxcompact.llm.anthropic_api import AnthropicTransport

    return DirectAsker(AnthropicTransport(), deadline_at=deadline_at)


def run_judge(
    result: EvalResult,
    streams: Streams,
    *,
    judge: JudgeName,
    model: str,
    per_kind: int,
    yes: bool,
    cache_dir: Path | None,
    deadline_at: float | None = None,
) -> JudgeResult:
    """Print the cost line, ask to continue (unless ``yes`` or nothing is left to send), run."""
    from ctxcompact.accounting.tokens import make_counter
    from ctxcompact.evaluation.judge.ask import CachedAsker
    from ctxcompact.evaluation.judge.cache import JudgeCache, default_cache_dir
    from ctxcompact.evaluation.judge.cost import cost_line
    from ctxcompact.evaluation.judge.run import JudgeSettings, judge_eval, plan_judge
    from ctxcompact.output.judge import judge_notes

    asker = make_asker(judge, streams, deadline_at=deadline_at)
    cache = JudgeCache(cache_dir or default_cache_dir())
    cache.check_writable()
    counter = make_counter()
    settings = JudgeSettings(model=model, per_kind=per_kind)
    plan = plan_judge(result, cache=cache, counter=counter, settings=settings)
    batch = judge == JudgeName.anthropic_batch
    streams.note(cost_line(plan, model=model, batch=batch))
    if plan.uncached and not yes:
        if not streams.terminal.stdin_isatty:
            raise UsageError(
                "eval --judge would send requests to the Anthropic API and cannot ask first "
                "(stdin is not a terminal): pass --yes to go ahead."
            )
        if not typer.confirm("Continue?", default=False, err=True):
            raise typer.Abort()
    judged = judge_eval(result, asker=CachedAsker(asker, cache), counter=counter, settings=settings)
    for line in judge_notes(judged):
        streams.note(line)
    return judged
