"""Transcripts as files hold them: reading, writing back losslessly, dialects, compaction points.

Layer 1, above the shared vocabulary (``ir``, ``errors``, ``markers``…). ``io`` reads files and
stdin into :class:`~ctxcompact.transcripts.conversation.Transcript` values and writes them back
byte for byte where nothing changed; ``dialects/`` maps each agent's records to and from the IR;
``points``/``appended``/``export`` are compaction points and the live context after them;
``validate`` checks the API's rules; ``fileio``/``jsontext`` are safe bytes and JSON.
May import: the vocabulary only.
"""
