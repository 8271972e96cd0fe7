"""Claude Code session entries, built the way Claude Code writes them, for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION_ID = "5f1c9a52-3f0e-4d9b-9d7e-0c2a1e7b8f11"


class SessionBuilder:
    """Appends entries with a valid ``parentUuid`` chain; ``usage`` on assistant turns."""

    def __init__(self, *, model: str = "claude-sonnet-4-5-20250929", cwd: str = "/home/u/proj") -> None:
        self.entries: list[dict[str, Any]] = []
        self.model = model
        self.cwd = cwd
        self._n = 0
        self._parent: str | None = None

    def _entry(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._n += 1
        uuid = f"00000000-0000-4000-8000-{self._n:012d}"
        entry = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": SESSION_ID,
            "version": "2.0.76",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-01-02T10:{self._n // 60:02d}:{self._n % 60:02d}.000Z",
            **fields,
        }
        if not entry["isSidechain"]:
            self._parent = uuid
        self.entries.append(entry)
        return entry

    def user(self, text: str, **fields: Any) -> SessionBuilder:
        self._entry("user", message={"role": "user", "content": text}, **fields)
        return self

    def assistant(
        self,
        text: str,
        *,
        usage: tuple[int, int, int, int] | None = None,
        model: str | None = None,
        **fields: Any,
    ) -> SessionBuilder:
        message: dict[str, Any] = {
            "id": f"msg_{self._n:04d}",
            "type": "message",
            "role": "assistant",
            "model": model or self.model,
            "content": [{"type": "text", "text": text}],
        }
        if usage is not None:
            message["usage"] = {
                "input_tokens": usage[0],
                "cache_creation_input_tokens": usage[1],
                "cache_read_input_tokens": usage[2],
                "output_tokens": usage[3],
            }
        self._entry("assistant", message=message, **fields)
        return self

    def tool(
        self,
        name: str,
        tool_input: dict[str, Any],
        output: str,
        *,
        usage: tuple[int, int, int, int] | None = None,
    ) -> SessionBuilder:
        """An assistant entry calling ``name`` (with ``usage`` on it), then the user entry with
        its result, as Claude Code writes a tool step."""
        tool_id = f"toolu_{self._n:04d}"
        self.assistant("", usage=usage)
        self.entries[-1]["message"]["content"] = [
            {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}
        ]
        self._entry(
            "user",
            message={
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": output}],
            },
            toolUseResult={"stdout": output},
        )
        return self

    def boundary(self, pre_tokens: int = 150_000) -> SessionBuilder:
        self._entry(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": pre_tokens},
        )
        self.user("This session is being continued from a previous conversation.", isCompactSummary=True)
        return self

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e) + "\n" for e in self.entries), encoding="utf-8")
        return path

    def tool_call(
        self, name: str, tool_input: dict[str, Any], result: str, *, call_id: str
    ) -> SessionBuilder:
        """An assistant entry calling ``name`` and the user entry with its result."""
        self._entry(
            "assistant",
            message={
                "id": f"msg_{self._n:04d}",
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            },
        )
        content = [{"type": "tool_result", "tool_use_id": call_id, "content": result}]
        self._entry("user", message={"role": "user", "content": content})
        return self
