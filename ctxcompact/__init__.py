"""ctxcompact: keep LLM agent transcripts inside their context window.

The library API (the CLI calls the same functions)::

    from ctxcompact import load_transcript, count_message_tokens, check_budget

    transcript = load_transcript("session.jsonl")
    report = count_message_tokens(transcript.conversations[0])
    result = check_budget(messages, model="claude-sonnet-4-5")

Imports are lazy so that ``import ctxcompact`` (and ``ctxcompact --version``) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_transcript": "ctxcompact.transcript",
    "load_messages": "ctxcompact.transcript",
    "dump_transcript": "ctxcompact.transcript",
    "Transcript": "ctxcompact.transcript",
    "Conversation": "ctxcompact.transcript",
    "Message": "ctxcompact.ir",
    "count_message_tokens": "ctxcompact.usage",
    "check_budget": "ctxcompact.usage",
    "CheckResult": "ctxcompact.usage",
    "count_tokens": "ctxcompact.tokens",
    "estimate_tokens": "ctxcompact.tokens",
    "TokenReport": "ctxcompact.tokens",
    "make_counter": "ctxcompact.tokens",
    "resolve_model": "ctxcompact.models",
    "make_budget": "ctxcompact.models",
    "validate_messages": "ctxcompact.validate",
    "Violation": "ctxcompact.validate",
    "compact_messages": "ctxcompact.compact",
    "acompact_messages": "ctxcompact.compact",
    "compact_conversation": "ctxcompact.compact",
    "CompactOptions": "ctxcompact.compact",
    "CompactResult": "ctxcompact.compact",
    "CompactStats": "ctxcompact.compact",
    "compact_file": "ctxcompact.batch",
    "compact_files": "ctxcompact.batch",
    "FileOptions": "ctxcompact.batch",
    "FileCompaction": "ctxcompact.batch",
    "BatchItem": "ctxcompact.batch",
    "BatchResult": "ctxcompact.batch",
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
    "count_message_tokens",
    "count_tokens",
    "dump_transcript",
    "estimate_tokens",
    "load_messages",
    "load_transcript",
    "make_budget",
    "make_counter",
    "resolve_model",
    "validate_messages",
]

if TYPE_CHECKING:
    from ctxcompact.batch import (
        BatchItem,
        BatchResult,
        FileCompaction,
        FileOptions,
        compact_file,
        compact_files,
    )
    from ctxcompact.compact import (
        CompactOptions,
        CompactResult,
        CompactStats,
        compact_conversation,
        compact_messages,
    )
    from ctxcompact.errors import CtxcompactError, InputError, WorkFailedError
    from ctxcompact.ir import Message
    from ctxcompact.models import make_budget, resolve_model
    from ctxcompact.names import CounterName, OnFailure, SummarizerName
    from ctxcompact.status import ExitStatus
    from ctxcompact.tokens import TokenReport, count_tokens, estimate_tokens, make_counter
    from ctxcompact.transcript import (
        Conversation,
        Transcript,
        dump_transcript,
        load_messages,
        load_transcript,
    )
    from ctxcompact.usage import CheckResult, check_budget, count_message_tokens
    from ctxcompact.validate import Violation, validate_messages


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxcompact' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
