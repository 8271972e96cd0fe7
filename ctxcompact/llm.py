"""The one home of the ``anthropic`` SDK: client creation, exact token counts, error mapping.

The SDK takes about a second to import, so it is imported inside functions only, when a
command actually calls the API. The API key comes from the environment
(``ANTHROPIC_API_KEY``) or the caller and is never printed, logged or written: error
messages are built from the SDK's status and error type, not from request objects.
``ANTHROPIC_BASE_URL`` points the client elsewhere (the tests' fake server; a proxy).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxcompact.errors import InputError, WorkFailedError
from ctxcompact.ir import Block, Message

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_COUNT_MODEL = "claude-sonnet-4-5"


def api_key_available(env: Mapping[str, str] | None = None) -> bool:
    return bool((env if env is not None else os.environ).get(API_KEY_ENV, "").strip())


def make_client(
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 2,
) -> Any:
    """An ``anthropic.Anthropic`` client. Raises :class:`InputError` when no key is set."""
    key = api_key or os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        raise InputError(f"the Anthropic API needs a key: set {API_KEY_ENV}.")
    import anthropic

    return anthropic.Anthropic(
        api_key=key,
        base_url=base_url or os.environ.get(BASE_URL_ENV) or None,
        timeout=timeout,
        max_retries=max_retries,
    )


def describe_api_error(exc: BaseException) -> str:
    """A one-line, key-free description of an SDK exception."""
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return "the API did not answer in time"
    if isinstance(exc, anthropic.APIConnectionError):
        return "could not connect to the API"
    if isinstance(exc, anthropic.APIStatusError):
        kind = ""
        body = exc.body
        if isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
            kind = str(body["error"].get("type", ""))
        return f"the API answered HTTP {exc.status_code}" + (f" ({kind})" if kind else "")
    return type(exc).__name__


def api_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tool definitions in Anthropic's shape (OpenAI ``function`` tools converted)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        if isinstance(tool.get("function"), Mapping):
            fn = tool["function"]
            out.append(
                {
                    "name": fn.get("name", "tool"),
                    "description": fn.get("description", ""),
                    "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
                }
            )
        else:
            out.append(dict(tool))
    return out


@dataclass(slots=True)
class AnthropicTotalCounter:
    """Exact request totals from ``messages.count_tokens``."""

    model: str = DEFAULT_COUNT_MODEL
    client: Any = None
    name: str = "anthropic"

    def count_request(self, messages: Sequence[Message], *, system: Sequence[Block] = (), tools: Sequence[Any] = ()) -> int:
        from ctxcompact.dialects.anthropic import to_api_messages

        client = self.client or make_client()
        inline_system, api_messages = to_api_messages(messages)
        system_text = "\n\n".join(
            [str(b.get("text", "")) for b in system if b.get("type") == "text"] + ([inline_system] if inline_system else [])
        )
        kwargs: dict[str, Any] = {"model": self.model, "messages": api_messages}
        if system_text:
            kwargs["system"] = system_text
        if tools:
            kwargs["tools"] = api_tools(tools)
        import anthropic

        try:
            result = client.messages.count_tokens(**kwargs)
        except anthropic.APIError as exc:
            raise WorkFailedError(f"exact token count failed: {describe_api_error(exc)}.") from None
        return int(result.input_tokens)
