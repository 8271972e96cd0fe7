"""Token counters and accounting (SPEC §3.2; seed 004's estimator; seed 000 F-001).

The accounting tests use the ``estimate`` counter, whose per-string figure is a formula, so
every expected number is computed from the documented rule rather than copied from a run.
"""

from __future__ import annotations

import base64
import math
import os
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from fake_anthropic import COUNT_TOKENS_PATH, FakeAnthropicServer, Reply

from ctxcompact.accounting.check import count_message_tokens, measure
from ctxcompact.accounting.tokens import (
    DOCUMENT_TOKENS_PER_PAGE,
    ENCRYPTED_CHARS_PER_TOKEN,
    IMAGE_MAX_EDGE,
    IMAGE_TOKENS_DEFAULT,
    MESSAGE_OVERHEAD,
    EstimateCounter,
    TiktokenCounter,
    count_tokens,
    estimate_tokens,
    image_size,
    make_counter,
)
from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.ir import Message
from ctxcompact.llm.anthropic_api import AnthropicTotalCounter
from ctxcompact.transcripts.io import load_messages, load_transcript

EST = EstimateCounter()


def est(*pieces: str) -> int:
    """What the estimate counter gives for a block made of these strings (each rounded up)."""
    return sum(estimate_tokens(p) for p in pieces)


def compact_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def png_bytes(width: int, height: int) -> bytes:
    """A real, decodable RGB PNG of the given size (all black)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def image_block(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()},
    }


def one_message(*blocks: dict[str, Any], role: str = "user") -> list[Message]:
    return list(load_messages([{"role": role, "content": list(blocks)}]).messages)


# --- seed 004's estimator ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", 2),  # seed 004 test case: 5 / 4 = 1.25 -> 2
        ("你好", 2),  # seed 004 test case: 2 non-ASCII
        ("hello你好", 4),  # seed 004 test case: 1.25 + 2 = 3.25 -> 4
        ("", 0),
        ("abcd", 1),
        ("abcde", 2),
        ("\x7f", 1),  # 0x7F is still ASCII (code <= 0x7F)
        ("é", 1),
        ("😀", 1),  # one code point, one token (the seed iterates code points)
    ],
)
def test_estimate_tokens_follows_seed_004(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimate_counter_batches_strings() -> None:
    assert EST.count_batch(["hello", "你好", "hello你好", ""]) == [2, 2, 4, 0]
    assert make_counter("estimate").count_batch(["abcdefgh"]) == [2]


def test_make_counter_rejects_an_unknown_name() -> None:
    with pytest.raises(InputError, match="unknown counter 'bogus'"):
        make_counter("bogus")


# --- what each block type contributes ----------------------------------------------------------


def by_type_of(*blocks: dict[str, Any], role: str = "user") -> dict[str, int]:
    report = count_tokens(one_message(*blocks, role=role), counter=EST)
    return dict(report.by_type)


def test_text_block() -> None:
    assert by_type_of({"type": "text", "text": "hello"})["text"] == 2


def test_tool_use_counts_name_and_compact_json_input() -> None:
    block = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "src/app.py", "n": 3}}
    expected = est("read_file", compact_json({"path": "src/app.py", "n": 3}))
    assert by_type_of(block, role="assistant")["tool_use"] == expected


def test_openai_tool_call_counts_its_raw_arguments_string() -> None:
    raw = '{"path": "src/app.py",   "n": 3}'  # spaces kept as the model wrote them
    conv = load_messages(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": raw}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    )
    report = count_tokens(conv.messages, counter=EST)
    assert report.by_type["tool_use"] == est("read_file", raw)


def test_tool_result_string_and_block_contents() -> None:
    as_string = {"type": "tool_result", "tool_use_id": "t1", "content": "abcdefgh"}
    assert by_type_of(as_string)["tool_result"] == 2
    png = png_bytes(30, 25)  # 30 * 25 / 750 = 1 token
    as_blocks = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "abcd"}, {"type": "text", "text": "你好"}, image_block(png)],
    }
    assert by_type_of(as_blocks)["tool_result"] == 1 + 2 + 1
    empty = {"type": "tool_result", "tool_use_id": "t1"}
    assert by_type_of(empty).get("tool_result", 0) == 0


def test_thinking_counts_the_text_not_the_signature() -> None:
    short_sig = {"type": "thinking", "thinking": "let me think", "signature": "x"}
    long_sig = {"type": "thinking", "thinking": "let me think", "signature": "s" * 4000}
    assert by_type_of(short_sig, role="assistant")["thinking"] == est("let me think")
    assert by_type_of(long_sig, role="assistant")["thinking"] == est("let me think")


def test_unknown_blocks_count_their_json_without_type_and_ciphertext_its_reasoning() -> None:
    redacted = {"type": "redacted_thinking", "data": "EqQBCkYIBxgCKkA" * 10}
    server = {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "tiktoken"}}
    assert by_type_of(redacted, role="assistant")["redacted_thinking"] == math.ceil(
        150 / ENCRYPTED_CHARS_PER_TOKEN
    )
    expected = est(compact_json({k: v for k, v in server.items() if k != "type"}))
    assert by_type_of(server, role="assistant")["server_tool_use"] == expected


def test_documents_text_source_and_pdf_pages() -> None:
    text_doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "abcdabcd"},
    }
    assert by_type_of(text_doc)["document"] == 2
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>\n3 0 obj << /Type /Page >>\n"
    pdf_doc = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(pdf).decode()},
    }
    assert by_type_of(pdf_doc)["document"] == 2 * DOCUMENT_TOKENS_PER_PAGE
    url_doc = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    assert by_type_of(url_doc)["document"] == DOCUMENT_TOKENS_PER_PAGE


# --- images ------------------------------------------------------------------------------------


def test_image_size_is_read_from_a_real_png() -> None:
    data = png_bytes(120, 45)
    assert image_size(base64.b64encode(data).decode()) == (120, 45)


def test_image_tokens_follow_width_times_height_over_750() -> None:
    assert by_type_of(image_block(png_bytes(100, 75)))["image"] == 10  # 7500 / 750
    assert by_type_of(image_block(png_bytes(101, 75)))["image"] == math.ceil(101 * 75 / 750)  # rounds up


def test_image_long_edge_is_scaled_to_1568_first() -> None:
    width, height = 2 * IMAGE_MAX_EDGE, 10  # scaled to 1568 x 5
    expected = math.ceil(IMAGE_MAX_EDGE * 5 / 750)
    assert by_type_of(image_block(png_bytes(width, height)))["image"] == expected


def test_gif_header_size_is_read() -> None:
    gif = b"GIF89a" + struct.pack("<HH", 150, 50) + b"\x00\x00\x00;"
    assert by_type_of(image_block(gif, "image/gif"))["image"] == 10


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "bm90IGFuIGltYWdl"},
        },
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "!!!not base64!!!"},
        },
        {"type": "image"},
    ],
    ids=["url", "not-an-image", "bad-base64", "no-source"],
)
def test_image_without_a_readable_size_uses_the_documented_constant(block: dict[str, Any]) -> None:
    assert IMAGE_TOKENS_DEFAULT == 1600
    assert by_type_of(block)["image"] == IMAGE_TOKENS_DEFAULT


def test_openai_image_url_part_counts_as_an_image() -> None:
    conv = load_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                ],
            }
        ]
    )
    assert conv.dialect == "openai"
    report = count_tokens(conv.messages, counter=EST)
    assert report.by_type["image"] == IMAGE_TOKENS_DEFAULT


# --- messages, overhead, system prompt, tool definitions --------------------------------------


def test_per_message_overhead_is_three_tokens() -> None:
    assert MESSAGE_OVERHEAD == 3
    conv = load_messages(
        [
            {"role": "user", "content": "abcd"},
            {"role": "assistant", "content": "abcdabcd"},
            {"role": "user", "content": []},  # an empty message still costs its overhead
        ]
    )
    report = count_tokens(conv.messages, counter=EST)
    assert [m.tokens for m in report.messages] == [1 + 3, 2 + 3, 0 + 3]
    assert report.by_type["overhead"] == 9
    assert report.by_type["text"] == 3
    assert report.total == 12 == sum(report.by_role.values())
    assert report.by_role == {"user": 7, "assistant": 5}


def test_empty_list_is_zero_tokens() -> None:
    report = count_tokens([], counter=EST)
    assert report.total == 0
    assert report.messages == ()
    assert "overhead" not in report.by_type


def test_system_prompt_and_tool_definitions_are_counted() -> None:
    tools = [
        {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
        {"name": "list_dir", "description": "List a directory", "input_schema": {"type": "object"}},
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "system": "You are a careful assistant.",
        "tools": tools,
        "messages": [{"role": "user", "content": "hello"}],
    }
    transcript = load_transcript(data=orjson.dumps(body), name="body.json")
    conv = transcript.conversations[0]
    report = measure(conv, EST)
    system_tokens = est("You are a careful assistant.")
    tool_tokens = sum(est(compact_json(t)) for t in tools)
    assert report.extras == {"system": system_tokens, "tools": tool_tokens}
    assert report.by_role["system"] == system_tokens
    assert report.by_role["tools"] == tool_tokens
    assert report.by_type["tool_definition"] == tool_tokens
    assert report.total == system_tokens + tool_tokens + 2 + MESSAGE_OVERHEAD


def test_system_prompt_as_blocks_is_counted() -> None:
    body = {
        "system": [
            {"type": "text", "text": "abcd", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "abcdabcd"},
        ],
        "messages": [],
    }
    conv = load_transcript(data=orjson.dumps(body), name="b.json").conversations[0]
    report = measure(conv, EST)
    assert report.by_role == {"system": 3}
    assert report.total == 3


def test_leading_system_message_counts_under_role_system() -> None:
    conv = load_messages([{"role": "system", "content": "abcd"}, {"role": "user", "content": "hi"}])
    report = count_tokens(conv.messages, counter=EST)
    assert report.by_role["system"] == 1 + MESSAGE_OVERHEAD


def test_largest_tool_results_name_the_tool() -> None:
    conv = load_messages(
        [
            {"role": "user", "content": "look"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "x"}},
                    {"type": "tool_use", "id": "b", "name": "run_command", "input": {"cmd": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": "small"},
                    {"type": "tool_result", "tool_use_id": "b", "content": "big output " * 50},
                ],
            },
        ]
    )
    report = count_tokens(conv.messages, counter=EST)
    largest = report.largest_tool_results(1)
    assert [(r.tool_name, r.tool_use_id, r.message_index) for r in largest] == [("run_command", "b", 2)]
    assert largest[0].tokens == est("big output " * 50)
    assert largest[0].preview.startswith("big output big output")
    assert len(largest[0].preview) <= 60
    assert [m.index for m in report.largest_messages(2)] == [2, 1]


# --- tiktoken ----------------------------------------------------------------------------------


def test_tiktoken_counts_cl100k_tokens() -> None:
    counter = TiktokenCounter()
    assert counter.encoding == "cl100k_base"
    assert counter.count_batch(["hello world", "", "你好"]) == [2, 0, 2]
    report = count_tokens(load_messages([{"role": "user", "content": "hello world"}]).messages)
    assert report.counter == "tiktoken"
    assert report.encoding == "cl100k_base"
    assert report.total == 2 + MESSAGE_OVERHEAD


def test_unknown_encoding_name_is_an_input_error() -> None:
    with pytest.raises(InputError, match="unknown tiktoken encoding 'no_such_base'"):
        make_counter("tiktoken", encoding="no_such_base").count_batch(["x"])


OFFLINE_SCRIPT = textwrap.dedent(
    """
    import socket, sys
    attempts = []
    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in this test")
    socket.socket.connect = refuse
    socket.create_connection = refuse

    from ctxcompact.errors import InputError
    from ctxcompact.accounting.tokens import make_counter

    print("cl100k", make_counter("tiktoken").count_batch(["hello world"]))
    try:
        make_counter("tiktoken", encoding="o200k_base").count_batch(["hello world"])
    except InputError as exc:
        print("o200k error:", exc)
    else:
        print("o200k loaded?!")
    print("attempts", len(attempts))
    """
)


def test_tiktoken_is_offline_with_an_empty_cache_and_a_dead_proxy(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    dead = "http://127.0.0.1:9"
    env.update(
        TIKTOKEN_CACHE_DIR=str(cache),
        HTTPS_PROXY=dead,
        HTTP_PROXY=dead,
        https_proxy=dead,
        http_proxy=dead,
        ALL_PROXY=dead,
    )
    proc = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "cl100k [2]"
    assert lines[1].startswith("o200k error: tiktoken encoding 'o200k_base' is not available offline")
    assert "--counter estimate" in lines[1]
    assert lines[2] == "attempts 0"
    # Nothing named after o200k was fetched into the cache.
    assert not any("o200k" in p.name for p in cache.iterdir())


# --- the exact Anthropic counter, against the fake server ------------------------------------


@pytest.fixture
def api_env(monkeypatch: pytest.MonkeyPatch, fake_api: FakeAnthropicServer) -> FakeAnthropicServer:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    return fake_api


BODY = {
    "model": "claude-sonnet-4-5",
    "system": "Be brief.",
    "tools": [{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}],
    "messages": [
        {"role": "user", "content": "Read a.py please"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)\n" * 40}],
        },
    ],
}


def test_anthropic_counter_sends_the_request_and_scales_the_breakdown(api_env: FakeAnthropicServer) -> None:
    api_env.enqueue(Reply(body={"input_tokens": 1000}), path=COUNT_TOKENS_PATH)
    conv = load_transcript(data=orjson.dumps(BODY), name="body.json").conversations[0]
    local = measure(conv, TiktokenCounter())
    report = measure(conv, AnthropicTotalCounter(model="claude-sonnet-4-5"))

    [request] = api_env.requests_to(COUNT_TOKENS_PATH)
    assert request.method == "POST"
    assert request.api_key == "test-key-not-real"
    assert request.body == {
        "model": "claude-sonnet-4-5",
        "system": "Be brief.",
        "tools": BODY["tools"],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read a.py please"}]},
            BODY["messages"][1],
            BODY["messages"][2],
        ],
    }

    assert report.total == 1000
    assert report.counter == "anthropic"
    assert report.exact_total is True
    assert report.per_message_approximate is True
    factor = 1000 / local.total
    assert report.by_role == {k: round(v * factor) for k, v in local.by_role.items()}
    assert [m.tokens for m in report.messages] == [round(m.tokens * factor) for m in local.messages]
    assert report.tool_results[0].tokens == round(local.tool_results[0].tokens * factor)
    assert abs(sum(report.by_role.values()) - 1000) <= len(report.by_role)


def test_anthropic_counter_sends_openai_transcripts_in_anthropic_shape(api_env: FakeAnthropicServer) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"p": "."}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a.py"},
    ]
    report = count_message_tokens(messages, counter=AnthropicTotalCounter())
    [request] = api_env.requests_to(COUNT_TOKENS_PATH)
    body = request.body
    assert body["system"] == "Be brief."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "ls", "input": {"p": "."}}
    ]
    # Only fields the Messages API accepts: no OpenAI 'arguments' or tool 'name'.
    assert body["messages"][2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "a.py"}]
    assert report.total == FakeAnthropicServer.count_tokens_for(body)


def test_anthropic_counter_failure_is_a_work_failed_error(api_env: FakeAnthropicServer) -> None:
    api_env.enqueue(*(FakeAnthropicServer.reply_error(500) for _ in range(3)), path=COUNT_TOKENS_PATH)
    with pytest.raises(
        WorkFailedError, match=r"exact token count failed: the API answered HTTP 500 \(api_error\)"
    ):
        count_message_tokens([{"role": "user", "content": "hi"}], counter=AnthropicTotalCounter())
    assert len(api_env.requests_to(COUNT_TOKENS_PATH)) == 3  # the SDK's two retries


def test_anthropic_counter_without_a_key_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        count_message_tokens([{"role": "user", "content": "hi"}], counter=AnthropicTotalCounter())
