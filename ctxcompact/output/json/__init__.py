"""Every JSON document ctxcompact prints or writes, built in this package from result
objects (which carry no serialization of their own): plain data, no rich, so a ``--json`` run
never imports a terminal library.

Every document starts with ``"version": 1`` (:mod:`~ctxcompact.output.json.document`) and spells
every key in snake_case. ``inspection``: ``count``, ``check``, ``sessions``, ``models``,
``config``; ``compaction``: ``compact``, ``restore-files``, ``offload``, ``export --points``;
``evaluation``: ``eval`` (and its judge); ``agents``: ``uncompact`` and the agents' scored
compactions.
"""

from __future__ import annotations

from ctxcompact.output.json.agents import (
    compaction_json as compaction_json,
)
from ctxcompact.output.json.agents import (
    compactions_json as compactions_json,
)
from ctxcompact.output.json.agents import (
    fork_json as fork_json,
)
from ctxcompact.output.json.agents import (
    removed_json as removed_json,
)
from ctxcompact.output.json.agents import (
    scored_json as scored_json,
)
from ctxcompact.output.json.compaction import (
    batch_item_json as batch_item_json,
)
from ctxcompact.output.json.compaction import (
    batch_report_json as batch_report_json,
)
from ctxcompact.output.json.compaction import (
    compact_stats_json as compact_stats_json,
)
from ctxcompact.output.json.compaction import (
    file_report_json as file_report_json,
)
from ctxcompact.output.json.compaction import (
    file_stats_json as file_stats_json,
)
from ctxcompact.output.json.compaction import (
    offload_stats_json as offload_stats_json,
)
from ctxcompact.output.json.compaction import (
    orphan_cleanup_stats_json as orphan_cleanup_stats_json,
)
from ctxcompact.output.json.compaction import (
    points_json as points_json,
)
from ctxcompact.output.json.compaction import (
    restore_files_stats_json as restore_files_stats_json,
)
from ctxcompact.output.json.compaction import (
    undo_stats_json as undo_stats_json,
)
from ctxcompact.output.json.document import (
    JSON_VERSION as JSON_VERSION,
)
from ctxcompact.output.json.document import (
    document as document,
)
from ctxcompact.output.json.evaluation import (
    add_judge_json as add_judge_json,
)
from ctxcompact.output.json.evaluation import (
    eval_json as eval_json,
)
from ctxcompact.output.json.evaluation import (
    run_json as run_json,
)
from ctxcompact.output.json.evaluation import (
    scores_json as scores_json,
)
from ctxcompact.output.json.inspection import (
    CountRow as CountRow,
)
from ctxcompact.output.json.inspection import (
    breakdown_json as breakdown_json,
)
from ctxcompact.output.json.inspection import (
    budget_json as budget_json,
)
from ctxcompact.output.json.inspection import (
    check_to_json as check_to_json,
)
from ctxcompact.output.json.inspection import (
    config_json as config_json,
)
from ctxcompact.output.json.inspection import (
    context_size_json as context_size_json,
)
from ctxcompact.output.json.inspection import (
    cost_json as cost_json,
)
from ctxcompact.output.json.inspection import (
    count_to_json as count_to_json,
)
from ctxcompact.output.json.inspection import (
    models_json as models_json,
)
from ctxcompact.output.json.inspection import (
    recorded_usage_json as recorded_usage_json,
)
from ctxcompact.output.json.inspection import (
    sessions_to_json as sessions_to_json,
)
from ctxcompact.output.json.inspection import (
    timeline_json as timeline_json,
)
