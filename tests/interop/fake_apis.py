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

For the agents' own compactions (``test_agent_hooks.py``) the fake also plays the model that
summarises, and reports a context as full as the test wants:

* Claude Code asks for its summary in an ordinary Messages request whose last message starts
  its compaction prompt (:data:`CLAUDE_COMPACTION_PROMPT`); ``summary`` answers it;
* Codex 0.169 compacts remotely ("responses compaction v2"): a Responses request ending with a
  ``compaction_trigger`` item, answered with one ``compaction`` output item whose
  ``encrypted_content`` is ``compaction``;
* ``usage``: the input tokens every other answer reports. Claude Code compacts before its
  next request when the last answer's usage nears the model's window.
"""

from __future__ import annotations

import json
from typing import Any

from fake_anthropic import MESSAGES_PATH, FakeAnthropicServer, RecordedRequest, Reply, server_sent_events

RESPONSES_PATH = "/v1/responses"
#: How Claude Code 2.1.332's compaction request (its last message) asks for the summary.
CLAUDE_COMPACTION_PROMPT = "create a detailed summary of the conversation so far"


class FakeClientAPIs(FakeAnthropicServer):
    """The fake both clients are pointed at; every answer's text is ``reply`` (see the module
    doc for ``summary``, ``compaction`` and ``usage``)."""

    def __init__(
        self, reply: str, *, summary: str | None = None, compaction: str | None = None, usage: int = 10
    ) -> None:
        super().__init__()
        self.reply = reply
        self.summary = summary
        self.compaction = compaction
        self.usage = usage

    def _reply_for(self, request: RecordedRequest) -> Reply:
        if request.path == RESPONSES_PATH and request.method == "GET":
            return Reply(status=426, body="fake server: no WebSocket, use HTTP streaming")
        stream = {"content-type": "text/event-stream"}
        if request.path == RESPONSES_PATH and request.method == "POST":
            if self.compaction is not None and is_codex_compaction(request.body):
                return Reply(body=compaction_stream(self.compaction), headers=stream)
            return Reply(body=responses_stream(self.reply, input_tokens=self.usage), headers=stream)
        if request.path == MESSAGES_PATH and request.method == "POST" and isinstance(request.body, dict):
            summarising = self.summary is not None and is_claude_compaction(request.body)
            text, tokens = (str(self.summary), 10) if summarising else (self.reply, self.usage)
            if request.body.get("stream") is True:
                return self.reply_text_stream(text, input_tokens=tokens)
            return self.reply_text(text, input_tokens=tokens)
        return super()._reply_for(request)


def is_claude_compaction(body: dict[str, Any]) -> bool:
    """A Messages request that is Claude Code asking for its compaction summary."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else {}
    return CLAUDE_COMPACTION_PROMPT in json.dumps(last.get("content") if isinstance(last, dict) else None)


def is_codex_compaction(body: Any) -> bool:
    """A Responses request that is Codex's remote compaction (its input ends with a
    ``compaction_trigger`` item)."""
    items = body.get("input") if isinstance(body, dict) else None
    return isinstance(items, list) and bool(items) and items[-1].get("type") == "compaction_trigger"


def compaction_stream(encrypted: str) -> str:
    """The answer to Codex's remote compaction: one ``compaction`` item."""
    item = {"type": "compaction", "id": "cmp_fake_1", "encrypted_content": encrypted}
    return _response_events(item, input_tokens=10)


def responses_stream(text: str, *, input_tokens: int = 10) -> str:
    """A Responses API stream answering ``text``: created, one assistant message, completed."""
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "id": "msg_fake_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return _response_events(item, input_tokens=input_tokens)


def _response_events(item: dict[str, Any], *, input_tokens: int) -> str:
    usage = {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + 2,
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
