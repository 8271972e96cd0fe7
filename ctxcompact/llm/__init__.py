"""Talking to a model: the transport protocol, the one retry loop, the request gate, the SDK.

Layer 2. ``transport`` is the small protocol every summarizer and judge call goes through;
``retry`` the shared retry/backoff/retry-after loop (``deadline`` the run's total deadline, apart
so a command declares ``--deadline`` without loading it); ``gate`` the cross-process concurrency
limit; ``anthropic_api`` the only module importing the ``anthropic`` SDK (lazily): Messages,
count_tokens and Message Batches; ``capped_http`` the byte cap on every answer it reads.
May import: vocabulary, transcripts.
"""
