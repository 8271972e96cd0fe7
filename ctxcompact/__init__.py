"""ctxcompact: keep LLM agent transcripts inside their context window.

The library API (the CLI calls the same functions)::

    from ctxcompact import load_transcript, count_message_tokens, check_budget

    transcript = load_transcript("session.jsonl")
    report = count_message_tokens(transcript.conversations[0])
    result = check_budget(messages, model="claude-sonnet-4-5")

Imports are lazy so that ``import ctxcompact`` (and ``ctxcompact --version``) stays fast.
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing typing (~2 ms of ``--version``'s ~25): type
#: checkers read this name as true.
TYPE_CHECKING = False

__version__ = "0.1.0"

_EXPORTS = {
    "load_transcript": "ctxcompact.transcripts.io",
    "load_messages": "ctxcompact.transcripts.io",
    "dump_transcript": "ctxcompact.transcripts.io",
    "Transcript": "ctxcompact.transcripts.io",
    "Conversation": "ctxcompact.transcripts.io",
    "Message": "ctxcompact.ir",
    "count_message_tokens": "ctxcompact.accounting.check",
    "check_budget": "ctxcompact.accounting.check",
    "CheckResult": "ctxcompact.accounting.check",
    "count_tokens": "ctxcompact.accounting.tokens",
    "estimate_tokens": "ctxcompact.accounting.tokens",
    "TokenReport": "ctxcompact.accounting.tokens",
    "make_counter": "ctxcompact.accounting.tokens",
    "resolve_model": "ctxcompact.accounting.windows",
    "make_budget": "ctxcompact.accounting.windows",
    "export_transcript": "ctxcompact.transcripts.points.export",
    "compaction_points": "ctxcompact.transcripts.points.export",
    "validate_messages": "ctxcompact.transcripts.validate",
    "Violation": "ctxcompact.transcripts.validate",
    "compact_messages": "ctxcompact.compaction.pipeline",
    "acompact_messages": "ctxcompact.compaction.pipeline",
    "compact_conversation": "ctxcompact.compaction.pipeline",
    "CompactOptions": "ctxcompact.compaction.pipeline",
    "CompactResult": "ctxcompact.compaction.pipeline",
    "CompactStats": "ctxcompact.compaction.pipeline",
    "compact_stats_json": "ctxcompact.output.json",
    "compact_file": "ctxcompact.batch.files",
    "compact_files": "ctxcompact.batch.files",
    "FileOptions": "ctxcompact.batch.files",
    "FileCompaction": "ctxcompact.batch.files",
    "BatchItem": "ctxcompact.batch.files",
    "BatchResult": "ctxcompact.batch.files",
    "SummarizerName": "ctxcompact.names",
    "OnFailure": "ctxcompact.names",
    "CounterName": "ctxcompact.names",
    "ExitStatus": "ctxcompact.status",
    "CtxcompactError": "ctxcompact.errors",
    "InputError": "ctxcompact.errors",
    "WorkFailedError": "ctxcompact.errors",
}

__all__ = [
    "BatchItem",
    "BatchResult",
    "CheckResult",
    "CompactOptions",
    "CompactResult",
    "CompactStats",
    "Conversation",
    "CounterName",
    "CtxcompactError",
    "ExitStatus",
    "FileCompaction",
    "FileOptions",
    "InputError",
    "Message",
    "OnFailure",
    "SummarizerName",
    "TokenReport",
    "Transcript",
    "Violation",
    "WorkFailedError",
    "__version__",
    "acompact_messages",
    "check_budget",
    "compact_conversation",
    "compact_file",
    "compact_files",
    "compact_messages",
    "compact_stats_json",
    "compaction_points",
    "count_message_tokens",
    "count_tokens",
    "dump_transcript",
    "estimate_tokens",
    "export_transcript",
    "load_messages",
    "load_transcript",
    "make_budget",
    "make_counter",
    "resolve_model",
    "validate_messages",
]

if TYPE_CHECKING:
    from typing import Any

    from ctxcompact.accounting.check import CheckResult, check_budget, count_message_tokens
    from ctxcompact.accounting.tokens import TokenReport, count_tokens, estimate_tokens, make_counter
    from ctxcompact.accounting.windows import make_budget, resolve_model
    from ctxcompact.batch.files import (
        BatchItem,
        BatchResult,
        FileCompaction,
        FileOptions,
        compact_file,
        compact_files,
    )
    from ctxcompact.compaction.pipeline import (
        CompactOptions,
        CompactResult,
        CompactStats,
        compact_conversation,
        compact_messages,
    )
    from ctxcompact.errors import CtxcompactError, InputError, WorkFailedError
    from ctxcompact.ir import Message
    from ctxcompact.names import CounterName, OnFailure, SummarizerName
    from ctxcompact.output.json import compact_stats_json
    from ctxcompact.status import ExitStatus
    from ctxcompact.transcripts.io import (
        Conversation,
        Transcript,
        dump_transcript,
        load_messages,
        load_transcript,
    )
    from ctxcompact.transcripts.points.export import compaction_points, export_transcript
    from ctxcompact.transcripts.validate import Violation, validate_messages


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxcompact' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
