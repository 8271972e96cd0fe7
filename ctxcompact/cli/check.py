"""``check``: will the next call fit? The report on stdout, the verdict in the exit code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from ctxcompact.accounting.tokens import DEFAULT_ENCODING
from ctxcompact.cli.common import load_all, reports_errors
from ctxcompact.cli.groups import budget_options, counter_for, option_groups
from ctxcompact.cli.streams import streams_for
from ctxcompact.llm.deadline import DEFAULT_DEADLINE, deadline_in
from ctxcompact.names import CounterName
from ctxcompact.status import ExitStatus
from ctxcompact.transcripts.io import DEFAULT_MAX_INPUT_BYTES

if TYPE_CHECKING:
    import typer

    from ctxcompact.accounting.check import BudgetSpec
    from ctxcompact.cli.options import (
        Counter,
        Deadline,
        Encoding,
        Files,
        FormatOption,
        Json,
        MaxInputBytes,
        SystemTokens,
    )


@reports_errors
@option_groups(budget=budget_options)
def check(
    ctx: typer.Context,
    budget: BudgetSpec,  # --model, --context-window, --output-reserve, --threshold, --models-file
    files: Files = None,
    validate: Annotated[
        bool,
        typer.Option("--validate/--no-validate", help="Also check API invariants (tool pairs, ids, roles)."),
    ] = True,
    fmt: FormatOption = None,
    max_input_bytes: MaxInputBytes = DEFAULT_MAX_INPUT_BYTES,
    counter: Counter = CounterName.tiktoken,
    encoding: Encoding = DEFAULT_ENCODING,
    deadline: Deadline = DEFAULT_DEADLINE,
    as_json: Json = False,
    system_tokens: SystemTokens = None,
) -> None:
    """Will my next call fit? Exit 0 within budget, 1 when compaction is due, 2 on bad input.

    threshold = (context window − output reserve) × ratio. Invariant errors (an orphan
    tool_result, an unanswered tool_use, a duplicate id) also exit 2: the API would refuse
    the request. Each input is checked against its own budget (its own model unless --model).

    The decision is from the transcript's last recorded usage (a Claude Code session's
    message.usage) plus our count of what came after it; else, for a Claude model, our
    count × a measured factor + --system-tokens, marked as an estimate; else our count.

    \b
    Examples:
      ctxcompact check t.json --model claude-sonnet-4-5 && echo fits
      ctxcompact check session.jsonl --threshold 0.75 --json
      ctxcompact check t.json -m gpt-4o || [ $? -ne 1 ] || ctxcompact compact t.json -i
      ctxcompact compact t.json -i --auto -m gpt-4o     # the same in one step
    """
    from ctxcompact.accounting.check import check_conversation

    streams = streams_for(ctx)
    deadline_at = deadline_in(deadline)
    results = []
    warnings: list[str] = []
    loaded = load_all(files, fmt, max_bytes=max_input_bytes, streams=streams)
    for transcript in loaded.transcripts:
        for conv in transcript.conversations:
            resolved, said = budget.resolve(conv)
            warnings.extend(said)
            warnings.extend(f"{conv.label}: {w}" for w in conv.warnings)
            chosen = counter_for(
                counter, encoding=encoding, model=resolved.model.model, deadline_at=deadline_at
            )
            results.append(
                check_conversation(
                    conv, budget=resolved, counter=chosen, validate=validate, system_tokens=system_tokens
                )
            )
    streams.warnings(warnings)
    if as_json:
        from ctxcompact.output.json import check_to_json

        streams.write_json(check_to_json(results))
    else:
        from ctxcompact.output.text import check_report

        streams.report(check_report(results))
    if loaded.failed or any(r.errors for r in results):
        raise SystemExit(ExitStatus.BAD_INPUT)
    if any(r.needs_compaction for r in results):
        raise SystemExit(ExitStatus.OVER_THRESHOLD)
