"""The envelope of every JSON document ctxcompact writes: a ``version`` first, then the
document's own keys, every key in snake_case.

``version`` counts the documents' schema: 1 is the first versioned one (before it, documents
had no version, and ``compact``'s and ``offload``'s stats used the seeds' camelCase names;
``docs/decisions/0002-json-output.md`` says why one style). A change that renames or removes
a key, or changes what a value means, raises it; a new key does not.
"""

from __future__ import annotations

from typing import Any

#: The schema version every document carries (see the module docstring).
JSON_VERSION = 1


def document(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as a document: ``{"version": JSON_VERSION, **payload}``."""
    return {"version": JSON_VERSION, **payload}
