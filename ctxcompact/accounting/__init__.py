"""How big a context is, and whether it is due: tokens, windows, recorded usage, sessions.

Layer 3. ``counters``/``tokens``/``media`` count; ``windows`` holds context windows and the
threshold formula; ``context_size`` decides the real size from recorded usage or a calibrated
count; ``check`` is the core of ``count`` and ``check``; ``sessions`` lists agents' saved
sessions. May import: vocabulary, transcripts, llm.
"""
