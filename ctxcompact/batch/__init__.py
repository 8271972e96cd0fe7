"""Compaction over many files: inputs and shards, workers, the resume journal, Message Batches.

Layer 6. ``files`` is ``compact_files -> BatchResult``; ``inputs`` finds and shards files;
``workers`` forks processes; ``journal`` makes ``--resume`` work; ``message_batches`` summarizes a
whole batch through Message Batches; ``results`` holds the result types. May import: every
layer below.
"""
