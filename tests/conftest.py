"""Shared fixtures: corpus access, a fake Messages API server, a clean environment."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropicServer, fake_anthropic_server

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_transcripts"
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(name="fake_api")
def _fake_api() -> Iterator[FakeAnthropicServer]:
    yield from fake_anthropic_server()


@pytest.fixture(autouse=True)
def _no_real_api(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test may reach a real API, pick up the developer's key, or write to their cache or
    state dir."""
    monkeypatch.setenv("CTXCOMPACT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ctxcompact-cache"))
    # Archives (and any other state) go to a scratch dir, never the developer's home.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-state"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("CTXCOMPACT_MODELS_FILE", raising=False)
    for name in [n for n in os.environ if n.startswith("CTXCOMPACT_") and n != "CTXCOMPACT_CACHE_DIR"]:
        monkeypatch.delenv(name)  # a developer's CTXCOMPACT_MODEL etc. are settings (config.py)


def corpus_files(*subdirs: str) -> list[Path]:
    """Corpus files under the given subdirectories; [] when the corpus is absent."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for d in subdirs for p in (CORPUS / d).glob("*") if p.is_file())


requires_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="../shared/corpus is not present (a user's clone has none)"
)


def same_json(a: Any, b: Any) -> bool:
    """Equality of parsed JSON that also tells 1 from 1.0 and True from 1, and keeps key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
