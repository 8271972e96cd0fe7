"""The summary's facts with each message read once per :func:`shared_facts` scope (issue 24).

What a message says by itself (its sentences, conclusions, names and figures, each call's
label, file operations and changes, each result's text, failure and test run) is remembered
for the scope, per message object; the pass that carries state from message to message (the
turn, the calls waiting for their results, running sessions, tasks, templates repeated across
the list, what follows an error) is made per list. ``eval`` reads the probes' part (after the
system prompt) and then hybrid's older part (from the first message): the facts of each must
be the ones a read with nothing remembered gives, field for field, whatever was read before.
"""

from __future__ import annotations

import contextvars
import gc
import re
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_files, requires_corpus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ir_builders import msg, text, use

from ctxcompact.compaction.summarize import facts as facts_module
from ctxcompact.compaction.summarize import readings
from ctxcompact.compaction.summarize.facts import NUMBER_WITH_UNIT, Facts, shared_facts
from ctxcompact.ir import Message, Source
from ctxcompact.markers import (
    CLAUDE_CODE_SUMMARY_PREFIX,
    RESTORED_ACK,
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    restored_text,
)
from ctxcompact.transcripts.io import load_transcript

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_IDS = st.sampled_from(["a", "b"])
_TEMPLATE = "Please follow the repository guidelines carefully and report back when you are done."

_USER_TEXTS = st.sampled_from(
    [
        "Fix the flaky build in `src/app.py`; it must pass in 30 s and never touch `setup.cfg`.",
        f"{_TEMPLATE}\n\nNow also check the 512 MB limit.",
        _TEMPLATE,
        "/compact focus on tests",
        SUMMARY_PREFIX + "earlier work on `src/app.py`",
        CLAUDE_CODE_SUMMARY_PREFIX + " that ran out of context.",
        "<task-notification><summary>Background build finished</summary></task-notification>",
        "<system-reminder>noise</system-reminder>",
        "",
    ]
)
_RESULTS = st.sampled_from(
    [
        "ok",
        "Exit code 1\nTraceback (most recent call last):\nValueError: bad value in `handler`",
        "The user doesn't want to proceed with this tool use. To tell you how to proceed, the user"
        " said:\nuse pytest -q instead",
        "The user doesn't want to proceed with this tool use.",
        "Process running with session ID 7\nOutput:\nbuilding",
        "===== 1 failed, 2 passed in 0.10s =====\nFAILED tests/test_app.py::test_handler",
        "def handler(x):\n    return x  # handler returns 30 s",
        "error: cannot open src/app.py",
    ]
)
_AGENT_TEXTS = st.sampled_from(
    [
        "The root cause is `handler` returning None because the cache is stale.",
        "Let me check `handler` next. It takes 30 s.",
        "I found that `src/app.py` is missing the guard, so the fix is a check.",
        "Done?",
        SUMMARY_ACK,
        RESTORED_ACK,
        "",
    ]
)


def _calls(tool_id: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(
        [
            use(tool_id, "Bash", command="pytest -q tests/"),
            use(tool_id, "Bash", command="cat > src/new.py <<'EOF'\nprint(1)\nEOF"),
            use(tool_id, "Edit", file_path="src/app.py", old_string="x = 1", new_string="x = 2\ny = 3"),
            use(tool_id, "Read", file_path="src/app.py"),
            use(tool_id, "write_stdin", session_id="7", chars=""),
            use(tool_id, "TodoWrite", todos=[{"content": "fix handler", "status": "in_progress"}]),
            use(tool_id, "TaskCreate", subject="write the test"),
            use(tool_id, "TaskUpdate", taskId="1", status="completed"),
        ]
    )


def _result(tool_id: str) -> st.SearchStrategy[dict[str, Any]]:
    # Whether a result without a flag failed depends on the part read: on whether any result
    # in it carries ``is_error`` (Later.flags_reported).
    return st.builds(
        lambda content, flag: (
            {"type": "tool_result", "tool_use_id": tool_id, "content": content}
            | ({} if flag is None else {"is_error": flag})
        ),
        _RESULTS,
        st.sampled_from([None, False, True]),
    )


@st.composite
def _chunk(draw: st.DrawFn) -> list[Message]:
    """One message, or a round: the agent's calls and the message with their results."""
    kind = draw(st.sampled_from(["user", "round", "results", "restored", "assistant", "thinking", "system"]))
    if kind == "user":
        return [msg("user", text(draw(_USER_TEXTS)))]
    if kind in ("round", "results"):
        ids = draw(st.lists(_IDS, min_size=1, max_size=2))
        extra = [text(draw(_USER_TEXTS))] if draw(st.booleans()) else []
        results = msg("user", *(draw(_result(tool_id)) for tool_id in ids), *extra)
        if kind == "results":  # answering an older call, or one outside the part read
            return [results]
        said = [text(draw(_AGENT_TEXTS))] if draw(st.booleans()) else []
        return [msg("assistant", *said, *(draw(_calls(tool_id)) for tool_id in ids)), results]
    if kind == "restored":
        own = [text(draw(_USER_TEXTS))] if draw(st.booleans()) else []
        return [msg("user", *own, text(restored_text("src/app.py", "x = 1")))]
    if kind == "thinking":
        return [
            msg("assistant", {"type": "thinking", "thinking": "Let me look at `handler`.", "signature": ""})
        ]
    if kind == "system":
        return [msg("system", text("You are a coding agent."))]
    return [msg("assistant", text(draw(_AGENT_TEXTS)))]


@st.composite
def _messages(draw: st.DrawFn) -> list[Message]:
    chunks: list[list[Message]] = draw(st.lists(_chunk(), max_size=16))
    messages = [m for chunk in chunks for m in chunk]
    twice: bool = draw(st.booleans())
    if messages and twice:  # the same message object twice in one list
        messages.insert(draw(st.integers(0, len(messages))), draw(st.sampled_from(messages)))
    return messages


def _fresh(messages: Sequence[Message]) -> Facts:
    """The facts of ``messages`` with nothing remembered (no scope is open in a new context)."""
    return contextvars.Context().run(Facts.gather, messages)


@_SETTINGS
@given(_messages(), st.data())
def test_facts_are_the_same_with_and_without_the_scope(messages: list[Message], data: st.DataObject) -> None:
    """Parts of one list read in any order within a scope — the whole, an older part (hybrid's,
    from the first message), a later part (the probes', after the system prompt), a middle —
    give each the facts a read with nothing remembered gives."""
    n = len(messages)
    end, start = data.draw(st.integers(0, n)), data.draw(st.integers(0, n))
    parts = [messages, messages[:end], messages[start:], messages[start:end]]
    alone = [_fresh(part) for part in parts]
    with shared_facts():
        order = data.draw(st.permutations(range(len(parts))))
        scoped = {i: Facts.gather(parts[i]) for i in order}
    assert [scoped[i] for i in range(len(parts))] == alone


#: The corpus files ctxcompact reads (the rest are formats it refuses, see test_corpus).
_READABLE = [
    *corpus_files("anthropic", "openai", "claude-code"),
    *(p for p in corpus_files("other") if p.name.startswith(("sweagent-", "codex-rollout-"))),
]


@requires_corpus
@pytest.mark.parametrize("path", _READABLE, ids=lambda p: Path(p).name)
def test_corpus_facts_are_the_same_with_and_without_the_scope(path: Path) -> None:
    """``eval``'s cuts of every real session: the probes' part, then hybrid's older part."""
    for conversation in load_transcript(path).conversations[:3]:
        messages = conversation.messages
        head = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
        parts = [messages[head:], messages[: len(messages) * 97 // 100], messages[: len(messages) // 2]]
        alone = [_fresh(part) for part in parts]
        with shared_facts():
            assert [Facts.gather(part) for part in parts] == alone


class _Held:
    """A weakly referenced object a message holds: gone when the message is."""


def _session() -> tuple[list[Message], weakref.ref[_Held]]:
    held = _Held()
    first = Message("user", (text("Fix `handler` in src/app.py."),), Source(({},), (0,)), meta={"held": held})
    messages = [
        first,
        msg(
            "assistant", text("The root cause is `handler`, so I fix it."), use("a", "Edit", file_path="x.py")
        ),
        msg("user", {"type": "tool_result", "tool_use_id": "a", "content": "ok"}),
    ]
    return messages, weakref.ref(held)


def test_nothing_is_remembered_outside_a_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each message is read once within a scope, for every part that holds it; outside one it
    is read each time, and when the scope closes nothing of it is kept (a library host's agent
    loop keeps none of its transcripts alive through us)."""
    made: list[int] = []
    real = readings.Spoken

    class Counted(real):  # type: ignore[valid-type,misc]
        def __init__(self, message: Message, index: int) -> None:
            made.append(index)
            super().__init__(message, index)

    monkeypatch.setattr(readings, "Spoken", Counted)
    messages, held = _session()
    Facts.gather(messages)
    Facts.gather(messages)
    assert made == [1, 1]
    with shared_facts():
        whole = Facts.gather(messages)
        assert Facts.gather(messages[:2]) != whole  # another part: its own facts
        assert Facts.gather(list(messages)) is whole  # the same messages: the same facts
        assert made == [1, 1, 1]  # the older part reused the message's reading
    assert facts_module._SHARED.get() is None
    Facts.gather(messages)
    assert made == [1, 1, 1, 1]
    with shared_facts():
        Facts.gather(messages)
        Facts.gather(messages[1:])
    del messages, whole
    gc.collect()
    assert held() is None  # nothing holds the messages once the scope has closed


_PLAIN_NUMBER_WITH_UNIT = re.compile(  # the pattern as first written: the look-behind first
    r"(?<![\w.])\d{1,3}(?:,\d{3})*(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|mins|minutes|h|hours|days|"
    r"KB|MB|GB|TB|KiB|MiB|GiB|kB|bytes|tokens|chars|characters|words|lines|%|px|rem|em|GHz|MHz|x)(?![\w])",
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789.,_ aksMBx%٣é\n")), max_size=40))
def test_figures_are_the_plain_patterns_matches(text_: str) -> None:
    assert [m.group(0) for m in NUMBER_WITH_UNIT.finditer(text_)] == [
        m.group(0) for m in _PLAIN_NUMBER_WITH_UNIT.finditer(text_)
    ]
