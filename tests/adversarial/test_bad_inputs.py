"""Bad inputs × every command (issue 23): whatever a transcript holds, every command that reads
it ends with exit 0, 1, 2 or 3 — never 70, never a traceback — in bounded time and memory,
under ``resource`` limits (every_command.py). The fixed cases are the classes of the
adversarial run: broken bytes, nesting past any parser's stack, integers and floats no double
holds, wrong types at every level, mixed dialects, our own markers' look-alikes, escape
sequences, a runaway string, many messages, and broken Claude Code sessions and Codex
rollouts. The property mutates valid transcripts of each dialect at a random node.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adversarial.every_command import Run, run_every_command

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parents[2] / "sample_transcripts"
ALLOWED = {0, 1, 2, 3}
#: Seconds one command may take on one input (small inputs; a slow, shared CI machine).
SECONDS = 20.0
#: The driver's peak resident size over every command on one input (~300 MB at rest).
PEAK_MB = 1024


def assert_bounded(run: Run, what: str) -> None:
    for o in run.outcomes:
        where = f"{o.command} on {what}: exit {o.exit_code} in {o.seconds:.1f}s\n{o.stderr}\n{o.exception}"
        assert o.exit_code in ALLOWED, where
        assert o.exception is None, where
        assert "Traceback" not in o.stderr, where
        assert o.seconds < SECONDS, where
    assert run.peak_rss_mb < PEAK_MB, f"{what}: peak {run.peak_rss_mb:.0f} MB"


# --- the fixed cases ---------------------------------------------------------------------------


def _deep(levels: int, leaf: str = '"x"') -> str:
    return "[" * levels + leaf + "]" * levels


def _deep_object(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def _lines(records: list[Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def _tool_pair(call: dict[str, Any], result: dict[str, Any]) -> bytes:
    return _json(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    )


def _openai(arguments: str, content: Any = "ok") -> bytes:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return _json(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": content},
        ]
    )


def _session(mutate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> bytes:
    text = (SAMPLES / "claude-code-session.jsonl").read_text()
    return _lines(mutate([json.loads(line) for line in text.splitlines()]))


def _each(kind: str, **change: Any) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    return lambda records: [{**r, **change} if r.get("type") == kind else r for r in records]


def _rollout(*items: Any) -> bytes:
    def line(kind: str, payload: Any) -> dict[str, Any]:
        return {"timestamp": "2025-01-01T00:00:00Z", "type": kind, "payload": payload}

    records = [
        line("session_meta", {"id": "s1", "cwd": "/repo"}),
        line("turn_context", {"turn_id": "t1", "model": "gpt-5.5"}),
    ]
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}
    records.append(line("response_item", user))
    records += [line(kind, payload) for kind, payload in items]
    return _lines(records)


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202eevil"
ANTHROPIC = json.loads((SAMPLES / "anthropic-session.json").read_text())

CASES: dict[str, Callable[[], tuple[bytes, str]]] = {
    "empty": lambda: (b"", ".json"),
    "blank lines": lambda: (b"  \n\n", ".jsonl"),
    "null": lambda: (b"null", ".json"),
    "byte order mark": lambda: (b"\xef\xbb\xbf" + _json(ANTHROPIC), ".json"),
    "invalid UTF-8": lambda: (b'[{"role":"user","content":"a\xff\xfeb"}]', ".json"),
    "NUL": lambda: (b'[{"role":"user","content":"a\x00b"}]', ".json"),
    "truncated": lambda: (_json(ANTHROPIC)[:-40], ".json"),
    "nested 300": lambda: (f'[{{"role":"user","content":{_deep(300)}}}]'.encode(), ".json"),
    "nested 100k": lambda: (f'[{{"role":"user","content":{_deep(100_000)}}}]'.encode(), ".json"),
    "nested tool input": lambda: (
        _tool_pair(
            {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
            {"type": "tool_result", "tool_use_id": "t1"},
        ).replace(b'"input": {}', b'"input": ' + _deep_object(1000).encode()),
        ".json",
    ),
    "nested OpenAI arguments": lambda: (_openai(_deep(5000)), ".json"),
    "nested OpenAI arguments 300": lambda: (_openai(_deep_object(300)), ".json"),
    "4,300-digit integer": lambda: (
        ('[{"role":"user","content":"hi","n":' + "9" * 4300 + "}]").encode(),
        ".json",
    ),
    "5,000-digit tool input": lambda: (
        _tool_pair(
            {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
            {"type": "tool_result", "tool_use_id": "t1"},
        ).replace(b'"input": {}', b'"input": {"n": ' + b"9" * 5000 + b"}"),
        ".json",
    ),
    "NaN, Infinity, 1e400": lambda: (
        b'[{"role":"user","content":"hi","x":NaN,"y":-Infinity,"z":1e400}]',
        ".json",
    ),
    "non-object OpenAI tool part": lambda: (
        _openai("{}", [1, "x", None, {"type": "text", "text": "ok"}]),
        ".json",
    ),
    "mixed dialects": lambda: (
        _json(
            [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                },
                {"role": "tool", "tool_call_id": "t1", "content": "ok"},
            ]
        ),
        ".json",
    ),
    "ids and names of every type": lambda: (
        _tool_pair(
            {"type": "tool_use", "id": {"a": 1}, "name": ["Read"], "input": "str"},
            {"type": "tool_result", "tool_use_id": {"a": 1}, "content": {"x": 1}},
        ),
        ".json",
    ),
    "numbers for strings": lambda: (
        _tool_pair(
            {"type": "tool_use", "id": 7, "name": "Read", "input": {"file_path": 7}},
            {"type": "tool_result", "tool_use_id": 7, "content": [{"type": "text", "text": 5}]},
        ),
        ".json",
    ),
    "odd blocks and roles": lambda: (
        _json(
            {
                "system": [1, {"type": "text", "text": None}],
                "tools": "x",
                "messages": [
                    {"role": "bogus", "content": "x"},
                    {"role": None, "content": "y"},
                    {
                        "role": "user",
                        "content": [{"type": "image", "source": "x"}, {"type": "document", "source": None}],
                    },
                    {"role": "user", "content": 7},
                ],
            }
        ),
        ".json",
    ),
    "escape sequences": lambda: (
        _json([{"role": "user", "content": ESCAPES}, {"role": "assistant", "content": ESCAPES}]),
        ".json",
    ),
    "our markers' look-alikes": lambda: (
        _json(
            [
                {"role": "user", "content": "[Conversation compressed] " + "x " * 5000},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "zz", "name": "x", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "zz",
                            "content": "[Content offloaded to: ./tool-result-zz.md]",
                        }
                    ],
                },
            ]
        ),
        ".json",
    ),
    "a 3 MB word": lambda: (
        _json([{"role": "user", "content": "a" * 3_000_000}, {"role": "assistant", "content": "ok"}]),
        ".json",
    ),
    "2,000 messages": lambda: (
        _json([{"role": ("user", "assistant")[i % 2], "content": f"message {i}"} for i in range(2000)]),
        ".json",
    ),
    "a bad JSONL line": lambda: (
        b'{"role":"user","content":"hi"}\n{bad\n{"role":"assistant","content":"ok"}\n',
        ".jsonl",
    ),
    "session: a parent cycle": lambda: (
        _session(
            lambda r: [{**x, "parentUuid": r[-1].get("uuid")} if i == 2 else x for i, x in enumerate(r)]
        ),
        ".jsonl",
    ),
    "session: message a string": lambda: (_session(_each("assistant", message="str")), ".jsonl"),
    "session: every uuid the same": lambda: (
        _session(lambda r: [{**x, "uuid": "same"} if "uuid" in x else x for x in r]),
        ".jsonl",
    ),
    "session: cwd / and a number": lambda: (
        _session(lambda r: [{**x, "cwd": "/" if i % 2 else 5} if "cwd" in x else x for i, x in enumerate(r)]),
        ".jsonl",
    ),
    "session: a broken boundary": lambda: (
        _session(
            lambda r: [
                *r,
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": "b1",
                    "parentUuid": None,
                    "logicalParentUuid": 5,
                    "compactMetadata": "x",
                    "isSidechain": False,
                },
                {
                    "type": "user",
                    "uuid": "s1",
                    "parentUuid": "b1",
                    "isCompactSummary": True,
                    "message": {"role": "user", "content": [5]},
                },
            ]
        ),
        ".jsonl",
    ),
    "session: odd toolUseResult": lambda: (
        _session(_each("user", toolUseResult={"file": 5, "filePath": ["a"]})),
        ".jsonl",
    ),
    "rollout: odd items": lambda: (
        _rollout(
            ("response_item", {"type": "function_call", "name": 5, "arguments": {"x": 1}, "call_id": None}),
            ("response_item", {"type": "function_call_output", "call_id": None, "output": {"a": 1}}),
            ("response_item", {"type": "reasoning", "summary": "x", "content": 5}),
            ("response_item", {"type": "message", "role": "assistant", "content": "str"}),
            ("compacted", {"message": 5, "replacement_history": [1, None, {"type": "message"}]}),
        ),
        ".jsonl",
    ),
    "rollout: nested arguments": lambda: (
        _rollout(
            (
                "response_item",
                {"type": "function_call", "name": "exec", "arguments": _deep(3000), "call_id": "c1"},
            ),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        ),
        ".jsonl",
    ),
    "rollout: payloads of the wrong type": lambda: (
        b'{"type":"session_meta","payload":5}\n{"type":"response_item","payload":null}\n{"type":"turn_context","payload":[]}\n',
        ".jsonl",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_command_ends_cleanly_and_bounded(tmp_path: Path, case: str) -> None:
    data, suffix = CASES[case]()
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / f"input{suffix}"
    path.write_bytes(data)
    assert_bounded(run_every_command(path, tmp_path), case)


# --- the property: valid transcripts, one node made hostile ------------------------------------

HOSTILE_VALUES = (
    None, True, 0, -1, 2**64, 1.5, "", ESCAPES, "[Content offloaded to: ./tool-result-x.md]",
    "[Conversation compressed]", [], {}, [None], {"type": None}, {"type": "tool_use"},
    {"type": "tool_result", "content": [7]}, {"role": "tool"}, "\ud800",
)  # fmt: skip


def _rollout_sample() -> bytes:
    return _rollout(
        (
            "response_item",
            {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "ls"}', "call_id": "c1"},
        ),
        ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.py\n" * 40}),
        (
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        ),
    )


def _sources() -> dict[str, tuple[bool, bytes]]:
    """name -> (JSONL, bytes) of a valid transcript per dialect."""
    return {
        "anthropic": (False, (SAMPLES / "anthropic-session.json").read_bytes()),
        "openai": (False, (SAMPLES / "openai-chat.json").read_bytes()),
        "claude-code": (True, (SAMPLES / "claude-code-session.jsonl").read_bytes()),
        "codex": (True, _rollout_sample()),
    }


def _nodes(value: Any) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    queue = [value]
    while queue:
        current = queue.pop(0)
        for key in list(current) if isinstance(current, dict) else range(len(current)):
            out.append((current, key))
            if isinstance(current[key], (dict, list)):
                queue.append(current[key])
    return out


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, str]:
    name = draw(st.sampled_from(sorted(_sources())))
    jsonl, raw = _sources()[name]
    root: Any = [json.loads(line) for line in raw.splitlines() if line.strip()] if jsonl else json.loads(raw)
    for _ in range(draw(st.integers(1, 3))):
        container, key = draw(st.sampled_from(_nodes(root)))
        container[key] = draw(st.sampled_from(HOSTILE_VALUES))
    if jsonl:
        return "".join(json.dumps(r) + "\n" for r in root).encode(), ".jsonl"
    return json.dumps(root).encode(), ".json"


@settings(
    max_examples=int(os.environ.get("CTXCOMPACT_ADVERSARIAL_EXAMPLES", "6")),
    deadline=None,
    derandomize=not os.environ.get("CTXCOMPACT_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
@given(document=mutated())
def test_a_mutated_transcript_ends_cleanly_under_every_command(
    tmp_path: Path, document: tuple[bytes, str]
) -> None:
    data, suffix = document
    scratch = tmp_path / f"run-{os.urandom(4).hex()}"
    (scratch / "in").mkdir(parents=True)
    path = scratch / "in" / f"input{suffix}"
    path.write_bytes(data)
    assert_bounded(run_every_command(path, scratch), f"{data[:300]!r}…")
