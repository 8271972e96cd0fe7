"""The six transcripts issue 19's judged measurement used, cut from ``../shared/corpus`` where
compaction was due, and the blind judge's scores of today's outputs
(``bench/judged_outputs.json``; issue 19's first, non-blind reading of the 2026-11-25 outputs is
``bench/judged.json``, its blind questions and references ``bench/blind.json``).

A cut keeps the records up to the first one whose recorded context reaches the threshold
(Claude Code ``message.usage``, Codex ``token_count``, mini-swe-agent ``extra.response.usage``),
then the records up to the next assistant entry: the state an agent is in when it has to
compact before its next call. Transcript A stops before Claude Code's own ``/compact`` of the
same history (its summary is the ``claude-code`` reference), B is a whole session that carries
an earlier Claude Code summary forward.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxcompact.evaluation.probes import context_text
from ctxcompact.ir import Message

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
#: The blind judging of today's outputs: per cut and strategy, the SHA-256 of the context
#: scored (:func:`context_digest`), its answers and their 0-5 scores against ``blind.json``'s
#: references (question ids).
JUDGED_OUTPUTS = Path(__file__).resolve().parent / "judged_outputs.json"
BLIND = Path(__file__).resolve().parent / "blind.json"


@dataclass(frozen=True, slots=True)
class Cut:
    tag: str
    source: str  # under the corpus
    #: Keep this many records (A: before Claude Code's compaction), else cut where due.
    lines: int | None = None
    due: int | None = None  # the recorded context that makes compaction due
    context_window: int | None = None  # the budget the judged runs had (-w); None: the model's


CUTS = (
    Cut("A", "claude-code/codemie-624a4a58-compact.jsonl", lines=157),
    Cut("B", "claude-code/entire-198393f2-compact-small.jsonl", context_window=50_000),
    Cut("C", "claude-code/codemie-196820da-thinking.jsonl", due=100_800),
    Cut("D", "claude-code/codemie-3fe1b6bc-edits.jsonl", due=100_800),
    Cut("E", "openai/miniswe-deepseek-chat-django-11910.traj.json", due=57_600),
    Cut("F", "other/codex-rollout-019e1625-tui.jsonl", due=100_800, context_window=200_000),
)


def judged_outputs() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JUDGED_OUTPUTS.read_text(encoding="utf-8"))
    return data


def context_digest(messages: Sequence[Message]) -> str:
    """The SHA-256 of what a model reads in ``messages`` (``context_text``): a judged score
    belongs to the context with this digest."""
    return hashlib.sha256(context_text(messages).encode("utf-8")).hexdigest()


def claude_code_judged() -> float:
    """The blind judge's mean score of Claude Code's own summary of A (``blind.json``)."""
    data = json.loads(BLIND.read_text(encoding="utf-8"))
    scores = [q["answers"]["claude-code"]["score"] for q in data["transcripts"]["A"]["questions"]]
    return sum(scores) / len(scores)


def write_cut(cut: Cut, directory: Path) -> Path:
    """The cut transcript, written under ``directory``."""
    source = CORPUS / cut.source
    target = directory / f"{cut.tag}-{source.name}"
    if cut.lines is None and cut.due is None:
        target.write_bytes(source.read_bytes())
        return target
    if source.suffix == ".json":  # a trajectory: a message list
        data = json.loads(source.read_text(encoding="utf-8"))
        messages = data["messages"]
        data["messages"] = messages[: _due_message(messages, cut.due or 0)]
        info = data.get("info")
        if isinstance(info, dict):  # a run cut mid-way has no outcome yet
            data["info"] = {
                k: v for k, v in info.items() if k not in ("submission", "exit_status", "model_stats")
            }
        target.write_text(json.dumps(data), encoding="utf-8")
        return target
    lines = source.read_text(encoding="utf-8").splitlines()
    keep = cut.lines if cut.lines is not None else _due_line(lines, cut.due or 0)
    target.write_text("\n".join(lines[:keep]) + "\n", encoding="utf-8")
    return target


def _due_message(messages: list[dict[str, Any]], due: int) -> int:
    for i, message in enumerate(messages):
        usage = ((message.get("extra") or {}).get("response") or {}).get("usage") or {}
        if (usage.get("prompt_tokens") or 0) >= due:
            end = i + 1
            while end < len(messages) and messages[end].get("role") != "assistant":
                end += 1
            return end
    return len(messages)


def _due_line(lines: list[str], due: int) -> int:
    for i, line in enumerate(lines):
        if _recorded(json.loads(line)) >= due:
            end = i + 1
            while end < len(lines) and not _is_assistant(json.loads(lines[end])):
                end += 1
            return end
    return len(lines)


def _recorded(record: dict[str, Any]) -> int:
    message = record.get("message")
    if isinstance(message, dict) and isinstance(message.get("usage"), dict):
        usage = message["usage"]
        return int(
            sum(
                usage.get(k) or 0
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
        )
    payload = record.get("payload") or {}
    if record.get("type") == "event_msg" and payload.get("type") == "token_count":
        return int(((payload.get("info") or {}).get("last_token_usage") or {}).get("input_tokens") or 0)
    return 0


def _is_assistant(record: dict[str, Any]) -> bool:
    payload = record.get("payload") or {}
    if record.get("type") == "assistant":
        return True
    return (
        record.get("type") == "response_item"
        and payload.get("type") in ("message", "function_call", "reasoning")
        and payload.get("role", "assistant") == "assistant"
    )


def claude_code_summary() -> str:
    """Claude Code's own summary of transcript A's history (the record after its boundary)."""
    record = json.loads((CORPUS / CUTS[0].source).read_text(encoding="utf-8").splitlines()[158])
    content = record["message"]["content"]
    return content if isinstance(content, str) else str(content[0]["text"])
