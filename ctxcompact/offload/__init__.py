"""Bulky tool output moved to files and back: the references, the session duplicates, the store.

Layer 4. ``tool_results`` offloads and undoes; ``session`` handles Claude Code's
``toolUseResult`` duplicates; ``store`` owns the files (safe names, no-clobber writes, the
manifest, the lock). May import: vocabulary, transcripts, llm, accounting.
"""
