"""The loopback API both clients talk to: Anthropic Messages and OpenAI Responses, streamed.

One server on 127.0.0.1 answers Claude Code (``ANTHROPIC_BASE_URL``) and Codex
(``openai_base_url``); it is :class:`FakeAnthropicServer` (which records every request and
streams a Messages answer to ``"stream": true``) plus the Responses API:

* ``POST /v1/responses`` streams ``response.created``, one assistant ``message`` item
  (``response.output_item.done``) and ``response.completed`` with its usage — the events
  Codex reads (its own SDK tests reply with the same three);
* ``GET /v1/responses`` asking for a WebSocket upgrade is answered ``426 Upgrade Required``:
  Codex then falls back to HTTP streaming at once (a 404 or 5xx would cost it five retries
  with back-off, about six seconds);
* a ``CONNECT`` (the clients are given this server as their HTTPS proxy, so that nothing they
  try to reach elsewhere leaves the machine) is recorded and refused.

Every other path gets the Anthropic-shaped 404, recorded like the rest.
"""

from __future__ import annotations

from typing import Any

from fake_anthropic import FakeAnthropicServer, RecordedRequest, Reply, server_sent_events

RESPONSES_PATH = "/v1/responses"


class FakeClientAPIs(FakeAnthropicServer):
    """The fake both clients are pointed at; every answer's text is ``reply``."""

    def __init__(self, reply: str) -> None:
        super().__init__()
        self.reply = reply
        self.answer = lambda body: reply

    def _reply_for(self, request: RecordedRequest) -> Reply:
        if request.path == RESPONSES_PATH and request.method == "GET":
            return Reply(status=426, body="fake server: no WebSocket, use HTTP streaming")
        if request.path == RESPONSES_PATH and request.method == "POST":
            return Reply(body=responses_stream(self.reply), headers={"content-type": "text/event-stream"})
        return super()._reply_for(request)


def responses_stream(text: str) -> str:
    """A Responses API stream answering ``text``: created, one assistant message, completed."""
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    }
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "id": "msg_fake_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_fake_1", "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {"id": "resp_fake_1", "status": "completed", "usage": usage},
        },
    ]
    return server_sent_events(events)
