"""The LLM summarizer's request limits, as defaults the options and the CLI declare.

A leaf: the option types and ``--timeout``/``--max-retries`` read these without importing the
summarizer itself (start-up: an offline compaction never loads it).
"""

from __future__ import annotations

#: Seconds per summary request.
DEFAULT_TIMEOUT = 60.0
#: Retries of a failed summary request (rate limits, overload, timeouts).
DEFAULT_MAX_RETRIES = 2
