"""``hybrid`` (``--auto``) masks only what its summary leaves (issue 24).

When not even every older tool result as a stub fits the budget, the summary step replaces the
oldest turns and reads their results as written: the masking step then writes the stubs newest
first and stops where the masked rest alone is over the budget. The result must be exactly what
masking everything first gives — checked against that (eager) plan on generated tool-heavy
conversations around the crossover — and the stubs the summary would discard are not written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_local_runs import Failing

from ctxcompact.accounting.counters import CachedCounter
from ctxcompact.accounting.tokens import EstimateCounter, message_totals
from ctxcompact.compaction.masking import is_stub
from ctxcompact.compaction.pins import PinOptions
from ctxcompact.compaction.strategies import hybrid
from ctxcompact.compaction.strategies.base import StrategyContext, StrategyResult
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.strategies.pipeline import run_pipeline
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.ir import Message
from ctxcompact.names import OnFailure
from ctxcompact.transcripts.io import load_transcript

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda", "sigma"]


def _text(seed: int, words: int) -> str:
    return " ".join(f"{WORDS[(seed * 7 + i) % 10]}{(seed + i) % 13}" for i in range(words))


@st.composite
def sessions(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A task, then turns of tool calls (results of very different sizes, some inputs long
    enough for a preview, some ids answered by one shared result, thinking), user requests in
    between, a pinned message now and then, and a last turn or a live call."""
    records: list[dict[str, Any]] = [{"role": "user", "content": "Task: " + _text(0, 30)}]
    turns = draw(st.integers(4, 22))
    for n in range(turns):
        if n and draw(st.integers(0, 5)) == 0:
            pinned = draw(st.integers(0, 4)) == 0
            records.append(
                {
                    "role": "user",
                    "content": "Next: " + _text(n, 20),
                    **({"ctxcompact_pin": True} if pinned else {}),
                }
            )
            records.append({"role": "assistant", "content": "On it. " + _text(n, 8)})
        content: list[dict[str, Any]] = []
        if draw(st.booleans()):
            content.append(
                {"type": "thinking", "thinking": _text(n + 3, draw(st.integers(5, 120))), "signature": "s"}
            )
        content.append({"type": "text", "text": f"Step {n}: " + _text(n, draw(st.integers(2, 30)))})
        calls = draw(st.integers(1, 3))
        shared = calls > 1 and draw(st.integers(0, 6)) == 0
        ids = [f"t{n}_{k}" for k in range(calls)]
        if shared:
            ids[1] = ids[0]  # two uses of one id, answered by one result
        for k, tool_id in enumerate(ids):
            long_input = draw(st.integers(0, 7)) == 0
            tool_input = (
                {"file_path": f"src/f{n}.py", "content": _text(n + k, 700)}
                if long_input
                else {"command": f"cat src/p{n}_{k}.py"}
            )
            content.append(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "Write" if long_input else "Bash",
                    "input": tool_input,
                }
            )
        results = [
            {
                "type": "tool_result",
                "tool_use_id": tool_id,
                "content": _text(n * 3 + k, draw(st.sampled_from([1, 3, 40, 200, 600]))),
            }
            for k, tool_id in enumerate(dict.fromkeys(ids))
        ]
        records.append({"role": "assistant", "content": content})
        records.append({"role": "user", "content": results})
    if draw(st.booleans()):
        records.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "live", "name": "Bash", "input": {"command": "pytest"}}
                ],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "live", "content": "3 passed"}],
            }
        )
    else:
        records.append({"role": "assistant", "content": "Done: " + _text(99, 12)})
    return records


def _messages(records: list[dict[str, Any]]) -> tuple[Message, ...]:
    return tuple(load_transcript(data=orjson.dumps(records), name="t.json").conversations[0].messages)


#: ``--on-failure skip``: a summary that fails leaves the masked messages as they are.
SKIP = FullOptions(on_failure=OnFailure.skip)


def _context(
    messages: tuple[Message, ...], target: int, *, pins: PinOptions | None = None, skip: bool = False
) -> StrategyContext:
    return StrategyContext(
        counter=CachedCounter(EstimateCounter()),
        summarizer=(lambda: Failing()) if skip else (lambda: ExtractiveSummarizer()),
        target_tokens=target + 1,  # the message target is one under it
        original=messages,
        configured=(SKIP,) if skip else (),
        pins=pins or PinOptions(),
    )


@contextmanager
def _eager() -> Iterator[None]:
    """Masking as before issue 24: every older result oldest first, until the messages fit."""
    with mock.patch.object(hybrid, "_mask_what_the_summary_keeps", lambda *args, **kwargs: None):
        yield


def _run(messages: tuple[Message, ...], target: int, **how: Any) -> StrategyResult:
    return run_pipeline(messages, hybrid.HYBRID, _context(messages, target, **how))


def _shape(result: StrategyResult) -> list[tuple[Any, ...]]:
    """What the writer writes of each message: role, content, changed, its record, meta."""
    return [
        (m.role, m.content, m.changed, id(m.source) if m.source else None, dict(m.meta))
        for m in result.messages
    ]


def _all_masked(messages: tuple[Message, ...]) -> int:
    """What the messages count with every result masking may change masked (a budget of 1:
    the newest turns' too)."""
    with _eager():
        masked = hybrid.mask_to_budget(messages, None, _context(messages, 1))
    return sum(message_totals(masked.messages, EstimateCounter()))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(
    records=sessions(),
    near=st.booleans(),
    offset=st.integers(-60, 60),
    ratio=st.floats(0.03, 1.0),
    how=st.sampled_from(["default", "default", "default", "pattern", "skip"]),
)
def test_the_result_is_the_one_masking_everything_first_gives(
    records: list[dict[str, Any]], near: bool, offset: int, ratio: float, how: str
) -> None:
    """Around the crossover (the budget a little over or under what everything masked counts,
    the newest turns masked too or not): the same messages, records and flags as the eager
    plan, with ``--pin`` patterns and ``--on-failure skip`` (where the summary may not run)."""
    messages = _messages(records)
    masked = _all_masked(messages)
    target = max(masked + offset if near else int(masked * ratio), 1)
    options: dict[str, Any] = (
        {"pins": PinOptions(("Step 3",))} if how == "pattern" else {"skip": how == "skip"}
    )
    with _eager():
        eager = _run(messages, target, **options)
    lazy = _run(messages, target, **options)
    assert _shape(lazy) == _shape(eager)
    assert lazy.summary == eager.summary and lazy.warnings == eager.warnings


def _long_loop(steps: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [{"role": "user", "content": "Task: " + _text(0, 30)}]
    for n in range(steps):
        records.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {n}: " + _text(n, 40)},
                    {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": f"cat p{n}.py"}},
                ],
            }
        )
        records.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": _text(n, 300)}],
            }
        )
    records.append({"role": "assistant", "content": "Done."})
    return records


def test_a_long_session_masks_only_what_the_summary_keeps() -> None:
    """400 tool calls, a budget for a few dozen: the summary replaces most of them, so masking
    writes the stubs of the newest only — the oldest results stay as written in the mask step
    (the summary reads them so) — and the compacted messages are those masking all gives."""
    messages = _messages(_long_loop(400))
    target = 12_000
    with _eager():
        eager = _run(messages, target)
    lazy = _run(messages, target)
    assert _shape(lazy) == _shape(eager)
    mask, summary = (step for step in lazy.details.to_dict()["steps"])
    eager_mask = eager.details.to_dict()["steps"][0]
    assert eager_mask["results_masked"] > 390 and "left_for_summary" not in eager_mask
    assert 0 < mask["results_masked"] < 100
    assert mask["results_masked"] + mask["left_for_summary"] == 397  # the last 3 turns: recent
    assert mask["tokens"]["after"] > eager_mask["tokens"]["after"]  # what the step wrote
    assert summary["tokens"]["after"] == eager.details.to_dict()["steps"][1]["tokens"]["after"]
    # The oldest results were left as written by the mask step, all before the summary's cut;
    # the newer ones are stubs.
    masked = hybrid.mask_to_budget(messages, None, _context(messages, target)).messages
    results = [(i, b) for i, m in enumerate(masked) for b in m.content if b.get("type") == "tool_result"]
    left = mask["left_for_summary"]
    assert not any(is_stub(b.get("content")) for _, b in results[:left])
    assert all(is_stub(b.get("content")) for _, b in results[left:-3])
    assert results[left - 1][0] < summary["cut"]


def test_masking_alone_fits_masks_oldest_first_as_before() -> None:
    """When the stubs make the messages fit, nothing changes: the oldest results are masked
    until they fit and no summary is written."""
    messages = _messages(_long_loop(60))
    target = int(_all_masked(messages) * 1.5)
    result = _run(messages, target)
    mask = result.details.to_dict()["steps"][0]
    assert result.details.to_dict()["skipped"] == ["summary"] and "left_for_summary" not in mask
    with _eager():
        assert _shape(_run(messages, target)) == _shape(result)
