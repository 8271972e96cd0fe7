"""Real sessions cut where compaction was due: the input ``--auto`` meets in an agent's loop.

A session that records the API's usage says when its context first reached a threshold; the
session up to that response, plus the tool results written right after it (the request the
agent was about to send, whose results the model has not seen), is what a compaction hook gets
at that moment. ``bench/bench_budget.py`` measures the budget on such cuts and the tests check
the policy on them.

Claude Code sessions (``message.usage`` on main-thread assistant entries) and mini-swe-agent
trajectories (``extra.response.usage``) are cut; other files give None.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def cut_when_due(text: str, threshold: int) -> str | None:
    """``text`` (a Claude Code session's JSONL, or a mini-swe-agent trajectory's JSON) up to the
    first response whose recorded context reaches ``threshold``, with the tool results after
    it; None when no recorded usage reaches it, or the file is neither."""
    try:
        data = json.loads(text)
    except ValueError:  # JSONL: one entry per line
        data = None
    if isinstance(data, Mapping) and isinstance(data.get("messages"), list):
        cut = _cut_trajectory(data, threshold)
        return None if cut is None else json.dumps(cut, ensure_ascii=False)
    lines = text.splitlines()
    kept = _cut_session(lines, threshold)
    return None if kept is None else "\n".join(kept) + "\n"


def _cut_session(lines: list[str], threshold: int) -> list[str] | None:
    entries = [_entry(line) for line in lines]
    for i, entry in enumerate(entries):
        inner = entry.get("message")
        usage = (
            inner.get("usage") if entry.get("type") == "assistant" and isinstance(inner, Mapping) else None
        )
        if not isinstance(usage, Mapping) or entry.get("isSidechain"):
            continue
        if sum(v for k in _USAGE_KEYS if isinstance(v := usage.get(k), int)) < threshold:
            continue
        end = i + 1
        # The rest of that response (one entry per block), then the results answering it.
        while end < len(entries) and entries[end].get("type") == "assistant":
            end += 1
        while end < len(entries) and entries[end].get("type") == "user" and _only_results(entries[end]):
            end += 1
        return lines[:end]
    return None


def _cut_trajectory(data: Mapping[str, Any], threshold: int) -> dict[str, Any] | None:
    messages = data["messages"]
    for i, message in enumerate(messages):
        extra = message.get("extra") if isinstance(message, Mapping) else None
        response = extra.get("response") if isinstance(extra, Mapping) else None
        usage = response.get("usage") if isinstance(response, Mapping) else None
        if not isinstance(usage, Mapping):
            continue
        if (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0) < threshold:
            continue
        end = i + 1
        while (
            end < len(messages) and isinstance(messages[end], Mapping) and messages[end].get("role") == "tool"
        ):
            end += 1
        return {**data, "messages": messages[:end]}
    return None


def _entry(line: str) -> Mapping[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, Mapping) else {}


def _only_results(entry: Mapping[str, Any]) -> bool:
    inner = entry.get("message")
    content = inner.get("content") if isinstance(inner, Mapping) else None
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    )
