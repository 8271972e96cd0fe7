"""Observation masking: an old tool result becomes a one-line stub.

"The Complexity Trap" (Lindenbauer et al., NeurIPS 2025 DL4C) replaces the observations older
than a window of recent turns by a placeholder and finds it matches LLM summaries at half the
cost; OpenHands' ``ObservationMaskingCondenser`` and Claude Code's clearing of old tool results
do the same. Ours keeps what lets the agent remember the step without the output — the tool,
its input, the outcome and the size removed — so the stub still says *which* file was read,
*which* command failed::

    [Tool result cleared by ctxcompact: Bash `pytest -q tests/test_io.py` → error: 2 failed, 5 passed; 2,345 tokens]

The outcome is the result's own first meaningful line (quoted, never inferred), marked
``error`` when the result says so (``is_error``, a non-zero ``<returncode>``). One home for
the stub: ``prune`` and ``hybrid`` both write it, and every strategy recognises it
(:func:`is_stub`), so nothing is masked twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ctxcompact.compaction.scan import lines_of
from ctxcompact.ir import Block, tool_result_text
from ctxcompact.markers import is_prune_placeholder

#: Every stub starts with this (also the ``prune`` placeholder of earlier versions).
STUB_PREFIX = "[Tool result cleared by ctxcompact"
#: Input fields that say what a call did, in the order they are looked for.
_KEY_INPUTS = (
    "command",
    "cmd",
    "file_path",
    "path",
    "notebook_path",
    "pattern",
    "url",
    "query",
    "description",
)
_INPUT_CHARS = 120
_OUTCOME_CHARS = 100
#: Wrapper lines that are not the outcome (mini-swe-agent, SWE-agent, Codex output framing).
_FRAMING = re.compile(
    r"^\s*(</?output>|<returncode>\d*</returncode>|Output:|Exit code: 0|Process exited with code 0)\s*$"
)
_RETURNCODE = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|\b[Ee]xit code:? (-?\d+)|Process exited with code (-?\d+)"
)


def is_stub(content: Any) -> bool:
    """True for a tool_result content we already masked: the whole stub (a string, or the one
    text block :func:`masked_result` writes), never a mere prefix — a large output that starts
    like a stub is still content (:func:`ctxcompact.markers.is_prune_placeholder`)."""
    if isinstance(content, list):
        return len(content) == 1 and isinstance(content[0], Mapping) and is_stub(content[0].get("text"))
    return is_prune_placeholder(content)


def stub_text(tool: str, tool_input: Any, result: Block, tokens: int) -> str:
    """The one-line stub for ``result`` (a tool_result block) of a call to ``tool`` with
    ``tool_input``, that counted ``tokens``."""
    shown = input_summary(tool_input)
    call = f"{tool or 'tool'} `{shown}`" if shown else (tool or "tool")
    return f"{STUB_PREFIX}: {call} → {outcome_of(result)}; {tokens:,} tokens]"


def masked_result(block: Block, stub: str) -> Block:
    """A copy of a tool_result block whose content is ``stub`` (a string for a string
    content, else one text block; ``is_error`` and ids kept)."""
    new = dict(block)
    new["content"] = (
        stub if isinstance(block.get("content"), str | None) else [{"type": "text", "text": stub}]
    )
    return new


def input_summary(tool_input: Any) -> str:
    """What a call was asked to do, on one line: its command or path when it has one, else
    its compact JSON, clipped."""
    if isinstance(tool_input, str):  # an OpenAI call's raw arguments
        try:
            tool_input = json.loads(tool_input)
        except ValueError:
            return _clip(tool_input, _INPUT_CHARS)
    if isinstance(tool_input, Mapping):
        for key in _KEY_INPUTS:
            value = tool_input.get(key)
            if isinstance(value, list):
                value = " ".join(str(v) for v in value)
            if isinstance(value, str) and value.strip():
                return _clip(value, _INPUT_CHARS)
        if not tool_input:
            return ""
    return _clip(json.dumps(tool_input, ensure_ascii=False, separators=(",", ":")), _INPUT_CHARS)


def outcome_of(result: Block) -> str:
    """``ok: <first line>`` or ``error: <first line>`` of a tool result (``empty`` when it
    holds nothing)."""
    text = tool_result_text(result)
    head = text[:2_000]
    code = (
        _RETURNCODE.search(head, _returncode_from(head)) if "<returncode>" in head or "xit" in head else None
    )
    status = next((int(g) for g in code.groups() if g is not None), 0) if code else 0
    failed = bool(result.get("is_error")) or status != 0
    first = next((line for line in lines_of(text) if line.strip() and not _FRAMING.match(line)), "")
    label = ("error" if failed else "ok") + (f" (exit {status})" if status else "")
    return f"{label}: {_clip(first, _OUTCOME_CHARS)}" if first else (label if failed else "ok, empty")


def _returncode_from(head: str) -> int:
    """Where :data:`_RETURNCODE`'s first match may start: each alternative holds
    ``<returncode>`` or ``xit`` (``Exit code``, ``exited``) at most 9 characters in, so the
    regex is not tried at every position before the first of them (``\\b`` still sees the
    character before the start)."""
    tag, word = head.find("<returncode>"), head.find("xit")
    starts = [at for at in (tag, max(word - 9, 0) if word >= 0 else -1) if at >= 0]
    return min(starts) if starts else 0


def _clip(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
