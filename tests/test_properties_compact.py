"""Invariants of full compaction over random valid transcripts (both dialects).

The output passes the validator, the input records are never mutated, the head (leading
system messages) comes through as the very same objects, roles alternate after it, and the
archive holds exactly the raw records of the messages that were replaced.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

import orjson
from gen_transcripts import transcripts
from hypothesis import HealthCheck, given, settings

from ctxcompact.accounting.tokens import EstimateCounter
from ctxcompact.compaction.pipeline import CompactOptions, compact_conversation
from ctxcompact.compaction.strategies.full import FullOptions
from ctxcompact.compaction.summarize.extractive import ExtractiveSummarizer
from ctxcompact.ir import leading_system_count
from ctxcompact.transcripts.io import dump_transcript, load_transcript, parse_transcript
from ctxcompact.transcripts.validate import errors_only, validate_messages

PROPS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(transcripts())
def test_full_compaction_invariants(case: tuple[str, list[Any]]) -> None:
    dialect, records = case
    snapshot = copy.deepcopy(records)
    transcript = load_transcript(data=orjson.dumps(records), name="generated", dialect=dialect)
    conv = transcript.conversations[0]
    with tempfile.TemporaryDirectory() as tmp:
        options = CompactOptions(
            work_dir=Path(tmp), archive_dir=Path(tmp) / "archive", configured=(FullOptions(restore=False),)
        )
        result = compact_conversation(
            conv, options=options, summarizer=ExtractiveSummarizer(), counter=EstimateCounter()
        )
        out = result.conversation.messages
        assert not errors_only(validate_messages(out, dialect=dialect))
        head = leading_system_count(conv.messages)
        assert all(a is b for a, b in zip(out[:head], conv.messages[:head], strict=True))
        roles = [m.role for m in out[head:]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        assert result.stats.archive_path is not None
        archived = [json.loads(line) for line in Path(result.stats.archive_path).read_text().splitlines()]
        assert archived == [r for m in conv.messages[head:] for r in m.source.records]  # type: ignore[union-attr]
        reread = parse_transcript(
            dump_transcript(transcript.with_conversations([result.conversation])), dialect=dialect
        )
        assert len(reread.conversations[0].messages) == len(out)
    assert records == snapshot
