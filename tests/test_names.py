"""names.py: the choices users pick from, one definition for the library and the CLI."""

from __future__ import annotations

import pytest
from cli_helpers import run_cli

from ctxcompact.compaction.pipeline import CompactOptions
from ctxcompact.errors import UsageError
from ctxcompact.names import OnFailure, SummarizerName
from ctxcompact.status import ExitStatus


def test_library_strings_become_the_names() -> None:
    options = CompactOptions.from_keywords(summarizer="extractive", on_failure="skip")
    assert options.full.summarizer is SummarizerName.extractive and options.full.on_failure is OnFailure.skip


def test_an_unknown_name_is_refused_with_the_choices() -> None:
    with pytest.raises(UsageError, match="unknown on_failure 'retry'; expected one of fallback, skip, error"):
        CompactOptions.from_keywords(on_failure="retry")


def test_the_cli_offers_exactly_the_core_choices() -> None:
    outcome = run_cli("compact", "--summarizer", "bogus")
    assert outcome.status == ExitStatus.BAD_INPUT
    assert all(name in outcome.stderr for name in SummarizerName)
