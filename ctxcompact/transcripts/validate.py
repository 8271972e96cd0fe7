"""API invariants a message list must keep, and the check that finds breaks.

Errors (the API would reject the request):

``orphan_tool_result``   a tool_result that does not answer a tool_use of the immediately
                         preceding assistant message
``unanswered_tool_use``  a tool_use with no tool_result in the next message — except in the
                         last assistant message, whose calls may still be running
``duplicate_tool_id``    the same tool_use id used twice (a warning when reused in a later turn
                         in a dialect whose API accepts that, such as OpenAI's)
``system_not_leading``   a system message after the conversation started (in a dialect whose
                         API wants them first; Codex's Responses API takes them anywhere)

Warnings (tolerated by the APIs, which merge them, but worth knowing):

``consecutive_roles``    two user or two assistant messages in a row, in a dialect whose roles
                         alternate (Anthropic's; OpenAI allows it, and its ``tool`` runs map to
                         one user message)
``first_not_user``       the first non-system message is not from the user

With ``thinking=True`` (a request body that turns extended thinking on), also an error:

``assistant_last_with_thinking``  the request ends with an assistant message that does not
                         start with a thinking block (a prefill), which the API refuses
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ctxcompact.ir import Block, Message, tool_results, tool_uses
from ctxcompact.transcripts.dialects import dialect_named

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Violation:
    """A break of the API's rules at one message: its code, severity and what it is about."""

    code: str
    severity: Severity
    message_index: int
    detail: str
    #: What the violation is about (a tool id), stable when messages move: rewrites compare
    #: violations by ``(code, subject)`` to tell a new break from one the input already had.
    subject: str | None = None

    def __str__(self) -> str:
        return f"message {self.message_index}: {self.detail} [{self.code}]"


def validate_messages(
    messages: Sequence[Message], *, dialect: str = "anthropic", thinking: bool = False
) -> list[Violation]:
    """Every invariant break in ``messages``, in message order. Pure; never raises for bad data.

    ``message_index`` is the position in the IR list; for messages read from a file the
    CLI reports the record position too. ``dialect`` names a registered dialect: its rules
    say whether roles must alternate and whether a tool id may be reused in a later turn.
    """
    rules = dialect_named(dialect)
    found: list[Violation] = []
    seen_ids: dict[str, int] = {}
    last_assistant = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    started = False
    previous_role: str | None = None
    # Each message's tool blocks, found once (every rule below looks at them, some twice).
    uses = [tool_uses(m) if m.role == "assistant" else [] for m in messages]
    results = [tool_results(m) if m.role == "user" else [] for m in messages]

    for i, message in enumerate(messages):
        if message.role == "system":
            if started and not rules.system_anywhere:
                found.append(
                    Violation(
                        "system_not_leading", "error", i, "system message after the conversation started"
                    )
                )
            continue
        if not started and message.role != "user":
            found.append(
                Violation(
                    "first_not_user", "warning", i, f"conversation starts with a {message.role} message"
                )
            )
        started = True
        if rules.alternating_roles and previous_role == message.role:
            found.append(
                Violation("consecutive_roles", "warning", i, f"two {message.role} messages in a row")
            )
        previous_role = message.role

        if message.role == "assistant":
            found.extend(_tool_id_violations(uses[i], i, seen_ids, reuse_ok=rules.reused_tool_ids))

        if message.role == "user" and results[i]:
            answered = _ids_of_previous_assistant(messages, i, uses)
            for block in results[i]:
                tool_id = block.get("tool_use_id")
                if tool_id not in answered:
                    found.append(
                        Violation(
                            "orphan_tool_result",
                            "error",
                            i,
                            f"tool_result {tool_id} answers no tool_use of the previous assistant message",
                            str(tool_id),
                        )
                    )

        if message.role == "assistant" and i != last_assistant and uses[i]:
            expected = {b.get("id") for b in uses[i]}
            got = {b.get("tool_use_id") for j in _answer_indices(messages, i) for b in results[j]}
            for tool_id in sorted(str(t) for t in expected - got if t):
                found.append(
                    Violation(
                        "unanswered_tool_use", "error", i, f"tool_use {tool_id} has no tool_result", tool_id
                    )
                )
    if thinking:
        found.extend(_thinking_request_end(messages))
    return found


def _tool_id_violations(
    uses: Sequence[Block], i: int, seen_ids: dict[str, int], *, reuse_ok: bool
) -> list[Violation]:
    """Missing and duplicate ids of an assistant message's tool uses; records the new ids in
    ``seen_ids``. With ``reuse_ok`` (OpenAI: gpt-4o does it) an id reused in a later turn is
    only a warning; Anthropic's API refuses it."""
    found: list[Violation] = []
    for block in uses:
        tool_id = block.get("id")
        if not isinstance(tool_id, str) or not tool_id:
            found.append(Violation("missing_tool_id", "error", i, "tool_use without an id", f"#{i}"))
        elif tool_id in seen_ids:
            severity: Severity = "warning" if reuse_ok and seen_ids[tool_id] != i else "error"
            detail = f"tool id {tool_id} already used in message {seen_ids[tool_id]}"
            found.append(Violation("duplicate_tool_id", severity, i, detail, tool_id))
        else:
            seen_ids[tool_id] = i
    return found


def _thinking_request_end(messages: Sequence[Message]) -> list[Violation]:
    """With extended thinking on, a request may end with an assistant turn only when that turn
    starts with its thinking block (a pause_turn continuation); a prefill may not."""
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant":
        return []
    if last.content and last.content[0].get("type") in ("thinking", "redacted_thinking"):
        return []
    return [
        Violation(
            "assistant_last_with_thinking",
            "error",
            len(messages) - 1,
            "the request turns extended thinking on and ends with an assistant message that does "
            "not start with thinking, which the API refuses; append the next user message (or "
            "compact with --keep-loop)",
            "last",
        )
    ]


def _answer_indices(messages: Sequence[Message], assistant_index: int) -> range:
    """The user messages right after an assistant message (OpenAI tool runs may be followed
    by a user message; results live in the first)."""
    j = assistant_index + 1
    while j < len(messages) and messages[j].role == "user":
        j += 1
    return range(assistant_index + 1, j)


def _ids_of_previous_assistant(
    messages: Sequence[Message], user_index: int, uses: Sequence[Sequence[Block]]
) -> set[object]:
    j = user_index - 1
    while j >= 0 and messages[j].role == "user":
        j -= 1
    if j < 0 or messages[j].role != "assistant":
        return set()
    return {b.get("id") for b in uses[j]}


def errors_only(violations: Sequence[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == "error"]
