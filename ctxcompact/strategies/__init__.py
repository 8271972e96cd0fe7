"""Compaction strategies: one module each, a pure function returning a StrategyResult."""

#: What ``compact --strategy`` accepts (comma-separated, run in order).
STRATEGY_NAMES = ("full", "prune", "clean-tools")
