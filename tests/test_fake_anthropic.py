"""Prove the loopback fake works with the real ``anthropic`` SDK client."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import anthropic
import pytest
from fake_anthropic import (
    COUNT_TOKENS_PATH,
    MESSAGES_PATH,
    FakeAnthropicServer,
    Reply,
    fake_anthropic_server,
)

MODEL = "claude-fake-model"
MESSAGES: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Summarise this."}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    yield from fake_anthropic_server()


def make_client(
    server: FakeAnthropicServer, *, max_retries: int = 0, timeout: float = 5.0
) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="test-key",
        base_url=server.base_url,
        max_retries=max_retries,
        timeout=timeout,
    )


def test_base_url_is_loopback(server: FakeAnthropicServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert int(server.base_url.rsplit(":", 1)[1]) > 0


def test_scripted_text_reply(server: FakeAnthropicServer) -> None:
    server.enqueue(
        FakeAnthropicServer.reply_text("hello there", model=MODEL, input_tokens=7, output_tokens=3)
    )
    with make_client(server) as client:
        resp = client.messages.create(model=MODEL, max_tokens=100, messages=MESSAGES)

    assert resp.content[0].type == "text"
    assert resp.content[0].text == "hello there"
    assert resp.model == MODEL
    assert resp.stop_reason == "end_turn"
    assert resp.usage.input_tokens == 7
    assert resp.usage.output_tokens == 3
    assert resp._request_id is not None
    assert resp._request_id.startswith("req_fake_")

    assert len(server.requests) == 1
    req = server.requests[0]
    assert req.method == "POST"
    assert req.path == MESSAGES_PATH
    # anthropic 2.x sends api_key as "Authorization: Bearer", not "x-api-key".
    assert req.api_key == "test-key"
    assert req.headers.get("x-api-key", "Bearer test-key") in {
        "test-key",
        req.headers.get("authorization"),
    }
    assert "anthropic-version" in req.headers
    assert req.headers["content-type"].startswith("application/json")
    assert req.body["model"] == MODEL
    assert req.body["max_tokens"] == 100
    assert req.body["messages"] == MESSAGES
    assert "x-should-retry" not in req.headers


def test_default_reply_when_queue_empty(server: FakeAnthropicServer) -> None:
    with make_client(server) as client:
        resp = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert resp.content[0].type == "text"
    assert resp.content[0].text == "fake summary"


def test_a_streaming_request_is_answered_with_server_sent_events(server: FakeAnthropicServer) -> None:
    """A client that asks for a stream (Claude Code always does) gets the answer the way the
    API streams it; the official SDK's stream reader assembles the same message."""
    server.answer = lambda body: "streamed answer"
    with make_client(server) as client:
        with client.messages.stream(model=MODEL, max_tokens=10, messages=MESSAGES) as stream:
            message = stream.get_final_message()
        plain = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].type == "text" and message.content[0].text == "streamed answer"
    assert (message.stop_reason, message.usage.output_tokens) == ("end_turn", 20)
    assert plain.content[0].type == "text" and plain.content[0].text == "streamed answer"
    assert [r.body.get("stream") for r in server.requests] == [True, None]


def test_a_proxy_tunnel_is_recorded_and_refused(server: FakeAnthropicServer) -> None:
    """Set as a client's HTTPS proxy, the fake sees (and refuses) every attempt to reach
    another host, so nothing leaves the machine."""
    conn = http.client.HTTPConnection("127.0.0.1", int(server.base_url.rsplit(":", 1)[1]), timeout=3)
    conn.request("CONNECT", "api.example.com:443")
    assert conn.getresponse().status == 403
    conn.close()
    assert [(r.method, r.path) for r in server.requests] == [("CONNECT", "api.example.com:443")]


def test_replies_are_fifo(server: FakeAnthropicServer) -> None:
    server.enqueue(FakeAnthropicServer.reply_text("one"), FakeAnthropicServer.reply_text("two"))
    with make_client(server) as client:
        texts = []
        for _ in range(3):
            resp = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
            assert resp.content[0].type == "text"
            texts.append(resp.content[0].text)
    assert texts == ["one", "two", "fake summary"]
    assert server.pending() == 0


def test_retries_529_then_succeeds(server: FakeAnthropicServer) -> None:
    server.enqueue(
        FakeAnthropicServer.reply_error(529),
        FakeAnthropicServer.reply_error(529),
        FakeAnthropicServer.reply_text("finally"),
    )
    start = time.monotonic()
    with make_client(server, max_retries=2) as client:
        resp = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    elapsed = time.monotonic() - start

    assert resp.content[0].type == "text"
    assert resp.content[0].text == "finally"
    assert len(server.requests) == 3
    # The SDK counts retries in a header and reuses one idempotency key.
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == [
        "0",
        "1",
        "2",
    ]
    assert len({r.headers.get("idempotency-key") for r in server.requests}) == 1
    # retry-after-ms: 1 makes the SDK skip its 0.5 s+ exponential backoff.
    assert elapsed < 1.0


def test_all_500_raises_internal_server_error(server: FakeAnthropicServer) -> None:
    server.enqueue(
        FakeAnthropicServer.reply_error(500, message="boom"),
        FakeAnthropicServer.reply_error(500, message="boom"),
    )
    with (
        make_client(server, max_retries=1) as client,
        pytest.raises(anthropic.InternalServerError) as exc_info,
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert exc_info.value.status_code == 500
    assert exc_info.value.body == {
        "type": "error",
        "error": {"type": "api_error", "message": "boom"},
    }
    assert exc_info.value.request_id is not None
    assert len(server.requests) == 2


def test_529_exhausted_raises_overloaded(server: FakeAnthropicServer) -> None:
    server.enqueue(FakeAnthropicServer.reply_error(529))
    with (
        make_client(server, max_retries=0) as client,
        pytest.raises(anthropic.InternalServerError) as exc_info,
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert exc_info.value.status_code == 529
    assert isinstance(exc_info.value, anthropic.OverloadedError)


def test_429_raises_rate_limit_error(server: FakeAnthropicServer) -> None:
    server.enqueue(FakeAnthropicServer.reply_error(429, message="slow down"))
    with (
        make_client(server, max_retries=0) as client,
        pytest.raises(anthropic.RateLimitError) as exc_info,
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert exc_info.value.status_code == 429
    assert len(server.requests) == 1


def test_x_should_retry_false_is_obeyed(server: FakeAnthropicServer) -> None:
    server.enqueue(FakeAnthropicServer.reply_error(529, should_retry=False))
    with (
        make_client(server, max_retries=3) as client,
        pytest.raises(anthropic.InternalServerError),
    ):
        client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert len(server.requests) == 1


def test_slow_reply_times_out_and_server_stops_promptly() -> None:
    srv = FakeAnthropicServer().start()
    try:
        srv.enqueue(Reply(body=FakeAnthropicServer.reply_text("late").body, delay=2.0))
        start = time.monotonic()
        with (
            make_client(srv, max_retries=0, timeout=0.3) as client,
            pytest.raises(anthropic.APITimeoutError),
        ):
            client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
        assert time.monotonic() - start < 1.5
        assert len(srv.requests) == 1
    finally:
        stop_start = time.monotonic()
        srv.stop()
        stop_elapsed = time.monotonic() - stop_start
    assert stop_elapsed < 0.5


def test_stop_while_handler_sleeping() -> None:
    # A raw urllib client still waiting (not disconnected) when stop() is called.
    srv = FakeAnthropicServer().start()
    srv.enqueue(Reply(body={"ok": True}, delay=5.0))
    errors: list[BaseException] = []

    def call() -> None:
        req = urllib.request.Request(
            srv.base_url + MESSAGES_PATH,
            data=b"{}",
            headers={"content-type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=3.0) as resp:
                resp.read()
        except (OSError, http.client.HTTPException) as exc:  # dropped unanswered
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 2.0
    while not srv.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(srv.requests) == 1
    start = time.monotonic()
    srv.stop()
    assert time.monotonic() - start < 0.5
    thread.join(timeout=3.0)
    assert not thread.is_alive()
    assert len(errors) == 1


def test_count_tokens_default_is_deterministic(server: FakeAnthropicServer) -> None:
    with make_client(server) as client:
        result = client.messages.count_tokens(model=MODEL, messages=MESSAGES)
        again = client.messages.count_tokens(model=MODEL, messages=MESSAGES)

    assert len(server.requests) == 2
    req = server.requests[0]
    assert req.path == COUNT_TOKENS_PATH
    assert req.body == {"model": MODEL, "messages": MESSAGES}
    expected = FakeAnthropicServer.count_tokens_for(req.body)
    assert expected == len(json.dumps(req.body, separators=(",", ":"), sort_keys=True)) // 4
    assert result.input_tokens == expected
    assert again.input_tokens == expected


def test_count_tokens_scripted(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(body={"input_tokens": 12345}), path=COUNT_TOKENS_PATH)
    with make_client(server) as client:
        assert client.messages.count_tokens(model=MODEL, messages=MESSAGES).input_tokens == 12345
        # The /v1/messages queue is separate from the count_tokens queue.
        resp = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
    assert resp.content[0].type == "text"
    assert resp.content[0].text == "fake summary"
    assert [r.path for r in server.requests] == [COUNT_TOKENS_PATH, MESSAGES_PATH]


def _raw_post(url: str, payload: object) -> tuple[int, dict[str, str], object]:
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", "x-api-key": "raw-key"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=3.0) as resp:
        headers = {k.lower(): v for k, v in resp.headers.items()}
        return resp.status, headers, json.loads(resp.read())


def test_query_string_is_ignored_for_routing(server: FakeAnthropicServer) -> None:
    # (anthropic 2.x's beta client does not add ?beta=true; test it directly.)
    server.enqueue(FakeAnthropicServer.reply_text("beta ok"), path=MESSAGES_PATH + "?beta=true")
    status, headers, body = _raw_post(server.base_url + MESSAGES_PATH + "?beta=true", {"model": MODEL})
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert headers["request-id"].startswith("req_fake_")
    assert "x-should-retry" not in headers
    assert isinstance(body, dict)
    assert body["content"] == [{"type": "text", "text": "beta ok"}]
    req = server.requests[0]
    assert req.path == MESSAGES_PATH
    assert req.query == "beta=true"
    assert req.api_key == "raw-key"

    status, _, body = _raw_post(server.base_url + COUNT_TOKENS_PATH + "?beta=true", {"model": MODEL})
    assert status == 200
    assert body == {"input_tokens": FakeAnthropicServer.count_tokens_for({"model": MODEL})}
    assert server.requests[1].path == COUNT_TOKENS_PATH


def test_beta_client_works(server: FakeAnthropicServer) -> None:
    server.enqueue(FakeAnthropicServer.reply_text("beta ok"))
    with make_client(server) as client:
        resp = client.beta.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "Summarise this."}]
        )
    assert resp.content[0].type == "text"
    assert resp.content[0].text == "beta ok"
    assert server.requests[0].path == MESSAGES_PATH


def test_unknown_path_is_404(server: FakeAnthropicServer) -> None:
    with make_client(server) as client, pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("nope")
    assert server.requests[0].method == "GET"


def test_context_manager() -> None:
    with FakeAnthropicServer() as srv, make_client(srv) as client:
        resp = client.messages.create(model=MODEL, max_tokens=10, messages=MESSAGES)
        assert resp.content[0].type == "text"
    assert srv.requests[0].path == MESSAGES_PATH


def _post(server: FakeAnthropicServer) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(server.base_url + MESSAGES_PATH, data=b"{}", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=3.0) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def test_bytes_body_and_retry_after_are_sent_as_given(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(body=b"caf\xe9"), server.reply_error(429, retry_after_ms=None, retry_after="3600"))
    assert _post(server)[::2] == (200, b"caf\xe9")
    status, headers, _ = _post(server)
    assert (status, headers.get("retry-after"), "retry-after-ms" in headers) == (429, "3600", False)


def test_drip_sends_the_whole_response_a_byte_at_a_time(server: FakeAnthropicServer) -> None:
    server.enqueue(Reply(body=b"slow", drip=0.01))
    start = time.monotonic()
    assert _post(server)[::2] == (200, b"slow")
    assert time.monotonic() - start > 0.01 * 100  # status line and headers dripped too
