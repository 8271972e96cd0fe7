"""Inside the agent's own loop: Claude Code's and Codex's hooks, what must survive their
compaction, records of what each of their compactions lost, undoing and forking a session.

events (the hook payloads both agents send, and the answers they read back), store (session
backups and the record of each compaction, in the archive), compactions (where a session file
was compacted, by whom), survive (pins, pinned messages and named file sections that must
outlive a compaction), hooks (pre-compact, session-start, post-compact), install (the hook
entries in the agents' settings files), uncompact (remove our compaction, fork before the
agent's). Pure core: results are returned, never printed; files are written only where a
function says so (a backup, a record, a session).
"""
