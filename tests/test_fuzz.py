"""Fuzz every command with hostile input (issue 9): random bytes, random JSON and mutated real
transcripts. Whatever comes in, a command ends with exit 0, 1, 2 or 3 — a clear answer or a
clear refusal — never 70 ("a bug"), never a traceback, and within a time limit.

CI-sized and reproducible by default (``derandomize``); for a longer, random hunt:
``CTXCOMPACT_FUZZ_EXAMPLES=2000 CTXCOMPACT_FUZZ_RANDOM=1 pytest tests/test_fuzz.py``.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from cli_helpers import run_cli
from conftest import CORPUS, SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("CTXCOMPACT_FUZZ_EXAMPLES", "15"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not os.environ.get("CTXCOMPACT_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
#: Seconds one command may take on one small input, with a slow shared machine in mind.
TIME_LIMIT = 15.0
ALLOWED = {0, 1, 2, 3}
WORKSPACE = SAMPLES / "workspace"

#: name -> argv builder (input path, scratch dir)
COMMANDS: dict[str, Callable[[str, str], list[str]]] = {
    "count": lambda f, t: ["count", f, "--json"],
    "check": lambda f, t: ["check", f, "--model", "gpt-4"],
    "compact": lambda f, t: [
        "compact", f, "--summarizer", "extractive", "--archive-dir", f"{t}/archive",
        "--work-dir", str(WORKSPACE), "-o", f"{t}/out",
    ],
    "compact-local": lambda f, t: [
        "compact", f, "--strategy", "prune,clean-tools", "--archive-dir", f"{t}/archive", "-q",
    ],
    "offload": lambda f, t: ["offload", f, "--out-dir", f"{t}/offload", "--min-chars", "20"],
    "restore-files": lambda f, t: ["restore-files", f, "--work-dir", str(WORKSPACE)],
}  # fmt: skip


def run_every_command(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_bytes(data)
        for name, argv in COMMANDS.items():
            started = time.monotonic()
            result = run_cli(*argv(str(path), tmp), env={"COLUMNS": "100"}, keep_exception=True)
            elapsed = time.monotonic() - started
            what = f"{name} on {data[:200]!r}…: exit {result.exit_code}\n{result.stderr[-2000:]}"
            assert result.exit_code in ALLOWED, what
            assert "Traceback" not in result.stderr, what
            assert elapsed < TIME_LIMIT, f"{name} took {elapsed:.1f}s"
            if result.exception is not None:
                raise result.exception


# --- random bytes and random JSON --------------------------------------------------------------

#: Words the readers look for: random JSON built from them reaches past the first checks.
KEYS = (
    "role", "content", "type", "text", "id", "name", "input", "tool_use_id", "tool_calls",
    "tool_call_id", "function", "arguments", "messages", "message", "uuid", "parentUuid",
    "isSidechain", "subtype", "system", "tools", "model", "thinking", "signature", "source",
    "reasoning_content", "traj", "payload", "path", "file_path", "cache_control", "is_error",
)  # fmt: skip
WORDS = (
    "user", "assistant", "system", "tool", "developer", "function", "exit", "text", "tool_use",
    "tool_result", "thinking", "redacted_thinking", "image", "document", "image_url",
    "compact_boundary", "summary", "progress", "read_file", "Read", "t1", "t2", "a.py",
    "../../etc/passwd", "enabled",
)  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**80)
    | st.floats()
    | st.sampled_from(WORDS)
    | st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=40,
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(WORDS)},
    optional={
        "content": json_values,
        "tool_calls": json_values,
        "tool_call_id": scalars,
        "type": st.sampled_from(WORDS),
        "message": json_values,
        "uuid": scalars,
    },
)
documents = (
    json_values
    | st.lists(messages, max_size=8)
    | st.fixed_dictionaries({"messages": st.lists(messages, max_size=8)}, optional={"system": json_values})
)


def as_bytes(value: Any, jsonl: bool) -> bytes:
    # json.dumps writes NaN/Infinity, which only the stdlib reader takes: exercised too.
    if jsonl and isinstance(value, list):
        return "".join(json.dumps(v) + "\n" for v in value).encode()
    return json.dumps(value).encode()


@FUZZ
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".json", ".jsonl"]))
def test_random_bytes(data: bytes, suffix: str) -> None:
    run_every_command(data, suffix)


@FUZZ
@given(value=documents, jsonl=st.booleans())
def test_random_json(value: Any, jsonl: bool) -> None:
    run_every_command(as_bytes(value, jsonl), ".jsonl" if jsonl else ".json")


# --- mutated real transcripts ------------------------------------------------------------------


def sources() -> list[Path]:
    found = sorted(p for p in SAMPLES.glob("*.json*") if p.is_file())
    if CORPUS.is_dir():
        found += sorted(
            p for p in CORPUS.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")
        )
    return found


SOURCES = sources()


@functools.cache
def parsed(path: Path) -> tuple[bool, Any]:
    """``(is_jsonl, records or root)`` of a source file."""
    raw = path.read_bytes()
    try:
        return False, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return True, [orjson.loads(line) for line in raw.splitlines() if line.strip()]


def window(draw: st.DrawFn, items: list[Any], size: int = 30) -> list[Any]:
    """A contiguous run of at most ``size`` items: real shapes, CI-sized."""
    if len(items) <= size:
        return list(items)
    start = draw(st.integers(0, len(items) - size))
    return items[start : start + draw(st.integers(1, size))]


def shrink(draw: st.DrawFn, root: Any) -> Any:
    """A smaller transcript of the same container: a window of records or messages."""
    if isinstance(root, list):
        if root and all(isinstance(r, dict) and isinstance(r.get("messages"), list) for r in root):
            return [{**item, "messages": window(draw, item["messages"])} for item in window(draw, root, 2)]
        return window(draw, root)
    if isinstance(root, dict) and isinstance(root.get("messages"), list):
        return {**root, "messages": window(draw, root["messages"])}
    return root


def nodes(value: Any, limit: int = 400) -> list[tuple[Any, Any]]:
    """(container, key) pairs of the value's nodes, breadth first, at most ``limit``."""
    out: list[tuple[Any, Any]] = []
    queue = [value]
    while queue and len(out) < limit:
        current = queue.pop(0)
        keys = list(current) if isinstance(current, dict) else range(len(current))
        for key in keys:
            out.append((current, key))
            if isinstance(current[key], (dict, list)):
                queue.append(current[key])
    return out


@st.composite
def mutated_transcripts(draw: st.DrawFn) -> tuple[bytes, str]:
    path = draw(st.sampled_from(SOURCES))
    is_jsonl, root = parsed(path)
    value = copy.deepcopy(shrink(draw, root))  # a private copy to mutate
    for _ in range(draw(st.integers(1, 4))):
        targets = nodes(value)
        if not targets:
            break
        container, key = draw(st.sampled_from(targets))
        action = draw(st.sampled_from(["replace", "delete", "word", "duplicate"]))
        if action == "replace":
            container[key] = draw(json_values)
        elif action == "word":
            container[key] = draw(st.sampled_from(WORDS))
        elif action == "duplicate" and isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        elif isinstance(container, dict):
            del container[key]
        else:
            container.pop(key)
    data = as_bytes(value, is_jsonl)
    if draw(st.booleans()):
        # Byte damage as well: a truncated write, a stray byte.
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + draw(st.binary(max_size=3)) + data[cut + draw(st.integers(0, 3)) :]
    return data, ".jsonl" if is_jsonl else ".json"


@FUZZ
@given(case=mutated_transcripts())
def test_mutated_real_transcripts(case: tuple[bytes, str]) -> None:
    run_every_command(*case)


#: Inputs fuzzing once broke (exit 70), kept as fixed examples.
FOUND = {
    "claude-code parentUuid is a list": (
        b'{"parentUuid": null, "type": "user", "uuid": "u0", "sessionId": "s",'
        b' "message": {"role": "user", "content": "Read a.py"}}\n'
        b'{"parentUuid": "u0", "type": "assistant", "uuid": "a0", "sessionId": "s",'
        b' "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",'
        b' "name": "read_file", "input": {"path": "a.py"}}]}}\n'
        b'{"parentUuid": [], "type": "user", "uuid": "u1", "sessionId": "s",'
        b' "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",'
        b' "content": "' + b"x" * 400 + b'"}]}}\n'
        b'{"parentUuid": "u1", "type": "assistant", "uuid": "a1", "sessionId": "s",'
        b' "message": {"role": "assistant", "content": "done"}}\n',
        ".jsonl",
    ),
    "an object whose type is a list": (b'{"type": []}', ".json"),
}


@pytest.mark.parametrize("name", FOUND)
def test_inputs_fuzzing_found(name: str) -> None:
    run_every_command(*FOUND[name])


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")
def test_the_corpus_is_among_the_sources() -> None:
    assert any(CORPUS in p.parents for p in SOURCES)
