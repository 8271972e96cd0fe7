"""Measuring what a compaction keeps: strategies side by side, probes, the LLM judge.

Layer 7. ``run`` evaluates transcripts; ``files`` runs it over many files in workers;
``probes`` are the offline fidelity probes; ``judge/`` the ``--judge`` question/answer/score
runs. May import: every layer below.
"""
