"""Rewriting a conversation to fit: the pipeline, its options, the strategies, the summarizers.

Layer 5. ``pipeline`` runs strategies from the table in ``strategies/`` with ``options``;
``summarize/`` writes summaries (LLM or extractive); ``pins``, ``restore``/``restore_files``,
``retention`` and ``archive`` are what strategies share. May import: every
layer below (vocabulary, transcripts, llm, accounting, offload).
"""
