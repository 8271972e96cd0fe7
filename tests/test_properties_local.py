"""Invariants of the local strategies (selective, key-messages) over random valid transcripts
and random targets, in both dialects, and on the real corpus when it is present.

For every run: the output passes the validator with no new error, the input is not mutated,
the protected part (head, pins, earlier summaries, the live loop with the last user request)
comes out as the very same objects in the same order, tokens never grow, and key-messages
meets the target whenever the protected part alone fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import corpus_files
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcompact.accounting.tokens import EstimateCounter, count_tokens
from ctxcompact.compaction.pins import PinOptions, protected_part
from ctxcompact.compaction.strategies.key_messages import key_message_extraction
from ctxcompact.compaction.strategies.selective import selective_compaction
from ctxcompact.ir import Message
from ctxcompact.transcripts.io import load_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

COUNTER = EstimateCounter()
PROPS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Local = Callable[..., Any]
PINS = PinOptions(patterns=("alpha beta",))


def _tokens(messages: Sequence[Message]) -> int:
    return count_tokens(messages, counter=COUNTER).total


def check_local(messages: tuple[Message, ...], dialect: str, run: Local, target: int) -> Any:
    guard = protected_part(messages, PINS)
    result = run(messages, target_tokens=target, counter=COUNTER, pins=PINS)
    out = result.messages
    old = {(v.code, v.subject) for v in errors_only(validate_messages(messages, dialect=dialect))}
    new = [v for v in errors_only(validate_messages(out, dialect=dialect)) if (v.code, v.subject) not in old]
    assert not new, new
    protected = [m for i, m in enumerate(messages) if i in guard]
    kept = [m for m in out if any(m is p for p in protected)]
    assert kept == protected  # verbatim (same objects), in order
    assert _tokens(out) <= _tokens(messages)
    if not result.changed:
        assert list(out) == list(messages)
    return result


def protected_tokens(messages: tuple[Message, ...]) -> int:
    guard = protected_part(messages, PINS)
    return _tokens([m for i, m in enumerate(messages) if i in guard])


@PROPS
@given(data=transcripts(), fraction=st.floats(0.0, 1.2))
def test_local_strategies_keep_invariants(data: tuple[str, list[Any]], fraction: float) -> None:
    dialect, records = data
    conv = load_transcript(data=orjson.dumps(records), name="g", dialect=dialect).conversations[0]
    messages = conv.messages
    pristine = _snapshot(messages)
    target = int(_tokens(messages) * fraction)
    check_local(messages, dialect, selective_compaction, target)
    result = check_local(messages, dialect, key_message_extraction, target)
    if protected_tokens(messages) <= target:
        assert result.details.target_met, result.details.to_dict()
    assert _snapshot(messages) == pristine


def _snapshot(messages: Sequence[Message]) -> bytes:
    """Everything a strategy could mutate: contents and raw records."""
    return orjson.dumps([[list(m.content), list(m.source.records) if m.source else None] for m in messages])


@pytest.mark.parametrize("path", corpus_files("anthropic", "openai", "claude-code"), ids=lambda p: p.name)
def test_local_strategies_on_the_corpus(path: Path) -> None:
    transcript = load_transcript(path)
    for conv in transcript.conversations[:3]:
        messages = conv.messages
        target = _tokens(messages) // 3
        check_local(messages, conv.dialect, selective_compaction, target)
        result = check_local(messages, conv.dialect, key_message_extraction, target)
        if protected_tokens(messages) <= target:
            assert result.details.target_met
